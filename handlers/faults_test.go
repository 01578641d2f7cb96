package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"runwatch/conversation"
	"runwatch/internal/redact"
	"runwatch/internal/testkit"
	"runwatch/internal/tmpfs"
	"runwatch/monitor"
)

// faultPosts collects what the sampler delivers.
type faultPosts struct {
	mu    sync.Mutex
	posts []Post
}

func (f *faultPosts) deliver(_ context.Context, p Post) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts = append(f.posts, p)
	return fmt.Sprintf("1700000000.%06d", len(f.posts)), nil
}

func (f *faultPosts) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.posts)
}

// since returns the posts of kind delivered after the first n.
func (f *faultPosts) since(n int, kind string) []Post {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Post
	for _, p := range f.posts[n:] {
		if p.Kind == kind {
			out = append(out, p)
		}
	}
	return out
}

// faultSampler is a sampler over e's bot that delivers into posts and keeps each tick's evaluations.
func faultSampler(e *botEnv, posts *faultPosts) (*Sampler, *[]monitor.Evaluation) {
	s := NewSampler(e.bot, time.Second, slog.New(slog.DiscardHandler))
	s.Deliver = posts.deliver
	last := &[]monitor.Evaluation{}
	s.OnEvaluate = func(evs []monitor.Evaluation) { *last = evs }
	return s, last
}

// faultBot is a bot over one endpoint with its sampler and what the sampler delivered.
type faultBot struct {
	e     *botEnv
	posts *faultPosts
	s     *Sampler
	evs   *[]monitor.Evaluation
}

func newFaultBot(t *testing.T, ep *testkit.FaultEndpoint, timeout time.Duration) *faultBot {
	e := newBotEnv(t, botOpts{Metrics: []string{ep.URL()}, Timeout: timeout})
	posts := &faultPosts{}
	s, evs := faultSampler(e, posts)
	s.Tick(context.Background())
	if a := faultAsk(e, "ETA?"); strings.Contains(a, "metrics "+ep.URL()) || !strings.Contains(a, "Servers: 1 of 1 up") {
		t.Fatalf("healthy answer:\n%s\nwant the engine up and no problem", a)
	}
	return &faultBot{e: e, posts: posts, s: s, evs: evs}
}

