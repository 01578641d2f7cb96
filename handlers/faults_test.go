package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"runwatch/internal/redact"
	"runwatch/internal/testkit"
	"runwatch/posts"
)

// TestFaultSlackStorms puts Slack in a mood: a long run of 429s, then of 5xx. Warnings are kept
// and delivered once when Slack takes them again; an answer waits out a rate limit rather than
// being dropped.
func TestFaultSlackStorms(t *testing.T) {
	t.Run("answer through a 429 storm", func(t *testing.T) {
		vllm := testkit.VLLM(t)
		e := newHTTPEnv(t, botOpts{Metrics: []string{vllm.URL + "/metrics"}})
		for range 10 {
			e.fake.FailNext("chat.postMessage", testkit.Failure{Status: 429, RetryAfter: "2", Body: `{"ok":false,"error":"ratelimited"}`})
		}
		e.post(t, "/slack/events", testkit.MentionEvent("EvStorm", "<@U111> ETA?", "U222", "C1", "1700000100.000100", ""), nil)
		e.app.wait(20 * time.Second)
		sent := e.fake.Calls("chat.postMessage")
		if len(sent) != 11 || !strings.Contains(sent[10].BlocksText(t), "synth · ETA") {
			t.Fatalf("chat.postMessage calls = %d; want 10 refused and the answer on the 11th", len(sent))
		}
		metrics := readAll(t, mustGet(t, e.srv.URL+"/metrics").Body)
		if want := `runwatch_slack_api_retries_total{method="chat.postMessage",reason="rate_limited"} 10`; !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
		t.Logf("figure: Slack 429 storm (10 in a row, Retry-After 2 s): the answer is posted once, after 10 waits")
	})

	t.Run("warnings through 429 and 5xx storms", func(t *testing.T) {
		ep := testkit.NewFaultEndpoint(t)
		e := newBotEnv(t, botOpts{Metrics: []string{ep.URL()}})
		fake := testkit.NewSlack(t)
		logs := &testkit.LogBuffer{}
		api, waits := newTestAPI(t, fake, redact.Logger(logs.Logger(), redact.New(testkit.BotToken.Reveal())), nil)
		s := posts.NewSampler(e.bot, time.Second, redact.Logger(logs.Logger(), redact.New(testkit.BotToken.Reveal())))
		s.Deliver = Deliver(e.bot, api, nil)
		ctx := context.Background()

		storms := []struct {
			name    string
			failure testkit.Failure
			n       int
			ticks   int // ticks until the warning gets through
			logged  string
		}{
			// 16 waits per try: 40 refusals take three ticks.
			{"429", testkit.Failure{Status: 429, RetryAfter: "1", Body: `{"ok":false,"error":"ratelimited"}`}, 40, 3, "rate limit"},
			// 4 attempts per try: 10 refusals take three ticks.
			{"503", testkit.Failure{Status: 503, Body: "<html>upstream busy</html>"}, 10, 3, "503"},
		}
		for _, st := range storms {
			t.Run(st.name, func(t *testing.T) {
				*waits = nil
				ep.Down()
				s.Tick(ctx) // seen once
				before := len(fake.Calls("chat.postMessage"))
				for range st.n {
					fake.FailNext("chat.postMessage", st.failure)
				}
				for range st.ticks {
					s.Tick(ctx)
				}
				calls := fake.Calls("chat.postMessage")[before:]
				if len(calls) != st.n+1 {
					t.Fatalf("chat.postMessage calls = %d; want %d refused and the warning once", len(calls), st.n)
				}
				if !strings.Contains(calls[st.n].Form.Get("text"), "is failing") {
					t.Errorf("delivered = %q; want the source-down warning", calls[st.n].Form.Get("text"))
				}
				s.Tick(ctx)
				if n := len(fake.Calls("chat.postMessage")[before:]); n != st.n+1 {
					t.Errorf("after the storm chat.postMessage calls = %d; want no repeat of the delivered warning", n)
				}
				if !strings.Contains(logs.String(), "warning not delivered; will retry") || !strings.Contains(logs.String(), st.logged) {
					t.Errorf("log lacks the undelivered warning naming %q:\n%s", st.logged, logs.String())
				}
				ep.Up()
				s.Tick(ctx)
				if calls := fake.Calls("chat.postMessage"); !strings.Contains(calls[len(calls)-1].Form.Get("text"), "answers again") {
					t.Errorf("after the endpoint came back: %q; want the follow-up", calls[len(calls)-1].Form.Get("text"))
				}
				t.Logf("figure: Slack %s storm (%d refusals): the warning is kept and delivered once, on sample %d", st.name, st.n, st.ticks)
			})
		}
		if strings.Contains(logs.String(), testkit.BotToken.Reveal()) {
			t.Errorf("the token reached the log")
		}
	})
}

