package monitor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"
)

// writtenLimits bound the scan of a plan's target on every sample: a job writing one file per
// request can hold far more files than is worth walking twice a minute. Past the limit the scan
// says it was cut short and the bytes per token of what it saw still stand.
var writtenLimits = probes.WrittenLimits{Files: 20_000, Depth: 4, Headers: 32}

// measurePlans checks each local plan against the files its target holds so far.
func (m *Monitor) measurePlans(ctx context.Context, r *config.Run, plans []reports.PlanResult, progress *reports.Progress, problem func(string, error)) []reports.MeasuredPlan {
	done := 0.0
	if progress != nil && progress.Total > 0 {
		done = float64(progress.Done) / float64(progress.Total)
	}
	var out []reports.MeasuredPlan
	for _, p := range plans {
		if p.Error != "" || p.Target == "" || p.Host != "" || p.BytesPerToken <= 0 {
			continue
		}
		c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
		w, err := m.guard.Written(c, p.Target, writtenLimits)
		cancel()
		if errors.Is(err, fs.ErrNotExist) {
			// Normal before the job starts writing: a fact of the plan, not a failed probe.
			mp := reports.MeasurePlan(p, probes.Written{Dir: p.Target}, done)
			mp.Sentence = fmt.Sprintf("Written so far to %s: nothing — it does not exist yet.", reports.Code(p.Target))
			out = append(out, mp)
			continue
		}
		if err != nil {
			problem("written "+p.Target, probes.NoAnswer(err, m.opts.ProbeTimeout))
			continue
		}
		mp := reports.MeasurePlan(p, w, done)
		if w.Truncated {
			// The sentence already says how many files: "216 MB in 4 files … (scanned 4 files, …)" said it twice.
			mp.Sentence += fmt.Sprintf(" _(a partial scan: %s)_", w.Cut)
		}
		out = append(out, mp)
	}
	return out
}
