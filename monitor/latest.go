package monitor

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"runwatch/reports"
)

// The latest evaluation of each run is what answers, scheduled posts and the sampler's readers
// share: a sample (or an answer's own fresh probe) is evaluated once, and a question asked within
// Options.Fresh of it reads that evaluation instead of probing again. Identical questions asked
// at the same moment share one evaluation in flight. A question that needs a part the latest
// evaluation lacks (storage after "ETA?") probes that part only and quotes the latest progress,
// so that answers a moment apart never give two figures for one fact.

// latestEval is a run's latest evaluation and what it covered.
type latestEval struct {
	at   time.Time
	need Need
	rs   reports.RunStatus
	// smp is the progress sample it was built from: a sample's, or an answer's own. An answer that
	// probes a part again (storage older than readsAsNow) builds plans and stages on it.
	smp *sample
}

// covers reports whether a status with the parts n has every part o needs.
func (n Need) covers(o Need) bool {
	return (n.Storage || !o.Storage) && (n.Progress || !o.Progress) && (n.Plans || !o.Plans) && (n.Stages || !o.Stages)
}

// union is the parts of n and o together.
func (n Need) union(o Need) Need {
	return Need{Storage: n.Storage || o.Storage, Progress: n.Progress || o.Progress, Plans: n.Plans || o.Plans, Stages: n.Stages || o.Stages}
}

// keepEval records le as the run's latest evaluation, unless a newer one is there.
func (m *Monitor) keepEval(name string, le latestEval) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.latest[name]; ok && prev.at.After(le.at) {
		return
	}
	m.latest[name] = le
}

// freshLatest is the run's latest evaluation when it is at most Options.Fresh old.
func (m *Monitor) freshLatest(name string, now time.Time) (latestEval, bool) {
	if m.opts.Fresh <= 0 {
		return latestEval{}, false
	}
	m.mu.Lock()
	le, ok := m.latest[name]
	m.mu.Unlock()
	if !ok || now.Sub(le.at) > m.opts.Fresh || now.Before(le.at) {
		return latestEval{}, false
	}
	return le, true
}

// reuseLatest is the run's latest evaluation when it covers need and is at most Options.Fresh
// old; readers get their own copy of the lists they might append to. A question about storage does
// not read an evaluation whose storage part is older than readsAsNow (or Fresh, when shorter):
// "are we writing?" is asked about now, and a sample's scan (shared by ScanEvery samples at a short
// interval), or a sample 25 s old, answers for then: an exporter that died since would still answer.
func (m *Monitor) reuseLatest(name string, need Need, now time.Time) (reports.RunStatus, bool) {
	le, ok := m.freshLatest(name, now)
	if !ok || !le.need.covers(need) {
		return reports.RunStatus{}, false
	}
	if at := le.rs.Storage.AsOf; need.Storage && !at.IsZero() && (now.Sub(at) > min(m.opts.Fresh, readsAsNow) || now.Before(at)) {
		return reports.RunStatus{}, false
	}
	rs := le.rs
	rs.Problems, rs.Notices = slices.Clone(rs.Problems), slices.Clone(rs.Notices)
	rs.Notices = ageNotice(rs.Notices, need, now.Sub(le.at))
	return rs, true
}

// ageNotice is notices with, when an answer that reads progress quotes an evaluation age old or more,
// how old: answers between two samples quote the last one, so that they agree, and one that old says
// so, or a server that went down since would read as up now.
func ageNotice(notices []string, need Need, age time.Duration) []string {
	if !(need.Progress || need.Plans || need.Stages) || age < readsAsNow {
		return notices
	}
	return append(slices.Clone(notices), fmt.Sprintf("progress and servers as of %s ago", reports.Duration(math.Round(age.Seconds()))))
}

// progressBase is the fresh latest evaluation a question that needs progress builds on instead of
// sampling progress again: one whose progress (and the sample under it, which plans and stages
// read) is there. nil when there is none, or when need reads nothing of progress.
func (m *Monitor) progressBase(name string, need Need, now time.Time) *latestEval {
	if !need.Progress && !need.Plans && !need.Stages {
		return nil
	}
	le, ok := m.freshLatest(name, now)
	if !ok || !le.need.Progress || (le.smp == nil && !le.need.covers(need)) {
		return nil
	}
	return &le
}

