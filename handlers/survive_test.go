package handlers

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"runwatch/internal/botmetrics"
	"runwatch/internal/redact"
	"runwatch/internal/testkit"
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
