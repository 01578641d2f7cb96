package estimate

import (
	"math"
	"testing"
)

// onFinishDrain is a job of 1,000 items through 32 slots whose counter moves on finish: 8 items of 160 tokens
// finish a second until the queue empties at 968 done (t = 121 s), then 12 and 10 more, and from t = 123 s
// ten requests run without a finish until t = last.
func onFinishDrain(last float64) []Observation {
	var out []Observation
	add := func(t, done, running float64) {
		g, fin, capped := done*160, done, 0.15*done
		w := 0.0
		out = append(out, Observation{T: t, Done: int64(done), Total: 1000, GenTokens: &g, Running: &running,
			Waiting: &w, FinishedLenSum: &g, FinishedLenCount: &fin, LengthCapped: &capped, MaxTokens: 512})
	}
	for t := 0.0; t <= 121; t++ {
		add(t, math.Min(968, 8*t), 32)
	}
	add(122, 980, 20)
	add(123, 990, 10)
	for t := 124.0; t <= last; t++ {
		add(t, 990, 10)
	}
	return out
}

// TestDrainCountsDown: between two finishes a counter that moves on finish stands still, and the drain's
// estimate held its figure while the clock ran (the peer's stragglers said "5 s" for 15 s). The requests
// running have been decoding all along: the time left falls as the time goes by. Ten requests of at most 512
// tokens at 40 tokens a second (1,280 for 32) are done by 133.8 s at the latest; once they have outlived that,
// the answer is a moment, not nothing.
func TestDrainCountsDown(t *testing.T) {
	at := func(last float64) ETA {
		e, _ := Compute(onFinishDrain(last), Config{})
		if e.Seconds == nil || e.LowS == nil || e.HighS == nil {
			t.Fatalf("t=%v: no estimate: %+v", last, e)
		}
		return e
	}
	a, b := at(128), at(132)
	if !(*b.Seconds < *a.Seconds-1.5) {
		t.Errorf("4 s later with the same ten requests running: %.2f s left, at first %.2f s; want it at least 1.5 s less",
			*b.Seconds, *a.Seconds)
	}
	if f := 132 + *b.HighS; f > 133.8+1 {
		t.Errorf("at 132 s the range ends at %.1f s; want by 133.8 s, when 512 tokens at 40 a second are done", f)
	}
	late := at(135)
	if !(*late.Seconds > 0) || *late.LowS > *late.Seconds || *late.HighS < *late.Seconds {
		t.Errorf("at 140 s, ten requests still running: %.2f s (%.2f-%.2f); want a positive time inside its range",
			*late.Seconds, *late.LowS, *late.HighS)
	}
}

// TestDrainRestartHolds: the server restarts in the drain (down from 127 s to 129 s, its counters from zero
// after) and the client sends the ten requests again. They decode from nothing: the time they ran before the
// restart, the downtime and the seconds since are not decoding the drain began with, and the estimate does not
// count down through them (it went from 2.4 s at the restart to 1.2 s, and held there, while the requests sent
// again had up to 512 tokens each ahead of them).
func TestDrainRestartHolds(t *testing.T) {
	hist := func(last float64) []Observation {
		h := onFinishDrain(math.Min(last, 126))
		for tm := 127.0; tm <= math.Min(last, 129); tm++ {
			h = append(h, Observation{T: tm, Done: 990, Total: 1000, MaxTokens: 512}) // no answer
		}
		for tm := 130.0; tm <= last; tm++ {
			g, fin, capped, running, w := 0.0, 0.0, 0.0, 10.0, 0.0
			h = append(h, Observation{T: tm, Done: 990, Total: 1000, GenTokens: &g, Running: &running, Waiting: &w,
				FinishedLenSum: &g, FinishedLenCount: &fin, LengthCapped: &capped, MaxTokens: 512})
		}
		return h
	}
	at := func(last float64) float64 {
		e, _ := Compute(Fold(hist(last)), Config{})
		if e.Seconds == nil {
			t.Fatalf("t=%v: no estimate: %+v", last, e)
		}
		return *e.Seconds
	}
	before := at(126)
	for _, tm := range []float64{131, 135, 140} {
		if got := at(tm); got < before {
			t.Errorf("t=%v, the requests sent again at 130 s: %.2f s left; at the restart %.2f s; want no less", tm, got, before)
		}
	}
}

