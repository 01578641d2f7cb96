package conversation

import (
	"fmt"
	"strings"

	"runwatch/config"
	"runwatch/reports"
)

// noProgressLine is the ETA line of a run with no progress to go on, and why.
func noProgressLine(q Query, rs reports.RunStatus) string {
	return "ETA: unknown — " + noProgressReason(q, rs)
}

// noProgressReason is why nothing is known of a run's progress, for the answers that lead with their own
// subject ("Throughput: unknown — ", "Can't tell — ").
func noProgressReason(q Query, rs reports.RunStatus) string {
	if q.Run.Log == "" && len(q.Run.Metrics) == 0 && q.Run.Prometheus == nil {
		if r, ok := noRunFile(q.Run); ok {
			return r
		}
		return fmt.Sprintf("run %s has no progress source. Add `log:` (the job's log), `metrics:` (vLLM/SGLang/TGI /metrics URLs) or `prometheus:` (the server that scrapes them) to the run file.", reports.Esc(rs.Name))
	}
	// The sources that failed, named where the answer leads ("Can't tell — no progress reading: `log
	// /var/log/gen.log` and `metrics http://gpu-1:8000/metrics` failed"), as the status names them.
	if failed := reports.ProgressProblems(rs.Problems); len(failed) > 0 {
		var names []string
		for _, p := range failed {
			names = append(names, reports.Code(p.Probe))
		}
		last := names[len(names)-1]
		if len(names) > 1 {
			last = strings.Join(names[:len(names)-1], ", ") + " and " + last
		}
		return "no progress reading: " + last + " failed (below)."
	}
	return "no progress reported yet."
}

// noRunFile is why the built-in default run, there because no run file was found (and discovery found
// nothing, when it looked), has no progress source; ok is false for any other run. "add log: to the run
// file" sent a new user looking for a file that is not there.
func noRunFile(run *config.Run) (string, bool) {
	if run == nil || run.Log != "" || len(run.Metrics) > 0 || run.Prometheus != nil || run.Line != 0 || run.Name != config.DefaultRunName {
		return "", false
	}
	found := ","
	if nothing := reports.NothingFound(run.Found); nothing != "" {
		found = ", " + nothing + ","
	}
	// A binary from `go install` has no runwatch.example.yaml beside it: bot init prints a file to start from.
	return fmt.Sprintf("no run file was found (`--config`, `$RUNWATCH_CONFIG` or `./runwatch.yaml`)%s so run %s is the built-in default, which watches disk space only. `bot init` prints a run file to start from (or copy `runwatch.example.yaml` to `runwatch.yaml`): give the run a `log:` (the job's log), `metrics:` (vLLM/SGLang/TGI /metrics URLs) or `prometheus:`.", found, reports.Esc(run.Name)), true
}

// SayNoRunFile puts why the built-in default run has no progress source (no run file was found) in place of
// the lines of a status or a what's-left answer that say to add one to the run file, which is not there. Any
// other run's message is left as it is.
func SayNoRunFile(run *config.Run, m *reports.Message) {
	why, ok := noRunFile(run)
	if !ok {
		return
	}
	for i, s := range m.Sections {
		switch s {
		case reports.NoProgressConfigured:
			m.Sections[i] = "No progress source — " + why
		case reports.NoProgressLeft:
			m.Sections[i] = "I can't count the items left — " + why
		}
	}
}
