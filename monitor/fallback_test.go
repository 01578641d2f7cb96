package monitor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"
)

// TestMistypedLogFallsBack: a log: that names no file said "ETA: unknown" while the engines counted the job
// and the job logged beside it. The answer now says the log is mistyped and goes on: from the job's log
// discovery found, else from the engines' finished requests.
func TestMistypedLogFallsBack(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "gen.log")
	if err := os.WriteFile(real, []byte("Progress: 300/25000 (0 errors), elapsed: 408s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := vllmServer(t, 1000)
	typo := filepath.Join(dir, "gne.log")
	tests := []struct {
		name    string
		found   *config.Found
		source  string
		done    int64
		notice  string
		withLog bool // a log was read before: no fallback to the engines
	}{
		{"the job's log, as discovery found it", &config.Found{FallbackLog: real}, "log", 300, "reading " + real + " instead", false},
		{"the engines", nil, "metrics", 145, "", false}, // the server's count of finished requests: the recording's 145, more each scrape
		{"not once a log was read", nil, "", 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := config.Run{Name: "a", Log: typo, Metrics: []string{srv.URL}, Total: 25000, Found: tt.found}
			m, _, err := New(&config.File{Runs: []config.Run{run}}, Options{ProbeTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if tt.withLog {
				m.runState("a").LogFile = &probes.LogFile{Path: typo, Inode: 1}
			}
			rs := m.Status(t.Context(), Need{Progress: true}).Runs[0]
			problem := slices.ContainsFunc(rs.Problems, func(p reports.Problem) bool {
				return p.Probe == "log "+typo && strings.Contains(p.Error, "but gen.log is beside it: is log: mistyped?")
			})
			if !problem {
				t.Errorf("problems %+v; want the log's, saying gen.log is beside it", rs.Problems)
			}
			switch {
			case tt.source == "" && rs.Progress != nil:
				t.Errorf("progress %+v; want none: the engines' count would land in the log's history", rs.Progress)
			case tt.source != "" && (rs.Progress == nil || rs.Progress.Source != tt.source || rs.Progress.Done < tt.done || rs.Progress.Total != 25000):
				t.Errorf("progress %+v; want at least %d of 25,000 done, from the %s", rs.Progress, tt.done, tt.source)
			}
			if tt.notice != "" && !slices.ContainsFunc(rs.Notices, func(n string) bool { return strings.Contains(n, tt.notice) }) {
				t.Errorf("notices %q; want %q", rs.Notices, tt.notice)
			}
		})
	}
}
