package monitor

import (
	"context"
	"maps"

	"runwatch/checklist"
	"runwatch/config"
	"runwatch/reports"
)

// checkStages evaluates the run's checklist (package checklist) from this sample, the problems its probes met
// (a progress source's failure is the progress stage's) and the marks and directory looks kept in the run's
// state, and keeps the new looks. rs is the status so far: its problems and whether (and when) the job finished.
func (m *Monitor) checkStages(ctx context.Context, r *config.Run, st *runState, smp *sample, rs reports.RunStatus) []reports.StageStatus {
	in := checklist.Input{Now: m.opts.Now(), ProgressProblems: reports.ProgressProblems(rs.Problems), Finished: rs.End() == reports.EndDone}
	if rs.Finish != nil {
		in.FinishedAt, _ = rs.Finish.At()
	}
	st.mu.Lock()
	in.Marks, in.Growing = maps.Clone(st.Stages), maps.Clone(st.Growing)
	st.mu.Unlock()
	if smp != nil {
		in.Metrics = smp.metrics
		if smp.hasProgress {
			p := smp.progress
			in.Progress = &p
		}
	}
	out, looks := m.stages.Check(ctx, r, in, m.opts.ProbeTimeout)
	if len(looks) > 0 {
		st.mu.Lock()
		if st.Growing == nil {
			st.Growing = map[string]reports.Growth{}
		}
		maps.Copy(st.Growing, looks)
		st.mu.Unlock()
	}
	return out
}