// TestFaultMetricsEndpoint breaks the run's metrics endpoint each way real ones break. In each
// case the bot keeps answering from the log, names the endpoint and what is wrong (in the answer
// and in a warning), and once the endpoint is back it says so and answers from it again.
//
// Only the endpoint that never answers meets the probe timeout, so only that case runs with a short
// one (its work is a loopback connect and a small log read, far inside a second even under -race on
// a loaded machine); the others do real work (reading 8 MiB of a 50 MiB body) and get a timeout the
// work cannot reach.
func TestFaultMetricsEndpoint(t *testing.T) {
	ep := testkit.NewFaultEndpoint(t)
	const short, long = time.Second, time.Minute
	ctx := context.Background()
	probe := "metrics " + ep.URL()
	bots := map[time.Duration]*faultBot{}
	botFor := func(timeout time.Duration) *faultBot {
		if bots[timeout] == nil {
			bots[timeout] = newFaultBot(t, ep, timeout)
		}
		return bots[timeout]
	}

	faults := []struct {
		name       string
		timeout    time.Duration
		make, heal func()
		want       string
		answers    bool // the server answers, not with metrics: up, so neither "down" nor "0 of 1 up"
	}{
		{"down", long, ep.Down, ep.Up, "connection refused", false},
		{"slow beyond the timeout", short, ep.Set("slow"), ep.Set("ok"), "no answer within " + short.String(), false},
		{"garbage", long, ep.Set("garbage"), ep.Set("ok"), "not Prometheus text", true},
		{"HTTP 500", long, ep.Set("error"), ep.Set("ok"), "HTTP 500 Internal Server Error", true},
		{"a 50 MiB body", long, ep.Set("huge"), ep.Set("ok"), "body larger than 8 MiB", true},
	}
	for _, fc := range faults {
		t.Run(fc.name, func(t *testing.T) {
			fb := botFor(fc.timeout)
			e, posts, s := fb.e, fb.posts, fb.s
			n := posts.count()
			fc.make()
			s.Tick(ctx)
			s.Tick(ctx) // a failure seen twice is worth a warning
			warnings := posts.since(n, AlertProbe)
			if len(warnings) != 1 {
				t.Fatalf("warnings after two failing samples = %+v; want one", warnings)
			}
			title, servers, line, not := "source down", "Servers: 0 of 1 up", "is down (below)", "answers, but not with metrics"
			if fc.answers {
				title, servers, line, not = "source answers, but not with metrics", "Servers: 0 of 1 serving metrics", "answers, but not with metrics (below)", "is down"
			}
			if miss, ok := faultContainsAll(warnings[0].Message.Text(), ep.URL(), fc.want, title); !ok {
				t.Errorf("warning:\n%s\nlacks %q", warnings[0].Message.Text(), miss)
			}
			start := time.Now()
			a := faultAsk(e, "ETA?")
			took := time.Since(start)
			if miss, ok := faultContainsAll(a, "300 / 25,000", probe, fc.want, servers, line); !ok {
				t.Errorf("answer while the endpoint is %s:\n%s\nlacks %q", fc.name, a, miss)
			}
			for _, q := range []string{"ETA?", "throughput?", "is vllm up?", "status"} {
				if a := faultAsk(e, q); strings.Contains(a, not) {
					t.Errorf("answer to %q while the endpoint is %s:\n%s\nsays %q", q, fc.name, a, not)
				}
			}

			n = posts.count()
			fc.heal()
			s.Tick(ctx)
			again := "answers again"
			if fc.answers {
				again = "serves metrics again"
			}
			if resolved := posts.since(n, AlertProbe+"_resolved"); len(resolved) != 1 || !strings.Contains(resolved[0].Message.Text(), again) ||
				resolved[0].ThreadRef == "" {
				t.Errorf("after recovery posts = %+v; want one %q in the warning's thread", resolved, again)
			}
			a = faultAsk(e, "ETA?")
			if strings.Contains(a, probe) || !strings.Contains(a, "Servers: 1 of 1 up") {
				t.Errorf("answer after recovery:\n%s\nwant the engine up and no problem", a)
			}
			t.Logf("figure: metrics endpoint %s: ETA answered in %v naming it (probe timeout %v); warning after 2 samples; resolved on the 1st sample after it cleared",
				fc.name, took.Round(time.Millisecond), fc.timeout)
		})
	}

	fb := botFor(long)
	e, posts, s, evs := fb.e, fb.posts, fb.s, fb.evs
	t.Run("counters reset mid-run", func(t *testing.T) {
		s.Tick(ctx)
		s.Tick(ctx)
		n := posts.count()
		ep.Restart()
		s.Tick(ctx)
		s.Tick(ctx)
		if got := posts.since(n, AlertProbe); len(got) > 0 {
			t.Errorf("warnings for a restarted server = %+v; want none (it answers)", got)
		}
		h := e.Mon.History("synth")
		for i := 1; i < len(h); i++ {
			if h[i].GenTokens == nil || h[i-1].GenTokens == nil || *h[i].GenTokens < *h[i-1].GenTokens {
				t.Fatalf("history tokens go %v -> %v at point %d; want totals that only grow across the reset", h[i-1].GenTokens, h[i].GenTokens, i)
			}
		}
		if a := faultAsk(e, "ETA?"); strings.Contains(a, probe) || !strings.Contains(a, "Servers: 1 of 1 up") {
			t.Errorf("answer after the reset:\n%s\nwant the engine up and no problem", a)
		}
		// The tick that saw the reset said so.
		ep.Restart()
		s.Tick(ctx)
		if len(*evs) != 1 || !strings.Contains(strings.Join((*evs)[0].Run.Notices, "\n"), "restarted") {
			t.Errorf("notices of the sample that saw a reset = %v; want the restart noted", (*evs)[0].Run.Notices)
		}
		t.Logf("figure: metrics counters reset: totals carried over (%d points, never decreasing), restart noted, no warning", len(h))
	})
}

