package estimate

import (
	"fmt"
	"math"
	"runwatch/reports/format"
)

// onFinishRateZ is how many standard errors apart two stretches of an on-finish counter's rate must be to call
// it a change.
const onFinishRateZ = 8.0

// logDrain is the share of a block the high end adds once the time left is under a block, where the job's log
// alone prices the time left (no batch to drain in the model): items left ÷ items/s assumes the last items finish
// at the rate of a full batch, but the last requests decode while the batch empties, and the longest of them
// finishes last. The log shows no batch, so the drain is allowed for at about a request's duration: the pace
// window spans about six (paceRequests), a block two, so half a block. In the last twentieth of the job the time
// left had run 1.31x the point at the median (first and second corpora, log only), and the ranges held the
// finish in 46-56% of those answers. Chosen on the first and second corpora (BenchmarkAccuracy, 20 seeds):
// last-stretch coverage (95-100% done) log only 56% -> 74% on the first and 46% -> 65% on the second, on finish
// 71% -> 84% and per iteration 69% -> 81% on the second (its neighbour jobs, whose counters are left out, read
// the log), pooled 73% -> 75% or more and 62% -> 75% or more; the point and its errors do not move. A whole
// block gave the second corpus's log only 67%, the same rows outside 70-92% and wider ranges; half a block at
// every time left, 72%, but its neighbour rows passed 92% coverage over the whole run.
const logDrain = 0.5

// noRate is model's reason when no rate could be measured yet.
const noRate = "no item has finished yet and the engines report no tokens"

// model fills a running estimate. With token counts: the items not started yet take items × tokens per item ÷
// the full-batch token rate, then the batch drains (see tokenSeconds). With the job log only: items left ÷
// items/s, or items left × tokens per item ÷ finished tokens/s once the log shows the lengths changing.
func (s series) model(e ETA, now float64, cfg Config) (ETA, parts) {
	blockLen := cfg.Window / 3
	// After a lasting change in the batch (see regime.go) the rates are the regime's: its blocks, its batch.
	rg := s.regimeOf(blockLen)
	if rg.from == 0 {
		rg = s.paceOf(s.blocks(blockLen))
	}
	est, pr := s.modelIn(e, now, cfg, rg)
	if rg.from == 0 && pr.ok && pr.wholeRate {
		// The rates are the whole run's: a shift of the job's own pace (see paceShift) ends them. A rate that
		// follows a change found in the run stays: cut at a shift as well (a throttle building, then steady), the
		// second corpus's log-only throttle came to 10.74% of the job where that change gave 10.25% (10.28% so).
		if sh := s.paceShift(pr.blocks); sh.from > 0 { // the whole history's blocks, as paceOf read them
			return s.modelIn(e, now, cfg, sh)
		}
	}
	return est, pr
}

