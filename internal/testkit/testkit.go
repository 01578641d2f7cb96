// Package testkit is the harness the tests of the conversation, the posts, the Slack transport and
// cmd/bot share: one fake Slack Web API (Slack), one settable clock (Clock, fake.Clock), a logger into a
// buffer (LogBuffer), a run over real probes (World: a progress log, an output directory, a state
// directory, a /proc of the test's own (ProcView), a monitor), metrics endpoints that replay a real
// engine's recording or break like one (VLLM, FaultEndpoint, on fake.VLLM), Slack's request shapes signed
// as Slack signs them (Sign, SlashBody, MentionEvent) and a fake of the monitor for pure answers
// (FakeRuns, ReplyRuns). Its subpackages import nothing of runwatch, for the tests of the packages below
// it: fake (the clock, the vLLM recording) and goldenfile (golden files). Only tests import them.
package testkit

import "runwatch/config"

// Test credentials. They look real so that redaction is exercised on realistic shapes.
var (
	BotToken = config.NewSecret("xoxb-1111111111-2222222222-AbCdEfGhIjKlMnOpQrStUvWx")
	AppToken = config.NewSecret("xapp-1-A111-3333333333-0123456789abcdef0123456789abcdef")
)
