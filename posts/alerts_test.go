package posts_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/botmetrics"
	"runwatch/internal/testkit"
	"runwatch/internal/testkit/goldenfile"
	"runwatch/monitor"
	"runwatch/posts"
	"runwatch/probes"
	"runwatch/reports"
	"runwatch/sim"
	"runwatch/slackapp"
	"runwatch/state"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

func kinds(ps []posts.Post) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Kind)
	}
	return out
}

func TestAlerterLifecycle(t *testing.T) {
	a := posts.NewAlerter(time.UTC, func(string) string { return "#synth" })
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	never := func(string) bool { return false }

	sent := a.Process([]monitor.Evaluation{testkit.Eval("synth", testkit.Stalled)}, t0, never)
	if len(sent) != 1 || sent[0].Kind != posts.AlertStall || sent[0].Channel != "#synth" || sent[0].ThreadRef != "" {
		t.Fatalf("first stall = %+v; want one new stall warning to #synth", sent)
	}
	a.Delivered(sent[0], "1700000000.000100")

	// Still stalled a minute later: nothing new (cooldown).
	if sent := a.Process([]monitor.Evaluation{testkit.Eval("synth", testkit.Stalled)}, t0.Add(time.Minute), never); len(sent) != 0 {
		t.Errorf("repeat within cooldown = %v; want nothing", kinds(sent))
	}
	// After the cooldown: a reminder in the first warning's thread.
	sent = a.Process([]monitor.Evaluation{testkit.Eval("synth", testkit.Stalled)}, t0.Add(61*time.Minute), never)
	if len(sent) != 1 || sent[0].ThreadRef != "1700000000.000100" || !strings.Contains(sent[0].Message.Mrkdwn(), "Still stall") {
		t.Errorf("after cooldown = %+v; want a reminder in the thread", sent)
	}
	// A failed progress probe is no evidence that the stall is over.
	unknown := testkit.Eval("synth", func(rs *reports.RunStatus) { rs.ETA = nil })
	if sent := a.Process([]monitor.Evaluation{unknown}, t0.Add(62*time.Minute), never); len(sent) != 0 {
		t.Errorf("without an ETA = %v; want no resolution", kinds(sent))
	}
	// Moving again: the warning's own message is edited to resolved, and the follow-up goes in the thread.
	sent = a.Process([]monitor.Evaluation{testkit.Eval("synth", nil)}, t0.Add(70*time.Minute), never)
	if len(sent) != 2 || sent[0].Edit != "1700000000.000100" || sent[1].Kind != posts.AlertStall+"_resolved" || sent[1].ThreadRef != "1700000000.000100" {
		t.Fatalf("recovery = %+v; want the warning edited and a resolved follow-up in the thread", sent)
	}
	if m := sent[0].Message; m.Title != "synth · stalled (resolved)" || m.Controls != nil || !strings.Contains(m.Mrkdwn(), "*Resolved* at") || !strings.Contains(m.Mrkdwn(), "*Stalled* since") {
		t.Errorf("edited warning = %q; want it resolved, its own text kept, no buttons", m.Mrkdwn())
	}
	if !strings.Contains(sent[1].Message.Mrkdwn(), "making progress again") {
		t.Errorf("recovery text = %q", sent[1].Message.Mrkdwn())
	}
	// Resolved, the warning is kept with its thread for its cooldown (a recurrence goes there), then
	// forgotten. (Before the flapping fix it was forgotten at once.)
	if al := a.State.Active["synth/stall"]; len(a.State.Active) != 1 || al == nil || !al.Cleared || al.Ref != "1700000000.000100" {
		t.Errorf("active after recovery = %v; want the stall kept, cleared, with its thread", a.State.Active)
	}
	a.Process([]monitor.Evaluation{testkit.Eval("synth", nil)}, t0.Add(131*time.Minute), never)
	if len(a.State.Active) != 0 {
		t.Errorf("active a cooldown after recovery = %v; want it forgotten", a.State.Active)
	}
}

func TestAlerterConfirmsFlakyProbes(t *testing.T) {
	a := posts.NewAlerter(time.UTC, nil)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	never := func(string) bool { return false }
	down := testkit.Eval("synth", func(rs *reports.RunStatus) {
		rs.Problems = []reports.Problem{{Probe: "metrics http://gpu-1:8000/metrics", Error: "connection refused"}}
	})
	if sent := a.Process([]monitor.Evaluation{down}, t0, never); len(sent) != 0 {
		t.Errorf("one failed scrape = %v; want no warning yet", kinds(sent))
	}
	sent := a.Process([]monitor.Evaluation{down}, t0.Add(30*time.Second), never)
	if len(sent) != 1 || sent[0].Kind != posts.AlertProbe || !strings.Contains(sent[0].Message.Mrkdwn(), "connection refused") {
		t.Errorf("second failed scrape = %+v; want a probe_down warning naming the error", sent)
	}
	// A single failure that recovers before confirmation never posts a follow-up either.
	b := posts.NewAlerter(time.UTC, nil)
	b.Process([]monitor.Evaluation{down}, t0, never)
	if sent := b.Process([]monitor.Evaluation{testkit.Eval("synth", nil)}, t0.Add(30*time.Second), never); len(sent) != 0 {
		t.Errorf("unconfirmed then fine = %v; want silence", kinds(sent))
	}
}

func TestAlerterSnoozeAndEvidence(t *testing.T) {
	a := posts.NewAlerter(time.UTC, nil)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	snoozed := true
	isSnoozed := func(string) bool { return snoozed }
	if sent := a.Process([]monitor.Evaluation{testkit.Eval("synth", testkit.ProtectedWrite)}, t0, isSnoozed); len(sent) != 0 {
		t.Errorf("snoozed = %v; want silence", kinds(sent))
	}
	// Unsnoozed while the condition still holds: it is reported now.
	snoozed = false
	sent := a.Process([]monitor.Evaluation{testkit.Eval("synth", testkit.ProtectedWrite)}, t0.Add(time.Minute), isSnoozed)
	if len(sent) != 1 || sent[0].Kind != posts.AlertProtected {
		t.Fatalf("after unsnooze = %v; want the protected write", kinds(sent))
	}
	a.Delivered(sent[0], "ts1")
	// The /proc scan failed: no warning either way.
	scanFailed := testkit.Eval("synth", func(rs *reports.RunStatus) {
		rs.Problems = []reports.Problem{{Probe: "writers", Error: "scan /proc: permission denied"}}
	})
	if sent := a.Process([]monitor.Evaluation{scanFailed}, t0.Add(2*time.Minute), isSnoozed); len(sent) != 0 {
		t.Errorf("scan failed = %v; want the warning neither repeated nor resolved", kinds(sent))
	}
	sent = a.Process([]monitor.Evaluation{testkit.Eval("synth", nil)}, t0.Add(3*time.Minute), isSnoozed)
	if len(sent) != 2 || sent[0].Edit != "ts1" || sent[1].ThreadRef != "ts1" || !strings.Contains(sent[1].Message.Mrkdwn(), "nothing writes to /shared any more") {
		t.Errorf("resolved = %+v; want the warning edited and the follow-up in its thread", sent)
	}
}

