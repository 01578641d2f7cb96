package sim

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"runwatch/probes"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(url string) (int, []byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func TestDemo(t *testing.T) {
	dir := t.TempDir()
	// A restart between sim seconds 1,200 and 2,400: two real seconds at 600x.
	s := smallScenario(Event{At: 1200, Kind: Restart, Duration: 1200})
	d, err := StartDemo(context.Background(), DemoOptions{Dir: dir, Speed: 600, Scenario: s, Seed: 1})
	if err != nil {
		t.Fatalf("StartDemo: %v", err)
	}
	defer d.Close()

	code, body, err := get(d.MetricsURL)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s = %d, %v; want 200", d.MetricsURL, code, err)
	}
	if e, err := probes.ParseMetrics(bytes.NewReader(body)); err != nil || e.Kind != "vllm" {
		t.Errorf("ParseMetrics(demo /metrics) = kind %q, %v; want vllm", e.Kind, err)
	}
	if code, _, err := get(d.HealthURL); err != nil || code != http.StatusOK {
		t.Errorf("GET %s = %d, %v; want 200", d.HealthURL, code, err)
	}
	waitFor(t, "a progress line", func() bool {
		p, err := probes.NewLog(d.LogPath, nil).Read(context.Background(), probes.LogWant{})
		return err == nil && p.Progress.Done > 0 && p.Progress.Total == int64(s.Items)
	})
	waitFor(t, "output bytes", func() bool {
		parts, _ := filepath.Glob(filepath.Join(d.OutputDir, "part-*.jsonl"))
		for _, p := range parts {
			if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
				return true
			}
		}
		return false
	})
	waitFor(t, "the restart (503)", func() bool {
		code, _, err := get(d.MetricsURL)
		return err == nil && code == http.StatusServiceUnavailable
	})
	waitFor(t, "the server back (200)", func() bool {
		code, _, err := get(d.HealthURL)
		return err == nil && code == http.StatusOK
	})
	if err := d.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if _, _, err := get(d.MetricsURL); err == nil {
		t.Errorf("GET %s after Close succeeded; want the server gone", d.MetricsURL)
	}
}

func TestDemoRunsToTheEnd(t *testing.T) {
	s := smallScenario()
	s.Items = 200
	d, err := StartDemo(context.Background(), DemoOptions{Dir: t.TempDir(), Speed: 3000, Scenario: s, Seed: 2})
	if err != nil {
		t.Fatalf("StartDemo: %v", err)
	}
	defer d.Close()
	waitFor(t, "the job to finish", d.Done)
	waitFor(t, "the final progress line", func() bool {
		p, err := probes.NewLog(d.LogPath, nil).Read(context.Background(), probes.LogWant{})
		return err == nil && p.Progress.Done == 200
	})
	d.Close()
	var tokens int
	parts, _ := filepath.Glob(filepath.Join(d.OutputDir, "part-*.jsonl"))
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		tokens += len(b)
	}
	if lines := countLines(t, parts); lines != 200 {
		t.Errorf("output holds %d items; want 200", lines)
	}
	if tokens < 200*int(s.MeanTokens)*demoBytesPerToken/2 {
		t.Errorf("output is %d bytes for 200 items of ~%v tokens; want about %d bytes per token", tokens,
			s.MeanTokens, demoBytesPerToken)
	}
}

func countLines(t *testing.T, files []string) int {
	t.Helper()
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += bytes.Count(b, []byte("\n"))
	}
	return n
}

func TestStartDemoNoDir(t *testing.T) {
	if _, err := StartDemo(context.Background(), DemoOptions{}); err == nil {
		t.Error("StartDemo without a directory succeeded; want an error")
	}
}

// A demo started partway through has progress, a log that says so and output on disk at once, on the clock
// it continues from.
func TestDemoStartAt(t *testing.T) {
	dir := t.TempDir()
	d, err := StartDemo(context.Background(), DemoOptions{Dir: dir, Speed: 1, Scenario: smallScenario(), Seed: 1, StartAt: 10 * time.Minute})
	if err != nil {
		t.Fatalf("StartDemo: %v", err)
	}
	defer d.Close()
	// No waiting: the fast-forward happened before StartDemo returned.
	p, err := probes.NewLog(d.LogPath, nil).Read(context.Background(), probes.LogWant{})
	if err != nil || p.Progress.Done == 0 || p.Progress.Elapsed < 600 || p.Progress.Elapsed > 615 {
		t.Fatalf("log right after the start = %+v, %v; want progress at about 600 s elapsed", p.Progress, err)
	}
	parts, _ := filepath.Glob(filepath.Join(d.OutputDir, "part-*.jsonl"))
	if len(parts) == 0 {
		t.Error("no output after the fast-forward")
	}
}
