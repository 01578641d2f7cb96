package monitor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/state"
)

// sharedProcTree writes a /proc with one ext4 root on 259:2 whose device has written sectors.
func sharedProcTree(t *testing.T, root string, sectors uint64) {
	t.Helper()
	// self is a link to a process directory, as in the real /proc.
	if err := os.MkdirAll(filepath.Join(root, "4242"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("4242", filepath.Join(root, "self")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	files := map[string]string{
		"4242/mountinfo": "1 0 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n",
		"diskstats":      fmt.Sprintf(" 259       2 nvme0n1p2 1000 0 8000 100 500 0 %d 300 0 400 400 0 0 0 0 0 0\n", sectors),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A one-shot command measures write rates against the reading a running bot left in the state
// directory; without one it does not wait a second for its own, it says a second sample is needed.
func TestWriteRateFromTheRunningBot(t *testing.T) {
	proc, out := t.TempDir(), t.TempDir()
	sharedProcTree(t, proc, 1_000_000)
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Outputs: []string{out}}}}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	storage := Need{Storage: true}
	status := func(now time.Time, readOnly bool) (notices []string, rates map[string]float64) {
		t.Helper()
		m, _, err := New(f, Options{ProcRoot: proc, State: dir, ReadOnly: readOnly, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rs := m.Status(context.Background(), storage).Runs[0]
		if len(rs.Problems) > 0 {
			t.Fatalf("status problems = %+v; want none", rs.Problems)
		}
		if took := time.Since(start); took >= time.Second {
			t.Logf("status took %v", took) // not asserted: a loaded machine may be this slow
		}
		rates = map[string]float64{}
		for _, r := range rs.Storage.WriteRates {
			rates[r.Mount] = r.BytesPerS
		}
		return rs.Notices, rates
	}

	// Nobody has read the counters yet: no rate, and the status says why.
	notices, rates := status(t0, true)
	if len(rates) != 0 || !strings.Contains(strings.Join(notices, "\n"), rateNeedsSample) {
		t.Errorf("one-shot status with no earlier reading: rates %v, notices %q; want none and %q", rates, notices, rateNeedsSample)
	}
	// The running bot samples (and keeps its reading); a minute later the device wrote 60 MiB more.
	status(t0, false)
	sharedProcTree(t, proc, 1_000_000+60<<11)
	notices, rates = status(t0.Add(time.Minute), true)
	if got, want := rates["/"], float64(60<<20)/60; got != want || len(notices) != 0 {
		t.Errorf("one-shot status after the bot's reading: rate on / = %v, notices %q; want %v B/s and no notice", got, notices, want)
	}
	// A reading older than ten minutes is not measured against.
	notices, rates = status(t0.Add(11*time.Minute), true)
	if len(rates) != 0 || len(notices) != 1 {
		t.Errorf("one-shot status 11 minutes after the bot's reading: rates %v, notices %q; want none and the note", rates, notices)
	}
}
