package handlers

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/reports"
)

func ev(run string, mod func(*reports.RunStatus)) monitor.Evaluation {
	rs := reports.RunStatus{Name: run, ETA: &reports.ETA{State: reports.StateRunning}}
	if mod != nil {
		mod(&rs)
	}
	return monitor.Evaluation{Run: rs, Sample: true}
}

func stalled(rs *reports.RunStatus) {
	since := 1000.0
	rs.ETA = &reports.ETA{State: reports.StateStalled, StalledSince: &since, Reason: "no progress"}
}

func protectedWrite(rs *reports.RunStatus) {
	rs.Storage.Warnings = []reports.StorageWarning{{Kind: AlertProtected, Mount: "/shared", Message: "1 process is writing to protected `/shared`"}}
}

func kinds(ps []Post) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Kind)
	}
	return out
}

func TestAlerterLifecycle(t *testing.T) {
	a := NewAlerter(time.UTC, func(string) string { return "#synth" })
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	never := func(string) bool { return false }

	posts := a.Process([]monitor.Evaluation{ev("synth", stalled)}, t0, never)
	if len(posts) != 1 || posts[0].Kind != AlertStall || posts[0].Channel != "#synth" || posts[0].ThreadRef != "" {
		t.Fatalf("first stall = %+v; want one new stall warning to #synth", posts)
	}
	a.Delivered(posts[0], "1700000000.000100")

	// Still stalled a minute later: nothing new (cooldown).
	if posts := a.Process([]monitor.Evaluation{ev("synth", stalled)}, t0.Add(time.Minute), never); len(posts) != 0 {
		t.Errorf("repeat within cooldown = %v; want nothing", kinds(posts))
	}
	// After the cooldown: a reminder in the first warning's thread.
	posts = a.Process([]monitor.Evaluation{ev("synth", stalled)}, t0.Add(61*time.Minute), never)
	if len(posts) != 1 || posts[0].ThreadRef != "1700000000.000100" || !strings.Contains(posts[0].Message.Mrkdwn(), "Still stall") {
		t.Errorf("after cooldown = %+v; want a reminder in the thread", posts)
	}
	// A failed progress probe is no evidence that the stall is over.
	unknown := ev("synth", func(rs *reports.RunStatus) { rs.ETA = nil })
	if posts := a.Process([]monitor.Evaluation{unknown}, t0.Add(62*time.Minute), never); len(posts) != 0 {
		t.Errorf("without an ETA = %v; want no resolution", kinds(posts))
	}
	// Moving again: the follow-up goes in the thread.
	posts = a.Process([]monitor.Evaluation{ev("synth", nil)}, t0.Add(70*time.Minute), never)
	if len(posts) != 1 || posts[0].Kind != AlertStall+"_resolved" || posts[0].ThreadRef != "1700000000.000100" {
		t.Fatalf("recovery = %+v; want a resolved follow-up in the thread", posts)
	}
	if !strings.Contains(posts[0].Message.Mrkdwn(), "making progress again") {
		t.Errorf("recovery text = %q", posts[0].Message.Mrkdwn())
	}
	// Resolved, the warning is kept with its thread for its cooldown (a recurrence goes there), then
	// forgotten. (Before the flapping fix it was forgotten at once.)
	if al := a.State.Active["synth/stall"]; len(a.State.Active) != 1 || al == nil || !al.Cleared || al.Ref != "1700000000.000100" {
		t.Errorf("active after recovery = %v; want the stall kept, cleared, with its thread", a.State.Active)
	}
	a.Process([]monitor.Evaluation{ev("synth", nil)}, t0.Add(131*time.Minute), never)
	if len(a.State.Active) != 0 {
		t.Errorf("active a cooldown after recovery = %v; want it forgotten", a.State.Active)
	}
}