// modelIn is model with the rates of regime rg (from its first point on; the whole history when rg.from is 0).
func (s series) modelIn(e ETA, now float64, cfg Config, rg regime) (ETA, parts) {
	blockLen := cfg.Window / 3
	if rg.from > 0 {
		s.cut, s.pre, s.slots = rg.from, before{}, 0
		for _, p := range s.pts[rg.from:] {
			s.slots = math.Max(s.slots, p.running)
		}
	}
	bs := s.blocks(blockLen)
	if len(bs) == 0 {
		e.Reason = noRate
		return e, parts{}
	}
	last := s.pts[len(s.pts)-1]
	// spi is seconds per item, not items per second: the items that finish in a block of a busy batch are a
	// renewal count, whose variance is about n × CV² of one item's length, so a block's time per item has a
	// relative error of at least CV/√n however steady the engine, the floor fitLevel puts under the noise of
	// units of den. Without it the item rate of a few quiet blocks passed for a change. A block in which no item
	// finished has no seconds per item of its own, but its seconds were spent on the items that finished next:
	// they count in the next block that has some (a restart drops them). Left out, they made the item rate
	// faster than the job's: with replicas behind one URL, whose counters are left out, the first batch's gap
	// (0.5 s without a finished item in the first 2 s) put 405 items in 9 s at 47.6 items/s where the job ran at
	// 45, and the estimate 5% early (linear extrapolation 1%).
	var tpi, tps, spi, fps timed
	var tpiLater measure        // blocks after the first restart
	var lastTokens []tokenBlock // every block's tokens, full batch or not
	var tpsLengths []measure    // tokens per item of each block of tps (den 0: warming or unknown)
	partial := 0                // blocks past the warm-up whose batch was not full
	idle := 0.0                 // active seconds of the blocks since the last in which an item finished
	// A history that starts mid-job: the job before it is one block of each measure, at its start (see
	// before). Its token rate only when the batch was full when the history began: a batch still filling (clients
	// ramping up) ran below the rate the busy part prices.
	start := s.pts[s.cut].active
	preRate := false // the token rate counts the job before the history
	if s.pre.ok {
		spi.add(measure{s.pre.seconds, s.pre.items}, start)
		if p0 := s.pts[0]; s.pre.tokens > 0 && (p0.queued || p0.running >= math.Min(0.9*s.slots, s.slots-1)) {
			tps.add(measure{s.pre.tokens, s.pre.seconds}, start)
			preRate = true
			tpsLengths = append(tpsLengths, measure{})
		}
		if s.pre.lengths.den > 0 {
			tpi.add(s.pre.lengths, start)
		}
	}
	for _, b := range bs {
		a, z := s.pts[b.from], s.pts[b.to]
		span := z.active - a.active
		switch {
		case s.restartIn(a.t, z.t):
			idle = 0
		case z.done > a.done:
			spi.add(measure{span + idle, z.done - a.done}, a.active-idle)
			idle = 0
		default:
			idle += span
		}
		// Across a restart the tokens decoded between the last sample and the crash are lost to the counters.
		if a.hasG && z.hasG && a.seg == z.seg {
			sat := s.saturated(b)
			if sat {
				tps.add(measure{z.g - a.g, span}, a.active)
				var l measure
				if r, ok := blockTokensPerItem(a, z); ok && !s.warming(a.t, z.t, cfg.Window) {
					l = r
				}
				tpsLengths = append(tpsLengths, l)
			}
			lastTokens = append(lastTokens, tokenBlock{measure{z.g - a.g, span}, sat, a.active})
			if !sat && !s.warming(a.t, z.t, cfg.Window) {
				partial++
			}
		}
		if !s.warming(a.t, z.t, cfg.Window) {
			if r, ok := blockTokensPerItem(a, z); ok {
				tpi.add(r, a.active)
				if a.seg > 0 {
					tpiLater.num += r.num
					tpiLater.den += r.den
				}
			}
			if a.hasFin && z.hasFin && z.fin > a.fin {
				fps.add(measure{z.fin - a.fin, span}, a.active)
			}
		}
	}
	var sec, relSE, drain, drainLow, drainHigh, wobble float64 // wobble: one block's relative noise of the rate used
	// The figures' windows, as active times they start at: the token rate's (or items/s) and tokens per
	// item's. Said apart when they differ, so that "at 1,349 tok/s" is not read as the last 14 minutes' rate
	// when it is the whole run's, beside a throughput line that gives the last 11 minutes' as 1,370.
	rateAt, lenAt := start, start
	var rateTrend, lenTrend bool // the figure is a fitted line's latest value (see levelFit.SplitTrend)
	lenFromRate := false         // tokens per item came from the token rate's blocks
	// With a counter that moves only on finish the lengths come from finished items alone, a block at a time:
	// a few long ones finishing together look like a change. It takes the rates' stronger evidence, and three
	// blocks, to call one.
	lengthZ, lengthRecent := changeZ, 2
	if s.kind == OnFinish {
		lengthZ, lengthRecent = rateChangeZ, 3
	}
	mFit := fitLevel(tpi.ms, lengthZ, false, math.Sqrt(s.lengthCV2(pooledRatio(tpi.ms))), lengthRecent)
	if mFit.BaseFrom == 0 {
		// No change (or one not yet sure): every item so far counts, or with an on-finish counter every item
		// past the warm-up once there are enough of them.
		if s.settledLengths(tpi.ms) {
			if cum, _, ok := s.cumTokensPerItem(cfg.Window, tpiLater); ok && cum > 0 {
				mFit = s.withCumulative(mFit, tpi.ms, cum)
			}
		} else if cum, young, ok := s.cumTokensPerItem(cfg.Window, tpiLater); ok {
			mFit.Base, mFit.BaseTrend = cum, false
			if len(tpi.ms) == 0 {
				mFit.BaseSE = 0.1
			}
			// A young batch's tokens per item is a guess from its short requests; say so in the range.
			mFit.BaseSE = math.Max(mFit.BaseSE, 0.25*young)
			if mFit.Weight == 0 {
				mFit.Split, mFit.SplitSE, mFit.SplitTrend = mFit.Base, mFit.BaseSE, false
			}
		}
	}
	m, mSE := blend(mFit.Base, mFit.BaseSE, mFit.Split, mFit.SplitSE, mFit.Weight)
	mFrom, lenTrend := mFit.From, mFit.trend()
	switch {
	case len(tps.ms) > 0 && m > 0 && !math.IsNaN(m):
		// Tokens counted on finish arrive in lumps: a change of their rate needs more evidence, and two blocks.
		rateZ, rateRecent := rateChangeZ, 1
		if s.kind == OnFinish {
			rateZ, rateRecent = onFinishRateZ, 2
		}
		rFit := fitLevel(tps.ms, rateZ, true, 0, rateRecent)
		r, rSE, rFrom := rFit.Level, rFit.RelSE, rFit.From
		wobble, rateTrend = rFit.BlockSD, rFit.trend()
		// With a counter that moves only on finish, tokens per item is the finished items' mean, and while a
		// batch grows (clients ramping up, a server that does not keep its batch full) more requests start than
		// finish, and the ones that finish are the short ones: the whole history's mean falls short of the items
		// to come (peer slowdown, clients 8 -> 64: 115-119 tokens mid-run where the job's mean is 127, its busy
		// rate 10-20% fast). Where the batch was not full past the warm-up, the lengths come from the same full
		// blocks as the token rate, so that their ratio is the item rate of a full batch: slowdown 8.05% ->
		// 6.52% (tqdm 7.04%). A batch full throughout keeps the mean of the items so far, or past the warm-up
		// (settledLengths): the same blocks' mean is rougher early on, and on those traces it moved the
		// estimate away (failures 1.68% -> 4.36%, queued 1.60% -> 3.45%). A per-iteration counter gives the
		// batch's age, and with it the censored mean.
		if s.kind == OnFinish && mFit.BaseFrom == 0 && mFit.Weight == 0 && partial > 0 {
			var l measure
			for _, b := range tpsLengths[rFrom:] {
				l.num, l.den = l.num+b.num, l.den+b.den
			}
			if l.den >= 2*s.slots && l.num > 0 { // two batches' worth of items at least
				m = l.num / l.den
				lenFromRate, lenTrend = true, false
			}
		}
		// A batch that is not full generates fewer tokens per second than a full one, so the latest blocks' token
		// rate, full or not, is a floor under the full-batch rate while items still wait to start. Where the
		// batch gauge misleads (it is one replica's behind a shared address, or it wobbles on a small job) the
		// full blocks are few and old, and their rate would stand for the run's long after it sped up.
		rateAt = tps.from(rFrom, start)
		if k := rateRecent + 1; len(lastTokens) >= k && e.ItemsLeft > 2*last.running {
			var g measure
			full := false
			for _, b := range lastTokens[len(lastTokens)-k:] {
				g.num, g.den = g.num+b.num, g.den+b.den
				full = full || b.full
			}
			if !full && g.den > 0 && g.num/g.den > r {
				r, rateAt, rateTrend = g.num/g.den, lastTokens[len(lastTokens)-k].at, false
			}
		}
		e.TokensPerItem, e.TokensPerS = m, r
		e.ItemsPerS = r / m
		sec, drain, drainLow, drainHigh = s.tokenSeconds(e.ItemsLeft, m, r)
		relSE = math.Hypot(mSE, rSE)
		lenAt = tpi.from(mFrom, start)
		if lenFromRate {
			lenAt = tps.from(rFrom, start) // tokens per item of the rate's own blocks
		}
		e.Reason = fmt.Sprintf("%s × %s tokens each at %s", itemsLeft(e.ItemsLeft),
			format.Count(m), format.Rate(r, "tok/s"))
	case len(tpi.ms) > 0 && len(fps.ms) > 0 && mFrom > 0:
		// No token counts, but the log's mean completion has changed: the tokens of finished items per
		// second stand in for the engines' rate, so that the new lengths count for the items left.
		rFit := fitLevel(fps.ms, rateChangeZ, true, 0, 1)
		r, rSE, rFrom := rFit.Level, rFit.RelSE, rFit.From
		wobble, rateTrend = rFit.BlockSD, rFit.trend()
		e.TokensPerItem, e.TokensPerS = m, r
		e.ItemsPerS = r / m
		sec = e.ItemsLeft * m / r
		relSE = math.Hypot(mSE, rSE)
		rateAt, lenAt = fps.from(rFrom, start), tpi.from(mFrom, start)
		e.Reason = fmt.Sprintf("%s × %s tokens each at %s of finished completions", itemsLeft(e.ItemsLeft),
			format.Count(m), format.Rate(r, "tok/s"))
	case len(spi.ms) > 0:
		lFit := fitLevel(spi.ms, rateChangeZ, true, math.Sqrt(s.lengthCV2(pooledRatio(tpi.ms))), 1)
		lam, lSE, lFrom := 1/lFit.Level, lFit.RelSE, lFit.From
		wobble, rateTrend = lFit.BlockSD, lFit.trend()
		e.ItemsPerS = lam
		sec = e.ItemsLeft / lam
		relSE = lSE
		if sec < blockLen {
			drainHigh = logDrain * blockLen // see logDrain
		}
		rateAt, lenAt, lenTrend = spi.from(lFrom, start), spi.from(lFrom, start), rateTrend
		e.Reason = fmt.Sprintf("%s at %s", itemsLeft(e.ItemsLeft), format.Rate(lam, "items/s"))
	default:
		e.Reason = "no item has finished yet and the engines give no token counts"
		return e, parts{}
	}
	if math.IsNaN(sec) || math.IsInf(sec, 0) || sec < 0 {
		e.Reason = "the measured rate is zero"
		return e, parts{}
	}
	// A history that starts mid-job (runwatch started, or its state lost, while the job ran) is not the whole
	// run unless the job before it counts (s.pre): its windows are said as the minutes they are.
	whole := start
	if s.cut > 0 || s.pts[0].done > 0 && !(s.pre.ok && (preRate || e.TokensPerS == 0)) {
		whole = math.Inf(-1)
	}
	// The rate over the whole run is the throughput line's run average only when they read the same.
	apart := ""
	switch {
	case len(tps.ms) > 0 && e.TokensPerS > 0:
		if format.Rate(e.TokensPerS, "tok/s") != format.Rate(s.runTokensPerS, "tok/s") {
			apart = fullBatches
		}
	case format.Rate(e.ItemsPerS, "items/s") != format.Rate(s.runItemsPerS, "items/s"):
		apart = runningTime
	}
	e.Reason += windowsOf(last.active, whole, window{at: rateAt, trend: rateTrend, apart: apart},
		window{at: lenAt, trend: lenTrend}, blockLen, e.TokensPerItem > 0)
	notes := len(e.Reason)
	if s.cut > 0 {
		e.Reason += ", " + rg.since()
	}
	if s.foreign {
		e.Reason += "; " + foreignWork
	}
	e.notes = e.Reason[notes:]
	if e.TokensPerS > 0 && e.TokensPerItem > 0 {
		// The items × tokens ÷ tokens/s above is the full batch's arithmetic; the drain at the end (the last
		// requests decoding with the batch emptying) makes the estimate longer than it, which near the end is
		// most of the time left: "23 items left × 1,067 tokens each at 1,379 tok/s" read as 18 s beside an ETA of 28 s.
		if extra := sec - e.ItemsLeft*e.TokensPerItem/e.TokensPerS; extra > 0.1*sec && extra >= 1 {
			e.Reason += fmt.Sprintf(", and %s more for the batch draining at the end", format.Span(extra))
		}
	}
	if e.TokensPerItem == 0 || len(tps.ms) == 0 {
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
	finish := Unix(now + sec)
	e.FinishAt = &finish
	return e, parts{ok: true, blocks: bs, blockLen: blockLen, busy: busy, drain: drain, drainLow: drainLow,
		drainHigh: drainHigh, rel: rel, rate: e.ItemsPerS, wholeRate: rateAt <= start+blockLen/2}
}

// parts is how the structural model priced the remaining work, for the choice between estimators and the
// range: the busy part (items not started yet, at the full-batch rate) and the drain at the end.
type parts struct {
	ok                  bool
	blocks              []block
	blockLen            float64
	busy, drain         float64
	drainLow, drainHigh float64
	rel                 float64 // the model's own relative half-width of the busy part (about 80%)
	rate                float64 // items/s of the busy part
	wholeRate           bool    // the rate is the level of the whole history (no change found in it, no trend)
}

// tokenBlock is one block's tokens generated over its active seconds, and whether the batch was full throughout.
type tokenBlock struct {
	measure
	full bool
	at   float64 // the active time the block starts at
}

// window is where a figure of a reason was measured from (an active time), and whether it is the latest
// value of a line fitted over that stretch rather than its mean.
type window struct {
	at    float64
	trend bool
	// apart is what the figure measured over the whole run when it is not the run average the throughput line
	// gives ("" when it reads the same): never "of the whole run" beside a different "run average" (1,349
	// against 1,331 tok/s in one evaluation).
	apart string
}

// windowsOf says over what the figures of a reason were measured: "(rates of the last 14 min)" when the rate
// and tokens per item share a window (their starts within 15% of the longer one's span: the shorter is named,
// or "the whole run" when either starts with the run), else each its own, "the whole run" for one that
// starts with the run (within half a block of start, the active time the job started at; -Inf when the
// history starts mid-job). A figure that is a fitted line's latest value follows "the trend of" its window: a
// rate that climbed through the last 30 min is not their mean.
// fullBatches and runningTime are what a rate over the whole run that is not its run average measured: the
// token rate its blocks with the batch full, the item rate the time the job was running (pauses left out).
const (
	fullBatches = ", full batches only"
	runningTime = ", running time only"
)

func windowsOf(now, start float64, rate, length window, blockLen float64, lengths bool) string {
	say := func(w window) string {
		s := "the last " + format.Duration(now-w.at)
		if w.at <= start+blockLen/2 {
			s = "the whole run"
			if !w.trend {
				s += w.apart
			}
		}
		if w.trend {
			return "following the trend of " + s
		}
		return "of " + s
	}
	if !lengths {
		length = rate
	}
	for _, w := range []*window{&rate, &length} {
		if w.at > start+blockLen/2 || w.trend {
			w.apart = "" // said of the whole run only
		}
	}
	rateAt, lenAt := rate.at, length.at
	r, l := say(rate), say(length)
	if rate.trend == length.trend && rate.apart == length.apart &&
		(r == l || math.Abs(rateAt-lenAt) <= 0.15*(now-math.Min(rateAt, lenAt))) {
		w := window{at: math.Max(rateAt, lenAt), trend: rate.trend, apart: rate.apart}
		if math.Min(rateAt, lenAt) <= start+blockLen/2 {
			w.at = start
		}
		return " (rates " + say(w) + ")"
	}
	return fmt.Sprintf(" (tokens per item %s, tok/s %s)", l, r)
}
