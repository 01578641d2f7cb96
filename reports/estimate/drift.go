package estimate

import (
	"fmt"
	"math"

	"runwatch/reports/format"
)

// A pace that drifts. The rates an estimate prices the items left at are the latest the job ran at (a level, or a
// fitted line's latest value): where the time each item takes has been rising steadily (completions that grow
// with the item's index, prompts that grow, a server throttled harder and harder, a neighbour ramping up) the
// items still to come take longer than any rate measured so far, and every method that prices them at the
// current rate lags the drift by half the time left: on the second corpus's drifting jobs the estimate and
// tqdm's EMA alike were 10-19% of the job short. drift carries the trend on: the seconds per item of the blocks
// since the last change are fitted with a line over the items finished, and the items left are priced along it
// for a share of as many items as the line was fitted over (driftReach), level after that: a drift ends. It acts only where the trend stands against its own
// residuals (the Newey-West test of the rates' trends, trendHACZ, weighed in softly over driftSoft standard errors
// so that a trend emerging from the noise moves the estimate gradually) and a line explains the blocks better than
// a single step (clients that halve, a neighbour that leaves: a step is a new level, which the rates already
// follow, not a drift).

// driftBlocks is the fewest blocks since the last change a drift is fitted over: with fewer, a trend's test has
// too few residuals to measure their wobble. At 6 the third corpus's log-only rows came to 0.996x the better
// baseline, at 8 0.993x (the second corpus 0.956x on finish either way).
const driftBlocks = 8

// driftSoft is over how many Newey-West standard errors past trendHACZ - 0.5 a drift's weight goes from none to
// whole: a hard threshold moved the finish by a third of the job between consecutive answers as a slope's test
// crossed it.
const driftSoft = 1.5

// driftMost and driftLeast bound how far a drift moves the busy part's time (1.25x later, 0.8x earlier): a line
// fitted over a few blocks is a slope, not a forecast of the rest of the job. Carried over driftReach of its
// stretch the corpora never reach them (1.5x and 0.6x give the same figures); carried over the whole stretch the
// demo's answer at a quarter done did (4 h 46 min, where about 4 h is due).
const (
	driftMost  = 1.25
	driftLeast = 0.8
)

// driftPrice is a drift priced into the busy part: the time per item's move over the stretch fitted, over how long,
// and the factor on the busy part's time.
type driftPrice struct {
	factor float64 // the busy part's time with the drift ÷ without
	moved  float64 // the fitted line's value at its end ÷ at its start, less 1
	span   float64 // active seconds fitted
}

// drift fits the trend of the time per item since the last change and what it makes of the busy part's busyItems
// (ok false when there is no drift to price). The factor is the line's mean over the items left against its latest
// value: the rates priced are already the latest the job ran at, and the drift adds only what is still to come.
// (Against the rate priced, the line's own level moved the demo's estimate by a quarter where its token rate and
// completions, censored in flight, price an item better than blocks of finished items do.)
func (s series) drift(pr parts, busyItems float64) (driftPrice, bool) {
	window := 3 * pr.blockLen
	var spi []measure // seconds per item, a block each, as the structural model counts them
	var at []float64  // the active time each starts at
	idle := 0.0
	for _, b := range pr.blocks {
		a, z := s.pts[b.from], s.pts[b.to]
		span := z.active - a.active
		switch {
		case s.restartIn(a.t, z.t):
			idle, spi, at = 0, nil, nil // a restart starts the stretch afresh
		case z.done > a.done:
			if !s.warming(a.t, z.t, window) {
				spi = append(spi, measure{span + idle, z.done - a.done})
				at = append(at, a.active-idle)
			}
			idle = 0
		default:
			idle += span
		}
	}
	n := len(spi)
	if n < driftBlocks || !(busyItems > 0) {
		return driftPrice{}, false
	}
	fit := fitLevel(spi, rateChangeZ, true, 0, 1)
	a := fit.BaseFrom
	if fit.Weight >= 0.5 {
		a = fit.From
	}
	k := n - a
	if k < driftBlocks {
		return driftPrice{}, false
	}
	x := make([]float64, n)
	for i, m := range spi {
		x[i] = m.num / m.den
	}
	var items float64
	for _, m := range spi[a:] {
		items += m.den
	}
	meanDen := items / float64(k)
	w := unitWeights(spi, a)
	l := fitLine(x, w, a, n)
	mi, my, slope := l.mi, l.my, l.slope
	sigma, rho := noise(x[a:], true)
	sigma *= math.Sqrt((1 + rho) / (1 - rho))
	weight := math.Min(1, (math.Abs(slope)/slopeHAC(x, w, a, l)-(trendHACZ-0.5))/driftSoft)
	if !(weight > 0) || !(math.Abs(slope) > trendZ*sigma/math.Sqrt(l.vxx)) || !(stepOverLine(x, w, a, my, mi, slope) > 1) {
		return driftPrice{}, false
	}
	// The line's value at the end of the latest block, and its slope per item (blocks of meanDen items each).
	now := my + slope*(float64(n-1)-mi+0.5)
	start := my + slope*(float64(a)-mi-0.5)
	if !(now > 0) || !(start > 0) {
		return driftPrice{}, false
	}
	// The slope carried on is the smaller of the whole stretch's and its latest half's (none when they disagree in
	// sign): a drift that has run its course (the demo's completions, grown from 650 to 1,066 tokens and level
	// since) still tilts the whole stretch's line.
	half := max(4, k/2)
	recent := fitLine(x, w, n-half, n).slope
	if recent*slope <= 0 {
		return driftPrice{}, false
	} else if math.Abs(recent) < math.Abs(slope) {
		slope = recent
	}
	perItem := slope / meanDen
	// Along the line for driftReach of the items it was fitted over, level after.
	h := math.Min(busyItems, driftReach*items)
	mean := now + perItem*(h*h/2+h*(busyItems-h))/busyItems
	f := math.Max(driftLeast, math.Min(driftMost, mean/now))
	return driftPrice{factor: 1 + weight*(f-1), moved: now/start - 1, span: s.pts[len(s.pts)-1].active - at[a]}, true
}

