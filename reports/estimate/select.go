package estimate

import (
	"fmt"
	"math"
	"sort"

	"runwatch/reports/format"
)

// The estimators side by side. Each predicts the item rate of the busy part of the run (items not started yet
// going through a full batch) from the blocks of history before a block boundary; the run's own history scores
// them: the rate each predicted at boundary k against the rate that then came over the next h blocks, h as many
// blocks as the busy part has left (up to half the history). The best ones, weighted by their errors, price
// the busy part; the drain at the end is the structural model's. Blocks are a third of the pace window, so
// the whole choice follows the job's pace.
//
// On every job measured so far (sim scenarios, the peer corpus) the structural model predicted best or close
// to best, and a blend of all of them lost accuracy on steady runs, so the weights decide which one prices the
// busy part and the others take over only when clearly better; the errors of the one chosen calibrate the range.

// candidate is one simple estimator of the busy item rate.
type candidate struct {
	name string
	// rate is the items/s it predicts at block boundary k from the blocks before it (NaN when it cannot).
	rate func(k int) float64
}

// blockStats are one block's counts.
type blockStats struct {
	items, active float64 // finished items and active seconds
	tokens        float64 // tokens generated (when known, same server lifetime, batch full)
	hasTokens     bool
	tpi           measure // tokens per finished item measured in the block (den 0 when unknown)
	restart       bool    // the batch started afresh in it
}

// selection is the outcome of the choice.
type selection struct {
	rate   float64   // the weighted items/s of the busy part
	errs   []float64 // log(realized/predicted) of the weighted rate at past boundaries, oldest first
	best   string    // the candidate with the most weight
	weight float64   // its weight
	// stretch widens the errors measured over h blocks to the busy part's horizon when that is longer: a rate
	// that wanders does so further over a longer time (as the square root of the horizon's ratio).
	stretch float64
}

// selectHorizon is the most blocks ahead an estimator is scored over: how well it follows the rate the job runs
// at next. Scored over the busy part's whole horizon (up to half the history), the evidence that the job's
// pace had changed came a whole horizon late, and the whole run's rate stood: held-out jobs whose speed drifted
// (growing prompts, a throttle, a neighbour ramping up) scored 1.28-1.42x tqdm's EMA.
const selectHorizon = 2

// maxScored is how many recent boundaries score an estimator: a run's early errors say little of its late ones.
const maxScored = 12

// scoreFloor is the error below which estimators are not told apart (3%): the scores of estimators that all
// predict a steady run well differ by chance, and following those differences only adds noise.
const scoreFloor = 0.03

// sharpness is how strongly the weights follow the scores: weight ∝ (1 / mean squared error)^sharpness.
const sharpness = 1.0

// structuralPrior is the structural model's head start: its weight is multiplied by this, so that a simple
// estimator must predict this run markedly better before it moves the estimate.
const structuralPrior = 1.5

// switchRatio is how much better (in weight) a simple estimator must have predicted this run to take over.
const switchRatio = 2.0

// minSwitch is the fewest scored boundaries before a simple estimator may take over.
const minSwitch = 4

// minScored is the fewest scored boundaries before the history may overrule the structural model.
const minScored = 3

func (s series) blockStats(bs []block) []blockStats {
	out := make([]blockStats, len(bs))
	for i, b := range bs {
		a, z := s.pts[b.from], s.pts[b.to]
		st := blockStats{items: z.done - a.done, active: z.active - a.active, restart: s.restartIn(a.t, z.t)}
		if a.hasG && z.hasG && a.seg == z.seg {
			st.tokens, st.hasTokens = z.g-a.g, true
		}
		if r, ok := blockTokensPerItem(a, z); ok {
			st.tpi = r
		}
		out[i] = st
	}
	return out
}