func TestAlerterConfirmsFlakyProbes(t *testing.T) {
	a := NewAlerter(time.UTC, nil)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	never := func(string) bool { return false }
	down := ev("synth", func(rs *reports.RunStatus) {
		rs.Problems = []reports.Problem{{Probe: "metrics http://gpu-1:8000/metrics", Error: "connection refused"}}
	})
	if posts := a.Process([]monitor.Evaluation{down}, t0, never); len(posts) != 0 {
		t.Errorf("one failed scrape = %v; want no warning yet", kinds(posts))
	}
	posts := a.Process([]monitor.Evaluation{down}, t0.Add(30*time.Second), never)
	if len(posts) != 1 || posts[0].Kind != AlertProbe || !strings.Contains(posts[0].Message.Mrkdwn(), "connection refused") {
		t.Errorf("second failed scrape = %+v; want a probe_down warning naming the error", posts)
	}
	// A single failure that recovers before confirmation never posts a follow-up either.
	b := NewAlerter(time.UTC, nil)
	b.Process([]monitor.Evaluation{down}, t0, never)
	if posts := b.Process([]monitor.Evaluation{ev("synth", nil)}, t0.Add(30*time.Second), never); len(posts) != 0 {
		t.Errorf("unconfirmed then fine = %v; want silence", kinds(posts))
	}
}

func TestAlerterSnoozeAndEvidence(t *testing.T) {
	a := NewAlerter(time.UTC, nil)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	snoozed := true
	isSnoozed := func(string) bool { return snoozed }
	if posts := a.Process([]monitor.Evaluation{ev("synth", protectedWrite)}, t0, isSnoozed); len(posts) != 0 {
		t.Errorf("snoozed = %v; want silence", kinds(posts))
	}
	// Unsnoozed while the condition still holds: it is reported now.
	snoozed = false
	posts := a.Process([]monitor.Evaluation{ev("synth", protectedWrite)}, t0.Add(time.Minute), isSnoozed)
	if len(posts) != 1 || posts[0].Kind != AlertProtected {
		t.Fatalf("after unsnooze = %v; want the protected write", kinds(posts))
	}
	a.Delivered(posts[0], "ts1")
	// The /proc scan failed: no warning either way.
	scanFailed := ev("synth", func(rs *reports.RunStatus) {
		rs.Problems = []reports.Problem{{Probe: "writers", Error: "scan /proc: permission denied"}}
	})
	if posts := a.Process([]monitor.Evaluation{scanFailed}, t0.Add(2*time.Minute), isSnoozed); len(posts) != 0 {
		t.Errorf("scan failed = %v; want the warning neither repeated nor resolved", kinds(posts))
	}
	posts = a.Process([]monitor.Evaluation{ev("synth", nil)}, t0.Add(3*time.Minute), isSnoozed)
	if len(posts) != 1 || posts[0].ThreadRef != "ts1" || !strings.Contains(posts[0].Message.Mrkdwn(), "nothing writes to the protected mount") {
		t.Errorf("resolved = %+v", posts)
	}
}

func TestAlerterFinishedOnceAndUndelivered(t *testing.T) {
	a := NewAlerter(time.UTC, nil)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	never := func(string) bool { return false }
	done := ev("synth", func(rs *reports.RunStatus) {
		rs.ETA = &reports.ETA{State: reports.StateDone, Reason: "all done"}
		rs.Progress = &reports.Progress{Done: 25000, Total: 25000}
	})
	posts := a.Process([]monitor.Evaluation{done}, t0, never)
	if len(posts) != 1 || posts[0].Kind != AlertFinished {
		t.Fatalf("finished = %v", kinds(posts))
	}
	// The post failed: it is tried again next time, not lost.
	a.Undelivered(posts[0])
	if posts := a.Process([]monitor.Evaluation{done}, t0.Add(30*time.Second), never); len(posts) != 1 {
		t.Fatalf("retry after a failed post = %v; want it again", kinds(posts))
	}
	for i := 2; i < 10; i++ {
		if posts := a.Process([]monitor.Evaluation{done}, t0.Add(time.Duration(i)*25*time.Hour), never); len(posts) != 0 {
			t.Fatalf("finished announced again on day %d: %v", i, kinds(posts))
		}
	}
}

