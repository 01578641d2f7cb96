package estimate

import (
	"math"
	"testing"
)

// The capped lognormal reproduces what it was fitted to: the mean of min(L, max_tokens) and the share at the cap,
// checked by integrating the fitted distribution numerically, not with the fit's own formula.
func TestCappedLognormal(t *testing.T) {
	for _, c := range []struct{ m, max, share float64 }{
		{158, 512, 0.15},   // the peer simulator's steady job: bimodal, 15% capped
		{975, 3400, 0.154}, // its seed-moment job
		{1000, 4096, 0.02}, // a long-tailed job that rarely hits the cap
	} {
		mu, sigma, ok := cappedLognormal(c.m, c.max, c.share)
		if !ok {
			t.Fatalf("%+v: no fit", c)
		}
		// Integrate E[min(L, max)] and P(L > max) on a log grid.
		var mean, below float64
		const n = 20000
		lo, hi := mu-8*sigma, math.Log(c.max)
		h := (hi - lo) / n
		for i := 0; i < n; i++ {
			x := lo + (float64(i)+0.5)*h
			pdf := math.Exp(-(x-mu)*(x-mu)/(2*sigma*sigma)) / (sigma * math.Sqrt(2*math.Pi))
			mean += math.Exp(x) * pdf * h
			below += pdf * h
		}
		share := 1 - below
		mean += c.max * share
		if math.Abs(mean/c.m-1) > 0.01 || math.Abs(share-c.share) > 0.002 {
			t.Errorf("%+v: fitted mean %.1f, share at the cap %.4f; want %.1f and %.4f", c, mean, share, c.m, c.share)
		}
	}
	for _, c := range []struct{ m, max, share float64 }{
		{158, 0, 0.15},   // max_tokens unknown
		{158, 512, 0},    // nothing capped: the share says nothing of the spread
		{600, 512, 0.15}, // a mean above the cap is not a capped mean
		{500, 512, 0.01}, // a mean near the cap with almost nothing at it: no lognormal does that
	} {
		if _, _, ok := cappedLognormal(c.m, c.max, c.share); ok {
			t.Errorf("%+v: fitted; want no fit", c)
		}
	}
}

// The share at the cap lengthens the drain of a run whose counter moves on finish: the last request to finish
// is one that ran to max_tokens.
func TestDrainUsesCappedShare(t *testing.T) {
	hist := func(capped float64) []Observation {
		var out []Observation
		for i := 0; i <= 60; i++ {
			done := float64(40 * i)
			g, run, fin := done*158, 32.0, done
			o := Observation{T: float64(i), Done: int64(done), Total: 3000, GenTokens: &g, Running: &run,
				FinishedLenSum: &g, FinishedLenCount: &fin, MaxTokens: 512}
			c := capped * done
			o.LengthCapped = &c
			out = append(out, o)
		}
		return out
	}
	without, _ := Compute(hist(0), Config{})
	with, _ := Compute(hist(0.15), Config{})
	if without.Seconds == nil || with.Seconds == nil {
		t.Fatalf("no estimate: %+v / %+v", without, with)
	}
	if !(*with.Seconds > 1.01**without.Seconds) {
		t.Errorf("15%% capped at 512 tokens: %.1f s left; without a capped share %.1f s; want the drain longer", *with.Seconds, *without.Seconds)
	}
}

// A job that raises max_tokens for its last items (a second pass over the truncated ones): the capped share was
// measured at the old cap, so the lengths are fitted there, and the items to come and those in flight run to
// the new cap: more time left than at the old cap.
func TestDrainAfterTheCapRises(t *testing.T) {
	hist := func(raised bool) []Observation {
		var out []Observation
		for i := 0; i <= 60; i++ {
			done := float64(40 * i)
			g, run, fin, c := done*158, 32.0, done, 0.15*done
			o := Observation{T: float64(i), Done: int64(done), Total: 2500, GenTokens: &g, Running: &run,
				FinishedLenSum: &g, FinishedLenCount: &fin, LengthCapped: &c, MaxTokens: 512}
			if raised && i >= 58 {
				o.MaxTokens = 4096
			}
			out = append(out, o)
		}
		return out
	}
	if s := build(hist(true), Config{Window: 10}); s.capAt != 512 || s.maxTokens != 4096 {
		t.Errorf("build: capAt %v, maxTokens %v; want 512 (most items finished under it) and 4096", s.capAt, s.maxTokens)
	}
	same, _ := Compute(hist(false), Config{})
	raised, _ := Compute(hist(true), Config{})
	if same.Seconds == nil || raised.Seconds == nil {
		t.Fatalf("no estimate: %+v / %+v", same, raised)
	}
	if !(*raised.Seconds > 1.2**same.Seconds) {
		t.Errorf("max_tokens 512 -> 4096 for the last items: %.1f s left; at 512 throughout %.1f s; want more time left",
			*raised.Seconds, *same.Seconds)
	}
}

// cappedMean agrees with a numerical integral of min(L, max) for a lognormal L.
func TestCappedMean(t *testing.T) {
	for _, c := range []struct{ mu, sigma, max float64 }{{4.2, 1.3, 256}, {4.2, 1.3, 4096}, {6.5, 0.6, 3400}} {
		var mean, below float64
		const n = 20000
		lo, hi := c.mu-8*c.sigma, math.Log(c.max)
		h := (hi - lo) / n
		for i := 0; i < n; i++ {
			x := lo + (float64(i)+0.5)*h
			pdf := math.Exp(-(x-c.mu)*(x-c.mu)/(2*c.sigma*c.sigma)) / (c.sigma * math.Sqrt(2*math.Pi))
			mean += math.Exp(x) * pdf * h
			below += pdf * h
		}
		mean += c.max * (1 - below)
		if got := cappedMean(c.mu, c.sigma, c.max); math.Abs(got/mean-1) > 0.005 {
			t.Errorf("cappedMean(%v, %v, %v) = %.2f; the integral says %.2f", c.mu, c.sigma, c.max, got, mean)
		}
	}
}