// candidates are the estimators side by side: items over the pace window, items over the run so far (its
// first block, the warm-up, left out), items over the last block, tokens over the pace window priced at the
// window's tokens per item, and the structural model's own levels (with change detection) at each boundary.
func (s series) candidates(st []blockStats, bs []block, window, structRate float64) []candidate {
	sum := func(a, z int, f func(blockStats) float64) float64 {
		v := 0.0
		for _, b := range st[max(0, a):z] {
			v += f(b)
		}
		return v
	}
	items := func(b blockStats) float64 { return b.items }
	active := func(b blockStats) float64 { return b.active }
	over := func(a, z int) float64 {
		if d := sum(a, z, active); d > 0 && z > a {
			return sum(a, z, items) / d
		}
		return math.NaN()
	}
	cs := []candidate{
		{candPace, func(k int) float64 { return over(k-3, k) }},
		{candRun, func(k int) float64 { return over(min(1, k-1), k) }},
		{candLast, func(k int) float64 { return over(k-1, k) }},
	}
	tokens := false
	for _, b := range st {
		tokens = tokens || b.hasTokens
	}
	if tokens {
		cs = append(cs, candidate{candTokens, func(k int) float64 {
			var g, d float64
			var m measure
			for _, b := range st[max(0, k-3):k] {
				if b.hasTokens {
					g, d = g+b.tokens, d+b.active
				}
				m.num, m.den = m.num+b.tpi.num, m.den+b.tpi.den
			}
			if d <= 0 || m.den <= 0 || m.num <= 0 {
				return math.NaN()
			}
			return g / d / (m.num / m.den)
		}})
	}
	// The structural model at past boundaries: its levels of seconds per item (log only) or of tokens per
	// second and per item, with their change detection, from the blocks before k.
	cs = append(cs, candidate{structuralName, func(k int) float64 {
		if k == len(st) {
			return structRate
		}
		var spi, tps, tpi []measure
		for _, b := range st[:k] {
			if b.items > 0 && !b.restart {
				spi = append(spi, measure{b.active, b.items})
			}
			if b.hasTokens && b.active > 0 {
				tps = append(tps, measure{b.tokens, b.active})
			}
			if b.tpi.den > 0 {
				tpi = append(tpi, b.tpi)
			}
		}
		if tokens && len(tps) > 0 && len(tpi) > 0 {
			r := fitLevel(tps, rateChangeZ, true, 0, 1).Level
			mf := fitLevel(tpi, changeZ, false, 0, 2)
			m := mf.Level
			if mf.BaseFrom == 0 {
				// No change in the lengths: every item so far counts, as the model counts them (halfway with
				// the blocks past the warm-up once settledLengths holds).
				past := s
				past.pts = s.pts[:bs[k-1].to+1]
				if cum, _, ok := past.cumTokensPerItem(window, measure{}); ok && cum > 0 {
					mf = s.withCumulative(mf, tpi, cum)
					m, _ = blend(mf.Base, 0, mf.Split, 0, mf.Weight)
				}
			}
			return r / m
		}
		if len(spi) > 0 {
			return 1 / fitLevel(spi, rateChangeZ, true, 0, 1).Level
		}
		return math.NaN()
	}})
	return cs
}

// choose replaces the structural model's busy rate with the weighted rate of the estimators that predicted
// this run best, and its range with one built from that rate's own past errors (see calibrate).
func (s series) choose(e ETA, pr parts, now float64) ETA {
	st := s.blockStats(pr.blocks)
	sel, ok := s.selectRate(st, pr)
	if !ok || !(sel.rate > 0) {
		return e
	}
	busy := pr.busy * pr.rate / sel.rate
	low, high := calibrate(busy, pr.rel, sel.errs, sel.stretch)
	sec := busy + pr.drain
	lo, hi := math.Max(0, low+pr.drainLow), high+pr.drainHigh
	e.Seconds, e.LowS, e.HighS = &sec, &lo, &hi
	e.split = &rangeSplit{busy: busy, busyLow: low, busyHigh: high, drain: pr.drain, drainLow: pr.drainLow,
		drainHigh: pr.drainHigh}
	finish := Unix(now + sec)
	e.FinishAt = &finish
	if e.ItemsPerS > 0 {
		e.ItemsPerS = sel.rate
		if e.TokensPerItem > 0 {
			e.TokensPerS = sel.rate * e.TokensPerItem
		}
	}
	e.Estimator = sel.best
	if sel.best != structuralName && sel.rate > 0 {
		// The answer leads with the rate it priced the busy part at and why that one; the structural model's
		// tokens each at tok/s, which it did not use, read as the basis of a finish they did not give ("21,428
		// items left × 718 tokens each at 1,349 tok/s …; priced at 1.37 items/s" is 3 h 10 min, the ETA 4 h 21).
		e.Reason = fmt.Sprintf("%s at %s (%s, which forecast this run best)", itemsLeft(e.ItemsLeft),
			format.Rate(sel.rate, "items/s"), candidateWindow(sel.best)) + e.notes
		if pr.drain > 0.1*sec && pr.drain >= 1 {
			e.Reason += fmt.Sprintf(", and %s more for the batch draining at the end", format.Span(pr.drain))
		}
	}
	return e
}

