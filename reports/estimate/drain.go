package estimate

import (
	"math"
)

// defaultSpeedup is the assumed ratio of one request's decode speed when it runs alone to its speed in a full
// batch, until the drain shows it (drainCurve). Decoding is memory-bound at small batches, so as the batch
// drains the stragglers speed up, but by how much depends on the engine, the model and the batch, and a run
// whose batch stays full never shows it: nothing before the drain measures it. The engines measured here
// span 1.2x (the peer simulator at --time-factor-under-load 1.2, 32 slots) to 8.6x (runwatch's own sim: 7 tok/s
// per request in a batch of 200, 60 alone), and a vLLM 8B model on one H100 at a batch of 256 is about 3-4x.
// The range runs from no speed-up to twice the prior (see tokenSeconds). With the whole range rescaled by the
// backtest, no speed-up to 10x put 19 of the benchmark's 36 scenarios' coverage within 75-90%, 1.5x-6x 23,
// 2x-10x 24; with the drain's range apart from the busy part's and its high end narrowed by the run's own late
// scores (backtest.go), no speed-up to 6x put 31, 1.5x-6x 30, 1.5x-9x 30 (at a 3x prior).
//
// Chosen on the accuracy benchmark (December 2026). With the capped-share spread below and the first busy-rate
// changes, over all 72 rows the mean error was 0.91x the better baseline at 5x, 0.89x at 3x, 0.91x at 2.2x;
// the sim's rows lose at lower values (0.73x at 5x, 0.77x at 3x, 0.88x at 2.2x, sim full data) while the peer
// corpus gains (0.94x, 0.91x, 0.92x). With everything else as it is now: 5.18% of the job at 2.5x, 5.16% at
// 3x, 5.18% at 4x (0.86x the better baseline each); 4x puts 31 of 36 scenarios within 75-90% coverage (29 at
// 3x and 2.5x) and brings every scenario worse than its better baseline closer to it (peer failures 1.55x ->
// 1.49x, queued 1.28x -> 1.25x, onfinish-lumpy 1.08x -> 1.04x, dp2 1.06x -> 1.03x, the sim's steady run 1.52x
// -> 1.33x; only peer steady-chat 1.02x -> 1.03x), so 4x. A ceiling on a lone request's tokens/s (an absolute
// rate) would tell the engines apart but is a fixed time constant: the same job stretched 10x in time would
// get another drain.
const defaultSpeedup = 4.0

// quantiles is the most residual-length quantiles the drain model tracks.
const quantiles = 256