func mustGet(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// drop closes the current connection without a close frame, as a dying proxy or NAT does.
func (f *socketFake) drop() {
	f.mu.Lock()
	c := f.conn
	f.mu.Unlock()
	c.NetConn().Close()
}

// TestFaultSocketModeDrops drops the Socket Mode connection without warning, with Slack refusing
// the first reconnections, and an envelope lost in the drop. The bot reconnects by itself, and the
// event Slack redelivers on the new connection is answered once.
func TestFaultSocketModeDrops(t *testing.T) {
	vllm := testkit.VLLM(t)
	e := newSocketEnv(t, botOpts{Metrics: []string{vllm.URL + "/metrics"}})
	e.ws.waitFor(t, "the first connection", func() bool { return e.ws.connections() == 1 })

	envelope := func(id, event string) []byte {
		return fmt.Appendf(nil, `{"envelope_id":%q,"type":"events_api","accepts_response_payload":false,"retry_attempt":0,"payload":{"type":"event_callback","team_id":"T111","event_id":%q,`+
			`"event":{"type":"app_mention","channel":"C111","user":"U222","text":"<@U111> ETA?","ts":"1610241800.000100"}}}`, id, event)
	}
	e.fake.FailNext("apps.connections.open", testkit.Failure{Status: 503, Body: "busy"}, testkit.Failure{Status: 429, RetryAfter: "1", Body: `{"ok":false,"error":"ratelimited"}`})
	e.ws.send(envelope("env-lost", "Ev-drop"))
	dropped := time.Now()
	e.ws.drop()
	e.ws.waitFor(t, "a new connection after the drop", func() bool { return e.ws.connections() == 2 })
	reconnected := time.Since(dropped)
	if opens := e.fake.Calls("apps.connections.open"); len(opens) != 4 {
		t.Errorf("apps.connections.open calls = %d; want the first, two refused and the one that worked", len(opens))
	}
	// Slack had no ack for the first envelope (or lost it): it sends the event again.
	e.ws.send(envelope("env-again", "Ev-drop"))
	e.ws.waitAck(t, "env-again")
	e.ws.send(envelope("env-next", "Ev-next"))
	e.ws.waitAck(t, "env-next")
	e.app.wait(10 * time.Second)
	sent := e.fake.Calls("chat.postMessage")
	if len(sent) != 2 {
		t.Fatalf("answers = %d; want 2: the event lost in the drop once, and the next one", len(sent))
	}
	for _, p := range sent {
		if !strings.Contains(p.BlocksText(t), "synth · ETA") {
			t.Errorf("answer = %q; want the ETA", p.BlocksText(t))
		}
	}
	if l := e.logs.String(); !strings.Contains(l, "Socket Mode connection failed; retrying") || !strings.Contains(l, "connected to Slack (Socket Mode)") {
		t.Errorf("log lacks the refused reconnections or the reconnection:\n%s", l)
	}
	t.Logf("figure: Socket Mode dropped (2 reconnections refused): reconnected in %v; the event lost in the drop answered once", reconnected.Round(time.Millisecond))
}
