package monitor

import (
	"context"
	"fmt"
	"slices"
	"time"

	"runwatch/reports"
)

// The latest evaluation of each run is what answers, scheduled posts and the sampler's readers
// share: a sample (or an answer's own fresh probe) is evaluated once, and a question asked within
// Options.Fresh of it reads that evaluation instead of probing again. Identical questions asked
// at the same moment share one evaluation in flight.

// latestEval is a run's latest evaluation and what it covered.
type latestEval struct {
	at   time.Time
	need Need
	rs   reports.RunStatus
}

// covers reports whether a status with the parts n has every part o needs.
func (n Need) covers(o Need) bool {
	return (n.Storage || !o.Storage) && (n.Progress || !o.Progress) && (n.Plans || !o.Plans) && (n.Stages || !o.Stages)
}

// keepLatest records rs as the run's latest evaluation, unless a newer one is there.
func (m *Monitor) keepLatest(name string, need Need, at time.Time, rs reports.RunStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.latest[name]; ok && prev.at.After(at) {
		return
	}
	m.latest[name] = latestEval{at: at, need: need, rs: rs}
}

// reuseLatest is the run's latest evaluation when it covers need and is at most Options.Fresh
// old; readers get their own copy of the lists they might append to.
func (m *Monitor) reuseLatest(name string, need Need, now time.Time) (reports.RunStatus, bool) {
	if m.opts.Fresh <= 0 {
		return reports.RunStatus{}, false
	}
	m.mu.Lock()
	le, ok := m.latest[name]
	m.mu.Unlock()
	if !ok || !le.need.covers(need) || now.Sub(le.at) > m.opts.Fresh || now.Before(le.at) {
		return reports.RunStatus{}, false
	}
	rs := le.rs
	rs.Problems, rs.Notices = slices.Clone(rs.Problems), slices.Clone(rs.Notices)
	return rs, true
}

// evaluate answers one run's status: the latest evaluation when fresh enough, else one probe,
// shared with identical questions in flight, that becomes the latest.
func (m *Monitor) evaluate(ctx context.Context, name string, need Need, probe func() reports.RunStatus) reports.RunStatus {
	if rs, ok := m.reuseLatest(name, need, m.opts.Now()); ok {
		return rs
	}
	key := fmt.Sprintf("%s\x00%v", name, need)
	first := false
	rs, err := m.inflight.Do(ctx, key, func() (reports.RunStatus, error) {
		first = true
		at := m.opts.Now()
		rs := probe()
		if ctx.Err() == nil {
			// An evaluation cut short by its asker's deadline is not one to hand to the next.
			m.keepLatest(name, need, at, rs)
		}
		return rs, nil
	})
	if err != nil {
		return notProbed(name, err)
	}
	if !first {
		// Joined another question's evaluation: its own copy of the lists it might append to.
		rs.Problems, rs.Notices = slices.Clone(rs.Problems), slices.Clone(rs.Notices)
	}
	return rs
}
