package monitor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
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
