package estimate

import (
	"fmt"
	"math"
	"runwatch/reports/format"
)

// onFinishRateZ is how many standard errors apart two stretches of an on-finish counter's rate must be to call
// it a change.
const onFinishRateZ = 8.0

// noRate is model's reason when no rate could be measured yet.
const noRate = "no item has finished yet and the engines report no tokens"

// model fills a running estimate. With token counts: the items not started yet take items × tokens per item ÷
// the full-batch token rate, then the batch drains (see tokenSeconds). With the job log only: items left ÷
// items/s, or items left × tokens per item ÷ finished tokens/s once the log shows the lengths changing.
func (s series) model(e ETA, now float64, cfg Config) (ETA, parts) {
	blockLen := cfg.Window / 3
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
	var tpi, tps, spi, fps []measure
	var tpiAt, tpsAt, spiAt, fpsAt []float64 // the active time each of those blocks starts at
	var tpiLater measure                     // blocks after the first restart
	var lastTokens []tokenBlock              // every block's tokens, full batch or not
	var tpsLengths []measure                 // tokens per item of each block of tps (den 0: warming or unknown)
	partial := 0                             // blocks past the warm-up whose batch was not full
	idle := 0.0                              // active seconds of the blocks since the last in which an item finished
	// A history that starts mid-job: the job before it is one block of each measure, at its start (see
	// before). Its token rate only when the batch was full when the history began: a batch still filling (clients
	// ramping up) ran below the rate the busy part prices.
	start := s.pts[0].active
	preRate := false // the token rate counts the job before the history
	if s.pre.ok {
		spi = append(spi, measure{s.pre.seconds, s.pre.items})
		spiAt = append(spiAt, start)
		if p0 := s.pts[0]; s.pre.tokens > 0 && (p0.queued || p0.running >= math.Min(0.9*s.slots, s.slots-1)) {
			tps = append(tps, measure{s.pre.tokens, s.pre.seconds})
			tpsAt = append(tpsAt, start)
			preRate = true
			tpsLengths = append(tpsLengths, measure{})
		}
		if s.pre.lengths.den > 0 {
			tpi = append(tpi, s.pre.lengths)
			tpiAt = append(tpiAt, start)
		}
	}
	for _, b := range bs {
		a, z := s.pts[b.from], s.pts[b.to]
		span := z.active - a.active
		switch {
		case s.restartIn(a.t, z.t):
			idle = 0
		case z.done > a.done:
			spi = append(spi, measure{span + idle, z.done - a.done})
			spiAt = append(spiAt, a.active-idle)
			idle = 0
		default:
			idle += span
		}
		// Across a restart the tokens decoded between the last sample and the crash are lost to the counters.
		if a.hasG && z.hasG && a.seg == z.seg {
			sat := s.saturated(b)
			if sat {
				tps = append(tps, measure{z.g - a.g, span})
				tpsAt = append(tpsAt, a.active)
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
				tpi = append(tpi, r)
				tpiAt = append(tpiAt, a.active)
				if a.seg > 0 {
					tpiLater.num += r.num
					tpiLater.den += r.den
				}
			}
			if a.hasFin && z.hasFin && z.fin > a.fin {
				fps = append(fps, measure{z.fin - a.fin, span})
				fpsAt = append(fpsAt, a.active)
			}
		}
	}
	var sec, relSE, drain, drainLow, drainHigh, wobble float64 // wobble: one block's relative noise of the rate used
	// The figures' windows, as active times they start at: the token rate's (or items/s) and tokens per
	// item's. Said apart when they differ, so that "at 1,349 tok/s" is not read as the last 14 minutes' rate
	// when it is the whole run's, beside a throughput line that gives the last 11 minutes' as 1,370.
	rateAt, lenAt := start, start
	lenFromRate := false // tokens per item came from the token rate's blocks
	from := func(at []float64, i int) float64 {
		if i > 0 && i < len(at) {
			return at[i]
		}
		return start
	}
	// With a counter that moves only on finish the lengths come from finished items alone, a block at a time:
	// a few long ones finishing together look like a change. It takes the rates' stronger evidence, and three
	// blocks, to call one.
	lengthZ, lengthRecent := changeZ, 2
	if s.kind == OnFinish {
		lengthZ, lengthRecent = rateChangeZ, 3
	}
	mFit := fitLevel(tpi, lengthZ, false, math.Sqrt(s.lengthCV2(pooledRatio(tpi))), lengthRecent)
	if mFit.BaseFrom == 0 {
		// No change (or one not yet sure): every item so far counts, or with an on-finish counter every item
		// past the warm-up once there are enough of them.
		if s.settledLengths(tpi) {
			if cum, _, ok := s.cumTokensPerItem(cfg.Window, tpiLater); ok && cum > 0 {
				mFit = s.withCumulative(mFit, tpi, cum)
			}
		} else if cum, young, ok := s.cumTokensPerItem(cfg.Window, tpiLater); ok {
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
	m, mSE := blend(mFit.Base, mFit.BaseSE, mFit.Split, mFit.SplitSE, mFit.Weight)
	mFrom := mFit.From
	switch {
	case len(tps) > 0 && m > 0 && !math.IsNaN(m):
		// Tokens counted on finish arrive in lumps: a change of their rate needs more evidence, and two blocks.
		rateZ, rateRecent := rateChangeZ, 1
		if s.kind == OnFinish {
			rateZ, rateRecent = onFinishRateZ, 2
		}
		rFit := fitLevel(tps, rateZ, true, 0, rateRecent)
		r, rSE, rFrom := rFit.Level, rFit.RelSE, rFit.From
		wobble = rFit.BlockSD
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
				lenFromRate = true
			}
		}
		// A batch that is not full generates fewer tokens per second than a full one, so the latest blocks' token
		// rate, full or not, is a floor under the full-batch rate while items still wait to start. Where the
		// batch gauge misleads (it is one replica's behind a shared address, or it wobbles on a small job) the
		// full blocks are few and old, and their rate would stand for the run's long after it sped up.
		rateAt = from(tpsAt, rFrom)
		if k := rateRecent + 1; len(lastTokens) >= k && e.ItemsLeft > 2*last.running {
			var g measure
			full := false
			for _, b := range lastTokens[len(lastTokens)-k:] {
				g.num, g.den = g.num+b.num, g.den+b.den
				full = full || b.full
			}
			if !full && g.den > 0 && g.num/g.den > r {
				r, rateAt = g.num/g.den, lastTokens[len(lastTokens)-k].at
			}
		}
		e.TokensPerItem, e.TokensPerS = m, r
		e.ItemsPerS = r / m
		sec, drain, drainLow, drainHigh = s.tokenSeconds(e.ItemsLeft, m, r)
		relSE = math.Hypot(mSE, rSE)
		lenAt = from(tpiAt, mFrom)
		if lenFromRate {
			lenAt = from(tpsAt, rFrom) // tokens per item of the rate's own blocks
		}
		e.Reason = fmt.Sprintf("%s items left × %s tokens each at %s", format.Count(e.ItemsLeft),
			format.Count(m), format.Rate(r, "tok/s"))
	case len(tpi) > 0 && len(fps) > 0 && mFrom > 0:
		// No token counts, but the log's mean completion has changed: the tokens of finished items per
		// second stand in for the engines' rate, so that the new lengths count for the items left.
		rFit := fitLevel(fps, rateChangeZ, true, 0, 1)
		r, rSE, rFrom := rFit.Level, rFit.RelSE, rFit.From
		wobble = rFit.BlockSD
		e.TokensPerItem, e.TokensPerS = m, r
		e.ItemsPerS = r / m
		sec = e.ItemsLeft * m / r
		relSE = math.Hypot(mSE, rSE)
		rateAt, lenAt = from(fpsAt, rFrom), from(tpiAt, mFrom)
		e.Reason = fmt.Sprintf("%s items left × %s tokens each at %s of finished completions", format.Count(e.ItemsLeft),
			format.Count(m), format.Rate(r, "tok/s"))
	case len(spi) > 0:
		lFit := fitLevel(spi, rateChangeZ, true, math.Sqrt(s.lengthCV2(pooledRatio(tpi))), 1)
		lam, lSE, lFrom := 1/lFit.Level, lFit.RelSE, lFit.From
		wobble = lFit.BlockSD
		e.ItemsPerS = lam
		sec = e.ItemsLeft / lam
		relSE = lSE
		rateAt, lenAt = from(spiAt, lFrom), from(spiAt, lFrom)
		e.Reason = fmt.Sprintf("%s items left at %s", format.Count(e.ItemsLeft), format.Rate(lam, "items/s"))
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
	if s.pts[0].done > 0 && !(s.pre.ok && (preRate || e.TokensPerS == 0)) {
		whole = math.Inf(-1)
	}
	e.Reason += windowsOf(last.active, whole, rateAt, lenAt, blockLen, e.TokensPerItem > 0)
	if e.TokensPerS > 0 && e.TokensPerItem > 0 {
		// The items × tokens ÷ tokens/s above is the full batch's arithmetic; the drain at the end (the last
		// requests decoding with the batch emptying) makes the estimate longer than it, which near the end is
		// most of the time left: "23 items left × 1,067 tokens each at 1,379 tok/s" read as 18 s beside an ETA of 28 s.
		if extra := sec - e.ItemsLeft*e.TokensPerItem/e.TokensPerS; extra > 0.1*sec && extra >= 1 {
			e.Reason += fmt.Sprintf(", and %s more for the batch draining at the end", format.Span(extra))
		}
	}
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
	finish := Unix(now + sec)
	e.FinishAt = &finish
	return e, parts{ok: true, blocks: bs, blockLen: blockLen, busy: busy, drain: drain, drainLow: drainLow,
		drainHigh: drainHigh, rel: rel, rate: e.ItemsPerS}
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
}

// tokenBlock is one block's tokens generated over its active seconds, and whether the batch was full throughout.
type tokenBlock struct {
	measure
	full bool
	at   float64 // the active time the block starts at
}

// windowsOf says over what the figures of a reason were measured: "(rates of the last 14 min)" when the rate
// and tokens per item share a window (their starts within 15% of the longer one's span: the shorter is named,
// or "the whole run" when either starts with the run), else each its own, "the whole run" for one that
// starts with the run (within half a block of start, the active time the job started at; -Inf when the
// history starts mid-job).
func windowsOf(now, start, rateAt, lenAt, blockLen float64, lengths bool) string {
	say := func(at float64) string {
		if at <= start+blockLen/2 {
			return "the whole run"
		}
		return "the last " + format.Duration(now-at)
	}
	if !lengths {
		lenAt = rateAt
	}
	r, l := say(rateAt), say(lenAt)
	if r == l || math.Abs(rateAt-lenAt) <= 0.15*(now-math.Min(rateAt, lenAt)) {
		if math.Min(rateAt, lenAt) <= start+blockLen/2 {
			return " (rates of the whole run)"
		}
		return fmt.Sprintf(" (rates of the last %s)", format.Duration(now-math.Max(rateAt, lenAt)))
	}
	return fmt.Sprintf(" (tokens per item of %s, tok/s of %s)", l, r)
}
