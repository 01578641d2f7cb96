package estimate

import (
	"math"
	"sort"
)

// block is a stretch of about a third of a window of active time, from one point to another.
type block struct{ from, to int }

// blocks cuts the history into consecutive blocks of blockLen seconds of active time on a fixed grid from the
// first point, oldest first, so that a block keeps its value from one estimate to the next and only the newest
// grows. A newest block shorter than half a block is merged into the one before it. A history shorter than
// half a block is one block.
func (s series) blocks(blockLen float64) []block {
	var bs []block
	from := s.cut
	first := s.pts[from].active
	for i := from + 1; i < len(s.pts); i++ {
		// Close a block at the last point before the next grid line.
		next := first + blockLen*math.Floor((s.pts[from].active-first)/blockLen+1)
		if i+1 < len(s.pts) && s.pts[i+1].active > next && s.pts[i].active > s.pts[from].active {
			bs = append(bs, block{from, i})
			from = i
		}
	}
	last := len(s.pts) - 1
	if from < last && s.pts[last].active > s.pts[from].active {
		if n := len(bs); n > 0 && s.pts[last].active-s.pts[from].active < blockLen/2 {
			bs[n-1].to = last
		} else {
			bs = append(bs, block{from, last})
		}
	}
	return bs
}

// measure is a rate measured over a block: num per den.
type measure struct{ num, den float64 }

// timed is a quantity measured block by block, with the active time each of its blocks starts at: the blocks
// of one measure the model keeps (not every block has one), and where the stretch it fits begins.
type timed struct {
	ms []measure
	at []float64
}

func (t *timed) add(m measure, at float64) {
	t.ms = append(t.ms, m)
	t.at = append(t.at, at)
}

// from is the active time block i starts at, or start for the first block (a fit from block 0 spans the whole
// history) and for none.
func (t timed) from(i int, start float64) float64 {
	if i > 0 && i < len(t.at) {
		return t.at[i]
	}
	return start
}

// levelFit is the current level of a quantity measured block by block.
type levelFit struct {
	Level, RelSE float64 // the blend of the two levels below
	From         int     // first block of the latest stretch (0 when no change was found)
	// Weight is how sure the latest split is (0 to 1): Level blends the level after it (Split) with the level
	// without it (Base, from BaseFrom), so that a change emerging from the noise moves the estimate
	// gradually instead of flipping it back and forth.
	Weight         float64
	Split, SplitSE float64
	Base, BaseSE   float64
	BaseFrom       int
	BlockSD        float64 // relative standard deviation of one block, autocorrelation included
	// SplitTrend and BaseTrend mark a level that is a fitted line's latest value (a stretch whose level still
	// moves), not the stretch's mean: a reason must not call it the rate "of the last 15 min".
	SplitTrend, BaseTrend bool
}

// trend reports whether the level is mostly a fitted line's latest value (see SplitTrend).
func (f levelFit) trend() bool {
	if f.Weight >= 0.5 {
		return f.SplitTrend
	}
	return f.BaseTrend
}