// stepOverLine is the residual of the best single step through the blocks from a on (weights w) over the line's:
// above 1 the line explains them better. A step is a new level, not a drift. (Weighed in softly between 1 and
// 1.1-1.5 instead, the second corpus lost 0.003-0.005x on finish and no consecutive answers moved less.)
func stepOverLine(x []float64, w func(int) float64, a int, my, mi, slope float64) float64 {
	n := len(x)
	var line float64
	for i := a; i < n; i++ {
		r := x[i] - my - slope*(float64(i)-mi)
		line += w(i) * r * r
	}
	ss := func(from, to int) float64 {
		var sw, sy float64
		for i := from; i < to; i++ {
			sw, sy = sw+w(i), sy+w(i)*x[i]
		}
		m, v := sy/sw, 0.0
		for i := from; i < to; i++ {
			v += w(i) * (x[i] - m) * (x[i] - m)
		}
		return v
	}
	step := math.Inf(1)
	for k := a + 2; k <= n-2; k++ {
		step = math.Min(step, ss(a, k)+ss(k, n))
	}
	return step / line
}

// withDrift prices a drift into a running estimate's busy part (see drift): its time and range move by the
// drift's factor, and the reason, which leads with the rate measured, says how far the time per item moved and
// what carrying that on adds.
func (s series) withDrift(e ETA, pr parts, now float64) ETA {
	if e.State != StateRunning || e.Seconds == nil || e.LowS == nil || e.HighS == nil || !(e.ItemsPerS > 0) {
		return e
	}
	busy := *e.Seconds
	if e.split != nil {
		busy = e.split.busy
	}
	d, ok := s.drift(pr, busy*e.ItemsPerS)
	if !ok || d.factor == 1 {
		return e
	}
	extra := busy * (d.factor - 1)
	sec := *e.Seconds + extra
	low, high := math.Max(0, *e.LowS+extra), *e.HighS+extra
	e.Seconds, e.LowS, e.HighS = &sec, &low, &high
	if e.split != nil {
		sp := *e.split
		sp.busy, sp.busyLow, sp.busyHigh = sp.busy*d.factor, sp.busyLow*d.factor, sp.busyHigh*d.factor
		e.split = &sp
	}
	finish := Unix(now + sec)
	e.FinishAt = &finish
	if math.Abs(extra) >= 1 {
		how := "longer"
		if d.moved < 0 {
			how = "less time"
		}
		e.Reason += fmt.Sprintf("; each item has taken %s steadily (%+.0f%% over the last %s), priced on along that trend: %s%s",
			how, 100*d.moved, format.Duration(d.span), map[bool]string{true: "+", false: "−"}[extra > 0],
			format.Span(math.Abs(extra)))
	}
	return e
}

// driftReach is how far past its stretch a drift is carried on, as a share of the items the stretch fitted, level
// after that. A drift ends: the demo's completions grow from 650 to 1,066 tokens over 40 minutes and hold there,
// and at a quarter done (998 tokens, the time per item up 60% over the last 45 minutes) its ETA read 3 h 49 min
// without a drift, 4 h 46 min carried on over as many items as the stretch (at the 1.25x bound), 4 h 28 min over
// half and 4 h 13 min over 0.3, where items at 1,066 tokens need about 4 h. The second corpus, whose drifts last
// to the end, gave up little for it: 0.954x, 0.955x and 0.957x on finish.
const driftReach = 0.3
