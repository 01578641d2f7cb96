package monitor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"runwatch/config"
)

// TestSharedEngineIsNotTheRuns: two discovered jobs on one vLLM each got the server's tokens as their own
// ("64.1K tokens in 15 s = 4,274 tok/s; completions 2,672-2,914 tokens" for a job with max_tokens 512, while
// the server did 190 tok/s). A run whose engine discovery found shared with another job takes none of its
// counters: the ETA and rates are its log's items, the servers are still listed, and a notice names the
// other job.
func TestSharedEngineIsNotTheRuns(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "gen.log")
	if err := os.WriteFile(log, []byte("Progress: 22/40 elapsed: 15s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := vllmServer(t, 1000)
	other := config.SharedJob{Run: "gen", Command: "python3 gen.py", PID: 4866, Port: 24101}
	for _, shared := range []bool{false, true} {
		found := &config.Found{Engines: []config.FoundEngine{{Kind: "vllm", Port: 24101, URL: srv.URL}}, Job: &config.FoundJob{PID: 4931, Command: "python3 gen.py"}}
		if shared {
			found.Shared = []config.SharedJob{other}
		}
		run := config.Run{Name: "gen-2", Log: log, Metrics: []string{srv.URL}, Found: found}
		m, _, err := New(&config.File{Runs: []config.Run{run}}, Options{ProbeTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		rs := m.Status(t.Context(), Need{Progress: true}).Runs[0]
		if rs.ETA == nil || rs.Throughput == nil {
			t.Fatalf("shared=%v: ETA %+v, throughput %+v; want both", shared, rs.ETA, rs.Throughput)
		}
		tokens := rs.Throughput.TokensPerS > 0 || rs.ETA.TokensPerS > 0 || strings.Contains(rs.ETA.Reason, "tok/s")
		notice := slices.ContainsFunc(rs.Notices, func(n string) bool {
			return strings.Contains(n, "vLLM on :24101 is shared with job python3 gen.py (pid 4866, run gen)") && strings.Contains(n, "both jobs'")
		})
		switch {
		case !shared && !tokens:
			t.Errorf("alone: ETA %q, throughput %+v; want the engine's tokens used (the control)", rs.ETA.Reason, *rs.Throughput)
		case shared && tokens:
			t.Errorf("shared: ETA %q, throughput %+v; want no token figure: the server's tokens are both jobs'", rs.ETA.Reason, *rs.Throughput)
		case shared && !strings.Contains(rs.ETA.Reason, "22 items in 15 s"):
			t.Errorf("shared: ETA reason %q; want the log's 22 items in 15 s", rs.ETA.Reason)
		case shared && (rs.Quality != nil || len(rs.Engines) != 1):
			t.Errorf("shared: quality %+v, engines %d; want no finish shares (the server's) and the server still listed", rs.Quality, len(rs.Engines))
		case shared != notice:
			t.Errorf("shared=%v: notices %q; want the shared notice only when shared", shared, rs.Notices)
		}
	}
}

func TestSharedNotice(t *testing.T) {
	engines := []config.FoundEngine{{Kind: "vllm", Port: 8000}}
	tests := []struct {
		shared []config.SharedJob
		want   string
	}{
		{nil, ""},
		{[]config.SharedJob{{Run: "judge", Command: "python3 judge.py", PID: 4243, Port: 8000}},
			"vLLM on :8000 is shared with job python3 judge.py (pid 4243, run judge): its token and request counts are both jobs', so this run's ETA and rates are its own log's items"},
		{[]config.SharedJob{{Port: 8000, Unseen: 2}},
			"vLLM on :8000 is shared with 2 connections from processes I can't inspect: its token and request counts are theirs too, so this run's ETA and rates are its own log's items"},
	}
	for _, tt := range tests {
		r := &config.Run{Found: &config.Found{Engines: engines, Shared: tt.shared}}
		if got := sharedNotice(r); got != tt.want {
			t.Errorf("sharedNotice(%+v) = %q; want %q", tt.shared, got, tt.want)
		}
	}
}