// TestFaultJobLog does to the job's log what happens to logs: deleted, replaced by a FIFO, made
// unreadable, given a 10 MB line, rotated, truncated. Failures are named in answers and warnings
// while the engines keep answering; each recovers by itself.
func TestFaultJobLog(t *testing.T) {
	vllm := testkit.VLLM(t)
	// No fault here meets the probe timeout (a FIFO is opened non-blocking), and a 10 MB line is
	// real work: the timeout is one the work cannot reach.
	e := newBotEnv(t, botOpts{Metrics: []string{vllm.URL + "/metrics"}, Timeout: time.Minute})
	posts := &faultPosts{}
	s, evs := faultSampler(e, posts)
	ctx := context.Background()
	probe := "log " + e.Log
	appendLine := func(line string) {
		f, err := os.OpenFile(e.Log, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
	}
	done := 300
	rewrite := func() {
		done += 10
		e.WriteLog(t, done, 25000)
	}
	s.Tick(ctx)

	failures := []struct {
		name       string
		root       bool // meaningful as root
		make, heal func()
		want       string
	}{
		{"deleted", true, func() { os.Remove(e.Log) }, rewrite, "does not exist"},
		{"replaced by a FIFO", true, func() {
			os.Remove(e.Log)
			if err := syscall.Mkfifo(e.Log, 0o644); err != nil {
				t.Fatal(err)
			}
		}, func() {
			os.Remove(e.Log)
			rewrite()
		}, "not a regular file (a named pipe)"},
		{"permission denied", false, func() { os.Chmod(e.Log, 0) }, func() { os.Chmod(e.Log, 0o644) }, "permission denied"},
		{"a 10 MB line", true, func() {
			appendLine(strings.Repeat("x", 10<<20) + "\n")
		}, func() {
			done += 10
			appendLine(fmt.Sprintf("Progress: %d/25000 (0 errors), 0.7 req/s\n", done))
		}, "the last line is longer than that"},
	}
	for _, fc := range failures {
		t.Run(fc.name, func(t *testing.T) {
			if !fc.root && os.Geteuid() == 0 {
				t.Skip("root reads files regardless of their mode; monitor's TestFaultLogPermissionDenied reads as nobody in a child process")
			}
			n := posts.count()
			fc.make()
			s.Tick(ctx)
			s.Tick(ctx)
			warnings := posts.since(n, AlertProbe)
			if len(warnings) != 1 {
				t.Fatalf("warnings after two failing samples = %+v; want one", warnings)
			}
			if miss, ok := faultContainsAll(warnings[0].Message.Text(), e.Log, fc.want); !ok {
				t.Errorf("warning:\n%s\nlacks %q", warnings[0].Message.Text(), miss)
			}
			start := time.Now()
			a := faultAsk(e, "ETA?")
			took := time.Since(start)
			if miss, ok := faultContainsAll(a, probe, fc.want, "Servers: 1 of 1 up"); !ok {
				t.Errorf("answer while the log is %s:\n%s\nlacks %q", fc.name, a, miss)
			}

			n = posts.count()
			fc.heal()
			s.Tick(ctx)
			if resolved := posts.since(n, AlertProbe+"_resolved"); len(resolved) != 1 || !strings.Contains(resolved[0].Message.Text(), "answers again") {
				t.Errorf("after recovery posts = %+v; want one 'answers again'", resolved)
			}
			a = faultAsk(e, "ETA?")
			if want := fmt.Sprintf("%d / 25,000", done); strings.Contains(a, probe) || !strings.Contains(a, want) {
				t.Errorf("answer after recovery:\n%s\nwant %s done and no problem", a, want)
			}
			t.Logf("figure: log %s: ETA answered in %v naming the log; warning after 2 samples; resolved on the 1st sample after it cleared", fc.name, took.Round(time.Millisecond))
		})
	}

	// Rotation and truncation are not failures: the bot follows the file and says what happened.
	events := []struct {
		name   string
		make   func()
		notice string
	}{
		{"rotated", func() {
			if err := os.Rename(e.Log, e.Log+".1"); err != nil {
				t.Fatal(err)
			}
			rewrite()
		}, "was rotated"},
		{"truncated", func() {
			done += 10
			if err := os.WriteFile(e.Log, fmt.Appendf(nil, "Progress: %d/25000\n", done), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "was truncated"},
	}
	for _, ev := range events {
		t.Run(ev.name, func(t *testing.T) {
			s.Tick(ctx)
			n := posts.count()
			ev.make()
			s.Tick(ctx)
			if got := strings.Join((*evs)[0].Run.Notices, "\n"); !strings.Contains(got, ev.notice) {
				t.Errorf("notices = %q; want %q", got, ev.notice)
			}
			if got := posts.since(n, AlertProbe); len(got) > 0 {
				t.Errorf("warnings = %+v; want none for a %s log", got, ev.name)
			}
			if a, want := faultAsk(e, "ETA?"), fmt.Sprintf("%d / 25,000", done); strings.Contains(a, probe) || !strings.Contains(a, want) {
				t.Errorf("answer after the log was %s:\n%s\nwant %s done and no problem", ev.name, a, want)
			}
			t.Logf("figure: log %s: followed on the next sample, noted, no warning", ev.name)
		})
	}
}

// TestFaultStateDirReadOnly makes the state directory read-only under a running bot: answers go
// on, an admin's snooze holds and says it is not saved, a warning names the state directory; once
// it is writable again the warning resolves and a restart has the snooze.
func TestFaultStateDirReadOnly(t *testing.T) {
	stateDir := tmpfs.Mount(t, "256k")
	vllm := testkit.VLLM(t)
	opts := botOpts{Metrics: []string{vllm.URL + "/metrics"}, StateDir: stateDir}
	e := newBotEnv(t, opts)
	posts := &faultPosts{}
	s, _ := faultSampler(e, posts)
	ctx := context.Background()
	s.Tick(ctx)

	tmpfs.Remount(t, stateDir, "ro")
	rep := e.bot.Ask(ctx, conversation.Request{Text: "snooze 2h", Source: "console"})
	if miss, ok := faultContainsAll(rep.Message.Text(), "snoozed for 2 h", "not saved yet", "read-only file system"); !ok {
		t.Errorf("snooze on a read-only state dir:\n%s\nlacks %q", rep.Message.Text(), miss)
	}
	if _, ok := e.Mon.SnoozedUntil("synth"); !ok {
		t.Fatalf("the snooze does not hold while the state dir is read-only")
	}
	n := posts.count()
	s.Tick(ctx)
	s.Tick(ctx)
	// Snoozed: the warning is held back, but the answers name the state directory.
	if a := faultAsk(e, "ETA?"); !strings.Contains(a, "state: kept in memory, not saved") || !strings.Contains(a, "Servers: 1 of 1 up") {
		t.Errorf("answer on a read-only state dir:\n%s\nwant it to name the state and still answer", a)
	}
	if got := posts.since(n, AlertProbe); len(got) != 0 {
		t.Errorf("warnings while snoozed = %+v; want none", got)
	}
	e.bot.Ask(ctx, conversation.Request{Text: "unsnooze", Source: "console"})
	s.Tick(ctx)
	s.Tick(ctx)
	warnings := posts.since(n, AlertProbe)
	if len(warnings) != 1 || !strings.Contains(warnings[0].Message.Text(), "not on disk") || !strings.Contains(warnings[0].Message.Text(), "read-only file system") {
		t.Fatalf("warnings on a read-only state dir = %+v; want one naming it", warnings)
	}
	e.bot.Ask(ctx, conversation.Request{Text: "snooze 3h", Source: "console"})

	tmpfs.Remount(t, stateDir, "rw")
	n = posts.count()
	s.Tick(ctx)
	if resolved := posts.since(n, AlertProbe+"_resolved"); len(resolved) != 0 {
		t.Errorf("resolved posts while snoozed = %+v; want none", resolved)
	}
	if a := faultAsk(e, "ETA?"); strings.Contains(a, "state:") {
		t.Errorf("answer after the state dir recovered:\n%s\nwant no state problem", a)
	}
	// A restart over the recovered directory has the snooze set while it was read-only.
	second := newBotEnv(t, opts)
	if u, ok := second.Mon.SnoozedUntil("synth"); !ok || u.Sub(time.Now()) < 2*time.Hour {
		t.Errorf("after a restart the snooze is %v, %v; want the 3 h one set while the state dir was read-only", u, ok)
	}
	t.Logf("figure: state dir read-only: answers go on naming it, snooze holds in memory, warning after 2 samples, saved on the 1st sample after remount rw")
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
		e.app.wait(20 * time.Second)
		posts := e.fake.Calls("chat.postMessage")
		if len(posts) != 11 || !strings.Contains(posts[10].BlocksText(t), "synth · ETA") {
			t.Fatalf("chat.postMessage calls = %d; want 10 refused and the answer on the 11th", len(posts))
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
		s := NewSampler(e.bot, time.Second, redact.Logger(logs.Logger(), redact.New(testkit.BotToken.Reveal())))
		s.Deliver = slackDeliver(e.bot, api, nil)
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
	posts := e.fake.Calls("chat.postMessage")
	if len(posts) != 2 {
		t.Fatalf("answers = %d; want 2: the event lost in the drop once, and the next one", len(posts))
	}
	for _, p := range posts {
		if !strings.Contains(p.BlocksText(t), "synth · ETA") {
			t.Errorf("answer = %q; want the ETA", p.BlocksText(t))
		}
	}
	if l := e.logs.String(); !strings.Contains(l, "Socket Mode connection failed; retrying") || !strings.Contains(l, "connected to Slack (Socket Mode)") {
		t.Errorf("log lacks the refused reconnections or the reconnection:\n%s", l)
	}
	t.Logf("figure: Socket Mode dropped (2 reconnections refused): reconnected in %v; the event lost in the drop answered once", reconnected.Round(time.Millisecond))
}

// faultAsk asks the bot a question from the console and returns the answer's text.
func faultAsk(e *botEnv, q string) string {
	return e.bot.Ask(context.Background(), conversation.Request{Text: q, Source: "console"}).Message.Text()
}

// faultContainsAll reports the first of want that s lacks.
func faultContainsAll(s string, want ...string) (string, bool) {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return w, false
		}
	}
	return "", true
}
