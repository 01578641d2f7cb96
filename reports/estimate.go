package reports

import (
	"fmt"
	"math"
	"runwatch/reports/estimate"
	"sort"
	"time"
)

// ETA states.
const (
	StateRunning = "running"
	StateStalled = "stalled"
	StateDone    = "done"
	StateUnknown = "unknown"
)

// EstimateConfig tunes Estimate. Zero fields take their defaults.
type EstimateConfig struct {
	Window     float64 // seconds of recent history for the "recent" rate (default 900)
	StallAfter float64 // no progress (done and tokens flat) for this long -> stalled (default 600)
}

func (c EstimateConfig) withDefaults() EstimateConfig {
	if c.Window <= 0 {
		c.Window = 900
	}
	if c.StallAfter <= 0 {
		c.StallAfter = 600
	}
	return c
}

// Throughput is how fast the run goes.
type Throughput struct {
	TokensPerS    float64 `json:"tokens_per_s"` // recent window (0 when unknown)
	ItemsPerS     float64 `json:"items_per_s"`
	WindowS       float64 `json:"window_s"`         // the window actually used
	RunTokensPerS float64 `json:"run_tokens_per_s"` // over the whole run
	RunItemsPerS  float64 `json:"run_items_per_s"`
}

// ETA is a finish estimate with its range.
type ETA struct {
	State        string     `json:"state"`   // StateRunning, StateStalled, StateDone or StateUnknown
	Seconds      *float64   `json:"seconds"` // nil when unknown or stalled
	LowS         *float64   `json:"low_s"`
	HighS        *float64   `json:"high_s"`
	FinishAt     *time.Time `json:"finish_at"` // time.Unix(last T + Seconds); only meaningful in live history
	Reason       string     `json:"reason"`    // one sentence: how it was computed, why unknown, since when stalled
	Rough        bool       `json:"rough,omitempty"`
	StalledSince *float64   `json:"stalled_since,omitempty"` // T when progress stopped
	// Progress is the share of items done (0 to 1; 0 when the total is unknown).
	Progress float64 `json:"progress,omitempty"`
	// ResetAt is the T of the latest server restart in the history, if any: an engine counter reset, a change
	// of Observation.Restarts, or, without token counts, a pause in completions.
	ResetAt *float64 `json:"reset_at,omitempty"`

	// The parts of the estimate, used to explain shifts: remaining ≈ ItemsLeft × TokensPerItem / TokensPerS,
	// or ItemsLeft / ItemsPerS when tokens are unknown.
	ItemsLeft     float64 `json:"items_left"`
	TokensPerItem float64 `json:"tokens_per_item"` // 0 when tokens unknown
	TokensPerS    float64 `json:"tokens_per_s"`
	ItemsPerS     float64 `json:"items_per_s"`
}

// The estimator's time scales all follow EstimateConfig.Window (900 s by default), so that a job watched at
// another pace (the accelerated demo) only needs another window: blocks of a third of it (whose rates it
// compares to find the current level of throughput and tokens per item), a warm-up of one window after a fresh
// start, a look-back of two thirds of it for pauses, and two and four windows for averaging the batch's age.

// estPoint is one observation with the engines' counters stitched across resets.
type estPoint struct {
	t        float64
	active   float64 // seconds up to t in which the run progressed (stalls and downtime left out)
	done     float64
	g        float64 // generated tokens since the first point, resets stitched
	fin      float64 // tokens of finished items since the first point (engine histogram or log average)
	finN     float64 // items the engine histogram counted since the first point (hasFinN)
	age      float64 // tokens decoded so far by the requests in flight (g minus fin since server start)
	hasG     bool    // the engines answered: g and running are known
	hasFin   bool    // fin is known
	hasFinN  bool    // finN is known: fin and finN come from the same scrape
	hasAge   bool    // age is known
	running  float64 // requests in the batch; 0 when unknown
	seg      int     // engine counter segment: increments at each server restart
	progress bool    // done or tokens moved since the previous point
}

// estSeries is a run's history prepared for estimation.
type estSeries struct {
	window    float64 // EstimateConfig.Window
	pts       []estPoint
	resets    []float64 // T of each engine counter reset
	restarts  []float64 // T the batch started afresh: resets, and pauses in completions when there are no counters
	slots     float64   // largest batch seen: the engine's concurrency
	maxTokens float64
}

// estCurrentRun drops the history before the job last started over (done went backwards).
func estCurrentRun(hist []Observation) []Observation {
	for i := len(hist) - 1; i > 0; i-- {
		if hist[i].Done < hist[i-1].Done {
			return hist[i:]
		}
	}
	return hist
}

