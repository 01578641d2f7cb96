package monitor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/reports"
)

// progressRun is a monitor over a log-only run whose log the test writes, with the clock at *now.
func progressRun(t *testing.T, total int64, now *time.Time) (*Monitor, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "gen.log")
	f := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Log: log, Total: total}}}
	m, _, err := New(f, Options{ProbeTimeout: 5 * time.Second, RateWindow: -1, Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return m, log
}

// writeLog replaces the log's content, modified at mtime.
func writeLog(t *testing.T, path, content string, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// TestFinishNeedsASecondLook: a log line saying every item is done is not a finish until a second sample
// sees it too (or the log stood still on it): a reply echoing "Progress: 25000/25000" followed a moment
// later by 311/25,000 never finishes the run; a real last line does, one sample later.
func TestFinishNeedsASecondLook(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m, log := progressRun(t, 0, &now)
	sample := func() reports.RunStatus {
		t.Helper()
		ev := m.Sample(context.Background())
		return ev[0].Run
	}
	writeLog(t, log, "Progress: 300/25000\n", now)
	sample()

	now = now.Add(30 * time.Second)
	writeLog(t, log, "Progress: 300/25000\nProgress: 25000/25000\n", now)
	rs := sample()
	if rs.ETA != nil && rs.ETA.State == reports.StateDone || rs.Progress == nil || rs.Progress.Done != 300 {
		t.Errorf("after one line saying 25000/25000: progress %+v, ETA %+v; want 300 held, not done", rs.Progress, rs.ETA)
	}
	if !strings.Contains(strings.Join(rs.Notices, "\n"), "the finish counts once the next sample") {
		t.Errorf("notices = %q; want the held finish said", rs.Notices)
	}

	now = now.Add(time.Second)
	writeLog(t, log, "Progress: 300/25000\nProgress: 25000/25000\nProgress: 311/25000\n", now)
	if rs := sample(); rs.Progress == nil || rs.Progress.Done != 311 || rs.ETA == nil || rs.ETA.State == reports.StateDone {
		t.Errorf("after 311/25000: progress %+v, ETA %+v; want 311, running", rs.Progress, rs.ETA)
	}

	now = now.Add(30 * time.Second)
	writeLog(t, log, "Progress: 24999/25000\nProgress: 25000/25000\n", now)
	if rs := sample(); rs.Progress == nil || rs.Progress.Done != 311 {
		t.Errorf("the finish line, once: progress %+v; want 311 held", rs.Progress)
	}
	// An answer a second later is no second sample.
	now = now.Add(time.Second)
	if rs, _ := m.RunStatus(context.Background(), "synth", Need{Progress: true}); rs.Progress == nil || rs.Progress.Done != 311 {
		t.Errorf("an answer a second after: progress %+v; want 311 still held", rs.Progress)
	}
	// The next sample sees it still (the log written again a moment ago: only the second look confirms).
	now = now.Add(30 * time.Second)
	writeLog(t, log, "Progress: 24999/25000\nProgress: 25000/25000\n", now.Add(-time.Second))
	if rs := sample(); rs.Progress == nil || rs.Progress.Done != 25000 || rs.ETA == nil || rs.ETA.State != reports.StateDone {
		t.Errorf("a second sample at 25000/25000: progress %+v, ETA %+v; want done", rs.Progress, rs.ETA)
	}

	// A run first seen finished (a one-shot status after the job ended) has no arrival to doubt.
	first, log2 := progressRun(t, 0, &now)
	writeLog(t, log2, "Progress: 25000/25000\n", now)
	if rs, _ := first.RunStatus(context.Background(), "synth", Need{Progress: true}); rs.Progress == nil || rs.Progress.Done != 25000 {
		t.Errorf("first seen finished: progress %+v; want 25000", rs.Progress)
	}
}

// TestForeignBarsAreNamedOnce: an engine's batch bar after the job's own line is named in the first
// status's notices, not again, and never sets done/total.
func TestForeignBarsAreNamedOnce(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m, log := progressRun(t, 25000, &now)
	writeLog(t, log, "Progress: 300/25000\nProcessed prompts: 100%|##########| 200/200 [00:05<00:00, 38.10it/s]\n", now)
	var notices [][]string
	for range 2 {
		rs, err := m.RunStatus(context.Background(), "synth", Need{Progress: true})
		if err != nil {
			t.Fatal(err)
		}
		if rs.Progress == nil || rs.Progress.Done != 300 || rs.Progress.Total != 25000 {
			t.Errorf("progress = %+v; want 300/25000", rs.Progress)
		}
		notices = append(notices, rs.Notices)
		now = now.Add(30 * time.Second)
	}
	if first := strings.Join(notices[0], "\n"); !strings.Contains(first, `the log also shows "Processed prompts" (200/200), which is not the job's progress`) {
		t.Errorf("first notices = %q; want the batch bar named", first)
	}
	if second := strings.Join(notices[1], "\n"); strings.Contains(second, "Processed prompts") {
		t.Errorf("second notices = %q; want the bar named once", second)
	}
}
