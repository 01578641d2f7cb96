package posts_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"runwatch/conversation"
	"runwatch/internal/testkit"
	"runwatch/internal/tmpfs"
	"runwatch/monitor"
	"runwatch/posts"
)

// TestSamplerSurvivesAPanic: a sample that panics (here in the evaluation hook, standing in for a state file
// or a sample nobody foresaw) is logged with its stack and the sampler goes on to the next; it stopped the
// whole bot before, and again on every restart.
func TestSamplerSurvivesAPanic(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	logs := &testkit.LogBuffer{}
	s := posts.NewSampler(e.bot, time.Millisecond, logs.Logger())
	var ticks atomic.Int32
	again := make(chan struct{})
	s.OnEvaluate = func([]monitor.Evaluation) {
		switch ticks.Add(1) {
		case 1:
			panic("a sample nobody foresaw")
		case 2:
			close(again)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	select {
	case <-again:
	case <-time.After(30 * time.Second):
		t.Fatal("no sample after the one that panicked")
	}
	cancel()
	<-done
	if !strings.Contains(logs.String(), "a sample failed with a panic") || !strings.Contains(logs.String(), "a sample nobody foresaw") {
		t.Errorf("log = %q; want the panic logged", logs.String())
	}
}

// faultPosts collects what the sampler delivers.
type faultPosts struct {
	mu   sync.Mutex
	sent []posts.Post
}

// faultSampler is a sampler over e's bot that delivers into posts and keeps each tick's evaluations.
func faultSampler(e *botEnv, sent *faultPosts) (*posts.Sampler, *[]monitor.Evaluation) {
	s := posts.NewSampler(e.bot, time.Second, slog.New(slog.DiscardHandler))
	s.Deliver = sent.deliver
	last := &[]monitor.Evaluation{}
	s.OnEvaluate = func(evs []monitor.Evaluation) { *last = evs }
	return s, last
}

// faultBot is a bot over one endpoint with its sampler and what the sampler delivered.
type faultBot struct {
	e    *botEnv
	sent *faultPosts
	s    *posts.Sampler
	evs  *[]monitor.Evaluation
}

func newFaultBot(t *testing.T, ep *testkit.FaultEndpoint, timeout time.Duration) *faultBot {
	e := newBotEnv(t, botOpts{Metrics: []string{ep.URL()}, Timeout: timeout})
	sent := &faultPosts{}
	s, evs := faultSampler(e, sent)
	s.Tick(context.Background())
	if a := faultAsk(e, "ETA?"); strings.Contains(a, "metrics "+ep.URL()) || !strings.Contains(a, "Servers: 1 of 1 up") {
		t.Fatalf("healthy answer:\n%s\nwant the engine up and no problem", a)
	}
	return &faultBot{e: e, sent: sent, s: s, evs: evs}
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
	t.Parallel()
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
			// A sampler of its own: one fault after another on the same source within minutes would be
			// the same warning flapping, and this is each fault's own warning.
			fb.s, fb.evs = faultSampler(fb.e, fb.sent)
			e, sent, s := fb.e, fb.sent, fb.s
			n := sent.count()
			fc.make()
			s.Tick(ctx)
			s.Tick(ctx) // a failure seen twice is worth a warning
			warnings := sent.since(n, posts.AlertProbe)
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

			n = sent.count()
			fc.heal()
			s.Tick(ctx)
			again := "answers again"
			if fc.answers {
				again = "serves metrics again"
			}
			if resolved := sent.since(n, posts.AlertProbe+"_resolved"); len(resolved) != 1 || !strings.Contains(resolved[0].Message.Text(), again) ||
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
	e, sent, s, evs := fb.e, fb.sent, fb.s, fb.evs
	t.Run("counters reset mid-run", func(t *testing.T) {
		s.Tick(ctx)
		s.Tick(ctx)
		n := sent.count()
		ep.Restart()
		s.Tick(ctx)
		s.Tick(ctx)
		if got := sent.since(n, posts.AlertProbe); len(got) > 0 {
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
	sent := &faultPosts{}
	s, evs := faultSampler(e, sent)
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
			// A sampler of its own: each fault's own warning, not the log's flapping.
			s, evs = faultSampler(e, sent)
			n := sent.count()
			fc.make()
			s.Tick(ctx)
			s.Tick(ctx)
			warnings := sent.since(n, posts.AlertProbe)
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

			n = sent.count()
			fc.heal()
			s.Tick(ctx)
			if resolved := sent.since(n, posts.AlertProbe+"_resolved"); len(resolved) != 1 || !strings.Contains(resolved[0].Message.Text(), "answers again") {
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
			n := sent.count()
			ev.make()
			s.Tick(ctx)
			if got := strings.Join((*evs)[0].Run.Notices, "\n"); !strings.Contains(got, ev.notice) {
				t.Errorf("notices = %q; want %q", got, ev.notice)
			}
			if got := sent.since(n, posts.AlertProbe); len(got) > 0 {
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
	sent := &faultPosts{}
	s, _ := faultSampler(e, sent)
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
	n := sent.count()
	s.Tick(ctx)
	s.Tick(ctx)
	// Snoozed: the warning is held back, but the answers name the state directory.
	if a := faultAsk(e, "ETA?"); !strings.Contains(a, "state: kept in memory, not saved") || !strings.Contains(a, "Servers: 1 of 1 up") {
		t.Errorf("answer on a read-only state dir:\n%s\nwant it to name the state and still answer", a)
	}
	if got := sent.since(n, posts.AlertProbe); len(got) != 0 {
		t.Errorf("warnings while snoozed = %+v; want none", got)
	}
	e.bot.Ask(ctx, conversation.Request{Text: "unsnooze", Source: "console"})
	s.Tick(ctx)
	s.Tick(ctx)
	warnings := sent.since(n, posts.AlertProbe)
	if len(warnings) != 1 || !strings.Contains(warnings[0].Message.Text(), "not on disk") || !strings.Contains(warnings[0].Message.Text(), "read-only file system") {
		t.Fatalf("warnings on a read-only state dir = %+v; want one naming it", warnings)
	}
	e.bot.Ask(ctx, conversation.Request{Text: "snooze 3h", Source: "console"})

	tmpfs.Remount(t, stateDir, "rw")
	n = sent.count()
	s.Tick(ctx)
	if resolved := sent.since(n, posts.AlertProbe+"_resolved"); len(resolved) != 0 {
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

// soakHour is one line of testdata/soak's output.
type soakHour struct {
	Hour        int     `json:"hour"`
	RSSMiB      float64 `json:"rss_mib"`
	PeakMiB     float64 `json:"peak_mib"`
	HeapMiB     float64 `json:"heap_mib"`
	StateMaxKiB float64 `json:"state_max_kib"`
	StateKiB    float64 `json:"state_kib"`
	History     int     `json:"history"`
	AskMs       float64 `json:"ask_ms"`
	AskKiB      float64 `json:"ask_kib"`
	TickMs      float64 `json:"tick_ms"`
}

// TestSoak samples 10 simulated runs every 30 simulated seconds on a fake clock, asking a question
// every 5 simulated minutes, in a child process built without the race detector (testdata/soak),
// so its memory is the bot's own. Memory stays under 60 MiB, each run's state file under 5 MiB,
// and once the history has reached its bound neither memory, state nor the work of an answer
// grows any more.
//
// By default it covers 8 simulated hours with the history bounded at 200 points, so the bound is
// reached, compacted and reached again a dozen times in well under a minute. RUNWATCH_SOAK_HOURS=168
// runs the full week with the real bound (2,000 points): 10 to 20 minutes on 2 cores.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: builds and runs testdata/soak")
	}
	if raceDetector {
		// The soak runs in a child built without the race detector, so that its memory is the bot's own; this
		// process only waits for it. Under -race its 40 s find nothing, and .ci/run runs it without -race.
		t.Skip("soak: its child is built without -race; .ci/run runs it without -race")
	}
	hours, maxHistory := 8, 200
	if s := os.Getenv("RUNWATCH_SOAK_HOURS"); s != "" {
		h, err := strconv.Atoi(s)
		if err != nil || h < 1 {
			t.Fatalf("RUNWATCH_SOAK_HOURS=%q is not a number of hours", s)
		}
		hours = h
		// The week's bound, where it is reached within the first third of the soak (120 samples an hour), so
		// that the hours after the first compaction can be compared; a shorter soak keeps the short one's.
		if hours*120 >= 3*2000 {
			maxHistory = 2000
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "soak")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/soak").CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/soak: %v\n%s", err, out)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-runs", "10", "-hours", strconv.Itoa(hours), "-max-history", strconv.Itoa(maxHistory), "-dir", work)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("soak: %v\n%s", err, stderr.String())
	}
	var hs []soakHour
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var h soakHour
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("soak output %q: %v", sc.Text(), err)
		}
		hs = append(hs, h)
	}
	if len(hs) != hours {
		t.Fatalf("soak reported %d hours; want %d", len(hs), hours)
	}
	bound := maxHistory
	for _, h := range hs {
		if h.PeakMiB >= 60 {
			t.Errorf("hour %d: peak RSS %.1f MiB; want under 60 MiB", h.Hour, h.PeakMiB)
		}
		if h.StateMaxKiB >= 5<<10 {
			t.Errorf("hour %d: a run's state file is %.0f KiB; want under 5 MiB", h.Hour, h.StateMaxKiB)
		}
		if h.History > bound {
			t.Errorf("hour %d: history holds %d points; want at most %d", h.Hour, h.History, bound)
		}
	}

	// Once the history has been compacted the first time, it lives between three quarters of the
	// bound and the bound: the later half of that time must cost no more than the earlier half.
	first := -1
	for i := 1; i < len(hs); i++ {
		if hs[i].History < hs[i-1].History {
			first = i
			break
		}
	}
	if first < 0 || len(hs)-first < 4 {
		t.Fatalf("the history never reached its bound of %d points, or too late to compare (first compaction at hour %d of %d)", bound, first, len(hs))
	}
	mid := first + (len(hs)-first)/2
	a, b := hs[first:mid], hs[mid:]
	peak := func(hs []soakHour, f func(soakHour) float64) float64 {
		m := 0.0
		for _, h := range hs {
			m = max(m, f(h))
		}
		return m
	}
	mean := func(hs []soakHour, f func(soakHour) float64) float64 {
		s := 0.0
		for _, h := range hs {
			s += f(h)
		}
		return s / float64(len(hs))
	}
	heap := func(h soakHour) float64 { return h.HeapMiB }
	stateKiB := func(h soakHour) float64 { return h.StateKiB }
	askKiB := func(h soakHour) float64 { return h.AskKiB }
	if x, y := peak(a, heap), peak(b, heap); y > 1.5*x+2 {
		t.Errorf("live heap grew from %.1f MiB (hours %d-%d) to %.1f MiB (hours %d-%d) with the history at its bound", x, a[0].Hour, a[len(a)-1].Hour, y, b[0].Hour, b[len(b)-1].Hour)
	}
	if x, y := peak(a, stateKiB), peak(b, stateKiB); y > 1.1*x+64 {
		t.Errorf("state directory grew from %.0f KiB to %.0f KiB with the history at its bound", x, y)
	}
	if x, y := mean(a, askKiB), mean(b, askKiB); y > 1.3*x {
		t.Errorf("an answer allocates %.0f KiB late in the soak against %.0f KiB earlier; want no growth", y, x)
	}
	last := hs[len(hs)-1]
	t.Logf("soak: 10 runs, %d h of 30 s samples, history bound %d: peak RSS %.1f MiB, largest state file %.0f KiB (state dir %.0f KiB), "+
		"answer median %.2f ms in hour 1 and %.2f ms in hour %d (%.0f / %.0f KiB allocated), sample of all runs %.1f ms",
		hours, bound, peak(hs, func(h soakHour) float64 { return h.PeakMiB }), peak(hs, func(h soakHour) float64 { return h.StateMaxKiB }), last.StateKiB,
		hs[0].AskMs, last.AskMs, last.Hour, hs[0].AskKiB, last.AskKiB, last.TickMs)
}

func (f *faultPosts) deliver(_ context.Context, p posts.Post) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, p)
	return fmt.Sprintf("1700000000.%06d", len(f.sent)), nil
}

func (f *faultPosts) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sent)
}

// since returns the posts of kind delivered after the first n (not the edits of a warning's message).
func (f *faultPosts) since(n int, kind string) []posts.Post {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []posts.Post
	for _, p := range f.sent[n:] {
		if p.Kind == kind && p.Edit == "" {
			out = append(out, p)
		}
	}
	return out
}

// botOpts shape a botEnv.
type botOpts = testkit.Options

// botEnv is a bot over testkit's world: one run, "synth", with real probes.
type botEnv struct {
	*testkit.World
	bot *conversation.Bot
}

func newBotEnv(t testing.TB, o botOpts) *botEnv {
	t.Helper()
	w := testkit.NewWorld(t, o)
	return &botEnv{World: w, bot: conversation.NewBot(w.Mon, w.Loc, w.Env)}
}