// candidateWindow says what a simple estimator measured, in words: "the latest item rate" rather than "items
// over the last block". Not over a named number of minutes: the throughput line owns "items/s over the last
// 13 min 30 s", and its figure is over wall time, the estimators' over the time the job ran.
func candidateWindow(name string) string {
	switch name {
	case candPace:
		return "the recent item rate"
	case candLast:
		return "the latest item rate"
	case candRun:
		return "the item rate since the warm-up"
	case candTokens:
		return "the recent tok/s over tokens per item"
	}
	return name
}

// The simple estimators' names (see candidates).
const (
	candPace   = "items over the pace window"
	candRun    = "items over the run"
	candLast   = "items over the last block"
	candTokens = "tokens over the pace window"
)

// structuralName names the structural model among the estimators.
const structuralName = "the structural model"

// selectRate scores the candidates over the history and weighs them.
func (s series) selectRate(st []blockStats, pr parts) (selection, bool) {
	n := len(st)
	cs := s.candidates(st, pr.blocks, 3*pr.blockLen, pr.rate)
	// The estimators are weighed by how well they followed the rate of the next blocks (selectHorizon), and the
	// one chosen is calibrated by its errors over the busy part's horizon (up to half the history): a range
	// built from short horizons held the finish in half the answers of the last twentieth.
	hCal := int(math.Round(pr.busy / pr.blockLen))
	hCal = max(1, min(hCal, (n-1)/2))
	h := min(hCal, selectHorizon)
	realizedOver := func(k, h int) float64 {
		var it, d float64
		for _, b := range st[k : k+h] {
			if b.restart {
				return math.NaN()
			}
			it, d = it+b.items, d+b.active
		}
		if it <= 0 || d <= 0 {
			return math.NaN()
		}
		return it / d
	}
	realized := func(k int) float64 { return realizedOver(k, h) }
	boundaries := func(h int) []int {
		var ks []int
		for k := 3; k+h <= n; k++ {
			if r := realizedOver(k, h); !math.IsNaN(r) {
				ks = append(ks, k)
			}
		}
		if len(ks) > maxScored {
			ks = ks[len(ks)-maxScored:]
		}
		return ks
	}
	ks, ksCal := boundaries(h), boundaries(hCal)
	// preds[c][k] is candidate c's rate at boundary k, for the scored boundaries and now (k = n).
	preds := make([][]float64, len(cs))
	for c, cd := range cs {
		preds[c] = make([]float64, n+1)
		for _, k := range append(append(ks, ksCal...), n) {
			preds[c][k] = cd.rate(k)
		}
	}
	structural := len(cs) - 1
	stretch := math.Sqrt(math.Max(1, pr.busy/(float64(hCal)*pr.blockLen)))
	if len(ks) < minScored {
		return selection{rate: pr.rate, best: cs[structural].name, weight: 1, errs: nil}, true
	}
	weights := make([]float64, len(cs))
	var total float64
	for c := range cs {
		var se float64
		m := 0
		for _, k := range ks {
			p := preds[c][k]
			if !(p > 0) || math.IsNaN(preds[c][n]) || !(preds[c][n] > 0) {
				continue
			}
			d := math.Log(realized(k) / p)
			se += d * d
			m++
		}
		if m < len(ks) {
			continue // an estimator that could not predict every scored boundary does not take part
		}
		mse := se/float64(m) + scoreFloor*scoreFloor
		weights[c] = math.Pow(1/mse, sharpness)
		if c == structural {
			weights[c] *= structuralPrior
		}
		total += weights[c]
	}
	if total == 0 {
		return selection{rate: pr.rate, best: cs[structural].name, weight: 1}, true
	}
	// The structural model keeps the busy rate unless a simple estimator predicted this run markedly better
	// (switchRatio times its weight) over enough boundaries: blending estimators that all predict a steady run
	// well only adds their noise.
	best := structural
	for c := range cs {
		if weights[c] > weights[best] {
			best = c
		}
	}
	if weights[best] < switchRatio*weights[structural] || len(ks) < minSwitch {
		best = structural
	}
	for c := range weights {
		if c != best {
			weights[c] = 0
		}
	}
	total = weights[best]
	sel := selection{stretch: stretch}
	logRate := 0.0
	for c := range cs {
		w := weights[c] / total
		if w > sel.weight {
			sel.best, sel.weight = cs[c].name, w
		}
		if w > 0 {
			logRate += w * math.Log(preds[c][n])
		}
	}
	sel.rate = math.Exp(logRate)
	for _, k := range ksCal {
		lp := 0.0
		for c := range cs {
			if w := weights[c] / total; w > 0 {
				lp += w * math.Log(preds[c][k])
			}
		}
		if !math.IsNaN(lp) && !math.IsInf(lp, 0) {
			sel.errs = append(sel.errs, math.Log(realizedOver(k, hCal))-lp)
		}
	}
	return sel, true
}