// tokenSeconds prices the remaining work. While items wait to start, the batch stays full: the items not
// started yet take items × tokens per item ÷ tokens/s, after which the batch drains. The drain is modelled from
// what the history shows: in a busy batch the tokens a request has left follow the equilibrium residual
// distribution of a lognormal length with the measured mean, its spread taken from the age of the batch (the
// mean age of a request in flight is E[L²]/2E[L]) and capped at max_tokens; as requests finish, the rest
// decode faster (see drainCurve), and the last one sets the finish. It returns the seconds, the drain's part,
// and the drain's range: how fast the stragglers speed up is a guess until the drain shows it (from none, the
// slowest a drain can be, to twice the prior), and without max_tokens so is the longest request. Without the
// batch's age (a counter that moves only on finish) the spread of the lengths is fitted to the share of
// requests that ran to max_tokens (see cappedLognormal), when the engines count it, and in the drain what its
// survivors have outlived counts the drain down between finishes and bounds its speed-up (survivors.go).
func (s series) tokenSeconds(left, m, r float64) (sec, drain, drainLow, drainHigh float64) {
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
	n := int(math.Min(slots, quantiles))
	cv2 := s.lengthCV2(m)
	mu, sigma := lognormalFor(m, cv2)
	if !s.ageKnown() {
		// Without the batch's age (a counter on finish), the spread comes from how many requests ran to
		// max_tokens, when the engines say, at the max_tokens most items finished under (capAt). Where the job
		// has raised it since (a second pass over the truncated items), the requests in flight and to come run
		// to the new one: the peer's stragglers (the last 40 of 2,500 items at 4,096 tokens, 256 before) 25.73%
		// -> 25.09% of the job, its length drift (256 -> 1,024) 15.97% -> 15.43%; fitted at the new cap, the
		// share at the cap was not compatible with the mean and the spread fell back to the mean's alone.
		fitCap := s.maxTokens
		if s.capAt > 0 {
			fitCap = s.capAt
		}
		if fmu, fsigma, ok := cappedLognormal(m, fitCap, s.capped); ok {
			mu, sigma = fmu, fsigma
			if s.maxTokens > 0 && s.maxTokens != fitCap {
				// The cap changed since most items finished: the items to come run to the new one.
				m = cappedMean(mu, sigma, s.maxTokens)
			}
		}
	}
	res := residualsOf(mu, sigma, s.maxTokens, 0.995, n)
	b, measured := s.drainCurve(last, r)
	// drainFrom is the time for the last k of the n residual quantiles to finish, each having decoded x
	// already.
	drainFrom := func(res []float64, b float64, k int, x float64) float64 {
		a := r / slots * (1 + b*slots)
		d := 0.0
		for j := n - k; j < n; j++ {
			prev := x
			if j > 0 {
				prev = math.Max(x, res[j-1])
			}
			if res[j] <= prev {
				continue
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
	// In a drain whose counter moves on finish, what the survivors have outlived (survivors.go).
	var x, xFast, xSlowest float64
	bFast := curveB(slots, 2*defaultSpeedup)
	if k < n && s.kind == OnFinish {
		if d := s.drainStart(last); d >= 0 {
			// The requests in flight went on decoding until now, unless the server restarted since: a restarted
			// server's requests are sent again and decode from nothing, and the drain holds at its last finish.
			until := s.now
			if s.nowSeg != p.seg {
				until = p.t
			}
			bFast = s.survivorsB(d, last, until, r, bFast, res)
			b = math.Min(b, bFast)
			x, xFast, xSlowest = s.decodedSince(d, last, until, r, b), s.decodedSince(d, last, until, r, bFast),
				s.decodedSince(d, last, until, r, 0)
		}
	}
	// withSurvivors is the drain at b of the survivors of k quantiles res, each having decoded x, and no less
	// than the time for one of them to decode what a request that has outlived x still has ahead of it, at the
	// rate of the batch as it is.
	withSurvivors := func(res []float64, b float64, x float64) float64 {
		// Survivors that outlive every quantile but the longest (the engine slowed, or max_tokens is not what
		// the run file says) are not done: the longest's last step stays ahead of them.
		x = math.Min(x, res[max(0, n-2)])
		d := drainFrom(res, b, k, x)
		if x > 0 {
			a := r / slots * (1 + b*slots)
			top := s.maxTokens
			if top <= 0 {
				top = math.Exp(mu + sigma*math.Sqrt2*math.Erfinv(2*0.995-1))
			}
			d = math.Max(d, outlived(mu, sigma, top, x)/(a/(1+b*p.running)))
		}
		return d
	}
	drain = withSurvivors(res, b, x)
	drainLow, drainHigh = 0.8*drain, 1.2*drain
	if !measured {
		short, long := res, res
		if s.maxTokens <= 0 {
			short, long = residualsOf(mu, sigma, 0, 0.98, n), residualsOf(mu, sigma, 0, 0.999, n)
		}
		drainLow = math.Min(drainLow, withSurvivors(short, bFast, xFast))
		// The high end at no speed-up: a lone request decodes no slower than one in a full batch. The backtest
		// narrows it where the run's own forecasts stay well inside their ranges.
		drainHigh = math.Max(drainHigh, withSurvivors(long, curveB(slots, 1), xSlowest))
	}
	return busy + drain, drain, drainLow, drainHigh
}

// curveB is b of the per-request decode rate a/(1+b·B) when a lone request decodes speedup times faster
// than one in a batch of slots.
func curveB(slots, speedup float64) float64 {
	if slots <= speedup {
		return 0
	}
	return (speedup - 1) / (slots - speedup)
}

// drainCurve returns b of the per-request decode rate a/(1+b·B) for B running requests, given the full-batch
// rate r. While the batch is draining the history shows the rate at smaller batches: r(B)/r(C) =
// (1+bC)/(1+bB) gives b from each interval of the drain so far, when the counter moves as tokens are
// generated. Before that, or with a counter that moves on finish, b follows from defaultSpeedup (bounded from
// above, for the latter, by what the drain's survivors have outlived: survivorsB).
func (s series) drainCurve(last int, r float64) (b float64, measured bool) {
	slots := s.slots
	b = curveB(slots, defaultSpeedup)
	if s.kind == OnFinish {
		// A counter that moves only on finish credits a request's whole length at the moment it finishes, and
		// the ones that finish in a drain are the longest: their tokens over the seconds between samples,
		// per request still running, read as a lone request several times faster than it is (peer failures,
		// whose engine speeds up 1.2x alone, measured 6-9x in its last second and put the finish 0.9 s early
		// of 1.4 s). Such a drain's rate says nothing of the speed-up, and the prior stands here: dp2-uneven
		// 4.70% -> 4.23%, the rest of the benchmark within 0.06 points. What its survivors have outlived can
		// only lower it (survivorsB, in tokenSeconds).
		return b, false
	}
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

// residuals returns n quantiles (ascending) of the tokens a request in a busy batch has left: the
// equilibrium residual of a length L that is lognormal with mean m and squared coefficient of variation cv2,
// capped at maxTokens (0 = unknown: at the given quantile of L). Its density is P(L > x) / E[L].
func residuals(m, cv2, maxTokens, quantile float64, n int) []float64 {
	mu, sigma := lognormalFor(m, cv2)
	return residualsOf(mu, sigma, maxTokens, quantile, n)
}

// lognormalFor is the mu and sigma of a lognormal with mean m and squared coefficient of variation cv2.
func lognormalFor(m, cv2 float64) (mu, sigma float64) {
	sigma = math.Sqrt(math.Log1p(cv2))
	return math.Log(m) - sigma*sigma/2, sigma
}

// cappedLognormal fits a lognormal length L to what a run shows of its finished requests: the mean of
// min(L, maxTokens) is m, and a share capped of them reached maxTokens. Generation lengths are often bimodal
// against max_tokens (most stop early, a fair share runs to the cap), and a lognormal with the mean alone
// puts almost nothing at the cap; that share is what sets the drain, because the last request to finish is
// one that ran to max_tokens. ok is false when the share is unknown, zero or not compatible with the mean.
func cappedLognormal(m, maxTokens, capped float64) (mu, sigma float64, ok bool) {
	if !(maxTokens > 0) || !(capped > 0.001) || capped >= 0.999 || !(m > 0) || m >= maxTokens {
		return 0, 0, false
	}
	z := math.Sqrt2 * math.Erfinv(1-2*capped) // P(L > maxTokens) = capped: ln maxTokens = mu + sigma·z
	meanCapped := func(sg float64) float64 {
		mu := math.Log(maxTokens) - sg*z
		return math.Exp(mu+sg*sg/2)*0.5*math.Erfc(-(z-sg)/math.Sqrt2) + maxTokens*capped
	}
	// The capped mean falls as sigma grows (the share at the cap held): bisect for m.
	lo, hi := 0.05, 4.0
	if meanCapped(lo) < m || meanCapped(hi) > m {
		return 0, 0, false
	}
	for range 60 {
		mid := (lo + hi) / 2
		if meanCapped(mid) > m {
			lo = mid
		} else {
			hi = mid
		}
	}
	sigma = (lo + hi) / 2
	return math.Log(maxTokens) - sigma*z, sigma, true
}

// cappedMean is the mean of min(L, maxTokens) for a lognormal L given by mu and sigma.
func cappedMean(mu, sigma, maxTokens float64) float64 {
	z := (math.Log(maxTokens) - mu) / sigma
	below := 0.5 * math.Erfc(-(z-sigma)/math.Sqrt2) // Φ(z - σ)
	above := 0.5 * math.Erfc(z/math.Sqrt2)          // 1 - Φ(z)
	return math.Exp(mu+sigma*sigma/2)*below + maxTokens*above
}

// residualsOf is residuals for a lognormal given by mu and sigma.
func residualsOf(mu, sigma, maxTokens, quantile float64, n int) []float64 {
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