// TestDrainStragglersCountDown replays the peer's stragglers (the last 40 of 2,500 items at max_tokens 4,096):
// between 41.5 s and 46 s fourteen requests run and none finishes. The estimate falls with the clock, and
// stays clear of nothing.
func TestDrainStragglersCountDown(t *testing.T) {
	hist := readTrace(t, "../testdata/peer/stragglers.jsonl")
	at := func(tm float64) ETA {
		for i, o := range hist {
			if o.T >= tm {
				e, _ := Compute(hist[:i+1], Config{})
				return e
			}
		}
		t.Fatalf("no line at t=%v", tm)
		return ETA{}
	}
	a, b := at(41.5), at(46)
	if a.Seconds == nil || b.Seconds == nil {
		t.Fatalf("no estimate: %+v / %+v", a, b)
	}
	if !(*b.Seconds < *a.Seconds-2) || !(*b.Seconds > 1) {
		t.Errorf("stragglers at 41.5 s: %.1f s left; at 46 s (no finish between): %.1f s; want at least 2 s less, and more than 1 s (the job ran to 53.8 s)",
			*a.Seconds, *b.Seconds)
	}
}

// TestSurvivorsBoundTheSpeedup: an item that finished in the drain decoded no more than its length after the
// drain began, so a short one finishing late says the requests decode slower than the speed-up prior would.
func TestSurvivorsBoundTheSpeedup(t *testing.T) {
	hist := onFinishDrain(126)
	s := build(hist, Config{Window: 30})
	last := len(s.pts) - 1
	d := s.drainStart(last)
	if d < 0 || s.pts[d].t != 121 {
		t.Fatalf("drainStart = %d (t=%v); want the point at t=121, where every item left was in flight", d, s.pts[max(d, 0)].t)
	}
	r, prior := 1280.0, curveB(32, defaultSpeedup)
	res := residualsOf(math.Log(100), 1.2, 512, 0.995, 32)
	// The items that finished at 122 s and 123 s averaged 160 tokens: at 40 tokens a second alone (1,280 for
	// 32), two seconds of the drain decode 80 or more, within it at no speed-up; at the prior's rate for 10-20
	// running, more.
	bounded := s.survivorsB(d, last, s.now, r, prior, res)
	if !(bounded < prior) || bounded < 0 {
		t.Errorf("survivorsB = %.4f; want below the prior's %.4f", bounded, prior)
	}
	x, slowest := s.decodedSince(d, last, s.now, r, bounded), s.decodedSince(d, last, s.now, r, 0)
	if !(x >= slowest) || !(slowest >= 40*5) {
		t.Errorf("decoded since the drain began: %.0f at b, %.0f at no speed-up; want the first at least the second, and that at least 200 (5 s at 40 tok/s)", x, slowest)
	}
	if s.drainStart(100) != -1 {
		t.Errorf("drainStart at t=100 (items waiting to start) = %d; want -1", s.drainStart(100))
	}
}