// calibrate is the 80% range of the busy part from the chosen rate's own past errors (conformal style): the
// 10th and 90th percentiles of log(realized ÷ predicted), at the finite-sample rank of split conformal
// prediction, turn the point into a low and a high, widened by stretch to the busy part's horizon. Where that
// is narrower than the structural model's own range (rel, about 80%) it is widened to most of it (priorFloor);
// with no errors yet the model's range stands alone.
func calibrate(busy, rel float64, errs []float64, stretch float64) (low, high float64) {
	priorLo, priorHi := math.Log(math.Max(0.05, 1-rel)), math.Log1p(rel)
	n := len(errs)
	if n == 0 {
		return busy * math.Exp(priorLo), busy * math.Exp(priorHi)
	}
	e := append([]float64(nil), errs...)
	sort.Float64s(e)
	q := func(p float64) float64 {
		// The finite-sample quantile: rank ceil((n+1)p) of n, beyond the ends extrapolated by the spread.
		r := math.Ceil(float64(n+1)*p) - 1
		switch {
		case r < 0:
			return e[0] - (e[n-1]-e[0])/float64(n)
		case r >= float64(n):
			return e[n-1] + (e[n-1]-e[0])/float64(n)
		}
		return e[int(r)]
	}
	// A faster realized rate than predicted means less time: the time's quantiles are the rate's, negated.
	lo, hi := -q(0.9), -q(0.1)
	lo, hi = lo*stretch, hi*stretch
	lo, hi = math.Min(lo, priorFloor*priorLo), math.Max(hi, priorFloor*priorHi)
	return busy * math.Exp(math.Min(0, lo)), busy * math.Exp(math.Max(0, hi))
}

// priorFloor is the share of the structural model's own range (in log terms) the calibrated one never goes
// below: the errors of past rate predictions miss what only the finish shows (the drain, lengths that grow
// later): a range built from them alone held the finish in 33-80% of answers on the peer corpus. With the
// backtest's rescaling (backtest.go), 0.5 puts the most scenarios of the accuracy benchmark within 75-90% (30 of
// 36; 29 at 0.3, where peer runs fall under 75%, and 29 at 0.7, where the queued ones pass 90%); with the
// backtest's earlier widening it was 18 (17 at 0.6, 16 at 0.4); without a backtest, 0.6 did (12 of 36). The
// backtest also keeps the busy part's high end at least this share of its calibrated width (its scores do not
// show lengths that grow later); with the busy part and the drain rescaled apart, 0.5 puts 31 of 36 within
// 75-90% (28 at 0.3, 27 at 0.7).
const priorFloor = 0.5
