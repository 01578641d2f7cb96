package handlers

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/botmetrics"
	"runwatch/internal/redact"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/reports"
)

// TestAnswerPanicLeavesTheBotRunning: an answer that panics is logged (redacted) and counted, its answer slot
// is freed, and the other answers go on; before, the panic stopped bot serve and every run it watched, and Go
// printed it to stderr as it was.
func TestAnswerPanicLeavesTheBotRunning(t *testing.T) {
	var lb testkit.LogBuffer
	log := redact.Logger(lb.Logger(), redact.New())
	m := botmetrics.New()
	app := newSlackApp(context.Background(), nil, nil, SlackIdentity{UserID: "U111"}, m, log)
	app.slots = make(chan struct{}, 1) // one slot: a panic that kept it would block the next answer for good
	app.background(func(context.Context) { panic("answer blew up near xoxb-1234567890-abcdefghij") })
	app.detach(func(context.Context) { panic("a detached one too") })
	done := make(chan struct{})
	app.background(func(context.Context) { close(done) })
	<-done
	app.wait(time.Minute)
	out := lb.String()
	for _, want := range []string{"an answer failed with a panic", "answer blew up near xoxb-[redacted]", "a detached one too", "survive_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "1234567890") {
		t.Errorf("the panic's token reached the log:\n%s", out)
	}
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp.Body); !strings.Contains(body, `runwatch_slack_events_total{result="panicked"} 2`) {
		t.Errorf("/metrics does not count the two panics:\n%s", body)
	}
}

// panicRuns is a monitor whose run statuses panic, as a probe or renderer might on input nobody foresaw.
type panicRuns struct{ Runs }

func (panicRuns) RunStatus(context.Context, string, monitor.Need) (reports.RunStatus, error) {
	panic("a renderer met xoxb-1234567890-abcdefghij in a log line")
}

// TestAskPanicIsAReply: an answer that panics inside Bot.Ask, the one place every transport asks (mentions,
// slash commands, buttons, the console, bot ask), is a reply saying it failed, refused so that bot ask exits
// 1, logged redacted; the next question is answered. Before, a mention got no reply at all and the console
// and bot ask stopped with Go's crash report.
func TestAskPanicIsAReply(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	var lb testkit.LogBuffer
	b := NewBot(panicRuns{e.Mon}, time.UTC, config.Env{})
	b.Log = redact.Logger(lb.Logger(), redact.New())
	rep := b.Ask(context.Background(), Request{Text: "ETA?", Source: "console"})
	if !rep.Refused || rep.Intent != "failed" || !strings.Contains(rep.Message.Text(), "That answer failed with an internal error") {
		t.Errorf("a panicking answer = %+v; want the failure said, refused", rep)
	}
	if out := lb.String(); !strings.Contains(out, "an answer failed with a panic") || !strings.Contains(out, "xoxb-[redacted]") ||
		strings.Contains(out, "1234567890") {
		t.Errorf("log:\n%s\nwant the panic logged, its token redacted", out)
	}
	if rep := b.Ask(context.Background(), Request{Text: "help", Source: "console"}); rep.Refused {
		t.Errorf("help after a failed answer = %+v; want it answered", rep)
	}
}