// outlived is the mean residual life of a capped lognormal, checked against a direct integral.
func TestOutlived(t *testing.T) {
	for _, c := range []struct{ mu, sigma, top, x float64 }{{5, 1, 4096, 300}, {5, 1, 4096, 3000}, {4, 1.5, 512, 100}, {6, 0.5, 10000, 50},
		// max_tokens far beyond the lengths: a midpoint rule over [x, top] put the first at half its value.
		{5.5, 0.5, 131072, 500}, {4, 2, 131072, 100}, {5, 1, 4096, 0}} {
		// E[min(L, top) - x | L > x] by integrating the density on a fine log grid.
		var num, den float64
		const n = 200000
		lo, hi := math.Max(math.Log(c.x), c.mu-10*c.sigma), c.mu+10*c.sigma
		h := (hi - lo) / n
		for i := 0; i < n; i++ {
			z := lo + (float64(i)+0.5)*h
			pdf := math.Exp(-(z-c.mu)*(z-c.mu)/(2*c.sigma*c.sigma)) / (c.sigma * math.Sqrt(2*math.Pi))
			num += (math.Min(math.Exp(z), c.top) - c.x) * pdf * h
			den += pdf * h
		}
		if got, want := outlived(c.mu, c.sigma, c.top, c.x), num/den; math.Abs(got/want-1) > 0.01 {
			t.Errorf("outlived(%+v) = %.1f; the integral says %.1f", c, got, want)
		}
	}
	if got := outlived(5, 1, 512, 600); got != 0 {
		t.Errorf("outlived past the cap = %v; want 0", got)
	}
}

func TestWilsonLow(t *testing.T) {
	for _, c := range []struct{ k, n, z, want float64 }{{10, 13, 1.28, 0.5950}, {13, 13, 1.28, 0.8881}, {0, 13, 1.28, 0}} {
		if got := wilsonLow(c.k, c.n, c.z); math.Abs(got-c.want) > 5e-4 {
			t.Errorf("wilsonLow(%v, %v, %v) = %.4f; want %.4f", c.k, c.n, c.z, got, c.want)
		}
	}
}

// TestOnFinishDecodingIsNotAStall: ten requests of up to 512 tokens decoding at 0.4 tokens a second each (the
// drain above, 100x slower) take up to 1,280 s, and an on-finish counter shows nothing until one finishes.
// 1,000 s without a finish is not a stall; 1,700 s is, and so is a counter per iteration that stands still.
func TestOnFinishDecodingIsNotAStall(t *testing.T) {
	slow := func(flat float64) []Observation {
		var out []Observation
		for _, o := range onFinishDrain(123) {
			o.T *= 100
			out = append(out, o)
		}
		last := out[len(out)-1]
		for dt := 30.0; dt <= flat; dt += 30 {
			o := last
			o.T += dt
			out = append(out, o)
		}
		return out
	}
	if e, _ := Compute(slow(1000), Config{}); e.State != StateRunning {
		t.Errorf("1,000 s into ten requests of up to 1,280 s, no finish: %s (%s); want running", e.State, e.Reason)
	}
	if e, _ := Compute(slow(1700), Config{}); e.State != StateStalled {
		t.Errorf("1,700 s without a finish, every request long done: %s; want stalled", e.State)
	}
	perIter := slow(1000)
	for i := range perIter {
		// The counter holds what the requests in flight have decoded too: it counts per iteration.
		g := *perIter[i].GenTokens + 100**perIter[i].Running
		perIter[i].GenTokens = &g
	}
	if e, _ := Compute(perIter, Config{}); e.State != StateStalled {
		t.Errorf("a counter that is not on finish, flat for 1,000 s with requests running: %s; want stalled", e.State)
	}
}

// TestStallWithoutFinishedLengthsIsAStall: engines that give no finished lengths, whose counter moved with every
// sample, then stood still with requests running for 700 s: a stall (the flat stretch reads like a counter
// that waits for finishes, but what the counter meant is judged before it).
func TestStallWithoutFinishedLengthsIsAStall(t *testing.T) {
	var hist []Observation
	for i := 0; i <= 120; i++ {
		t, done := float64(30*i), float64(40*i)
		g, run := done*160+32*80, 32.0
		hist = append(hist, Observation{T: t, Done: int64(done), Total: 25000, GenTokens: &g, Running: &run, MaxTokens: 4096})
	}
	last := hist[len(hist)-1]
	for dt := 30.0; dt <= 700; dt += 30 {
		o := last
		o.T += dt
		hist = append(hist, o)
	}
	if e, _ := Compute(hist, Config{}); e.State != StateStalled {
		t.Errorf("700 s with nothing moving, requests running, no finished lengths: %s (%s); want stalled", e.State, e.Reason)
	}
}