// fitLevel finds the current level of a quantity measured block by block: the pooled ratio over the latest
// stretch of blocks in which no change is detected. It splits the series where the difference between the
// blocks before and after is largest, as long as that difference is more than z standard errors (binary
// segmentation, the last split weighed in softly between z-0.5 and z+1), and keeps the part after the last
// split. The block-to-block noise is estimated from successive differences (robust to the changes
// themselves), widened for autocorrelation. A stretch whose level still moves (a drift, not a step) gives the
// fitted line's value at the latest block rather than its mean, which lags by half the stretch.
//
// unitCV, when positive, is the coefficient of variation of one unit of den (one item's length, for tokens per
// item and for seconds per item): a block that pools n units has a standard error of at least
// unitCV × level / √n, a floor under the estimate from the blocks themselves, which is rough when there are few.
//
// minRecent is the fewest blocks a stretch after a split may have: 1 lets a step show within a block; 2 keeps
// a single unlucky block (one evaluated again every sample as it grows) from passing for a change.
//
// With autocorr (a rate, whose wobble lasts longer than a block) and fewer than autocorrBlocks blocks, it
// calls no change and fits no trend: the level is the pooled one. The noise then comes from a handful of
// successive differences with the autocorrelation left out, which understates the wobble of a stretch of
// blocks; the changes it found were the wobble itself (a fresh run's first half hour read as a new level, its
// ETA several percent off where the pooled rate was right).
func fitLevel(bs []measure, z float64, autocorr bool, unitCV float64, minRecent int) levelFit {
	n := len(bs)
	if n == 0 {
		return levelFit{Level: math.NaN(), RelSE: math.Inf(1), Base: math.NaN(), BaseSE: math.Inf(1)}
	}
	sums := make([]measure, n+1) // prefix sums
	for i, r := range bs {
		sums[i+1] = measure{sums[i].num + r.num, sums[i].den + r.den}
	}
	pooled := func(a, b int) float64 { return (sums[b].num - sums[a].num) / (sums[b].den - sums[a].den) }
	units := func(a, b int) float64 { return sums[b].den - sums[a].den }
	if n < 3 {
		l := pooled(0, n)
		se := 0.1 / math.Sqrt(float64(n))
		return levelFit{Level: l, RelSE: se, Base: l, BaseSE: se, Split: l, SplitSE: se, BlockSD: 0.1}
	}
	perUnit := unitCV * math.Abs(pooled(0, n))
	canChange := !autocorr || n >= autocorrBlocks
	x := make([]float64, n)
	for i, r := range bs {
		x[i] = r.num / r.den
	}
	sigma, rho := noise(x, autocorr)
	sigma *= math.Sqrt((1 + rho) / (1 - rho)) // the noise of a mean of blocks
	blockSD := math.Max(sigma, perUnit*math.Sqrt(float64(n)/units(0, n))) / math.Abs(pooled(0, n))
	// levelFrom is the level of the stretch from block a on, its relative standard error, and whether it is
	// the fitted line's latest value.
	levelFrom := func(a int, moved bool) (float64, float64, bool) {
		sd := math.Max(sigma, perUnit*math.Sqrt(float64(n-a)/units(a, n))) // one block's
		level := pooled(a, n)
		k := n - a
		relSE := sd / math.Sqrt(float64(k)) / math.Abs(level)
		if k < 4 || !canChange {
			return level, relSE, false
		}
		// The line is weighted by each block's units (normalised to a mean weight of 1, so that blocks of equal
		// units give the plain line): a block of 2 items says less of seconds per item than one of 50. Fitted
		// alike, the first blocks of a job sampled every half second (2 and 4 items, then 40) tilted the line of
		// seconds per item so far that its latest value fell to a fifth of every block since, and the log-only
		// estimate read 106 items/s on a job running at 44 (peer replicas-one-url).
		w := unitWeights(bs, a)
		l := fitLine(x, w, a, n)
		slope := l.slope
		zSlope := z
		if autocorr {
			zSlope = trendZ
		}
		if moved { // after a change the level is known to move, so a weaker slope counts
			zSlope = 2
		}
		// A rate's slope must also stand against its own residuals' autocorrelated wobble (see slopeHAC).
		if math.Abs(slope) > zSlope*sd/math.Sqrt(l.vxx) && (!autocorr || moved || math.Abs(slope) > trendHACZ*slopeHAC(x, w, a, l)) {
			end := float64(n-1) - l.mi
			// The line's latest value, kept within the values its latest blocks took (trendClamp): a line is a
			// summary of them, not a forecast beyond them, and one that runs to zero or below is no rate at all.
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, v := range x[max(a, n-trendClamp):n] {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
			line := math.Max(lo, math.Min(hi, l.my+slope*end))
			if !(line > 0) {
				return level, relSE, false
			}
			relSE = sd * math.Sqrt(1/l.sw+end*end/l.vxx) / math.Abs(line)
			return line, relSE, true
		}
		return level, relSE, false
	}
	from := 0
	fit := levelFit{}
	for {
		bestZ, bestK := 0.0, -1
		for k := from + 1; k <= n-minRecent && canChange; k++ {
			nl, nr := float64(k-from), float64(n-k)
			d := math.Abs(pooled(from, k) - pooled(k, n))
			se := math.Max(sigma*math.Sqrt(1/nl+1/nr), perUnit*math.Sqrt(1/units(from, k)+1/units(k, n)))
			if zk := d / se; zk > bestZ {
				bestZ, bestK = zk, k
			}
		}
		if bestK < 0 || bestZ < z-0.5 {
			fit.Base, fit.BaseSE, fit.BaseTrend = levelFrom(from, from > 0)
			fit.BaseFrom = from
			fit.Split, fit.SplitSE, fit.SplitTrend, fit.From = fit.Base, fit.BaseSE, fit.BaseTrend, from
			break
		}
		if bestZ < z+1 {
			fit.Base, fit.BaseSE, fit.BaseTrend = levelFrom(from, from > 0)
			fit.BaseFrom = from
			fit.Split, fit.SplitSE, fit.SplitTrend = levelFrom(bestK, true)
			fit.Weight = (bestZ - (z - 0.5)) / 1.5
			fit.From = from
			if fit.Weight >= 0.5 {
				fit.From = bestK
			}
			break
		}
		from = bestK
	}
	fit.Level, fit.RelSE = blend(fit.Base, fit.BaseSE, fit.Split, fit.SplitSE, fit.Weight)
	fit.BlockSD = blockSD
	return fit
}

// blend mixes two estimates (with relative standard errors) with weight w on the second; the spread
// between them counts in the result's error.
func blend(a, aSE, b, bSE, w float64) (level, relSE float64) {
	if w <= 0 {
		return a, aSE
	}
	level = (1-w)*a + w*b
	d := (b - a) / level
	return level, math.Sqrt((1-w)*aSE*aSE + w*bSE*bSE + w*(1-w)*d*d)
}

// pooledRatio is the ratio of the sums of a list of ratios (NaN when empty).
func pooledRatio(bs []measure) float64 {
	var num, den float64
	for _, r := range bs {
		num += r.num
		den += r.den
	}
	return num / den
}

// noise estimates the standard deviation and the lag-1 autocorrelation of block values from their
// successive differences, which a change of level or a trend barely moves (without autocorr, ρ = 0): for an AR(1) series
// var(x[i]-x[i-1]) = 2σ²(1-ρ) and var(x[i]-x[i-2]) = 2σ²(1-ρ²). Medians of absolute differences stand in for
// the variances; ρ is clamped to [0, 0.6].
func noise(x []float64, autocorr bool) (sigma, rho float64) {
	d1 := medianAbsDiff(x, 1)
	if autocorr && len(x) >= autocorrBlocks {
		if d2 := medianAbsDiff(x, 2); d1 > 0 {
			rho = math.Max(0, math.Min(0.6, (d2/d1)*(d2/d1)-1))
		}
	}
	sigma = d1 / 0.954 / math.Sqrt(1-rho) // median |N(0, 2σ²(1-ρ))| = 0.954σ√(1-ρ)
	if sigma <= 0 {
		mean := 0.0
		for _, v := range x {
			mean += math.Abs(v)
		}
		sigma = 1e-3 * mean / float64(len(x))
	}
	return sigma, rho
}

// medianAbsDiff is the median absolute deviation of the differences x[i] - x[i-lag] from their median
// (which removes a trend).
func medianAbsDiff(x []float64, lag int) float64 {
	d := make([]float64, 0, len(x))
	for i := lag; i < len(x); i++ {
		d = append(d, x[i]-x[i-lag])
	}
	if len(d) == 0 {
		return 0
	}
	med := median(d)
	for i := range d {
		d[i] = math.Abs(d[i] - med)
	}
	return median(d)
}

// median returns the median of x, reordering x.
func median(x []float64) float64 {
	sort.Float64s(x)
	if len(x)%2 == 0 {
		return (x[len(x)/2-1] + x[len(x)/2]) / 2
	}
	return x[len(x)/2]
}

// changeZ is how many standard errors apart two stretches of blocks must be to call it a change of level.
// Rates (tokens/s, items/s) wobble with autocorrelation that a few blocks cannot measure, so they need more.
const (
	changeZ     = 3.0
	rateChangeZ = 5.0
)

// trendClamp is how many of the latest blocks a trend's latest value is kept within (their lowest to their
// highest). Kept within every block of its stretch, the line fitted over a throttle that built from 30% to 60%
// done and then held ran on past the latest blocks: "1,560 tok/s following the trend of the whole run" on a job
// running at 2,000-2,300, its ETA 10-15% of the job late for the rest of the run. Chosen on the second corpus
// (BenchmarkAccuracy): on finish 0.9546x -> 0.9482x the better baseline, per iteration 0.9605x -> 0.9547x
// (c2-throttle 10.74% -> 10.33% and 8.73% -> 8.31% of the job), log only 1.008x -> 1.009x; 2 blocks gave
// 0.9514x and 0.9521x, 4 0.9496x and 0.9560x.
const trendClamp = 3

// trendZ is how many standard errors of the block noise a rate's slope must reach (besides trendHACZ of its
// own residuals') for the rate to be the fitted line's latest value rather than the stretch's mean. The noise
// from successive differences alone made 3 too weak (noise trends on the first corpus, a compacted history's
// estimate 3.6% from the whole one's) and 5 too strong (8 on finish) for the drifts of the second corpus; with
// the residuals' test beside it, 2 leaves the decision to that test.
const trendZ = 2.0

// trendHACZ is how many heteroskedasticity-and-autocorrelation-consistent standard errors (slopeHAC) a rate's
// slope must reach for the rate to follow it. A wobble that lasts several blocks tilts a line as a drift does,
// and its residuals stay on one side of the line for blocks at a time: the test counts that, where the block
// noise from successive differences does not. Chosen on the first and second corpora (second per iteration
// 1.005x -> 0.978x, on finish 1.011x -> 0.980x, log only 1.177x -> 1.094x; first on finish 0.769x -> 0.771x;
// 3.5 gave 0.978x, 0.981x, 1.108x; 2.5, 0.978x, 0.975x, 1.082x with the first at 0.772x).
const trendHACZ = 3.0

// slopeHAC is the Newey-West standard error of the slope of l, the line fitted to x[a:] with weights w (see
// fitLine): the residuals' products with the distance from the mean block, their autocovariances up to the cube
// root of the block count with Bartlett weights, and a small-sample factor k/(k-2).
func slopeHAC(x []float64, w func(int) float64, a int, l lineFit) float64 {
	n := len(x)
	k := n - a
	if k < 4 {
		return math.Inf(1)
	}
	u := make([]float64, k)
	for i := a; i < n; i++ {
		d := float64(i) - l.mi
		u[i-a] = w(i) * d * (x[i] - l.my - l.slope*d)
	}
	lags := int(math.Cbrt(float64(k)))
	var s float64
	for lag := 0; lag <= lags; lag++ {
		c := 0.0
		for i := lag; i < k; i++ {
			c += u[i] * u[i-lag]
		}
		if lag > 0 {
			c *= 2 * (1 - float64(lag)/float64(lags+1))
		}
		s += c
	}
	if !(s > 0) || !(l.vxx > 0) {
		return math.Inf(1)
	}
	return math.Sqrt(s*float64(k)/float64(k-2)) / l.vxx
}

// unitWeights weighs the blocks from a on by their units (den), normalised to a mean weight of 1 over them, so
// that blocks of equal units give the plain line: a block of 2 items says less of seconds per item than one of 50.
func unitWeights(bs []measure, a int) func(int) float64 {
	var den float64
	for _, m := range bs[a:] {
		den += m.den
	}
	meanDen := den / float64(len(bs)-a)
	return func(i int) float64 { return bs[i].den / meanDen }
}

// lineFit is a weighted least-squares line against the block index: the weighted mean index and value, the slope,
// the weighted sum of squared index deviations and the sum of the weights.
type lineFit struct{ mi, my, slope, vxx, sw float64 }

// fitLine is the weighted least-squares line through x[from:to] against the block index (weights w).
func fitLine(x []float64, w func(int) float64, from, to int) lineFit {
	var sw, sx, sy float64
	for i := from; i < to; i++ {
		sw, sx, sy = sw+w(i), sx+w(i)*float64(i), sy+w(i)*x[i]
	}
	mi, my := sx/sw, sy/sw
	var vxx, sxy float64
	for i := from; i < to; i++ {
		vxx += w(i) * (float64(i) - mi) * (float64(i) - mi)
		sxy += w(i) * (float64(i) - mi) * (x[i] - my)
	}
	return lineFit{mi: mi, my: my, slope: sxy / vxx, vxx: vxx, sw: sw}
}

// autocorrBlocks is the fewest blocks from which noise measures the lag-1 autocorrelation of a series, and
// below which fitLevel calls no change in a rate (eight blocks: two and two thirds windows).
const autocorrBlocks = 8
