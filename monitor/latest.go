package monitor

import (
	"context"
	"fmt"
	"slices"
	"sync"
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

// flights shares one evaluation among identical questions asked at once.
type flights struct {
	mu    sync.Mutex
	calls map[string]*flight
	// joined, when set (tests), is told each time a question joins one in flight.
	joined func(key string)
}

type flight struct {
	done chan struct{}
	rs   reports.RunStatus
}

// do runs fn for key, or waits for the run already in flight for key (or for ctx: the status of
// the run named name then says it was not probed).
func (f *flights) do(ctx context.Context, key, name string, fn func() reports.RunStatus) reports.RunStatus {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]*flight{}
	}
	c, running := f.calls[key]
	if running && f.joined != nil {
		f.joined(key)
	}
	if !running {
		c = &flight{done: make(chan struct{})}
		f.calls[key] = c
	}
	f.mu.Unlock()
	if !running {
		c.rs = fn()
		f.mu.Lock()
		delete(f.calls, key)
		f.mu.Unlock()
		close(c.done)
		return c.rs
	}
	select {
	case <-c.done:
		rs := c.rs
		rs.Problems, rs.Notices = slices.Clone(rs.Problems), slices.Clone(rs.Notices)
		return rs
	case <-ctx.Done():
		return notProbed(name, ctx.Err())
	}
}

// evaluate answers one run's status: the latest evaluation when fresh enough, else one probe,
// shared with identical questions in flight, that becomes the latest.
func (m *Monitor) evaluate(ctx context.Context, name string, need Need, probe func() reports.RunStatus) reports.RunStatus {
	if rs, ok := m.reuseLatest(name, need, m.opts.Now()); ok {
		return rs
	}
	key := fmt.Sprintf("%s\x00%v", name, need)
	return m.inflight.do(ctx, key, name, func() reports.RunStatus {
		at := m.opts.Now()
		rs := probe()
		m.keepLatest(name, need, at, rs)
		return rs
	})
}