// TestAlerterStateFromBeforeFlapping: an alerts.json written before recurrences and flapping were
// tracked (no confirmed, recurring or downs fields) does not make a held condition post again.
func TestAlerterStateFromBeforeFlapping(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	a := NewAlerter(time.UTC, func(string) string { return "#synth" })
	a.State.Active["synth/stall"] = &ActiveAlert{Kind: AlertStall, Run: "synth", Since: t0, Seen: 5, Posted: t0, Ref: "ts1", Summary: "no progress"}
	never := func(string) bool { return false }
	if posts := a.Process([]monitor.Evaluation{ev("synth", stalled)}, t0.Add(10*time.Minute), never); len(posts) != 0 {
		t.Errorf("held stall from an old state file = %+v; want nothing within its cooldown", posts)
	}
}

// TestWarningsGolden runs the alerter over the same fake status, sampled twice (a failing source
// is worth a warning the second time), and compares every warning it posts with
// testdata/replies/warning_<kind>.{txt,blocks.json}.golden.
func TestWarningsGolden(t *testing.T) {
	runs := testkit.ReplyRuns(t)
	a := NewAlerter(time.UTC, func(string) string { return "#synth" })
	ev := monitor.Evaluation{Run: runs.RS, Sample: true,
		Shift: &reports.Shift{Reason: "completions got longer: 650 -> 1,066 tokens per item (+64%) while throughput held"}}
	notSnoozed := func(string) bool { return false }
	posts := a.Process([]monitor.Evaluation{ev}, runs.At, notSnoozed)
	posts = append(posts, a.Process([]monitor.Evaluation{ev}, runs.At.Add(30*time.Second), notSnoozed)...)
	// Later the job stalls, and later still it finishes.
	stalled := runs.RS
	since := float64(runs.At.Unix()) - 900
	stalled.ETA = &reports.ETA{State: reports.StateStalled, StalledSince: &since, Reason: "no progress for 15 min (stall_after 10 min)"}
	posts = append(posts, a.Process([]monitor.Evaluation{{Run: stalled, Sample: true}}, runs.At.Add(time.Hour), notSnoozed)...)
	done := runs.RS
	done.Progress = &reports.Progress{Done: 25000, Total: 25000, Source: "log"}
	done.ETA = &reports.ETA{State: reports.StateDone, Reason: "all 25,000 items done"}
	posts = append(posts, a.Process([]monitor.Evaluation{{Run: done, Sample: true}}, runs.At.Add(5*time.Hour), notSnoozed)...)
	kinds := map[string]bool{}
	for _, p := range posts {
		kinds[p.Kind] = true
	}
	for _, k := range []string{AlertShift, AlertProtected, AlertProbe, AlertStall, AlertFinished} {
		if !kinds[k] {
			t.Errorf("warnings = %v; want one of kind %s", kinds, k)
		}
	}
	seen := map[string]bool{}
	for _, p := range posts {
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
	a := NewAlerter(time.UTC, nil)
	t0 := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	fin := &reports.FinishSummary{StartedAt: float64(t0.Add(-5 * time.Hour).Unix()), FinishedAt: float64(t0.Unix()), DurationS: 5 * 3600,
		Items: 25000, Errors: 3, Tokens: 25e6, AvgTokensPerS: 25e6 / (5 * 3600), PeakTokensPerS: 1700, AvgItemsPerS: 25000.0 / (5 * 3600)}
	done := ev("synth", func(rs *reports.RunStatus) {
		rs.ETA = &reports.ETA{State: reports.StateDone, Reason: "all done"}
		rs.Progress = &reports.Progress{Done: 25000, Total: 25000, Errors: 3}
		rs.Finish = fin
	})
	posts := a.Process([]monitor.Evaluation{done}, t0, func(string) bool { return false })
	if len(posts) != 1 {
		t.Fatalf("posts = %v", kinds(posts))
	}
	text := posts[0].Message.Text()
	for _, want := range []string{"after 5 h", "25,000 items", "3 errors", "25M tokens", "Averaged 1,389 tok/s", "peak 1,700 tok/s"} {
		if !strings.Contains(text, want) {
			t.Errorf("finished post = %q; want %q", text, want)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func replyGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	testkit.Golden(t, filepath.Join("testdata", name), got, *update)
}

// replyGoldenJSON compares Block Kit after unmarshalling, so formatting does not matter.
func replyGoldenJSON(t *testing.T, name string, got []byte) {
	t.Helper()
	testkit.GoldenJSON(t, filepath.Join("testdata", name), got, *update)
}
