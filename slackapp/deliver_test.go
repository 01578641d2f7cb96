package slackapp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"runwatch/internal/redact"
	"runwatch/internal/testkit"
	"runwatch/posts"
	"runwatch/state"
)

func TestWarningsThreadedAndRetried(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	vllm := testkit.VLLM(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "engine restarting", http.StatusServiceUnavailable)
			return
		}
		resp, err := http.Get(vllm.URL)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	e := newBotEnv(t, botOpts{Metrics: []string{srv.URL + "/metrics"}})
	fake := testkit.NewSlack(t)
	api, _ := newTestAPI(t, fake, nil, nil)
	api.MaxAttempts = 1
	s := posts.NewSampler(e.bot, time.Second, slog.New(slog.DiscardHandler))
	s.Deliver = Deliver(e.bot, api, nil, 0)
	ctx := context.Background()

	down.Store(true)
	s.Tick(ctx) // seen once: a single failure is not worth a warning
	fake.FailNext("chat.postMessage", testkit.Failure{Status: 500, Body: "down"})
	s.Tick(ctx) // confirmed, but Slack fails: kept for the next tick
	s.Tick(ctx) // delivered
	sent := fake.Calls("chat.postMessage")
	if len(sent) != 2 {
		t.Fatalf("chat.postMessage calls = %d (%v); want the failed warning and its retry", len(sent), fake.Methods())
	}
	warning := sent[1]
	if warning.Form.Get("channel") != "#synth" || warning.Form.Get("thread_ts") != "" || !strings.Contains(warning.Form.Get("text"), "is failing") {
		t.Errorf("warning = %v; want a new message in #synth saying the metrics endpoint is failing", warning.Form)
	}
	warningTS := fmt.Sprintf("1700000000.%06d", len(fake.Calls("")))

	down.Store(false)
	s.Tick(ctx)
	sent = fake.Calls("chat.postMessage")
	if len(sent) != 3 {
		t.Fatalf("chat.postMessage calls = %d; want the follow-up after recovery", len(sent))
	}
	follow := sent[2]
	if follow.Form.Get("channel") != "CSYNTH" || follow.Form.Get("thread_ts") != warningTS || !strings.Contains(follow.Form.Get("text"), "Resolved") {
		t.Errorf("follow-up = %v; want 'Resolved' in the warning's thread %s (channel id CSYNTH)", follow.Form, warningTS)
	}
}

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
		e.app.Wait(20 * time.Second)
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
				// A sampler of its own: the same source down again within minutes would be flapping.
				s := posts.NewSampler(e.bot, time.Second, redact.Logger(logs.Logger(), redact.New(testkit.BotToken.Reveal())))
				s.Deliver = Deliver(e.bot, api, nil, 0)
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

// TestFollowUpRetriedAfterA5xx loses a "Resolved" to a short 5xx: it is delivered on the next sample, in
// the warning's thread, once.
func TestFollowUpRetriedAfterA5xx(t *testing.T) {
	ep := testkit.NewFaultEndpoint(t)
	e := newBotEnv(t, botOpts{Metrics: []string{ep.URL()}})
	fake := testkit.NewSlack(t)
	api, _ := newTestAPI(t, fake, nil, nil)
	api.MaxAttempts = 1
	s := posts.NewSampler(e.bot, time.Second, slog.New(slog.DiscardHandler))
	s.Deliver = Deliver(e.bot, api, nil, 0)
	ctx := context.Background()
	ep.Down()
	s.Tick(ctx)
	s.Tick(ctx) // confirmed: the warning
	warnings := fake.Calls("chat.postMessage")
	if len(warnings) != 1 {
		t.Fatalf("chat.postMessage calls = %d; want the warning", len(warnings))
	}
	ep.Up()
	fake.FailNext("chat.postMessage", testkit.Failure{Status: 503, Body: "upstream busy"})
	s.Tick(ctx) // recovered; the follow-up fails
	s.Tick(ctx) // and is tried again
	s.Tick(ctx)
	var resolved []testkit.Call
	for _, c := range fake.Calls("chat.postMessage") {
		if strings.Contains(c.Form.Get("text"), "Resolved") {
			resolved = append(resolved, c)
		}
	}
	if len(resolved) != 2 {
		t.Fatalf("'Resolved' posts = %d; want the one refused and its retry", len(resolved))
	}
	if got := resolved[1]; got.Form.Get("thread_ts") != warnings[0].TS || got.Form.Get("metadata") != resolved[0].Form.Get("metadata") {
		t.Errorf("retried follow-up = thread %q metadata %s; want the warning's thread %q under the first try's id %s",
			got.Form.Get("thread_ts"), got.Form.Get("metadata"), warnings[0].TS, resolved[0].Form.Get("metadata"))
	}
}

