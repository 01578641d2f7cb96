// Package testkit is the harness the tests of the conversation, the posts, the Slack transport and
// cmd/bot share: one fake Slack Web API (Slack), one settable clock (Clock), a logger into a buffer
// (LogBuffer), a run over real probes (World: a progress log, an output directory, a state directory,
// a monitor), metrics endpoints that behave like vLLM's or break like one (VLLM, FaultEndpoint), Slack's
// request shapes signed as Slack signs them (Sign, SlashBody, MentionEvent), a fake of the monitor for
// pure answers (FakeRuns, ReplyRuns) and golden files (Golden). Only tests import it.
package testkit

import "runwatch/config"

// Test credentials. They look real so that redaction is exercised on realistic shapes.
var (
	BotToken = config.NewSecret("xoxb-1111111111-2222222222-AbCdEfGhIjKlMnOpQrStUvWx")
	AppToken = config.NewSecret("xapp-1-A111-3333333333-0123456789abcdef0123456789abcdef")
)
