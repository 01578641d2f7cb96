package reports

import (
	"fmt"
	"strings"
	"time"
)

// The checklist's verdicts, from what the probes read: pure functions of the readings.

// StageFromProgress is a `progress` check's state; p is nil when no progress is known, and failed is then
// the progress sources' problems (ProgressProblems). A source that failed is named with its error, the check
// unchecked: "no progress reported yet" read as a job that has not started while its log could not be read.
func StageFromProgress(p *Progress, failed []Problem) StageStatus {
	if p == nil && len(failed) > 0 {
		d := fmt.Sprintf("no progress reading: %s failed: %s", failed[0].Probe, failed[0].short(200))
		if n := len(failed) - 1; n > 0 {
			d += fmt.Sprintf(" (%s failed too)", Plural(n, "other source", "other sources"))
		}
		return StageStatus{State: StagePending, Detail: d, Unchecked: true}
	}
	if p == nil {
		return StageStatus{State: StagePending, Detail: "no progress reported yet"}
	}
	detail := func(d string) string {
		if p.ServerCount() {
			return d + " (the server's count, from its start)"
		}
		return d
	}
	switch {
	case p.Total > 0 && p.Done >= p.Total:
		return StageStatus{State: StageDone, Detail: detail(fmt.Sprintf("%s items done", Count(float64(p.Done))))}
	case p.Done > 0 && p.Total > 0:
		return StageStatus{State: StageInProgress, Detail: detail(fmt.Sprintf("%s / %s (%s)", Count(float64(p.Done)), Count(float64(p.Total)), Percent(float64(p.Done)/float64(p.Total))))}
	case p.Done > 0:
		return StageStatus{State: StageInProgress, Detail: detail(fmt.Sprintf("%s done", Count(float64(p.Done))))}
	}
	return StageStatus{State: StagePending, Detail: "not started"}
}

// StageFromMetric is a `metric` check's state: done when vals[name] op value holds. metric is the
// name as configured (for the detail), name the one vals are keyed by, known the names there are.
func StageFromMetric(metric, name, op string, value float64, vals map[string]float64, known []string) StageStatus {
	v, ok := vals[name]
	if !ok {
		for _, k := range known {
			if k == name {
				// A name runwatch reads, absent because no engine answered or reports it: the list of names would
				// name it too, and read as a contradiction.
				return StageStatus{State: StagePending, Detail: fmt.Sprintf("metric %s not scraped yet: no engine reported it", metric)}
			}
		}
		return StageStatus{State: StagePending, Detail: fmt.Sprintf("metric %s not scraped (known: %s)", metric, strings.Join(known, ", "))}
	}
	if compare(v, op, value) {
		return StageStatus{State: StageDone, Detail: fmt.Sprintf("%s = %g %s %g", metric, v, op, value)}
	}
	return StageStatus{State: StagePending, Detail: fmt.Sprintf("%s = %g, waiting for %s %g", metric, v, op, value)}
}

func compare(v float64, op string, x float64) bool {
	switch op {
	case ">":
		return v > x
	case ">=":
		return v >= x
	case "<":
		return v < x
	case "<=":
		return v <= x
	case "==":
		return v == x
	case "!=":
		return v != x
	}
	return false
}

// Growth is a directory's top-level regular files at one look.
type Growth struct {
	Size  int64 `json:"size"`
	Files int   `json:"files"`
	// Changed is when size or count last changed.
	Changed time.Time `json:"changed"`
	Seen    time.Time `json:"seen"`
}

// growthQuiet is how long a directory must stay unchanged to count as done.
const growthQuiet = 10 * time.Minute

// StageFromGrowth is a `growing` check's state from this look (cur) and the one before (prev,
// when seen).
func StageFromGrowth(path string, prev Growth, seen bool, cur Growth, now time.Time) StageStatus {
	summary := fmt.Sprintf("%s in %s", Bytes(float64(cur.Size)), Plural(cur.Files, "file", "files"))
	switch {
	case cur.Files == 0:
		return StageStatus{State: StagePending, Detail: path + " is empty"}
	case seen && cur.Size > prev.Size:
		return StageStatus{State: StageInProgress, Detail: fmt.Sprintf("%s, +%s since %s", summary, Bytes(float64(cur.Size-prev.Size)), prev.Seen.In(now.Location()).Format("15:04 MST"))}
	case !seen || now.Sub(cur.Changed) < growthQuiet:
		return StageStatus{State: StageInProgress, Detail: summary}
	}
	return StageStatus{State: StageDone, Detail: fmt.Sprintf("%s, unchanged since %s", summary, cur.Changed.In(now.Location()).Format("Mon 2 Jan 15:04 MST"))}
}