// estBuild stitches the engine counters across resets (a counter that goes down restarted from zero, so its
// new value is all increase) and measures active time: an interval with no progress counts as idle when the
// engines say they generated nothing or do not answer (a restart), or, without token data, when the flat
// stretch lasts half of stallAfter.
func estBuild(hist []Observation, cfg EstimateConfig) estSeries {
	s := estSeries{window: cfg.Window, pts: make([]estPoint, len(hist))}
	engineFin := false
	for _, o := range hist {
		if o.FinishedLenSum != nil {
			engineFin = true
			break
		}
	}
	folded := estimate.FoldSeries(hist)
	logFinBase := 0.0 // the log's finished tokens when the current server lifetime began
	for i, o := range hist {
		f := folded[i]
		p := estPoint{t: o.T, done: float64(o.Done), g: f.Gen, seg: f.Seg}
		if o.MaxTokens > 0 {
			s.maxTokens = float64(o.MaxTokens)
		}
		if f.Restart {
			s.resets = append(s.resets, o.T)
		}
		gBase, finBase := f.GenBase, f.FinBase
		if f.HasGen {
			p.hasG = true
			if o.Running != nil {
				p.running = *o.Running
				s.slots = math.Max(s.slots, p.running)
			}
		}
		switch {
		case engineFin:
			p.fin, p.finN = f.Fin, f.FinN
			p.hasFin, p.hasFinN = f.HasFin, f.HasFinN
		case o.AvgCompletion != nil:
			p.hasFin = true
			p.fin = *o.AvgCompletion * float64(o.Done)
			// The log's finished tokens are the whole job's: the current lifetime's base is where it began.
			finBase = logFinBase
			if f.Restart && i > 0 {
				finBase = s.pts[i-1].fin
				logFinBase = finBase
			}
		}
		// The age means something only with the batch it belongs to.
		if p.hasG && p.hasFin && o.Running != nil {
			p.age, p.hasAge = (p.g-gBase)-(p.fin-finBase), true
		}
		// The age of the batch cannot be negative nor exceed max_tokens per request; anything else means the
		// counters cover more than this job.
		if p.hasAge && (p.age < 0 || s.maxTokens > 0 && p.age > p.running*s.maxTokens) {
			p.hasAge = false
		}
		if i > 0 {
			prev := s.pts[i-1]
			p.progress = p.done > prev.done || p.hasG && p.g > prev.g
		}
		s.pts[i] = p
	}
	// Active time: leave out idle stretches.
	engines := false
	for _, p := range s.pts {
		engines = engines || p.hasG
	}
	// quiet is an interval with no progress or, without token counts, with far fewer items than the rate
	// before it would have finished (a server restart the log does not mention: the few items in flight
	// finish, then nothing until the batch refills).
	quiet := func(i int) bool {
		if !s.pts[i].progress {
			return true
		}
		expected := s.recentItemRate(i-1) * (s.pts[i].t - s.pts[i-1].t)
		return !engines && expected >= 20 && s.pts[i].done-s.pts[i-1].done < 0.2*expected
	}
	for i := 1; i < len(s.pts); {
		if !quiet(i) {
			s.pts[i].active = s.pts[i-1].active + s.pts[i].t - s.pts[i-1].t
			i++
			continue
		}
		j := i // the quiet stretch is the intervals i..j-1, ending at point j-1
		tokensKnown, down, flat := true, false, true
		for j < len(s.pts) && quiet(j) {
			tokensKnown = tokensKnown && s.pts[j].hasG && s.pts[j-1].hasG
			down = down || engines && !s.pts[j].hasG
			flat = flat && !s.pts[j].progress
			j++
		}
		span := s.pts[j-1].t - s.pts[i-1].t
		expected := s.recentItemRate(i-1) * span
		pause := !engines && expected >= 20 && s.pts[j-1].done-s.pts[i-1].done < 0.2*expected
		idle := flat && (tokensKnown || span >= cfg.StallAfter/2) || down || pause
		if pause && j < len(s.pts) {
			s.restarts = append(s.restarts, s.pts[j-1].t)
		}
		for k := i; k < j; k++ {
			s.pts[k].active = s.pts[k-1].active
			if !idle {
				s.pts[k].active += s.pts[k].t - s.pts[k-1].t
			}
		}
		i = j
	}
	s.restarts = append(s.restarts, s.resets...)
	sort.Float64s(s.restarts)
	return s
}

// recentItemRate is the item rate over two thirds of a window up to point i (0 when unknown).
func (s estSeries) recentItemRate(i int) float64 {
	k := i
	for k > 0 && s.pts[i].t-s.pts[k].t < 2*s.window/3 {
		k--
	}
	if d := s.pts[i].t - s.pts[k].t; d > 0 {
		return (s.pts[i].done - s.pts[k].done) / d
	}
	return 0
}

// estBlock is a stretch of about a third of a window of active time, from one point to another.
type estBlock struct{ from, to int }

// blocks cuts the history into consecutive blocks of blockLen seconds of active time on a fixed grid from the
// first point, oldest first, so that a block keeps its value from one estimate to the next and only the newest
// grows. A newest block shorter than half a block is merged into the one before it. A history shorter than
// half a block is one block.
func (s estSeries) blocks(blockLen float64) []estBlock {
	var bs []estBlock
	from := 0
	first := s.pts[0].active
	for i := 1; i < len(s.pts); i++ {
		// Close a block at the last point before the next grid line.
		next := first + blockLen*math.Floor((s.pts[from].active-first)/blockLen+1)
		if i+1 < len(s.pts) && s.pts[i+1].active > next && s.pts[i].active > s.pts[from].active {
			bs = append(bs, estBlock{from, i})
			from = i
		}
	}
	last := len(s.pts) - 1
	if from < last && s.pts[last].active > s.pts[from].active {
		if n := len(bs); n > 0 && s.pts[last].active-s.pts[from].active < blockLen/2 {
			bs[n-1].to = last
		} else {
			bs = append(bs, estBlock{from, last})
		}
	}
	return bs
}

// estRatio is a rate measured over a block: num per den.
type estRatio struct{ num, den float64 }

// estFit is the current level of a quantity measured block by block.
type estFit struct {
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
}