func TestAlerterFinishedOnceAndUndelivered(t *testing.T) {
	a := posts.NewAlerter(time.UTC, nil)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	never := func(string) bool { return false }
	done := testkit.Eval("synth", func(rs *reports.RunStatus) {
		rs.ETA = &reports.ETA{State: reports.StateDone, Reason: "all done"}
		rs.Progress = &reports.Progress{Done: 25000, Total: 25000}
	})
	sent := a.Process([]monitor.Evaluation{done}, t0, never)
	if len(sent) != 1 || sent[0].Kind != posts.AlertFinished {
		t.Fatalf("finished = %v", kinds(sent))
	}
	// The post failed: it is tried again next time, not lost.
	a.Undelivered(sent[0])
	if sent := a.Process([]monitor.Evaluation{done}, t0.Add(30*time.Second), never); len(sent) != 1 {
		t.Fatalf("retry after a failed post = %v; want it again", kinds(sent))
	}
	for i := 2; i < 10; i++ {
		if sent := a.Process([]monitor.Evaluation{done}, t0.Add(time.Duration(i)*25*time.Hour), never); len(sent) != 0 {
			t.Fatalf("finished announced again on day %d: %v", i, kinds(sent))
		}
	}
}

// TestAlerterStateFromBeforeFlapping: an alerts.json written before recurrences and flapping were
// tracked (no confirmed, recurring or downs fields) does not make a held condition post again.
func TestAlerterStateFromBeforeFlapping(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	a := posts.NewAlerter(time.UTC, func(string) string { return "#synth" })
	a.State.Active["synth/stall"] = &posts.ActiveAlert{Kind: posts.AlertStall, Run: "synth", Since: t0, Seen: 5, Posted: t0, Ref: "ts1", Summary: "no progress"}
	never := func(string) bool { return false }
	if sent := a.Process([]monitor.Evaluation{testkit.Eval("synth", testkit.Stalled)}, t0.Add(10*time.Minute), never); len(sent) != 0 {
		t.Errorf("held stall from an old state file = %+v; want nothing within its cooldown", sent)
	}
}

// TestWarningsGolden runs the alerter over the same fake status, sampled twice (a failing source
// is worth a warning the second time), and compares every warning it posts with
// testdata/replies/warning_<kind>.{txt,blocks.json}.golden.
func TestWarningsGolden(t *testing.T) {
	runs := testkit.ReplyRuns(t)
	a := posts.NewAlerter(time.UTC, func(string) string { return "#synth" })
	// The finish moved +1 h 46 min against the ETA the channel was last given, ten minutes before, as the
	// detector explains it (completions 650 → 1,066 tokens at a steady 1,386 tok/s).
	at := float64(runs.At.Unix())
	shift := reports.Shift{At: at, FromAt: at - 600, FromShown: true, FromFinish: at + 4.5*3600 - 6360, ToFinish: at + 4.5*3600,
		TokensPerItemShare: 1, From: reports.ShiftParts{ItemsLeft: 25000, TokensPerItem: 650, TokensPerS: 1386},
		To:     reports.ShiftParts{ItemsLeft: 24700, TokensPerItem: 1066, TokensPerS: 1386},
		Reason: "finish moved +1 h 46 min (2 h 44 min → 4 h 30 min left): completions grew 650 → 1,066 tokens (+64%): +1 h 46 min"}
	ev := monitor.Evaluation{Run: runs.RS, Sample: true, Shift: &shift}
	notSnoozed := func(string) bool { return false }
	sent := a.Process([]monitor.Evaluation{ev}, runs.At, notSnoozed)
	sent = append(sent, a.Process([]monitor.Evaluation{ev}, runs.At.Add(30*time.Second), notSnoozed)...)
	// Later the job stalls, and later still it finishes.
	stalled := runs.RS
	since := float64(runs.At.Unix()) - 900
	stalled.ETA = &reports.ETA{State: reports.StateStalled, StalledSince: &since, Reason: "no progress for 15 min (stall_after 10 min)"}
	sent = append(sent, a.Process([]monitor.Evaluation{{Run: stalled, Sample: true}}, runs.At.Add(time.Hour), notSnoozed)...)
	done := runs.RS
	done.Progress = &reports.Progress{Done: 25000, Total: 25000, Source: "log"}
	done.ETA = &reports.ETA{State: reports.StateDone, Reason: "all 25,000 items done"}
	sent = append(sent, a.Process([]monitor.Evaluation{{Run: done, Sample: true}}, runs.At.Add(5*time.Hour), notSnoozed)...)
	kinds := map[string]bool{}
	for _, p := range sent {
		kinds[p.Kind] = true
	}
	for _, k := range []string{posts.AlertShift, posts.AlertProtected, posts.AlertProbe, posts.AlertStall, posts.AlertFinished} {
		if !kinds[k] {
			t.Errorf("warnings = %v; want one of kind %s", kinds, k)
		}
	}
	seen := map[string]bool{}
	for _, p := range sent {
		// A reminder repeats its warning word for word: one golden file per kind.
		if seen[p.Kind] {
			continue
		}
		seen[p.Kind] = true
		name := "warning_" + p.Kind
		replyGolden(t, filepath.Join("replies", name+".txt.golden"), []byte(p.Message.Text()+"\n"))
		blocks, err := json.MarshalIndent(p.Message.Blocks(), "", "  ")
		if err != nil {
			t.Fatalf("marshal blocks: %v", err)
		}
		replyGoldenJSON(t, filepath.Join("replies", name+".blocks.json.golden"), blocks)
	}
}

