package estimate

import (
	"reflect"
	"slices"
	"sync"
)

// Memo keeps what one run's successive estimates share, so that an estimate's cost does not grow with the
// history:
//
//   - a bounded copy of the history, extended by each call's new samples and compacted as it grows past
//     memoMax points (the way the replayer keeps its history, which the accuracy benchmark measures), and
//   - the estimates at the past points the backtest scores (see pastETA): an estimate from a prefix of the
//     history does not change when samples are added, so each is made once.
//
// The last sample of each call is not kept: an answer's fresh sample that never joins the history (the monitor
// samples for an answer and records only the sampler's) must not make the next call's history look like another.
// A call whose history does not extend the one before (the caller compacted its own, or it is another run's)
// starts the memo again. A Memo serves one run; it is safe for concurrent use, one estimate at a time.
type Memo struct {
	mu    sync.Mutex
	base  []Observation // the history but the last point of the latest call, bounded
	src   int           // how many points of that call's history base stands for
	last  Observation   // that call's point src-1: an extension has it at the same place
	first float64       // T of that call's first point
	gen   int           // bumped whenever base is rebuilt or compacted: a past index is a generation's
	pasts map[pastKey]ETA
}

// pastKey names one past estimate: the prefix of the memo's history up to index i (of the history that starts
// at first, after currentRun), at a window and a stall threshold.
type pastKey struct {
	gen           int
	first         float64
	i             int
	window, stall float64
}

// memoMax and memoKeep bound the memo's history: past memoMax points it is compacted to memoKeep (the
// replayer's bounds).
const (
	memoMax  = 480
	memoKeep = 360
)

// maxHistory bounds the history an estimate without a Memo reads: a longer one is compacted first
// (to three quarters of it), so that one estimate over a week of samples costs what one over 2,000 does.
const maxHistory = 2000

// view is hist as the memo keeps it: its bounded copy of all but the last point, and the last point.
func (m *Memo) view(hist []Observation) []Observation {
	n := len(hist)
	if n == 0 {
		return hist
	}
	extends := m.src > 0 && n > m.src && hist[0].T == m.first && reflect.DeepEqual(hist[m.src-1], m.last)
	if extends {
		m.base = append(m.base, hist[m.src:n-1]...)
	} else {
		m.base = append(m.base[:0], hist[:n-1]...)
		m.newGen()
	}
	if len(m.base) > memoMax {
		m.base = Compact(m.base, memoKeep)
		m.newGen()
	}
	m.src, m.first = n-1, hist[0].T
	if n > 1 {
		m.last = hist[n-2]
	}
	// The last point goes in the slot after base, which the next call's points overwrite: no copy.
	m.base = slices.Grow(m.base, 1)
	return append(m.base[:len(m.base):len(m.base)+1], hist[n-1])
}

func (m *Memo) newGen() {
	m.gen++
	m.pasts = map[pastKey]ETA{}
}

// past is the estimate from hist[:i+1] (a prefix of the memo's history; see pastETA), made once.
func (m *Memo) past(hist []Observation, i int, cfg Config) ETA {
	k := pastKey{gen: m.gen, first: hist[0].T, i: i, window: cfg.Window, stall: cfg.StallAfter}
	if e, ok := m.pasts[k]; ok {
		return e
	}
	e, _ := compute(hist[:i+1], cfg)
	m.pasts[k] = e
	return e
}
