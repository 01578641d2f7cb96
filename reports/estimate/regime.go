package estimate

import (
	"fmt"
	"math"
	"sort"

	"runwatch/reports/format"
)

// The batch's regime. How many requests the engines run sets the job's pace: a client that drops from 64
// workers to 16 runs at a quarter of the batch, and a second job on the same server takes slots from this one.
// The full-batch rate of the whole run then says nothing of the rate to come: after such a change the held-out
// corpus's estimate kept "2,899 tok/s of the whole run" for the remaining 70% of a job running at 1,160. So the
// whole-run window ends at the last lasting change in the engines' running requests, and the rates come from
// the regime since (the job's lengths still from every item so far).

// regimeBand is how far apart (as a ratio) the running requests of one regime may be: a batch that wobbles as
// requests finish (an on-finish engine's gauge reads 6-8 of 8 slots) stays one regime; a change of more is a new
// one, once it has lasted a block.
const regimeBand = 1.5

// regime is where the batch's current regime began: the index of its first point, the running requests before
// and since (medians), 0 when the history is one regime. A regime must span a block of active time to be used:
// until then there is nothing in it to measure, and the estimate keeps the regime before.
type regime struct {
	from           int
	before, during float64
	// pace: the regime is the job's item rate's (items/s), not the batch's.
	pace bool
}

