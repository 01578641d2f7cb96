package monitor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/probes"
	"runwatch/state"
)

// TestMetricsNamesPathTokens: URLs that differ only in a hidden path token (two Telegram-style bot
// gateways, two tenants' keys) name themselves alike once redacted, and are still keyed apart and
// shown with their place in the list; neither key nor name carries a token.
func TestMetricsNamesPathTokens(t *testing.T) {
	const tokA, tokB = "AAH4xk9Zq0LmNoPqRsTu01", "AAH4xk9Zq0LmNoPqRsTu02"
	urls := []string{
		"https://gw.example/bot1:" + tokA + "/metrics",
		"https://gw.example/bot1:" + tokB + "/metrics",
		"http://10.0.0.7:8000/metrics",
	}
	got := metricsNames(urls)
	if got[0].key == got[1].key {
		t.Errorf("metricsNames keys %q and %q; want two URLs differing in their path token keyed apart", got[0].key, got[1].key)
	}
	for i, want := range []string{
		"https://gw.example/[redacted]/metrics (metrics entry 1)",
		"https://gw.example/[redacted]/metrics (metrics entry 2)",
		"http://10.0.0.7:8000/metrics",
	} {
		if got[i].shown != want {
			t.Errorf("metricsNames(...)[%d].shown = %q; want %q", i, got[i].shown, want)
		}
		for _, tok := range []string{tokA, tokB} {
			if strings.Contains(got[i].key, tok) || strings.Contains(got[i].shown, tok) {
				t.Errorf("metricsNames(...)[%d] = %+v; want no token", i, got[i])
			}
		}
	}
	if got[2].key != got[2].shown {
		t.Errorf("metricsNames(...)[2] = %+v; want a URL without collision keyed by its name", got[2])
	}
}

// TestStateFromBeforePathRedaction: a state file written when a path token was part of the key (and so on
// disk) is read with its counters under the key the URL has now: the token leaves the file at the next
// save, and the endpoint's counters carry on rather than start over.
func TestStateFromBeforePathRedaction(t *testing.T) {
	const token = "AAH4xk9Zq0LmNoPqRsTu77"
	f, raw, dir, now := sampledWithState(t, "/bot1:"+token+"/metrics")
	clock := func() time.Time { return *now }
	file := filepath.Join(dir.Path(), "run-synth.json")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	shown := probes.RedactURL(raw)
	if strings.Contains(string(b), token) || !strings.Contains(string(b), shown) {
		t.Fatalf("state file keys the endpoint without %q or holds the token:\n%s", shown, b)
	}
	// The file as the previous release wrote it: the whole path in the key.
	if err := os.WriteFile(file, bytes.ReplaceAll(b, []byte(shown), []byte(raw)), 0o600); err != nil {
		t.Fatal(err)
	}
	m2, problems, err := New(f.file, Options{State: dir, Now: clock})
	if err != nil || len(problems) > 0 {
		t.Fatalf("restart: %v %v", problems, err)
	}
	memos := m2.runState("synth").engineMemos()
	if len(memos) != 1 || memos[shown].Reads != 3 {
		t.Errorf("counters after the restart = %v; want the 3 reads under %q", memos, shown)
	}
	*now = now.Add(30 * time.Second)
	m2.Sample(context.Background())
	if b, _ := os.ReadFile(file); strings.Contains(string(b), token) {
		t.Errorf("state file after the next save still holds the token:\n%s", b)
	}
}

// TestStateQueryURLKeptAcrossRestart: a metrics URL with a query is keyed by its redacted form, whose last
// value reads [redacted]; the re-keying on load leaves such a key as it is, so the endpoint's counters carry
// on after a restart instead of moving to a key nothing reads.
func TestStateQueryURLKeptAcrossRestart(t *testing.T) {
	f, raw, dir, now := sampledWithState(t, "/metrics?model=llama")
	clock := func() time.Time { return *now }
	shown := probes.RedactURL(raw)
	for restart := 1; restart <= 2; restart++ {
		m2, problems, err := New(f.file, Options{State: dir, Now: clock})
		if err != nil || len(problems) > 0 {
			t.Fatalf("restart %d: %v %v", restart, problems, err)
		}
		if memos := m2.runState("synth").engineMemos(); len(memos) != 1 || memos[shown].Reads != 3 {
			t.Errorf("restart %d: counters = %v; want the 3 reads under %q", restart, memos, shown)
		}
	}
}

// sampledWithState is a run scraping a vLLM server at path, sampled three times 30 s apart into a state
// directory: its fixture, the metrics URL, the directory and the clock's time (move it to sample on).
func sampledWithState(t *testing.T, path string) (fixture, string, *state.Dir, *time.Time) {
	t.Helper()
	srv := vllmServer(t, 1386*30)
	raw := srv.URL + path
	f := newFixture(t, raw)
	dir, err := state.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m, _, _ := New(f.file, Options{State: dir, Now: func() time.Time { return now }})
	for range 3 {
		now = now.Add(30 * time.Second)
		m.Sample(context.Background())
	}
	return f, raw, dir, &now
}

// TestRekeyedEnginesKeepsLiveKeys: re-keying moves an old metrics key to its redacted form, and leaves alone
// the keys a sample reads back as they are: a redacted URL (once more), a digest's, and a Prometheus
// instance's, whose label may itself be a URL with a query or a token.
func TestRekeyedEnginesKeepsLiveKeys(t *testing.T) {
	kept := []string{
		"http://h/metrics?model=[redacted]",
		"https://gw/[redacted]/metrics#0a1b2c3d",
		probes.PromCounterPrefix + "http://vllm-0:8000/metrics?tenant=a",
		probes.PromCounterPrefix + "https://gw/bot1:AAH4xk9Zq0LmNoPqRsTu77/metrics",
		probes.PromCounterPrefix + "10.0.0.7:8000",
	}
	in := map[string]engineMemo{"https://gw/bot1:AAH4xk9Zq0LmNoPqRsTu77/metrics": {Reads: 9}}
	for i, k := range kept {
		in[k] = engineMemo{Reads: int64(i + 1)}
	}
	out := rekeyedEngines(in)
	if len(out) != len(kept)+1 || out["https://gw/[redacted]/metrics"].Reads != 9 {
		t.Errorf("rekeyedEngines(...) = %v; want the old key moved to https://gw/[redacted]/metrics", out)
	}
	for i, k := range kept {
		if out[k].Reads != int64(i+1) {
			t.Errorf("rekeyedEngines(...)[%q] = %+v; want it kept (%d reads)", k, out[k], i+1)
		}
	}
}
