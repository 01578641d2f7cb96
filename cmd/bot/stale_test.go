package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStaleLogIsStalled: `bot ask` two hours after the job died (its log untouched since, stall_after 10 min,
// no engines to say otherwise) read the last progress line as the job's pace: "No, it's moving. 0.74 items/s",
// "ETA 9 h 20 min". It must say the job is stalled since the log last changed; a log written now is moving.
func TestStaleLogIsStalled(t *testing.T) {
	dir := setEnv(t)
	logPath := filepath.Join(dir, "gen.log")
	if err := os.WriteFile(logPath, []byte("Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "runs:\n  - name: synth\n    log: " + logPath + "\n    watch: [" + dir + "]\n    stall_after: 10m\n"
	if err := os.WriteFile(filepath.Join(dir, "runwatch.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	died := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(logPath, died, died); err != nil {
		t.Fatal(err)
	}
	code, out, errb := run(t, "", "ask", "is it stuck?")
	if code != 0 || !strings.Contains(out, "Stalled since") || !strings.Contains(out, "the job log has not changed since then") || strings.Contains(out, "moving") {
		t.Errorf("is it stuck? with the log untouched for 2 h = %d:\n%s%s\nwant a stall since the log last changed", code, out, errb)
	}
	code, out, _ = run(t, "", "ask", "--json", "ETA?")
	var ans struct {
		ETA struct {
			State string `json:"state"`
		} `json:"eta"`
	}
	if err := json.Unmarshal([]byte(out), &ans); err != nil || code != 0 || ans.ETA.State != "stalled" {
		t.Errorf("ETA? --json with the log untouched for 2 h: state %q (exit %d, %v); want stalled", ans.ETA.State, code, err)
	}
	now := time.Now()
	if err := os.Chtimes(logPath, now, now); err != nil {
		t.Fatal(err)
	}
	if _, out, _ = run(t, "", "ask", "is it stuck?"); !strings.Contains(out, "moving") {
		t.Errorf("is it stuck? with the log written now:\n%s\nwant it moving", out)
	}
}