// estLevel finds the current level of a quantity measured block by block: the pooled ratio over the latest
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
// With autocorr (a rate, whose wobble lasts longer than a block) and fewer than estAutocorrBlocks blocks, it
// calls no change and fits no trend: the level is the pooled one. The noise then comes from a handful of
// successive differences with the autocorrelation left out, which understates the wobble of a stretch of
// blocks; the changes it found were the wobble itself (a fresh run's first half hour read as a new level, its
// ETA several percent off where the pooled rate was right).
func estLevel(bs []estRatio, z float64, autocorr bool, unitCV float64, minRecent int) estFit {
	n := len(bs)
	if n == 0 {
		return estFit{Level: math.NaN(), RelSE: math.Inf(1), Base: math.NaN(), BaseSE: math.Inf(1)}
	}
	sums := make([]estRatio, n+1) // prefix sums
	for i, r := range bs {
		sums[i+1] = estRatio{sums[i].num + r.num, sums[i].den + r.den}
	}
	pooled := func(a, b int) float64 { return (sums[b].num - sums[a].num) / (sums[b].den - sums[a].den) }
	units := func(a, b int) float64 { return sums[b].den - sums[a].den }
	if n < 3 {
		l := pooled(0, n)
		se := 0.1 / math.Sqrt(float64(n))
		return estFit{Level: l, RelSE: se, Base: l, BaseSE: se, Split: l, SplitSE: se, BlockSD: 0.1}
	}
	perUnit := unitCV * math.Abs(pooled(0, n))
	canChange := !autocorr || n >= estAutocorrBlocks
	x := make([]float64, n)
	for i, r := range bs {
		x[i] = r.num / r.den
	}
	sigma, rho := estNoise(x, autocorr)
	sigma *= math.Sqrt((1 + rho) / (1 - rho)) // the noise of a mean of blocks
	blockSD := math.Max(sigma, perUnit*math.Sqrt(float64(n)/units(0, n))) / math.Abs(pooled(0, n))
	// levelFrom is the level of the stretch from block a on, and its relative standard error.
	levelFrom := func(a int, moved bool) (float64, float64) {
		sd := math.Max(sigma, perUnit*math.Sqrt(float64(n-a)/units(a, n))) // one block's
		level := pooled(a, n)
		k := n - a
		relSE := sd / math.Sqrt(float64(k)) / math.Abs(level)
		if k < 4 || !canChange {
			return level, relSE
		}
		var sx, sy, sxx, sxy float64
		for i := a; i < n; i++ {
			fi := float64(i)
			sx, sy, sxx, sxy = sx+fi, sy+x[i], sxx+fi*fi, sxy+fi*x[i]
		}
		fk := float64(k)
		vxx := sxx - sx*sx/fk
		slope := (sxy - sx*sy/fk) / vxx
		zSlope := z
		if moved { // after a change the level is known to move, so a weaker slope counts
			zSlope = 2
		}
		if math.Abs(slope) > zSlope*sd/math.Sqrt(vxx) {
			end := float64(n-1) - sx/fk
			level = sy/fk + slope*end
			relSE = sd * math.Sqrt(1/fk+end*end/vxx) / math.Abs(level)
		}
		return level, relSE
	}
	from := 0
	fit := estFit{}
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
			fit.Base, fit.BaseSE = levelFrom(from, from > 0)
			fit.BaseFrom = from
			fit.Split, fit.SplitSE, fit.From = fit.Base, fit.BaseSE, from
			break
		}
		if bestZ < z+1 {
			fit.Base, fit.BaseSE = levelFrom(from, from > 0)
			fit.BaseFrom = from
			fit.Split, fit.SplitSE = levelFrom(bestK, true)
			fit.Weight = (bestZ - (z - 0.5)) / 1.5
			fit.From = from
			if fit.Weight >= 0.5 {
				fit.From = bestK
			}
			break
		}
		from = bestK
	}
	fit.Level, fit.RelSE = estBlend(fit.Base, fit.BaseSE, fit.Split, fit.SplitSE, fit.Weight)
	fit.BlockSD = blockSD
	return fit
}

// estBlend mixes two estimates (with relative standard errors) with weight w on the second; the spread
// between them counts in the result's error.
func estBlend(a, aSE, b, bSE, w float64) (level, relSE float64) {
	if w <= 0 {
		return a, aSE
	}
	level = (1-w)*a + w*b
	d := (b - a) / level
	return level, math.Sqrt((1-w)*aSE*aSE + w*bSE*bSE + w*(1-w)*d*d)
}

// estPooled is the ratio of the sums of a list of ratios (NaN when empty).
func estPooled(bs []estRatio) float64 {
	var num, den float64
	for _, r := range bs {
		num += r.num
		den += r.den
	}
	return num / den
}