// regimeOf finds the current regime among the points where the engines answered in the current server
// lifetime and items still waited to start (a drain, which empties the batch as the job ends, is not a new
// regime), past the job's first window (the first batch fills).
func (s series) regimeOf(blockLen float64) regime {
	if len(s.pts) == 0 {
		return regime{}
	}
	seg := s.pts[len(s.pts)-1].seg
	var idx []int
	for i, p := range s.pts {
		if !p.hasG || p.seg != seg || p.running <= 0 || s.starting(i) || s.total > 0 && p.done+p.running >= s.total {
			continue
		}
		idx = append(idx, i)
	}
	if len(idx) < 4 {
		return regime{}
	}
	// The longest suffix whose running requests lie within regimeBand of each other.
	lo, hi := math.Inf(1), 0.0
	j := len(idx)
	for j > 0 {
		r := s.pts[idx[j-1]].running
		if math.Max(hi, r) > regimeBand*math.Min(lo, r) {
			break
		}
		lo, hi = math.Min(lo, r), math.Max(hi, r)
		j--
	}
	if j == 0 || len(idx)-j < 2 {
		return regime{}
	}
	from := idx[j]
	if s.pts[len(s.pts)-1].active-s.pts[from].active < blockLen {
		return regime{}
	}
	med := func(ix []int) float64 {
		v := make([]float64, len(ix))
		for k, i := range ix {
			v[k] = s.pts[i].running
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	before := med(idx[max(0, j-5):j])
	during := med(idx[j:])
	// A lasting change of at least regimeBand and of two requests: not one request more or less in a small batch.
	if math.Max(before, during) < regimeBand*math.Min(before, during) || math.Abs(before-during) < 2 {
		return regime{}
	}
	return regime{from: from, before: before, during: during}
}

// since says what started the regime, for a reason: "since the engines went from 64 running requests to 16".
func (r regime) since() string {
	if r.pace {
		return fmt.Sprintf("since the job's pace went from %s to %s", format.Rate(r.before, "items/s"), format.Rate(r.during, "items/s"))
	}
	return fmt.Sprintf("since the engines went from %s running requests to %s", format.Count(r.before), format.Count(r.during))
}

// paceBlocks is how many blocks before a change of pace must have run at one pace, and paceAfter how many since:
// a step from one steady pace to another, not the lumps of a job whose long requests finish together.
const (
	paceBlocks = 3
	paceAfter  = 2
)

// paceStep is how far apart two paces must be for a change of the job's item rate to end the whole-run window:
// further than the batch's band, because items finish in waves (a job whose long requests finish together).
const paceStep = 2.0

// paceOf finds a step in the job's own pace, its item rate block by block (bs, past the warm-up, no restart in
// them): the last paceAfter blocks or more within regimeBand of each other, the paceBlocks before them too, and
// the two paces regimeBand or more apart. The log alone shows a job whose clients went from 12 workers to 64
// no other way, and the whole run's rate stood for 9 samples after it (9.6% of the job against tqdm's 1.6%).
func (s series) paceOf(bs []block) regime {
	items, secs, at := s.paceSeries(bs)
	x := make([]float64, len(items))
	for i := range items {
		x[i] = items[i] / secs[i]
	}
	n := len(x)
	if n < paceBlocks+paceAfter {
		return regime{}
	}
	within := func(v []float64) (lo, hi float64) {
		lo, hi = math.Inf(1), 0
		for _, r := range v {
			lo, hi = math.Min(lo, r), math.Max(hi, r)
		}
		return lo, hi
	}
	j := n
	for j > 0 {
		lo, hi := within(x[j-1:])
		if !(lo > 0) || hi > regimeBand*lo {
			break
		}
		j--
	}
	if n-j < paceAfter || j < paceBlocks {
		return regime{}
	}
	if lo, hi := within(x[j-paceBlocks : j]); !(lo > 0) || hi > regimeBand*lo {
		return regime{}
	}
	median := func(v []float64) float64 {
		w := append([]float64(nil), v...)
		sort.Float64s(w)
		return w[len(w)/2]
	}
	before, during := median(x[j-paceBlocks:j]), median(x[j:])
	if math.Max(before, during) < paceStep*math.Min(before, during) {
		return regime{}
	}
	return regime{from: at[j], before: before, during: during, pace: true}
}

// paceSeries is the blocks a pace is read from: each one's finished items, active seconds and first point, past
// the warm-up and since the latest restart (a restart, or a block without active time, starts the series again).
func (s series) paceSeries(bs []block) (items, secs []float64, at []int) {
	for _, b := range bs {
		a, z := s.pts[b.from], s.pts[b.to]
		d := z.active - a.active
		if s.restartIn(a.t, z.t) || s.warming(a.t, z.t, s.window) || !(d > 0) {
			items, secs, at = nil, nil, nil
			continue
		}
		items, secs, at = append(items, z.done-a.done), append(secs, d), append(at, b.from)
	}
	return items, secs, at
}

// paceLook is how many blocks before a shift of pace its pace before is measured over (two and two thirds
// windows): a job's older stretches may have run at another pace again. Chosen on the second corpus's log-only
// rows (BenchmarkAccuracy): 5 blocks 1.018x the better baseline, 8 1.008x, 12 1.006x with its on-finish rows
// (whose neighbour jobs' counters are left out) 0.955x -> 0.956x.
const paceLook = 8

// paceShiftZ is how many standard errors of the blocks' own noise (of the logarithm of their item rates, from
// successive differences) a shift of pace must reach; paceShiftStep the least shift, as a ratio; paceShiftAfter the
// fewest blocks since it. Chosen on the second corpus's log-only rows, 1.087x the better baseline without a shift:
// at 3 standard errors 1.008x, at 2.5 1.006x (a threshold under 3 standard errors passes chance), at 3.5 1.012x, at
// 4 1.014x; a step of 1.5x, as 1.25x came to 1.018x (and cut the neighbour jobs' rows on finish on a wobble:
// 0.955x -> 0.958x) and 2x to 1.018x; 3 blocks since, as 2 came to 1.009x and 4 to 1.021x. The first corpus's
// log-only rows do not move (0.857x).
const (
	paceShiftZ     = 3.0
	paceShiftStep  = 1.5
	paceShiftAfter = 3
)

// paceShift finds a shift in the job's pace where the engines give no token counts (the log alone, or counters
// left out): the split of the blocks (bs, past the warm-up, no restart in them) at which the item rate since
// (paceShiftAfter blocks or more, each on the same side of the rate before, and level) stands furthest from the
// rate of the paceLook blocks before, in standard errors of the blocks' own noise, at least paceShiftZ of them and
// paceShiftStep apart. Unlike paceOf it asks no band of the blocks on either side: sampled every 1-3% of the
// job, a log's blocks hold a sample or two, and their rates wander ±30% on a steady job (16.7-41.5 items/s on
// one running at 22), so the blocks after clients went from 12 workers to 64 never lay within 1.5x of each other
// (35-85 items/s) and the whole run's rate stood for a tenth of the job after it (second corpus c2-workers-rise
// log only 5.28% of the job against tqdm's 1.93%; with the shift 1.95%, c2-workers-drop 5.48% -> 3.41%). The pace
// since must hold level: the start of a ramp (a throttle building) is no regime of its own, and cut there the
// log-only throttle came to 10.58% of the job where the whole run's trend gave 10.25% (10.28% with the test).
func (s series) paceShift(bs []block) regime {
	for _, p := range s.pts {
		if p.hasG {
			return regime{}
		}
	}
	items, secs, at := s.paceSeries(bs)
	var lx []float64
	for i := range items {
		if items[i] > 0 {
			lx = append(lx, math.Log(items[i]/secs[i]))
		}
	}
	n := len(items)
	if n < paceBlocks+paceShiftAfter || len(lx) < paceBlocks+paceShiftAfter {
		return regime{}
	}
	sigma := medianAbsDiff(lx, 1) / 0.954 // one block's, as noise() has it
	if !(sigma > 0) {
		return regime{}
	}
	pooled := func(a, z int) float64 {
		var it, d float64
		for i := a; i < z; i++ {
			it, d = it+items[i], d+secs[i]
		}
		return it / d
	}
	best, bestZ := regime{}, paceShiftZ
	for j := paceBlocks; j <= n-paceShiftAfter; j++ {
		b0 := max(0, j-paceLook)
		before, during := pooled(b0, j), pooled(j, n)
		if !(before > 0) || !(during > 0) || math.Max(before, during) < paceShiftStep*math.Min(before, during) {
			continue
		}
		same := true
		for i := j; i < n && same; i++ {
			r := items[i] / secs[i]
			same = (r > before) == (during > before)
		}
		if !same {
			continue
		}
		if !level(items[j:], secs[j:], sigma) {
			continue // a ramp's start (a throttle building) is no regime of its own
		}
		z := math.Abs(math.Log(during/before)) / (sigma * math.Sqrt(1/float64(n-j)+1/float64(j-b0)))
		if z > bestZ {
			best, bestZ = regime{from: at[j], before: before, during: during, pace: true}, z
		}
	}
	return best
}

// level reports whether the blocks' item rates (items[i] ÷ secs[i], those with items) hold level: the slope of
// their logarithms under twice its standard error, given one block's noise sigma.
func level(items, secs []float64, sigma float64) bool {
	lx := make([]float64, len(items))
	seen := 0
	for i := range items {
		if items[i] > 0 {
			lx[i] = math.Log(items[i] / secs[i])
			seen++
		}
	}
	if seen < 3 {
		return true
	}
	// A block without items weighs nothing: the line is the one through the others at their own indices.
	w := func(i int) float64 {
		if items[i] > 0 {
			return 1
		}
		return 0
	}
	l := fitLine(lx, w, 0, len(items))
	return math.Abs(l.slope) < 2*sigma/math.Sqrt(l.vxx)
}