// TestOneCopyAfterACrashWhileSlackIsSlow kills a sampler (its state directory copied as it was, the process
// left behind) while Slack is still taking its warning, and restarts it over the copy at once: the
// restarted sampler does not ask Slack whether the post landed (it has not yet) before the call's timeout
// (the killed process's, whatever the new one's) has passed, then finds it there. One copy of the warning, whose follow-ups thread under it.
func TestOneCopyAfterACrashWhileSlackIsSlow(t *testing.T) {
	ep := testkit.NewFaultEndpoint(t)
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := testkit.NewClock(t0)
	e := newBotEnv(t, botOpts{Metrics: []string{ep.URL()}, Clock: clock})
	fake := testkit.NewSlack(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	var taken atomic.Int32
	fake.Hold = func() {
		if taken.Add(1) == 1 {
			close(arrived)
			<-release // Slack is slow with the first post
		}
	}
	api, _ := newTestAPI(t, fake, nil, nil)
	sampler := func(dir string) *posts.Sampler {
		st, err := state.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		s := posts.NewSampler(e.bot, time.Second, slog.New(slog.DiscardHandler))
		s.State = st
		s.LoadState()
		s.Deliver = Deliver(e.bot, api, nil, 0)
		s.Find = Find(e.bot, api)
		return s
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	a := sampler(dirA)
	ctx := context.Background()
	ep.Down()
	a.Tick(ctx) // seen once
	clock.Set(t0.Add(time.Second))
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		a.Tick(ctx) // confirmed: recorded as an intent, then posted; Slack takes its time
	}()
	<-arrived
	// kill -9: what is on disk is all the next process knows.
	b, err := os.ReadFile(filepath.Join(dirA, "alerts.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirB, "alerts.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	restarted := sampler(dirB)
	// Restarted with a shorter RUNWATCH_POST_TIMEOUT: the call the kill interrupted could still take the
	// killed process's 30 s, recorded with its intent, so 10 s on it is not looked up either.
	restarted.PostTimeout = time.Second
	clock.Set(t0.Add(2 * time.Second))
	restarted.Tick(ctx)
	clock.Set(t0.Add(10 * time.Second))
	restarted.Tick(ctx)
	close(release) // Slack takes the first post at last
	<-killed
	clock.Set(t0.Add(time.Minute)) // past the call's timeout (posts.DeliverTimeout)
	restarted.Tick(ctx)
	var warnings []testkit.Call
	for _, c := range fake.Calls("chat.postMessage") {
		if strings.Contains(c.Form.Get("text"), "is failing") {
			warnings = append(warnings, c)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("copies of the warning = %d; want 1", len(warnings))
	}
	ep.Up()
	clock.Set(t0.Add(time.Minute + time.Second))
	restarted.Tick(ctx)
	last := fake.Calls("chat.postMessage")
	if f := last[len(last)-1]; !strings.Contains(f.Form.Get("text"), "Resolved") || f.Form.Get("thread_ts") != warnings[0].TS {
		t.Errorf("follow-up = %q in thread %q; want 'Resolved' under the one warning %s", f.Form.Get("text"), f.Form.Get("thread_ts"), warnings[0].TS)
	}
	t.Logf("figure: killed while Slack was still taking a warning, restarted at once: %d copy", len(warnings))
}