// estNoise estimates the standard deviation and the lag-1 autocorrelation of block values from their
// successive differences, which a change of level or a trend barely moves (without autocorr, ρ = 0): for an AR(1) series
// var(x[i]-x[i-1]) = 2σ²(1-ρ) and var(x[i]-x[i-2]) = 2σ²(1-ρ²). Medians of absolute differences stand in for
// the variances; ρ is clamped to [0, 0.6].
func estNoise(x []float64, autocorr bool) (sigma, rho float64) {
	d1 := estMedianAbsDiff(x, 1)
	if autocorr && len(x) >= estAutocorrBlocks {
		if d2 := estMedianAbsDiff(x, 2); d1 > 0 {
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

// estMedianAbsDiff is the median absolute deviation of the differences x[i] - x[i-lag] from their median
// (which removes a trend).
func estMedianAbsDiff(x []float64, lag int) float64 {
	d := make([]float64, 0, len(x))
	for i := lag; i < len(x); i++ {
		d = append(d, x[i]-x[i-lag])
	}
	if len(d) == 0 {
		return 0
	}
	med := estMedian(d)
	for i := range d {
		d[i] = math.Abs(d[i] - med)
	}
	return estMedian(d)
}

// estMedian returns the median of x, reordering x.
func estMedian(x []float64) float64 {
	sort.Float64s(x)
	if len(x)%2 == 0 {
		return (x[len(x)/2-1] + x[len(x)/2]) / 2
	}
	return x[len(x)/2]
}

// estChangeZ is how many standard errors apart two stretches of blocks must be to call it a change of level.
// Rates (tokens/s, items/s) wobble with autocorrelation that a few blocks cannot measure, so they need more.
const (
	estChangeZ     = 3.0
	estRateChangeZ = 5.0
)

// estAutocorrBlocks is the fewest blocks from which estNoise measures the lag-1 autocorrelation of a series, and
// below which estLevel calls no change in a rate (40 minutes at the default window).
const estAutocorrBlocks = 8

// Estimate computes a run's throughput and finish estimate from its history (sorted by T; it may be a single
// point).
func Estimate(hist []Observation, cfg EstimateConfig) (ETA, Throughput) {
	cfg = cfg.withDefaults()
	if len(hist) == 0 {
		return ETA{State: StateUnknown, Reason: "no observations yet"}, Throughput{}
	}
	hist = estCurrentRun(hist)
	s := estBuild(hist, cfg)
	tp := s.throughput(cfg.Window)
	last := hist[len(hist)-1]
	e := ETA{State: StateUnknown, ItemsLeft: math.Max(0, float64(last.Total-last.Done))}
	if last.Total > 0 {
		e.Progress = math.Min(1, float64(last.Done)/float64(last.Total))
	}
	if n := len(s.restarts); n > 0 {
		r := s.restarts[n-1]
		e.ResetAt = &r
	}
	if last.Total > 0 && last.Done >= last.Total {
		e.State, e.ItemsLeft = StateDone, 0
		zero := 0.0
		e.Seconds, e.LowS, e.HighS = &zero, &zero, &zero
		e.Reason = fmt.Sprintf("all %s items are done", Count(float64(last.Total)))
		return e, tp
	}
	if len(hist) == 1 {
		return estRough(last, e, "one sample"), tp
	}
	if since, ok := s.stalledSince(cfg.StallAfter); ok {
		e.State, e.StalledSince = StateStalled, &since
		e.Reason = fmt.Sprintf("no progress since %s (%s): finished items and generated tokens are flat",
			estClock(since), Duration(last.T-since))
		return e, tp
	}
	if last.Total <= 0 {
		e.Reason = "the total number of items is unknown (the progress source gives no total)"
		return e, tp
	}
	// Rates come from the history up to the last progress: a flat stretch still going on is either the start
	// of a stall or a pause, and counts as neither yet. The finish slides out with it.
	s.pts = s.pts[:s.lastProgress()+1]
	est := s.model(e, last.T, cfg)
	if est.State == StateUnknown && est.Reason == estNoRate {
		// Items are finishing but the history is shorter than one rate block: the latest sample's
		// own count and elapsed time give a rough figure, as for a single sample.
		early := fmt.Sprintf("too early to measure a rate (%s of history)", Duration(last.T-hist[0].T))
		if rough := estRough(last, e, "the latest sample, "+early); rough.State == StateRunning {
			return rough, tp
		}
		if last.Done > 0 {
			est.Reason = early + " and the progress source gives no elapsed time"
		}
	}
	return est, tp
}

// estNoRate is model's reason when no rate could be measured yet.
const estNoRate = "no item has finished yet and the engines report no tokens"

// lastProgress is the index of the last point that moved (0 when none did).
func (s estSeries) lastProgress() int {
	for i := len(s.pts) - 1; i > 0; i-- {
		if s.pts[i].progress {
			return i
		}
	}
	return 0
}

// model fills a running estimate. With token counts: the items not started yet take items × tokens per item ÷
// the full-batch token rate, then the batch drains (see tokenSeconds). With the job log only: items left ÷
// items/s, or items left × tokens per item ÷ finished tokens/s once the log shows the lengths changing.
func (s estSeries) model(e ETA, now float64, cfg EstimateConfig) ETA {
	blockLen := cfg.Window / 3
	bs := s.blocks(blockLen)
	if len(bs) == 0 {
		e.Reason = estNoRate
		return e
	}
	last := s.pts[len(s.pts)-1]
	// spi is seconds per item, not items per second: the items that finish in a block of a busy batch are a
	// renewal count, whose variance is about n × CV² of one item's length, so a block's time per item has a
	// relative error of at least CV/√n however steady the engine, the floor estLevel puts under the noise of
	// units of den. Without it the item rate of a few quiet blocks passed for a change.
	var tpi, tps, spi, fps []estRatio
	var tpiLater estRatio // blocks after the first restart
	for _, b := range bs {
		a, z := s.pts[b.from], s.pts[b.to]
		span := z.active - a.active
		if z.done > a.done && !s.restartIn(a.t, z.t) {
			spi = append(spi, estRatio{span, z.done - a.done})
		}
		// Across a restart the tokens decoded between the last sample and the crash are lost to the counters.
		if a.hasG && z.hasG && a.seg == z.seg && s.saturated(b) {
			tps = append(tps, estRatio{z.g - a.g, span})
		}
		if !s.warming(a.t, z.t, cfg.Window) {
			if r, ok := blockTokensPerItem(a, z); ok {
				tpi = append(tpi, r)
				if a.seg > 0 {
					tpiLater.num += r.num
					tpiLater.den += r.den
				}
			}
			if a.hasFin && z.hasFin && z.fin > a.fin {
				fps = append(fps, estRatio{z.fin - a.fin, span})
			}
		}
	}
	var sec, relSE, drain, drainLow, drainHigh, wobble float64 // wobble: one block's relative noise of the rate used
	used := 0
	mFit := estLevel(tpi, estChangeZ, false, math.Sqrt(s.lengthCV2(estPooled(tpi))), 2)
	if mFit.BaseFrom == 0 {
		// No change (or one not yet sure): every item so far counts.
		if cum, young, ok := s.cumTokensPerItem(cfg.Window, tpiLater); ok {
			mFit.Base = cum
			if len(tpi) == 0 {
				mFit.BaseSE = 0.1
			}
			// A young batch's tokens per item is a guess from its short requests; say so in the range.
			mFit.BaseSE = math.Max(mFit.BaseSE, 0.25*young)
			if mFit.Weight == 0 {
				mFit.Split, mFit.SplitSE = mFit.Base, mFit.BaseSE
			}
		}
	}
	m, mSE := estBlend(mFit.Base, mFit.BaseSE, mFit.Split, mFit.SplitSE, mFit.Weight)
	mFrom := mFit.From
	switch {
	case len(tps) > 0 && m > 0 && !math.IsNaN(m):
		rFit := estLevel(tps, estRateChangeZ, true, 0, 1)
		r, rSE, rFrom := rFit.Level, rFit.RelSE, rFit.From
		wobble = rFit.BlockSD
		e.TokensPerItem, e.TokensPerS = m, r
		e.ItemsPerS = r / m
		sec, drain, drainLow, drainHigh = s.tokenSeconds(e.ItemsLeft, m, r)
		relSE = math.Hypot(mSE, rSE)
		used = len(tps) - rFrom
		if len(tpi) > 0 {
			used = min(used, len(tpi)-mFrom)
		}
		e.Reason = fmt.Sprintf("%s items left × %s tokens each at %s", Count(e.ItemsLeft),
			Count(m), Rate(r, "tok/s"))
	case len(tpi) > 0 && len(fps) > 0 && mFrom > 0:
		// No token counts, but the log's mean completion has changed: the tokens of finished items per
		// second stand in for the engines' rate, so that the new lengths count for the items left.
		rFit := estLevel(fps, estRateChangeZ, true, 0, 1)
		r, rSE, rFrom := rFit.Level, rFit.RelSE, rFit.From
		wobble = rFit.BlockSD
		e.TokensPerItem, e.TokensPerS = m, r
		e.ItemsPerS = r / m
		sec = e.ItemsLeft * m / r
		relSE = math.Hypot(mSE, rSE)
		used = min(len(fps)-rFrom, len(tpi)-mFrom)
		e.Reason = fmt.Sprintf("%s items left × %s tokens each at %s of finished completions", Count(e.ItemsLeft),
			Count(m), Rate(r, "tok/s"))
	case len(spi) > 0:
		lFit := estLevel(spi, estRateChangeZ, true, math.Sqrt(s.lengthCV2(estPooled(tpi))), 1)
		lam, lSE, lFrom := 1/lFit.Level, lFit.RelSE, lFit.From
		wobble = lFit.BlockSD
		e.ItemsPerS = lam
		sec = e.ItemsLeft / lam
		relSE = lSE
		used = len(spi) - lFrom
		e.Reason = fmt.Sprintf("%s items left at %s", Count(e.ItemsLeft), Rate(lam, "items/s"))
	default:
		e.Reason = "no item has finished yet and the engines give no token counts"
		return e
	}
	if math.IsNaN(sec) || math.IsInf(sec, 0) || sec < 0 {
		e.Reason = "the measured rate is zero"
		return e
	}
	used = max(1, min(used, len(bs)))
	e.Reason += fmt.Sprintf(" (rates of the last %s)", Duration(last.active-s.pts[bs[len(bs)-used].from].active))
	if e.TokensPerItem == 0 || len(tps) == 0 {
		// Without token counts nothing says how far the first batch has got; a run younger than the
		// warm-up is a rough guess.
		if young := 1 - (last.t-s.pts[0].t)/cfg.Window; s.pts[0].done == 0 && young > 0 {
			relSE = math.Max(relSE, 0.3*young)
		}
	}
	// The range (about 80%): the error of the measured levels, the rate's wobble averaged over the time left
	// (it averages out over a long remainder), and the drain model's.
	busy := sec - drain
	future := wobble * math.Sqrt(blockLen/math.Max(busy, blockLen))
	rel := 1.28 * math.Hypot(relSE, future)
	low := math.Max(0, busy*(1-rel)+drainLow)
	high := busy*(1+rel) + drainHigh
	e.State = StateRunning
	e.Seconds, e.LowS, e.HighS = &sec, &low, &high
	finish := estUnix(now + sec)
	e.FinishAt = &finish
	return e
}

// blockTokensPerItem measures tokens per item between two points: the mean length of the items that finished
// in between, or without finished lengths, tokens generated per finished item.
func blockTokensPerItem(a, z estPoint) (estRatio, bool) {
	switch {
	case z.done <= a.done || z.seg != a.seg && !(a.hasFin && z.hasFin):
		return estRatio{}, false
	case a.hasFinN && z.hasFinN && z.finN > a.finN && z.fin > a.fin:
		// Sum and count of the engines' own histogram: the mean length of the items they finished.
		return estRatio{z.fin - a.fin, z.finN - a.finN}, true
	case a.hasFin && z.hasFin && z.fin > a.fin:
		return estRatio{z.fin - a.fin, z.done - a.done}, true
	case a.hasG && z.hasG && z.g > a.g:
		return estRatio{z.g - a.g, z.done - a.done}, true
	}
	return estRatio{}, false
}

// cumTokensPerItem estimates tokens per item over the whole history. Every started item counts: the finished
// ones at their length, those in flight at twice their age so far (in a busy batch a request in flight is on
// average halfway through: its age and what it has left have the same distribution). While the batch is
// young that undercounts (its requests started together and are younger than what they have left) and tokens
// per finished item is closer, so the two are blended until estYoungBatches batches' worth of items have
// finished. The ages of a batch refilled by a restart take long to settle, so after the first restart only the
// finished lengths count (the blocks in later, which leave out each restart's warm-up).
//
// young is 1 for a batch that has just started, falling to 0 once it has settled.
func (s estSeries) cumTokensPerItem(warm float64, later estRatio) (m, young float64, ok bool) {
	m, young, ok = s.firstSegmentTokensPerItem(warm)
	if !ok || later.den == 0 {
		return m, young, ok
	}
	first := s.pts[0]
	for _, p := range s.pts {
		if p.seg == 0 {
			first = p
		}
	}
	n := first.done + first.running - s.pts[0].done - s.pts[0].running
	return (m*n + later.num) / (n + later.den), 0, true
}

// firstSegmentTokensPerItem is cumTokensPerItem up to the first server restart.
func (s estSeries) firstSegmentTokensPerItem(warm float64) (m, young float64, ok bool) {
	a := s.pts[0]
	// The last point of the first segment where the batch's age is known, or failing that where tokens are. A
	// sampler that carries the token counter through a restart reports it while the server is down, without a
	// batch; that point must not stand in for the batch before the crash.
	z := -1
	for _, withAge := range []bool{true, false} {
		for i := len(s.pts) - 1; i > 0 && z < 0; i-- {
			p := s.pts[i]
			if p.seg == 0 && (p.hasAge || !withAge && p.hasG && p.done > a.done) {
				z = i
			}
		}
	}
	if z < 0 {
		return 0, 0, false
	}
	p := s.pts[z]
	perDone := math.NaN()
	if a.hasG && p.hasG && p.done > a.done {
		perDone = (p.g - a.g) / (p.done - a.done)
	}
	// At the job's start nothing is done and what runs has just started: every item counts from zero.
	fresh := a.done == 0
	if fresh && s.slots > 0 {
		young = math.Max(0, 1-(p.done-a.done)/(estYoungBatches*s.slots))
	}
	if !p.hasAge || !(a.hasAge || fresh) {
		return perDone, young, !math.IsNaN(perDone)
	}
	num := p.fin + p.age + s.meanAge(z, warm)
	den := p.done + p.running
	if !fresh {
		num -= a.fin + 2*a.age
		den -= a.done + a.running
	}
	if num <= 0 || den <= 0 {
		return perDone, young, !math.IsNaN(perDone)
	}
	sym := num / den
	if young > 0 && !math.IsNaN(perDone) {
		return young*perDone + (1-young)*sym, young, true
	}
	return sym, young, true
}

// warming reports whether a block from T a to T z overlaps the warm-up after a fresh start of the batch: the
// job's start, a server restart, or (without engine counters) a pause in completions. All requests then start
// together, the short ones finish first, and the finished items are biased short for a while.
func (s estSeries) warming(a, z, warm float64) bool {
	if s.pts[0].done == 0 && a < s.pts[0].t+warm {
		return true
	}
	for _, r := range s.restarts {
		if a < r+warm && z > r {
			return true
		}
	}
	return false
}

// restartIn reports whether the batch started afresh after T a and by T z.
func (s estSeries) restartIn(a, z float64) bool {
	for _, r := range s.restarts {
		if a < r && r <= z {
			return true
		}
	}
	return false
}

// saturated reports whether every request slot was busy through a block (after its first point), so its
// token rate is the engine's full-batch rate.
func (s estSeries) saturated(b estBlock) bool {
	for _, p := range s.pts[b.from+1 : b.to+1] {
		if p.hasG && p.running < 0.9*s.slots {
			return false
		}
	}
	return true
}

// stalledSince returns the T of the last progress when nothing has moved for stallAfter seconds.
func (s estSeries) stalledSince(stallAfter float64) (float64, bool) {
	since := s.pts[s.lastProgress()].t
	last := s.pts[len(s.pts)-1].t
	return since, last-since >= stallAfter
}

// throughput measures the rates over the last window seconds of wall time and over the whole history.
func (s estSeries) throughput(window float64) Throughput {
	var tp Throughput
	n := len(s.pts)
	if n < 2 {
		return tp
	}
	last := s.pts[n-1]
	from := 0
	for i := n - 2; i >= 0; i-- {
		if last.t-s.pts[i].t >= window {
			from = i
			break
		}
	}
	first := s.pts[0]
	tp.WindowS = last.t - s.pts[from].t
	if tp.WindowS > 0 {
		tp.ItemsPerS = (last.done - s.pts[from].done) / tp.WindowS
	}
	if d := last.t - first.t; d > 0 {
		tp.RunItemsPerS = (last.done - first.done) / d
	}
	// Token counts: between the latest points where the engines answered.
	lastG := -1
	for i := n - 1; i >= 0; i-- {
		if s.pts[i].hasG {
			lastG = i
			break
		}
	}
	if lastG < 0 {
		return tp
	}
	for i := from; i < lastG; i++ {
		if s.pts[i].hasG {
			if d := s.pts[lastG].t - s.pts[i].t; d > 0 {
				tp.TokensPerS = (s.pts[lastG].g - s.pts[i].g) / d
			}
			break
		}
	}
	for i := 0; i < lastG; i++ {
		if s.pts[i].hasG {
			if d := s.pts[lastG].t - s.pts[i].t; d > 0 {
				tp.RunTokensPerS = (s.pts[lastG].g - s.pts[i].g) / d
			}
			break
		}
	}
	return tp
}

// estRough estimates from a single observation and the job's own elapsed time.
func estRough(o Observation, e ETA, from string) ETA {
	e.Rough = true
	switch {
	case o.Total <= 0:
		e.Reason = "the total number of items is unknown (the progress source gives no total)"
		return e
	case o.Elapsed == nil || *o.Elapsed <= 0 || o.Done <= 0:
		e.Reason = "a single observation without elapsed time or finished items: need a second sample"
		return e
	case o.Running != nil && float64(o.Done) < *o.Running:
		// Fewer items done than are in flight: the first batch has not turned over, and the few that
		// finished are its shortest. Done ÷ elapsed would put the finish several times too late.
		e.Reason = fmt.Sprintf("too early: %s items finished while %s are in flight, and the first to finish are the shortest; a rate needs the first batch to turn over",
			Count(float64(o.Done)), Count(*o.Running))
		return e
	}
	rate := float64(o.Done) / *o.Elapsed
	sec := e.ItemsLeft / rate
	low, high := sec/2, sec*2
	e.State = StateRunning
	e.Seconds, e.LowS, e.HighS = &sec, &low, &high
	e.ItemsPerS = rate
	if o.GenTokens != nil && *o.GenTokens > 0 {
		e.TokensPerS = *o.GenTokens / *o.Elapsed
		e.TokensPerItem = *o.GenTokens / float64(o.Done)
	}
	finish := estUnix(o.T + sec)
	e.FinishAt = &finish
	e.Reason = fmt.Sprintf("rough, from %s: %s items in %s = %s, %s items left",
		from, Count(float64(o.Done)), Duration(*o.Elapsed), Rate(rate, "items/s"), Count(e.ItemsLeft))
	return e
}

// estUnix converts a T to a time.
func estUnix(t float64) time.Time {
	sec, frac := math.Modf(t)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

// estClock names a T for a sentence: a UTC clock time for unix times, seconds since the start in a trace.
func estClock(t float64) string {
	if t > 1e9 {
		return estUnix(t).Format("15:04 UTC")
	}
	return fmt.Sprintf("t=%s s", Count(t))
}

// estSpeedup is the assumed ratio of one request's decode speed when it runs alone to its speed in a full
// batch. Decoding is memory-bound at small batches, so as the batch drains the stragglers speed up; a lone
// vLLM request typically decodes several times faster than one of a couple of hundred.
const estSpeedup = 5.0

// estYoungBatches is how many batches' worth of finished items it takes for the ages in a batch that started
// all at once to settle.
const estYoungBatches = 8

// estQuantiles is the most residual-length quantiles the drain model tracks.
const estQuantiles = 256

// tokenSeconds prices the remaining work. While items wait to start, the batch stays full: the items not
// started yet take items × tokens per item ÷ tokens/s, after which the batch drains. The drain is modelled from
// what the history shows: in a busy batch the tokens a request has left follow the equilibrium residual
// distribution of a lognormal length with the measured mean, its spread taken from the age of the batch (the
// mean age of a request in flight is E[L²]/2E[L]) and capped at max_tokens; as requests finish, the rest
// decode faster (see drainCurve), and the last one sets the finish. It returns the seconds, the drain's part,
// and the drain's range: how fast the stragglers speed up is a guess until the drain shows it (3x to 10x), and
// without max_tokens so is the longest request.
func (s estSeries) tokenSeconds(left, m, r float64) (sec, drain, drainLow, drainHigh float64) {
	last := -1
	for i := len(s.pts) - 1; i >= 0; i-- {
		if s.pts[i].hasG {
			last = i
			break
		}
	}
	if last < 0 || s.slots < 1 {
		return left * m / r, 0, 0, 0
	}
	p := s.pts[last]
	slots := s.slots
	n := int(math.Min(slots, estQuantiles))
	cv2 := s.lengthCV2(m)
	res := estResiduals(m, cv2, s.maxTokens, 0.995, n)
	b, measured := s.drainCurve(last, r)
	// drainFrom is the time for the last k of the n residual quantiles to finish.
	drainFrom := func(res []float64, b float64, k int) float64 {
		a := r / slots * (1 + b*slots)
		d := 0.0
		for j := n - k; j < n; j++ {
			prev := 0.0
			if j > 0 {
				prev = res[j-1]
			}
			running := float64(n-j) * slots / float64(n)
			d += (res[j] - prev) / (a / (1 + b*running))
		}
		return d
	}
	k := n
	busy := 0.0
	if waiting := math.Max(0, left-p.running); waiting > 0 || p.running >= 0.9*slots {
		// A batch that started all at once (the job's start, a restart) has more left than a settled
		// one: its requests have whole lengths ahead of them, less what they have decoded.
		excess := 0.0
		if p.hasAge {
			settled := 0.0
			for _, x := range res {
				settled += x
			}
			settled *= p.running / float64(n)
			excess = math.Max(0, p.running*m-p.age-settled)
		}
		busy = (waiting*m + excess) / r
	} else {
		k = max(1, min(n, int(math.Ceil(math.Min(left, p.running)*float64(n)/slots))))
	}
	drain = drainFrom(res, b, k)
	drainLow, drainHigh = 0.8*drain, 1.2*drain
	if !measured {
		short, long := res, res
		if s.maxTokens <= 0 {
			short, long = estResiduals(m, cv2, 0, 0.98, n), estResiduals(m, cv2, 0, 0.999, n)
		}
		drainLow = math.Min(drainLow, drainFrom(short, estCurveB(slots, 10), k))
		drainHigh = math.Max(drainHigh, drainFrom(long, estCurveB(slots, 3), k))
	}
	return busy + drain, drain, drainLow, drainHigh
}

// estCurveB is b of the per-request decode rate a/(1+b·B) when a lone request decodes speedup times faster
// than one in a batch of slots.
func estCurveB(slots, speedup float64) float64 {
	if slots <= speedup {
		return 0
	}
	return (speedup - 1) / (slots - speedup)
}

// drainCurve returns b of the per-request decode rate a/(1+b·B) for B running requests, given the full-batch
// rate r. While the batch is draining the history shows the rate at smaller batches: r(B)/r(C) =
// (1+bC)/(1+bB) gives b from each interval of the drain so far. Before that, b follows from estSpeedup.
func (s estSeries) drainCurve(last int, r float64) (b float64, measured bool) {
	slots := s.slots
	b = estCurveB(slots, estSpeedup)
	var sum, weight float64
	for i := last; i > 0; i-- {
		p, q := s.pts[i-1], s.pts[i]
		if !p.hasG || !q.hasG || p.seg != q.seg || p.running >= 0.9*slots {
			break
		}
		running := (p.running + q.running) / 2
		dt := q.t - p.t
		if running < 2 || dt <= 0 || q.g <= p.g {
			continue
		}
		ratio := (q.g - p.g) / dt / running / (r / slots)
		if den := slots - ratio*running; ratio > 1 && den > 0 {
			sum += (ratio - 1) / den * dt
			weight += dt
		}
	}
	if weight > 0 {
		return sum / weight, true
	}
	return b, false
}

// lengthCV2 estimates the squared coefficient of variation of completion lengths from the age of the batch:
// in a busy batch the mean age of a request in flight is E[L²]/2E[L] = m(1+CV²)/2. It averages over the last
// four windows of full-batch points and falls back to 1 (an exponential-like spread).
func (s estSeries) lengthCV2(m float64) float64 {
	if !(m > 0) {
		return 1
	}
	last := s.pts[len(s.pts)-1].t
	var sum float64
	var n int
	for i := len(s.pts) - 1; i >= 0 && last-s.pts[i].t < 4*s.window; i-- {
		p := s.pts[i]
		if p.hasAge && p.running >= 0.9*s.slots && p.running > 0 {
			sum += p.age / (p.running * m)
			n++
		}
	}
	if n == 0 {
		return 1
	}
	return math.Max(0.1, math.Min(4, 2*sum/float64(n)-1))
}

// estResiduals returns n quantiles (ascending) of the tokens a request in a busy batch has left: the
// equilibrium residual of a length L that is lognormal with mean m and squared coefficient of variation cv2,
// capped at maxTokens (0 = unknown: at the given quantile of L). Its density is P(L > x) / E[L].
func estResiduals(m, cv2, maxTokens, quantile float64, n int) []float64 {
	sigma := math.Sqrt(math.Log1p(cv2))
	mu := math.Log(m) - sigma*sigma/2
	// Beyond the 99.99th percentile there is nothing left to integrate.
	top := math.Min(maxTokens, math.Exp(mu+3.72*sigma))
	if maxTokens <= 0 {
		// No known cap: a generation job sets max_tokens a few times its typical completion, and some
		// completions hit it; stop at a high quantile rather than let a lognormal tail no real job has set
		// the finish.
		top = math.Exp(mu + sigma*math.Sqrt2*math.Erfinv(2*quantile-1))
	}
	const grid = 400
	cum := make([]float64, grid+1) // ∫₀^x P(L > u) du at x = top·i/grid
	surv := func(u float64) float64 {
		if u <= 0 {
			return 1
		}
		return 0.5 * math.Erfc((math.Log(u)-mu)/(sigma*math.Sqrt2))
	}
	h := top / grid
	prev := surv(0)
	for i := 1; i <= grid; i++ {
		cur := surv(float64(i) * h)
		cum[i] = cum[i-1] + (prev+cur)/2*h
		prev = cur
	}
	total := cum[grid]
	out := make([]float64, n)
	i := 1
	for j := range out {
		q := (float64(j) + 0.5) / float64(n) * total
		for i < grid && cum[i] < q {
			i++
		}
		f := (q - cum[i-1]) / (cum[i] - cum[i-1])
		out[j] = (float64(i-1) + f) * h
	}
	return out
}

// meanAge is the mean age of the batch over the last two windows of settled points (same engine segment, past the
// warm-up) up to point z with the batch full: the tokens left in flight, which the age stands for, without the
// point-to-point noise of one reading.
func (s estSeries) meanAge(z int, warm float64) float64 {
	var sum float64
	n := 0
	for i := z; i >= 0 && s.pts[z].t-s.pts[i].t < 2*s.window && s.pts[i].seg == s.pts[z].seg; i-- {
		p := s.pts[i]
		if s.warming(p.t, p.t, warm) {
			break
		}
		if p.hasAge && p.running >= 0.9*s.slots && s.pts[z].running > 0 {
			sum += p.age / p.running
			n++
		}
	}
	if n == 0 {
		return s.pts[z].age
	}
	return sum / float64(n) * s.pts[z].running
}