func TestFinishedPostSummarises(t *testing.T) {
	a := posts.NewAlerter(time.UTC, nil)
	t0 := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	fin := &reports.FinishSummary{StartedAt: float64(t0.Add(-5 * time.Hour).Unix()), FinishedAt: float64(t0.Unix()), DurationS: 5 * 3600,
		Items: 25000, Errors: 3, Tokens: 25e6, AvgTokensPerS: 25e6 / (5 * 3600), PeakTokensPerS: 1700, AvgItemsPerS: 25000.0 / (5 * 3600)}
	done := testkit.Eval("synth", func(rs *reports.RunStatus) {
		rs.ETA = &reports.ETA{State: reports.StateDone, Reason: "all done"}
		rs.Progress = &reports.Progress{Done: 25000, Total: 25000, Errors: 3}
		rs.Finish = fin
	})
	sent := a.Process([]monitor.Evaluation{done}, t0, func(string) bool { return false })
	if len(sent) != 1 {
		t.Fatalf("posts = %v", kinds(sent))
	}
	text := sent[0].Message.Text()
	for _, want := range []string{"after 5 h", "25,000 items", "3 errors", "25M tokens", "Averaged 1,389 tok/s", "peak 1,700 tok/s"} {
		if !strings.Contains(text, want) {
			t.Errorf("finished post = %q; want %q", text, want)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func replyGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Text(t, filepath.Join("testdata", name), got, *update)
}

// replyGoldenJSON compares Block Kit after unmarshalling, so formatting does not matter.
func replyGoldenJSON(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.JSON(t, filepath.Join("testdata", name), got, *update)
}

// diskWorld is the disk a run writes to, as the probes see it: a /proc tree whose one ext4 root has
// written so many bytes (diskstats), and a statfs that reads free bytes, both moved by the test.
type diskWorld struct {
	t       *testing.T
	proc    string
	mu      sync.Mutex
	free    uint64
	written uint64
}

func newDiskWorld(t *testing.T, free uint64) *diskWorld {
	t.Helper()
	d := &diskWorld{t: t, proc: t.TempDir(), free: free}
	if err := os.MkdirAll(filepath.Join(d.proc, "4242"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("4242", filepath.Join(d.proc, "self")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.proc, "4242/mountinfo"), []byte("1 0 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.write(0)
	return d
}

// write puts n more bytes on the disk: its write counter grows and its free space shrinks by n.
func (d *diskWorld) write(n uint64) {
	d.t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.written += n
	d.free -= n
	line := fmt.Sprintf(" 259       2 nvme0n1p2 1000 0 8000 100 500 0 %d 300 0 400 400 0 0 0 0 0 0\n", 1_000_000+d.written/512)
	if err := os.WriteFile(filepath.Join(d.proc, "diskstats"), []byte(line), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

func (d *diskWorld) statfs() *probes.StatFS {
	return probes.NewStatFSFunc(time.Second, func(string) (probes.Usage, error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		total := uint64(200e9)
		return probes.Usage{Total: total, Free: d.free, Used: total - d.free}, nil
	})
}

// diskFillRun is a 25,000-item job that does one item every 5 s (10 h and more to go), writing to a disk
// the test moves, sampled every interval on an injected clock.
type diskFillRun struct {
	e        *botEnv
	s        *posts.Sampler
	clock    *testkit.Clock
	disk     *diskWorld
	interval time.Duration
	n        int
}

func newDiskFillRun(t *testing.T, free uint64, interval time.Duration) *diskFillRun {
	t.Helper()
	disk := newDiskWorld(t, free)
	clock := testkit.NewClock(schedT0)
	e := newBotEnv(t, botOpts{Clock: clock, StatFS: disk.statfs(), ProcRoot: disk.proc,
		Run: func(r *config.Run) { r.Stages = nil }})
	s := posts.NewSampler(e.bot, interval, slog.New(slog.DiscardHandler))
	return &diskFillRun{e: e, s: s, clock: clock, disk: disk, interval: interval}
}

// tick advances the clock by one interval, the job's log and the disk (written more bytes in the interval),
// samples, and returns the warnings the sample posted.
func (r *diskFillRun) tick(t *testing.T, written uint64) []reports.Message {
	t.Helper()
	r.n++
	elapsed := time.Duration(r.n) * r.interval
	r.clock.Set(schedT0.Add(elapsed))
	r.disk.write(written)
	done := 300 + int(elapsed/(5*time.Second))
	f, err := os.OpenFile(r.e.Log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "Progress: %d/25000 (0 errors), 0.2 req/s, avg completion: 1066 tokens, elapsed: %ds\n", done, 408+int(elapsed.Seconds()))
	f.Close()
	var got []reports.Message
	r.s.Notify = func(m reports.Message) { got = append(got, m) }
	r.s.Tick(context.Background())
	return got
}

func diskFull(msgs []reports.Message) string {
	for _, m := range msgs {
		if text := m.Text(); strings.Contains(text, "fills in") || strings.Contains(text, "disk full") {
			return text
		}
	}
	return ""
}

// TestNoDiskFullWarningFromABurst is the new-user pass's false alarm: a run whose output grows in bursts,
// sampled every 5 s. A 15-s burst at 3.86 MB/s on a disk with 84.3 GB free was a write rate that "fills in
// 6 h" against the 9 h 39 min the job needs; the alerter confirmed it two samples (10 s) later and resolved it
// 10 s after that. Nothing about the disk's future is posted on the strength of seconds of writes, and the
// space answer does not raise the alarm either.
func TestNoDiskFullWarningFromABurst(t *testing.T) {
	t.Parallel()
	r := newDiskFillRun(t, 84_300_000_000, 5*time.Second)
	const burst = 3_860_000 * 5 // bytes in one 5-s interval at 3.86 MB/s
	for i := range 120 {        // ten minutes
		written := uint64(0)
		if i >= 2 && i < 5 {
			written = burst
		}
		if w := diskFull(r.tick(t, written)); w != "" {
			t.Fatalf("after %v (a 15-s burst at 3.86 MB/s, 84.3 GB free): warning %q; want none", time.Duration(r.n)*r.interval, w)
		}
		if i == 4 {
			rep := r.e.bot.Ask(context.Background(), conversation.Request{Text: "will the disk fill?", Source: "console"})
			if text := rep.Message.Text(); strings.Contains(text, "(!!)") || strings.Contains(text, "rotating_light") {
				t.Errorf("space answer in the burst = %q; want no alarm from 15 s of writes", text)
			}
		}
	}
}

// TestDiskFullWarnsInTime is the real case beside the burst: a disk that fills at a steady pace before the job
// ends is still named, early, at any sampling interval: one that fills in 83 minutes within a tenth of that,
// and one 84.3 GB from full at 3.86 MB/s (6 h) sampled every 5 s, which needs more than 240 readings of
// history, within a tenth of its 6 h too (the evidence asked for grows with the forecast, at most a tenth
// of it, so the disk has nine tenths of its time left when the warning comes).
func TestDiskFullWarnsInTime(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		free     uint64
		rate     uint64 // bytes/s
		interval time.Duration
	}{
		{"10 GB at 2 MB/s, every 30 s", 10e9, 2e6, 30 * time.Second},
		{"10 GB at 2 MB/s, every 5 s", 10e9, 2e6, 5 * time.Second},
		{"84.3 GB at 3.86 MB/s, every 5 s", 84_300_000_000, 3_860_000, 5 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newDiskFillRun(t, tt.free, tt.interval)
			toFull := time.Duration(tt.free/tt.rate) * time.Second
			step := tt.rate * uint64(tt.interval/time.Second)
			for {
				w := diskFull(r.tick(t, step))
				at := time.Duration(r.n) * r.interval
				if w != "" {
					if at > toFull/10+2*r.interval || !strings.Contains(w, "fills in") || !strings.Contains(w, "the job needs") {
						t.Errorf("warning after %v of a disk that fills in %v: %q; want it within a tenth of that", at, toFull, w)
					}
					t.Logf("warned after %v of %v: %s", at, toFull, w)
					return
				}
				if at > toFull/4 {
					t.Fatalf("no disk-full warning after %v of a disk that fills in %v", at, toFull)
				}
			}
		})
	}
}

// finishJob is the demo's job (sim.DemoScenario: 25,000 items, two data-parallel engines behind one endpoint)
// on a clock the test moves: its /metrics served, its progress logged, sampled every 30 simulated seconds.
type finishJob struct {
	mu    sync.Mutex
	job   *sim.Job
	log   *os.File
	now   time.Time
	bot   *conversation.Bot
	alert *posts.Alerter
	sent  []posts.Post
	srv   *httptest.Server // the job's /metrics
}

// finishEpoch is the unix time of the job's sim second 0 in its metrics (sim's default epoch).
const finishEpoch = 1_750_000_000

func startFinishJob(t *testing.T, s sim.Scenario, from float64, edit ...func(r *config.Run)) *finishJob {
	t.Helper()
	dir := t.TempDir()
	f := &finishJob{job: sim.NewJob(s, 1)}
	f.job.Advance(from)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		b := f.job.Metrics()
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	f.srv = srv
	logPath := filepath.Join(dir, "generate.log")
	var err error
	if f.log, err = os.Create(logPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.log.Close() })
	fmt.Fprintln(f.log, f.job.ProgressLine())
	f.now = time.Unix(finishEpoch+int64(f.job.Now()), 0).UTC()
	file := &config.File{Source: "test", Runs: []config.Run{{Name: "demo", Channel: "#demo", Log: logPath, Metrics: []string{srv.URL + "/metrics"},
		Total: int64(s.Items), MaxTokens: s.MaxTokens, StallAfter: config.Duration{Duration: 10 * time.Minute}}}}
	for _, e := range edit {
		e(&file.Runs[0])
	}
	m, _, err := monitor.New(file, monitor.Options{ProcRoot: "../probes/testdata/proc", ProbeTimeout: 5 * time.Second, RateWindow: -1,
		Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	f.bot = conversation.NewBot(m, time.UTC, config.Env{})
	f.alert = posts.NewAlerter(time.UTC, func(string) string { return "#demo" })
	return f
}

// step advances the job by dt simulated seconds, logs its progress, samples it and keeps what the alerter
// posts; it returns the posts of this sample.
func (f *finishJob) step(t *testing.T, dt float64) []posts.Post {
	t.Helper()
	f.mu.Lock()
	f.job.Advance(dt)
	fmt.Fprintln(f.log, f.job.ProgressLine())
	f.mu.Unlock()
	f.now = f.now.Add(time.Duration(dt * float64(time.Second)))
	evs := f.bot.Monitor().(*monitor.Monitor).Sample(context.Background())
	sent := f.alert.Process(evs, f.now, func(string) bool { return false })
	f.sent = append(f.sent, sent...)
	return sent
}

func (f *finishJob) ask(t *testing.T, q string) string {
	t.Helper()
	return f.bot.Ask(context.Background(), conversation.Request{Text: q, Run: "demo", Source: "cli"}).Message.Text()
}

// finishOf is what the bot says of a finished run: its ETA, status and throughput answers.
func (f *finishJob) answers(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, q := range []string{"ETA?", "status", "how fast are we going?"} {
		out[q] = f.ask(t, q)
	}
	return out
}

// The demo's job drains: its last requests are the long ones, and the share of the latest finishes that hit
// max_tokens rises from 1% to about a fifth. That is the drain, not the completions: no warning at the finish
// and no jump in the answers after it.
func TestDemoFinishNoDrainWarning(t *testing.T) {
	f := startFinishJob(t, sim.DemoScenario(), 16000)
	for !f.job.Done() {
		f.step(t, 30)
	}
	atFinish := f.answers(t)
	for range 40 {
		f.step(t, 30)
	}
	later := f.answers(t)
	for _, p := range f.sent {
		if strings.HasPrefix(p.Kind, posts.AlertFinishShare) {
			t.Errorf("post %s after the drain: %q; want none", p.Kind, p.Message.Text())
		}
	}
	for i, ans := range []map[string]string{atFinish, later} {
		for q, text := range ans {
			if strings.Contains(text, "rose from") {
				t.Errorf("answer %d to %q after the finish = %q; want no jump in it", i, q, text)
			}
			if q == "status" && !strings.Contains(text, "2% of completions hit max_tokens (4,096)") {
				t.Errorf("answer %d to %q after the finish = %q; want the share that hit max_tokens", i, q, text)
			}
		}
	}
}

// capScenario is a smaller job whose completions jump to four times their length a third of the way in: the
// share that hits max_tokens rises for real, well before the drain.
func capScenario() sim.Scenario {
	s := sim.DemoScenario()
	s.Items = 4000
	s.Events = []sim.Event{{At: 1200, Kind: sim.LengthDrift, Factor: 4}}
	return s
}

// A rise of the share that hit max_tokens in the middle of the run is a warning; once the run is done the
// answers no longer repeat it, and the warning is not resolved by the finish either (nothing went back).
func TestFinishShareWarningBeforeFinish(t *testing.T) {
	t.Parallel()
	f := startFinishJob(t, capScenario(), 600)
	warnedAt := -1.0
	for !f.job.Done() {
		for _, p := range f.step(t, 30) {
			if p.Kind == posts.AlertFinishShare {
				warnedAt = f.job.Now()
			}
		}
	}
	if warnedAt < 0 {
		t.Fatalf("no finish-share warning before the finish at %.0f s; posts %v", f.job.FinishedAt(), f.sent)
	}
	t.Logf("warned at %.0f s, finished at %.0f s", warnedAt, f.job.FinishedAt())
	n := len(f.sent)
	for range 60 {
		f.step(t, 30)
	}
	for _, p := range f.sent[n:] {
		if strings.HasPrefix(p.Kind, posts.AlertFinishShare) {
			t.Errorf("post %s after the finish: %q; want none", p.Kind, p.Message.Text())
		}
	}
	// Slack text carries Slack's emoji, never the console's glyphs: the follow-ups in a warning's thread
	// quote its summary.
	for _, p := range f.sent {
		for _, g := range []string{"(!)", "(!!)", "(~)", "(ok)"} {
			if strings.Contains(p.Message.Mrkdwn(), g) {
				t.Errorf("post %s = %q; want no console glyph %s in Slack text", p.Kind, p.Message.Mrkdwn(), g)
			}
		}
	}
	for q, text := range f.answers(t) {
		if strings.Contains(text, "rose from") {
			t.Errorf("answer to %q after the finish = %q; want no jump in it", q, text)
		}
	}
}

// A finish-share warning open when the run enters its last batch, or finishes, stays open: the jump leaves the
// answers there (reports.Quality.At) without the share having gone back, so "resolved" would be false.
func TestFinishShareNotResolvedByTheEnd(t *testing.T) {
	running := func(n float64) []reports.EngineStatus {
		return []reports.EngineStatus{{URL: "http://e/metrics", Kind: "vllm", OK: true, Running: &n}}
	}
	jump := &reports.Quality{Finished: 1000, Shares: map[string]float64{"length": 0.05}, MaxTokens: 64,
		Jump: &reports.ShareJump{Reason: "length", Before: 0.01, Now: 0.3, BeforeN: 900, NowN: 100}}
	busy := reports.RunStatus{Name: "synth", Progress: &reports.Progress{Done: 500, Total: 1000}, Engines: running(200), Quality: jump}
	tests := []struct {
		name string
		end  reports.RunStatus
		want int // resolved posts
	}{
		{"share back down while busy", reports.RunStatus{Name: "synth", Progress: &reports.Progress{Done: 600, Total: 1000}, Engines: running(200),
			Quality: jump.At(reports.EndBusy)}, 1},
		{"last batch", reports.RunStatus{Name: "synth", Progress: &reports.Progress{Done: 850, Total: 1000}, Engines: running(150),
			Quality: jump.At(reports.EndLastBatch)}, 0},
		{"finished", reports.RunStatus{Name: "synth", Progress: &reports.Progress{Done: 1000, Total: 1000}, Engines: running(0),
			ETA: &reports.ETA{State: reports.StateDone}, Quality: jump.At(reports.EndDone)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == 1 {
				tt.end.Quality = &reports.Quality{Finished: 1100, Shares: map[string]float64{"length": 0.05}, MaxTokens: 64}
			}
			a := posts.NewAlerter(time.UTC, func(string) string { return "#synth" })
			now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			if sent := a.Process([]monitor.Evaluation{{Run: busy, Sample: true}}, now, func(string) bool { return false }); len(sent) != 1 {
				t.Fatalf("posts on the jump = %v; want the warning", sent)
			}
			resolved := 0
			for i := range 3 {
				for _, p := range a.Process([]monitor.Evaluation{{Run: tt.end, Sample: true}}, now.Add(time.Duration(i+1)*time.Minute), func(string) bool { return false }) {
					if p.Kind == posts.AlertFinishShare+"_resolved" {
						resolved++
						want := ":large_green_circle: Resolved after 60 s: completions that hit max_tokens (64) rose from 1% of the 900 before to 30% of the latest 100 finished requests no longer holds."
						if got := p.Message.Mrkdwn(); got != want {
							t.Errorf("resolved post = %q; want %q", got, want)
						}
					}
				}
			}
			if resolved != tt.want {
				t.Errorf("resolved posts = %d; want %d", resolved, tt.want)
			}
		})
	}
}

// A warning recorded before summaries left out their glyph resolves without it too.
func TestResolvedTextDropsRecordedGlyph(t *testing.T) {
	al := &posts.ActiveAlert{Kind: posts.AlertFinishShare, Run: "synth", Summary: "(!) completions that hit max_tokens (64) rose from 1% (900 before) to 30% of the latest 100"}
	if got, want := posts.RecoveredText(al), "completions that hit max_tokens (64) rose from 1% (900 before) to 30% of the latest 100 no longer holds"; got != want {
		t.Errorf("recoveredText(%q) = %q; want %q", al.Summary, got, want)
	}
}

// After the finish the throughput stops at it: the window is the last before the finish, and the run average
// is said once, as the finish line's "Averaged ..." (the throughput line above it said it again, "run average
// 1,375 tok/s · 1.42 items/s"), so nothing disagrees with it and nothing falls while the finished run sits idle.
func TestDemoFinishThroughputStopsAtFinish(t *testing.T) {
	f := startFinishJob(t, sim.DemoScenario(), 16000)
	for !f.job.Done() {
		f.step(t, 30)
	}
	runAvg := regexp.MustCompile(`run average ([0-9,.]+ tok/s) · ([0-9,.]+ items/s)`)
	averaged := regexp.MustCompile(`Averaged ([0-9,.]+ tok/s)`)
	items := regexp.MustCompile(`Averaged [^.]*?([0-9,.]+ items/s)`)
	check := func(when string) string {
		var tpLine string
		for q, text := range f.answers(t) {
			if q == "status" {
				continue
			}
			ra, at, ai := runAvg.FindStringSubmatch(text), averaged.FindStringSubmatch(text), items.FindStringSubmatch(text)
			if at == nil || ai == nil || ra != nil {
				t.Errorf("%s, answer to %q = %q; want the run average said once, as the finish line's average", when, q, text)
			}
			for _, l := range strings.Split(text, "\n") {
				if strings.Contains(l, "tok/s") && !strings.Contains(l, "Averaged") {
					tpLine = l
				}
			}
			if !strings.Contains(tpLine, "up to the finish") {
				t.Errorf("%s, answer to %q: throughput %q; want its window said to end at the finish", when, q, tpLine)
			}
		}
		return tpLine
	}
	atFinish := check("at the finish")
	for range 40 {
		f.step(t, 30)
	}
	if later := check("20 min after the finish"); later != atFinish {
		t.Errorf("throughput 20 min after the finish = %q; want it as at the finish, %q", later, atFinish)
	}
}

// The finish post and the answers after it say each figure beside what it is, in clean sentences, and name
// the first estimate for what it is: the first baseline runwatch recorded, which it never posted.
func TestDemoFinishWording(t *testing.T) {
	f := startFinishJob(t, sim.DemoScenario(), 16000)
	for !f.job.Done() {
		f.step(t, 30)
	}
	var finished string
	for _, p := range f.sent {
		if p.Kind == posts.AlertFinished {
			finished = p.Message.Text()
		}
	}
	averaged := regexp.MustCompile(`Averaged [0-9,]+ tok/s \([0-9.]+ items/s\), peak [0-9,]+ tok/s\.`)
	for what, text := range map[string]string{"finish post": finished, "ETA answer": f.ask(t, "ETA?"), "stuck answer": f.ask(t, "is it stuck?")} {
		if what != "stuck answer" && !averaged.MatchString(text) {
			t.Errorf("%s = %q; want %q", what, text, averaged)
		}
		if what != "stuck answer" && !strings.Contains(text, "The first baseline estimate (at ") {
			t.Errorf("%s = %q; want the first estimate named as the first baseline", what, text)
		}
		if strings.Contains(text, "are done") || strings.Contains(text, ". all") {
			t.Errorf("%s = %q; want one clean sentence for the finish", what, text)
		}
	}
	if eta := f.ask(t, "ETA?"); !strings.Contains(eta, "[done] Done: all 25,000 items finished.\n") {
		t.Errorf("ETA answer = %q; want %q", eta, "[done] Done: all 25,000 items finished.")
	}
	if stuck := f.ask(t, "is it stuck?"); !strings.Contains(stuck, "[done] Not stuck: all 25,000 items finished.\n") {
		t.Errorf("stuck answer = %q; want %q", stuck, "[done] Not stuck: all 25,000 items finished.")
	}
}

// Once every item is done the inference server is stopped to free its GPUs: that is not an outage. Stopped
// after the finish, it raises no warning; a warning it raised before the finish resolves at the finish
// saying why, not claiming the server answers again.
func TestServerStoppedAfterFinishIsNoWarning(t *testing.T) {
	probes := func(ps []posts.Post) []posts.Post {
		var out []posts.Post
		for _, p := range ps {
			if strings.HasPrefix(p.Kind, posts.AlertProbe) {
				out = append(out, p)
			}
		}
		return out
	}
	t.Run("stopped after the finish", func(t *testing.T) {
		f := startFinishJob(t, sim.DemoScenario(), 17000)
		for !f.job.Done() {
			f.step(t, 30)
		}
		f.step(t, 30)
		f.srv.Close()
		for range 4 {
			f.step(t, 30)
		}
		if got := probes(f.sent); len(got) != 0 {
			t.Errorf("posts after the server stopped at the finish = %q; want none", got[0].Message.Text())
		}
	})
	t.Run("down before the finish", func(t *testing.T) {
		f := startFinishJob(t, sim.DemoScenario(), 17000)
		f.step(t, 30)
		f.srv.Close()
		f.step(t, 30)
		f.step(t, 30)
		if got := probes(f.sent); len(got) != 1 || got[0].Kind != posts.AlertProbe {
			t.Fatalf("posts with the server down mid-job = %d; want one warning", len(got))
		}
		for !f.job.Done() {
			f.step(t, 30)
		}
		f.step(t, 30)
		got := probes(f.sent)
		if len(got) != 2 || got[1].Kind != posts.AlertProbe+"_resolved" {
			t.Fatalf("server posts by the finish = %d; want the warning and its resolution", len(got))
		}
		text := got[1].Message.Text()
		if !strings.Contains(text, "demo finished, so metrics "+f.srv.URL+"/metrics is not needed any more") || strings.Contains(text, "answers again") {
			t.Errorf("resolution = %q; want it to say the job finished, not that the server answers", text)
		}
	})
}

// After the finish people stop vLLM to free the GPUs. The warnings knew (no "source down"), but the answers
// still said "(!!) http://…/metrics is down (below)", the checklist "[    ] vllm-server — not answering yet: …",
// and "what's left?" "Slowed: 1 of 1 engines are down". Now every answer says it plainly: the server no longer
// answers, and when the job finished.
func TestAnswersAfterTheServerStoppedAtTheFinish(t *testing.T) {
	f := startFinishJob(t, sim.DemoScenario(), 17000, func(r *config.Run) {
		r.Stages = []config.Stage{{Name: "vllm-server", Check: "http", URL: r.Metrics[0]}, {Name: "generate", Check: "progress"}}
	})
	for !f.job.Done() {
		f.step(t, 30)
	}
	f.step(t, 30)
	f.srv.Close()
	f.step(t, 30)
	st, err := f.bot.Monitor().RunStatus(context.Background(), "demo", monitor.Need{Progress: true})
	if err != nil || st.Finish == nil || st.Finish.FinishedAt == 0 {
		t.Fatalf("status = %+v, %v; want a finish with its time", st.Finish, err)
	}
	at := time.Unix(int64(st.Finish.FinishedAt), 0).UTC().Format("15:04 UTC")
	plain := f.srv.URL + "/metrics no longer answers (the job finished at " + at + ")"
	for q, want := range map[string][]string{
		"status":            {plain, "[done] vllm-server — no longer answers (the job finished at " + at + ")"},
		"is vllm up?":       {plain},
		"how fast?":         {plain},
		"ETA?":              {plain},
		"what's left?":      {"Every stage of the checklist is done"},
		"is the job stuck?": {plain},
	} {
		got := f.ask(t, q)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%q = %q; want it to say %q", q, got, w)
			}
		}
		for _, bad := range []string{"(!!)", "(!)", "is down", "yet", "Slowed"} {
			if strings.Contains(got, bad) {
				t.Errorf("%q = %q; want no %q after the finish", q, got, bad)
			}
		}
	}
}

// The demo asked at once answers a rough one-sample figure, which is never the baseline (no warning may measure
// a move from it, and the answer names none); asked a few minutes later, every answer that names the first
// recorded estimate calls it the first baseline estimate, so the channel never reads two different "first"
// estimates.
func TestRoughFigureIsNotAFirstEstimate(t *testing.T) {
	t.Parallel()
	f := startFinishJob(t, sim.DemoScenario(), 600)
	f.step(t, 1)
	rough := f.ask(t, "ETA?")
	if !strings.Contains(rough, "(rough)") || strings.Contains(rough, "baseline") {
		t.Fatalf("ETA at once = %q; want a rough figure and no word of a baseline", rough)
	}
	for range 10 {
		f.step(t, 30)
	}
	for _, q := range []string{"ETA?", "are we on track?", "why did the ETA move?"} {
		text := f.ask(t, q)
		if !strings.Contains(text, "first baseline estimate") {
			t.Errorf("%s a few minutes in = %q; want the first recorded estimate named as the first baseline estimate", q, text)
		}
		if strings.Contains(text, "first estimate") {
			t.Errorf("%s a few minutes in = %q; names a \"first estimate\" other than the rough figure already answered", q, text)
		}
	}
	for !f.job.Done() {
		f.step(t, 60)
	}
	for _, q := range []string{"ETA?", "are we on track?"} {
		if text := f.ask(t, q); !strings.Contains(text, "The first baseline estimate (at ") || strings.Contains(text, "first estimate") {
			t.Errorf("%s after the finish = %q; want the first baseline estimate compared with the finish", q, text)
		}
	}
}

// TestFlappingIsOneWarning is the red team's finding 6 through the recording Slack stand-in: the
// run's metrics endpoint goes down and up every 5 s for 60 s of an injected clock, sampled every
// second. Before, each down was a new top-level warning (a resolved alert was forgotten with its
// cooldown); now there is one warning, its thread takes the first recurrence, its own message says it
// flaps from its second recovery on, and the thread and the message say once when it holds steady.
// Every follow-up links the first warning.
func TestFlappingIsOneWarning(t *testing.T) {
	t.Parallel()
	ep := testkit.NewFaultEndpoint(t)
	clock := testkit.NewClock(schedT0)
	// A disk that never changes: the machine's own, written by other tests meanwhile, made a fill forecast
	// (and a second warning) now and then.
	steady := func(string) (probes.Usage, error) {
		return probes.Usage{Total: 100 << 30, Free: 40 << 30, Used: 60 << 30}, nil
	}
	e := newBotEnv(t, botOpts{Metrics: []string{ep.URL()}, Timeout: 500 * time.Millisecond, Clock: clock,
		StatFS: probes.NewStatFSFunc(500*time.Millisecond, steady)})
	fake := testkit.NewSlack(t)
	api, _ := newTestAPI(t, fake, nil, nil)
	s := posts.NewSampler(e.bot, time.Second, slog.New(slog.DiscardHandler))
	dir, err := state.Open(e.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	s.State = dir
	s.Deliver = slackapp.Deliver(e.bot, api, botmetrics.New(), 0)
	s.Find = slackapp.Find(e.bot, api)
	ctx := context.Background()
	up := true
	for sec := 0; sec <= 60; sec++ {
		if want := (sec/5)%2 == 0; want != up {
			if want {
				ep.Up()
			} else {
				ep.Down()
			}
			up = want
		}
		clock.Set(schedT0.Add(time.Duration(sec) * time.Second))
		s.Tick(ctx)
	}
	if !up {
		ep.Up()
	}
	// Steady: up for longer than the flap window.
	for _, after := range []time.Duration{61 * time.Second, 2 * time.Minute, 7 * time.Minute} {
		clock.Set(schedT0.Add(after))
		s.Tick(ctx)
	}
	// The source's posts: its warnings, and every reply that names it or answers one of its warnings. Other
	// warnings of the run (the real disk's fill forecast moves while other processes write to it) and their
	// threads are not the flapping's.
	var top, thread []testkit.Call
	downs := map[string]bool{}
	for _, c := range fake.Calls("chat.postMessage") {
		text, ts := c.Form.Get("text"), c.Form.Get("thread_ts")
		switch {
		case ts == "" && strings.Contains(text, "source down"):
			top = append(top, c)
			downs[c.TS] = true
		case ts != "" && (downs[ts] || strings.Contains(text, ep.URL())):
			thread = append(thread, c)
		}
	}
	if len(top) != 1 {
		t.Fatalf("top-level warnings during 60 s of flapping = %d; want 1", len(top))
	}

	var texts []string
	for _, c := range thread {
		text := c.Form.Get("text")
		texts = append(texts, text)
		if c.Form.Get("thread_ts") != top[0].TS {
			t.Errorf("follow-up in thread %q; want the first warning's %q", c.Form.Get("thread_ts"), top[0].TS)
		}
		if !strings.Contains(c.Form.Get("blocks"), "p"+strings.ReplaceAll(top[0].TS, ".", "")) {
			t.Errorf("follow-up %q does not link the first warning", text)
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"Again (it had recovered at", "Holding steady since", "It went down 6 times within 5 min"} {
		if !strings.Contains(all, want) {
			t.Errorf("the thread lacks %q:\n%s", want, all)
		}
	}
	if n := strings.Count(all, "Holding steady"); n != 1 {
		t.Errorf("'holding steady' said %d times; want once", n)
	}
	var edits []string
	for _, c := range fake.Calls("chat.update") {
		if c.Form.Get("ts") == top[0].TS {
			edits = append(edits, c.Form.Get("text"))
		}
	}
	if all := strings.Join(edits, "\n"); !strings.Contains(all, "*Flapping*: down 2 times in ") || !strings.Contains(edits[len(edits)-1], "after flapping (down 6 times within 5 min)") {
		t.Errorf("edits of the warning's message = %q; want it to say it flaps at the second recovery, and to end resolved after flapping", edits)
	}
	t.Logf("figure: 60 s of flapping (down 6 times, sampled every second): %d top-level post, %d replies in its thread (the first resolution, the first recurrence, one 'holding steady'), %d edits of the warning (resolved, open again, flapping, resolved after flapping), each reply linking the first warning",
		len(top), len(thread), len(edits))
}

// silenceStorage is the storage of a run whose protected /shared was written to on host gpu-2 (6
// processes), then fell silent: Prometheus or the host's exporter stopped answering, or the writers
// stopped with every host answering.
func silenceStorage(t *testing.T, remote reports.RemoteInput) reports.Storage {
	t.Helper()
	in := reports.StorageInput{
		Paths: []reports.PathObservation{{Path: "/shared", Role: reports.RoleProtected, Resolved: "/shared", Exists: true,
			Mount: probes.Mount{ID: 40, MountPoint: "/shared", FSType: "xfs", Source: "/dev/sdb", Major: 8, Minor: 16}, HasMount: true}},
		Scan: &probes.WriterScan{Processes: 10},
	}
	return reports.MergeRemote(reports.BuildStorage(in, nil), remote, nil)
}

// TestProtectedWriteIsNotResolvedBySilence: a protected write on another host is resolved only by
// evidence that covers it. Prometheus not answering, or the host's exporter stopped (measured before:
// "Resolved after 30 s: nothing writes to the protected mount any more" in both, while 6 processes kept
// writing), keeps the warning open; the source's own warning says why. Every host answering without the
// writers resolves it, naming the mount and host.
func TestProtectedWriteIsNotResolvedBySilence(t *testing.T) {
	writing := silenceStorage(t, reports.RemoteInput{Exporters: []string{"gpu-2"},
		Writers: []reports.WriterInfo{{Host: "gpu-2", Command: "extract", File: "/shared", ProtectedPath: "/shared", Protected: true, Processes: 6}}})
	promDown := reports.Problem{Probe: "prometheus http://prom:9090", Error: "writers: no answer within 2s"}
	exporterDown := reports.Problem{Probe: "prometheus target gpu-2:19464", Error: "Prometheus cannot scrape it (up = 0)"}
	tests := []struct {
		name     string
		st       reports.Storage
		problem  *reports.Problem
		resolved string // "" for not resolved
	}{
		{"Prometheus did not answer", silenceStorage(t, reports.RemoteInput{WritersErr: "no answer within 2s", KnownHosts: []string{"gpu-2"}}), &promDown, ""},
		{"the host's exporter is stopped", silenceStorage(t, reports.RemoteInput{Silent: []reports.SilentHost{{Host: "gpu-2", Why: "its exporter did not answer Prometheus's last scrape (up = 0)"}}}), &exporterDown, ""},
		{"every host answered", silenceStorage(t, reports.RemoteInput{Exporters: []string{"gpu-2"}}), nil, "nothing writes to /shared on host gpu-2 any more"},
		{"every host answered, with processes it could not inspect", silenceStorage(t, reports.RemoteInput{Exporters: []string{"gpu-2"}, Invisible: map[string]int{"gpu-2": 3}}), nil,
			"nothing I can see writes to /shared on host gpu-2 any more (3 processes could not be inspected)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := posts.NewAlerter(time.UTC, nil)
			t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
			never := func(string) bool { return false }
			sent := a.Process([]monitor.Evaluation{testkit.Eval("synth", func(rs *reports.RunStatus) { rs.Storage = writing })}, t0, never)
			if len(sent) != 1 || sent[0].Kind != posts.AlertProtected {
				t.Fatalf("writing = %v; want the protected write", kinds(sent))
			}
			a.Delivered(sent[0], "ts1")
			var got []string
			for i := range 3 {
				ev := testkit.Eval("synth", func(rs *reports.RunStatus) {
					rs.Storage = tt.st
					if tt.problem != nil {
						rs.Problems = []reports.Problem{*tt.problem}
					}
				})
				for _, p := range a.Process([]monitor.Evaluation{ev}, t0.Add(time.Duration(i+1)*30*time.Second), never) {
					if p.Edit != "" {
						continue // the warning's own message, edited with it: the thread's reply is the resolution
					}
					got = append(got, p.Kind+": "+reports.PlainText(p.Message.Mrkdwn()))
				}
			}
			var resolved []string
			for _, g := range got {
				if strings.HasPrefix(g, posts.AlertProtected+"_resolved") {
					resolved = append(resolved, g)
				}
			}
			switch {
			case tt.resolved == "" && len(resolved) > 0:
				t.Errorf("posts = %q; want the warning kept open", got)
			case tt.resolved != "" && (len(resolved) != 1 || !strings.Contains(resolved[0], tt.resolved)):
				t.Errorf("posts = %q; want one resolution saying %q", got, tt.resolved)
			}
			if tt.problem != nil && !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, posts.AlertProbe+":") }) {
				t.Errorf("posts = %q; want the silent source warned about", got)
			}
		})
	}
}

// TestFinishPostCorrectedInPlace: a finish that the job's progress contradicts afterwards is corrected
// where it stands, through the recording Slack stand-in: the finish post (confirmed by a second sample)
// is edited with chat.update into "synth is not finished", no new top-level post; a real finish later is
// announced again.
func TestFinishPostCorrectedInPlace(t *testing.T) {
	clock := testkit.NewClock(schedT0)
	e := newBotEnv(t, botOpts{Clock: clock})
	fake := testkit.NewSlack(t)
	api, _ := newTestAPI(t, fake, nil, nil)
	s := posts.NewSampler(e.bot, 30*time.Second, slog.New(slog.DiscardHandler))
	s.Deliver = slackapp.Deliver(e.bot, api, botmetrics.New(), 0)
	ctx := context.Background()
	tick := func(done int) {
		t.Helper()
		e.WriteLog(t, done, 25000)
		clock.Set(clock.Now().Add(30 * time.Second))
		s.Tick(ctx)
	}
	finishPosts := func() []testkit.Call {
		var out []testkit.Call
		for _, c := range fake.Calls("chat.postMessage") {
			if strings.Contains(c.Form.Get("text"), "finished") {
				out = append(out, c)
			}
		}
		return out
	}
	tick(24990)
	tick(25000) // held for a second look
	if n := len(finishPosts()); n != 0 {
		t.Fatalf("finish posts after one reading at the total = %d; want 0", n)
	}
	tick(25000)
	fin := finishPosts()
	if len(fin) != 1 {
		t.Fatalf("finish posts after the second reading = %d; want 1", len(fin))
	}
	tick(311) // the job's own line says otherwise: a restart, or the finish was not the job's
	var edits []testkit.Call
	for _, c := range fake.Calls("chat.update") {
		if c.Form.Get("ts") == fin[0].TS {
			edits = append(edits, c)
		}
	}
	if len(edits) != 1 || !strings.Contains(edits[0].Form.Get("text"), "synth is not finished") || !strings.Contains(edits[0].Form.Get("text"), "311 / 25,000") {
		t.Fatalf("edits of the finish post = %+v; want it corrected to \"synth is not finished\", 311 / 25,000", edits)
	}
	if n := len(finishPosts()); n != 1 {
		t.Errorf("finish posts after the correction = %d; want still the one (corrected, not a new post)", n)
	}
	tick(25000)
	tick(25000)
	if n := len(finishPosts()); n != 2 {
		t.Errorf("finish posts after a real finish = %d; want it announced again", n)
	}
}
