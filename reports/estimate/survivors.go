package estimate

import "math"

// The drain of a counter that moves on finish, conditioned on what its survivors have outlived. Such a counter
// stands still while the last requests decode, so between two finishes every input of the drain model is the
// same, and the estimate held its figure while the clock ran: the peer's stragglers said "ETA 5 s" from 36.5 s
// to 51.5 s, with 14 requests of up to 4,096 tokens decoding and the job finishing at 53.8 s. Two facts need
// no more data than the gauge and the clock:
//
//   - Once every item left is in flight (drainStart), no request starts, so each running now has been decoding
//     since at least then: it has decoded at least what the drain's rate curve gives over that time
//     (decodedSince), and the model's residuals are what is left beyond it.
//   - What a request decoded after the drain began is at most its whole length. An item that finished in the
//     drain with L tokens bounds the speed-up from above (its decode since then, at the curve, cannot exceed
//     L), and so do the requests still running: as many of the batch the drain began with must have residuals
//     beyond their decode as still run (survivorsB). The peer simulator's drain speeds up 1.2x where the prior
//     is 4x; these bounds are how a drain shows it when its tokens arrive only with each finish.
//
// A survivor that has outlived the residuals is priced at the mean residual life of the fitted lengths
// (outlived), not at nothing.

// drainStart is the first point of the drain the last point is in: from it on every item left was in flight
// and none waited, so the requests running at the last point started before it. -1 when the last point is not
// in such a drain, or the total is unknown.
func (s series) drainStart(last int) int {
	if s.total <= 0 {
		return -1
	}
	d := -1
	for i := last; i >= 0; i-- {
		p := s.pts[i]
		if !p.hasG || p.seg != s.pts[last].seg || p.queued || p.running <= 0 || s.total-p.done > p.running+0.5 {
			break
		}
		d = i
	}
	return d
}

// decodedSince is what a request running from point d on has decoded by T until, at the drain's per-request
// rate a/(1+b·B) for B requests running (each interval at its first point's gauge, the larger: the lower rate;
// after the last point, at its).
func (s series) decodedSince(d, last int, until, r, b float64) float64 {
	a := r / s.slots * (1 + b*s.slots)
	x := 0.0
	for i := d; i <= last && s.pts[i].t < until; i++ {
		end := until
		if i < last {
			end = math.Min(until, s.pts[i+1].t)
		}
		x += (end - s.pts[i].t) * a / (1 + b*s.pts[i].running)
	}
	return x
}

// survivorsB is the largest b at most hi that what the drain so far shows allows, for a counter that moves on
// finish in a drain that began at point d, its requests decoding until T until (0 when even no speed-up decodes
// more than it allows); res are the residual quantiles. Decode rises with b, so one bisection tests every bound
// at once, each test one pass over the drain's points.
func (s series) survivorsB(d, last int, until, r, hi float64, res []float64) float64 {
	n := len(res)
	// limit[k-d] bounds the decode from the drain's start up to point k: an item that finished in the interval
	// after point k decoded no more than its length since the drain began.
	limit := make([]float64, last-d+1)
	for k := range limit {
		limit[k] = math.Inf(1)
		if i := d + k + 1; i <= last {
			if l, ok := blockTokensPerItem(s.pts[i-1], s.pts[i]); ok {
				limit[k] = l.num / l.den
			}
		}
	}
	// The requests still running outlived what they decoded: of the batch the drain began with (the top kd of
	// the n quantiles, as tokenSeconds counts them) at least as many as a residual beyond it leaves, give or
	// take chance (the lower 90% bound of the share that survived, Wilson's).
	survived := math.Inf(1)
	if began := s.pts[d].running; began > 0 {
		kd := math.Ceil(began * float64(n) / s.slots)
		share := wilsonLow(math.Min(s.pts[last].running, began), began, 1.28)
		survived = res[max(0, min(n-1, n-int(math.Ceil(share*kd))))]
	}
	allows := func(b float64) bool {
		a := r / s.slots * (1 + b*s.slots)
		x := 0.0
		for k := d; k <= last; k++ {
			if x > limit[k-d] {
				return false
			}
			end := until
			if k < last {
				end = math.Min(until, s.pts[k+1].t)
			}
			x += math.Max(0, end-s.pts[k].t) * a / (1 + b*s.pts[k].running)
		}
		return x <= survived
	}
	if allows(hi) {
		return hi
	}
	if !allows(0) {
		return 0
	}
	lo := 0.0
	for range 40 {
		if mid := (lo + hi) / 2; allows(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// wilsonLow is the lower end of Wilson's score interval for k successes in n trials at z.
func wilsonLow(k, n, z float64) float64 {
	p := k / n
	c := p + z*z/(2*n)
	w := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
	return math.Max(0, (c-w)/(1+z*z/n))
}

// outlived is the tokens a request that has decoded x is expected to decode still: the mean residual life
// E[min(L, top) - x | L > x] of the lognormal length L given by mu and sigma, top the longest residual the
// drain prices (max_tokens, where it is known). The drain's residual quantiles describe a batch at the
// moment it began to drain; a survivor that has decoded past all of them (the quantiles priced it done, and
// it is still running) has this much left, not nothing.
//
// In closed form, ∫ₓᵗᵒᵖ P(L > u) du = top·P(L > top) − x·P(L > x) + E[L; x < L ≤ top], over P(L > x), the
// tails as upper tails (erfc) so that a survivor far out in one keeps its precision. A midpoint rule over
// [x, top] in 200 steps put it at half its value where max_tokens is far beyond the lengths (65 tokens for
// 140 with lengths of about 250 and max_tokens 131,072), and cost 200 erfc on each estimate of the drain.
func outlived(mu, sigma, top, x float64) float64 {
	if !(top > x) {
		return 0
	}
	if !(sigma > 0) {
		return math.Max(0, math.Min(top, math.Exp(mu))-x) // every length the same
	}
	x = math.Max(0, x)
	tail := func(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) } // P(Z > z)
	zx, zt := math.Inf(-1), (math.Log(top)-mu)/sigma
	if x > 0 {
		zx = (math.Log(x) - mu) / sigma
	}
	p := tail(zx)
	if !(p > 0) {
		return top - x
	}
	area := top*tail(zt) - x*p + math.Exp(mu+sigma*sigma/2)*(tail(zx-sigma)-tail(zt-sigma))
	return math.Max(0, math.Min(top-x, area/p))
}