// evaluate answers one run's status: the latest evaluation when fresh enough and covering need;
// else a probe, shared with identical questions in flight, that becomes the latest. The probe
// builds on base, a fresh evaluation's progress, when there is one.
func (m *Monitor) evaluate(ctx context.Context, name string, need Need, probe func(base *latestEval) (reports.RunStatus, *sample)) reports.RunStatus {
	now := m.opts.Now()
	if rs, ok := m.reuseLatest(name, need, now); ok {
		m.told(name, need, rs)
		return rs
	}
	key := fmt.Sprintf("%s\x00%v", name, need)
	first := false
	rs, err := m.inflight.Do(ctx, key, func() (reports.RunStatus, error) {
		first = true
		at := m.opts.Now()
		base := m.progressBase(name, need, at)
		rs, smp := probe(base)
		if ctx.Err() == nil {
			// An evaluation cut short by its asker's deadline is not one to hand to the next.
			le := latestEval{at: at, need: need, rs: rs, smp: smp}
			if base != nil {
				// Its progress is base's, and as old as base.
				le.at, le.need = base.at, need.union(Need{Progress: true})
				if smp == nil {
					le.smp = base.smp
				}
			} else if prev, ok := m.freshLatest(name, at); ok && !need.Progress && prev.need.Progress && prev.smp != nil {
				// A question that needed no progress (storage) must not push out the progress the
				// next one quotes: keep it beside the new parts.
				le.rs = withProgress(le.rs, prev)
				le.at, le.need, le.smp = prev.at, need.union(Need{Progress: true}), prev.smp
			}
			m.keepEval(name, le)
		}
		if base != nil {
			// Its progress is base's: as old as base.
			rs.Notices = ageNotice(rs.Notices, need, m.opts.Now().Sub(base.at))
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
	m.told(name, need, rs)
	return rs
}

// told notes that rs, an evaluation handed to an answer or a scheduled post that gives the ETA (need.ETA),
// tells the channel its ETA: the next shift warning measures the finish's move from it
// (reports.ShiftDetector.Told), so that a warning never announces a move the answers already showed.
func (m *Monitor) told(name string, need Need, rs reports.RunStatus) {
	if !need.ETA || !need.Progress || rs.ETA == nil {
		return
	}
	st := m.runState(name)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.Shift.Told(*rs.ETA, rs.ETA.At, reports.ShiftConfig{}) {
		st.Moves.Record(st.Shift, nil)
	}
}

// withProgress is rs with the progress part of base: what an evaluation built on base quotes.
func withProgress(rs reports.RunStatus, base latestEval) reports.RunStatus {
	b := base.rs
	rs.ETA, rs.Throughput, rs.Progress, rs.Moves, rs.Finish = b.ETA, b.Throughput, b.Progress, b.Moves, b.Finish
	rs.Engines, rs.Quality, rs.Drafter = b.Engines, b.Quality, b.Drafter
	rs.Notices = append(slices.Clone(rs.Notices), b.Notices...)
	// The progress sources' problems, as base named them (a source that failed then is why base
	// has no progress).
	if base.smp != nil {
		rs.Problems = append(slices.Clone(rs.Problems), base.smp.problems...)
		sort.SliceStable(rs.Problems, func(i, j int) bool { return rs.Problems[i].Probe < rs.Problems[j].Probe })
		rs.Problems = slices.Compact(rs.Problems)
	}
	return rs
}

// readsAsNow is reports.ReadsAsNow, the one limit: the storage part of an evaluation an answer about storage
// reads is at most this old (a burst of questions shares one probe), and an answer that quotes older progress
// says how old, as StorageAge does for storage.
const readsAsNow = reports.ReadsAsNow

// defaultStaleAfter is how old evidence may be and still read as now when no sample interval is set
// (a one-shot command): `bot serve`'s default sample interval.
const defaultStaleAfter = 30 * time.Second

// staleAfter is how old evidence may be and still read as now: the time answers reuse an evaluation
// for (Options.Fresh, a sample interval and a probe's time), else defaultStaleAfter. Older, an answer
// says how old.
func (m *Monitor) staleAfter() time.Duration {
	if m.opts.Fresh > 0 {
		return m.opts.Fresh
	}
	return defaultStaleAfter
}
