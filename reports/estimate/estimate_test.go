package estimate

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// estHist is a synthetic steady run sampled every dt seconds up to T end: items at itemsPerS out of total.
// With tokens it is a busy batch of 200 requests decoding tokensPerS, the engines' counters and the log's mean
// length consistent with m = tokensPerS / itemsPerS tokens per item and the batch half-way through on average.
func estHist(end, dt, itemsPerS float64, total int64, tokens bool) []Observation {
	const tokensPerS, slots = 1400.0, 200.0
	m := tokensPerS / itemsPerS
	var hist []Observation
	for t := 0.0; t <= end; t += dt {
		done := int64(itemsPerS * t)
		o := Observation{T: t, Done: done, Total: total, Elapsed: obsF(t)}
		if done > 0 {
			o.AvgCompletion = obsF(m)
		}
		if tokens {
			age := math.Min(tokensPerS*t, slots*m/2)
			o.GenTokens = obsF(m*float64(done) + age)
			o.Running, o.Waiting = obsF(slots), obsF(50)
			o.FinishedLenSum, o.FinishedLenCount = obsF(m*float64(done)), obsF(float64(done))
			o.MaxTokens = int64(4 * m)
		}
		hist = append(hist, o)
	}
	return hist
}

func TestEstimateStates(t *testing.T) {
	flat := estHist(3600, 30, 1, 25000, true)
	last := flat[len(flat)-1]
	for t := last.T + 30; t <= last.T+720; t += 30 {
		o := last
		o.T = t
		flat = append(flat, o)
	}
	noTotal := estHist(1800, 30, 1, 0, false)
	done := estHist(1800, 30, 1, 1800, false)
	tests := []struct {
		name   string
		hist   []Observation
		state  string
		reason string // a piece of the reason
	}{
		{"empty", nil, StateUnknown, "no observations"},
		{"done", done, StateDone, "all 1,800 items finished"},
		{"stalled", flat, StateStalled, "no progress for 12 min"},
		{"total unknown", noTotal, StateUnknown, "total number of items is unknown"},
		{"nothing finished", estHist(25, 5, 0.01, 1000, false), StateUnknown, "no item has finished yet"},
		{"log only", estHist(3600, 30, 1, 25000, false), StateRunning, "21,400 items left at 1.00 items/s"},
		{"tokens", estHist(3600, 30, 1, 25000, true), StateRunning, "21,400 items left × 1,400 tokens each at 1,400 tok/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := Compute(tt.hist, Config{})
			if e.State != tt.state || !strings.Contains(e.Reason, tt.reason) {
				t.Fatalf("Compute(%s) = %s %q; want %s, reason containing %q", tt.name, e.State, e.Reason, tt.state,
					tt.reason)
			}
			switch e.State {
			case StateRunning:
				if e.Seconds == nil || e.LowS == nil || e.HighS == nil || !(*e.LowS <= *e.Seconds && *e.Seconds <= *e.HighS) {
					t.Errorf("Compute(%s) range %v <= %v <= %v; want an ordered range", tt.name, e.LowS, e.Seconds, e.HighS)
				}
			case StateStalled:
				if e.Seconds != nil || e.StalledSince == nil || *e.StalledSince != 3600 {
					t.Errorf("Compute(%s) = seconds %v, stalled since %v; want nil, 3600", tt.name, e.Seconds, e.StalledSince)
				}
			case StateDone:
				if e.Seconds == nil || *e.Seconds != 0 || e.ItemsLeft != 0 {
					t.Errorf("Compute(%s) = seconds %v, items left %v; want 0, 0", tt.name, e.Seconds, e.ItemsLeft)
				}
			}
		})
	}
}

func TestEstimateSteadyFigures(t *testing.T) {
	// 1 item/s of 1,400 tokens at 1,400 tok/s: 21,400 items left take 21,400 s, plus the drain.
	for _, tokens := range []bool{false, true} {
		e, tp := Compute(estHist(3600, 30, 1, 25000, tokens), Config{Window: 900})
		if e.Seconds == nil || *e.Seconds < 21400*0.99 || *e.Seconds > 21400+900 {
			t.Errorf("Compute(steady, tokens %v) = %v s; want 21,400 s and a drain of at most 15 min", tokens, e.Seconds)
		}
		if math.Abs(tp.ItemsPerS-1) > 0.01 || math.Abs(tp.RunItemsPerS-1) > 0.01 || tp.WindowS != 900 {
			t.Errorf("Compute(steady) throughput = %+v; want 1 item/s over 900 s", tp)
		}
		if tokens && (math.Abs(tp.TokensPerS-1400) > 1 || math.Abs(e.TokensPerItem-1400) > 14) {
			t.Errorf("Compute(steady) = %v tok/s, %v tokens/item; want 1,400 and 1,400", tp.TokensPerS, e.TokensPerItem)
		}
	}
}

func TestEstimateRough(t *testing.T) {
	one := []Observation{{T: 1e9, Done: 300, Total: 25000, Elapsed: obsF(408), GenTokens: obsF(565000)}}
	e, _ := Compute(one, Config{})
	want := 24700 / (300.0 / 408)
	if !e.Rough || e.State != StateRunning || e.Seconds == nil || math.Abs(*e.Seconds-want) > 1 ||
		*e.LowS != want/2 || math.Abs(*e.HighS-want*2) > 1e-6*want {
		t.Fatalf("Compute(one sample) = %+v; want rough %v s in [%v, %v]", e, want, want/2, want*2)
	}
	if e.FinishAt == nil || e.FinishAt.Unix() != int64(1e9+want) {
		t.Errorf("Compute(one sample) finish at %v; want unix %v", e.FinishAt, int64(1e9+want))
	}
	one[0].Elapsed = nil
	if e, _ := Compute(one, Config{}); e.State != StateUnknown || e.Seconds != nil || !e.Rough {
		t.Errorf("Compute(one sample without elapsed) = %+v; want rough and unknown", e)
	}
	// The demo's first sample: 8 of a 200-request batch done after 15 s. Those are the shortest;
	// 8 items in 15 s would say 13 h for a 5 h job, so it says too early instead.
	young := []Observation{{T: 1e9, Done: 8, Total: 25000, Elapsed: obsF(15), Running: obsF(200), GenTokens: obsF(21000)}}
	if e, _ := Compute(young, Config{}); e.State != StateUnknown || e.Seconds != nil || !strings.HasPrefix(e.Reason, "too early: 8 items finished while 200 are in flight") {
		t.Errorf("Compute(first batch not turned over) = %s %q; want unknown, too early", e.State, e.Reason)
	}
}

// TestEstimateLogLagsTheEngines is the demo's history: the engines' finished-length histogram is read
// fresh at each sample while the log's progress line can be up to one write behind (here, every other
// sample a line written 29 s earlier). Tokens per item must come from the histogram's own sum and count,
// not from its sum over the log's count, whose lag made block lengths wobble by ±10% and the estimate
// flip between two levels from one sample to the next.
func TestEstimateLogLagsTheEngines(t *testing.T) {
	t.Parallel()
	const rate, tokens = 1.4, 1000.0 // items/s, tokens per item
	var hist []Observation
	for i := 0; i <= 480; i++ { // 4 h of 30 s samples
		ts := float64(30 * i)
		n := math.Floor(rate * ts)
		logged := n
		if i%2 == 1 {
			logged = math.Floor(rate * (ts - 29))
		}
		hist = append(hist, Observation{T: 1e9 + ts, Done: int64(logged), Total: 40000, Elapsed: obsF(ts + 60),
			GenTokens: obsF(n*tokens + 200*tokens/2), Running: obsF(200), FinishedLenSum: obsF(n * tokens), FinishedLenCount: obsF(n)})
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 120; i < len(hist); i++ { // from the first hour on
		e, _ := Compute(hist[:i+1], Config{})
		lo, hi = math.Min(lo, e.TokensPerItem), math.Max(hi, e.TokensPerItem)
	}
	if lo < 0.98*tokens || hi > 1.02*tokens {
		t.Errorf("tokens per item ranged %.0f to %.0f over hours 1-4; want within 2%% of %.0f", lo, hi, tokens)
	}
}

func TestEstimateShortHistory(t *testing.T) {
	// Two samples a minute apart with the same count (the log has not printed a new line yet): no
	// rate can be measured, but items have finished, so the latest sample gives a rough figure
	// rather than "no item has finished".
	two := []Observation{
		{T: 1e9, Done: 150, Total: 25000, Elapsed: obsF(120)},
		{T: 1e9 + 60, Done: 150, Total: 25000, Elapsed: obsF(180)},
	}
	e, _ := Compute(two, Config{})
	want := 24850 / (150.0 / 180)
	if !e.Rough || e.State != StateRunning || e.Seconds == nil || math.Abs(*e.Seconds-want) > 1 {
		t.Fatalf("Compute(two samples a minute apart) = %+v; want rough %v s", e, want)
	}
	if !strings.HasPrefix(e.Reason, "From one sample (60 s of history, too short for a rate between samples): 150 items in 3 min") {
		t.Errorf("reason = %q; want it to say the history is too short", e.Reason)
	}
	for i := range two {
		two[i].Elapsed = nil
	}
	e, _ = Compute(two, Config{})
	if e.State != StateUnknown || !strings.HasPrefix(e.Reason, "too early to measure a rate (60 s of history)") {
		t.Errorf("Compute(two samples without elapsed) = %s %q; want unknown, too early", e.State, e.Reason)
	}
}

// estRestarted is a steady run whose server restarts at t=3600: a minute of downtime, then counters from zero
// (stitched, when the sampler carries them, with a restart count).
func estRestarted(stitched bool) []Observation {
	hist := estHist(7200, 30, 1, 25000, true)
	var offset float64
	for i := range hist {
		o := &hist[i]
		switch {
		case o.T > 3600 && o.T <= 3660:
			o.GenTokens, o.Running, o.Waiting, o.FinishedLenSum, o.FinishedLenCount = nil, nil, nil, nil, nil
		case o.T > 3660 && !stitched:
			g0, f0, n0 := *hist[120].GenTokens, *hist[120].FinishedLenSum, *hist[120].FinishedLenCount
			*o.GenTokens -= g0
			*o.FinishedLenSum -= f0
			*o.FinishedLenCount -= n0
		case o.T > 3660:
			o.Restarts = 1
			*o.GenTokens += offset
		}
	}
	return hist
}

func TestEstimateResetSegment(t *testing.T) {
	t.Parallel()
	for _, stitched := range []bool{false, true} {
		hist := Fold(estRestarted(stitched)) // a trace whose counters drop at the restart is folded as it is read
		for i := 121; i < len(hist); i++ {
			e, tp := Compute(hist[:i+1], Config{})
			o := hist[i]
			want := float64(25000 - o.Done)
			if tp.TokensPerS < 0 || tp.TokensPerS > 2*1400 || tp.RunTokensPerS < 0 || tp.RunTokensPerS > 2*1400 {
				t.Fatalf("t=%v (stitched %v): throughput %+v; want between 0 and 2,800 tok/s", o.T, stitched, tp)
			}
			if e.State != StateRunning || e.Seconds == nil || *e.Seconds < 0.9*want || *e.Seconds > 1.1*want+900 {
				t.Fatalf("t=%v (stitched %v): Estimate = %s %v s; want about %v s", o.T, stitched, e.State, e.Seconds, want)
			}
			if o.T > 3660 && (e.ResetAt == nil || *e.ResetAt != 3690) {
				t.Fatalf("t=%v (stitched %v): reset at %v; want 3690", o.T, stitched, e.ResetAt)
			}
		}
	}
}

// TestEstimateTrailingFlat: a job that moved every 30 s stands still. For a few of its gaps the finish slides
// (a pause or the start of a stall, neither yet); past stallGaps of them it is stalled, whatever the unit of
// time (a fixed 600 s called a job that moves every second "running" through two and a half minutes frozen).
func TestEstimateTrailingFlat(t *testing.T) {
	for _, unit := range []float64{1, 30, 3000} {
		hist := estHist(120*unit, unit, 1/unit, 25000, false)
		before, _ := Compute(hist, Config{})
		flat := func(n int) ETA {
			h := append([]Observation(nil), hist...)
			last := h[len(h)-1]
			for k := 1; k <= n; k++ {
				o := last
				o.T += float64(k) * unit
				h = append(h, o)
			}
			e, _ := Compute(h, Config{})
			return e
		}
		if e := flat(3); e.State != StateRunning || *e.Seconds != *before.Seconds {
			t.Errorf("every %v s, then 3 flat samples: %s %v s; want running, still %v s (the finish slides)", unit,
				e.State, e.Seconds, *before.Seconds)
		}
		if e := flat(stallGaps + 1); e.State != StateStalled {
			t.Errorf("every %v s, then %d flat samples: %s; want stalled", unit, stallGaps+1, e.State)
		}
	}
}

// TestEstimateLogRate checks the item rate of a log-only run whose last ten minutes went at another pace: a
// change of 10% over some 860 items is within their counting noise and the pooled rate stands; a drop of 30%
// is a change and the rate after it counts.
func TestEstimateLogRate(t *testing.T) {
	const rate, split, end = 1.43, 2700.0, 3300.0
	tests := []struct {
		name   string
		factor float64 // of the rate after split
		want   float64 // items/s
	}{
		{"10% faster", 1.1, (rate*split + 1.1*rate*(end-split)) / end},
		{"30% slower", 0.7, 0.7 * rate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hist []Observation
			for now := 0.0; now <= end; now += 30 {
				done := rate * math.Min(now, split)
				if now > split {
					done += tt.factor * rate * (now - split)
				}
				hist = append(hist, Observation{T: now, Done: int64(done), Total: 25000, AvgCompletion: obsF(1000)})
			}
			e, _ := Compute(hist, Config{Window: 900})
			if math.Abs(e.ItemsPerS/tt.want-1) > 0.01 {
				t.Errorf("Compute(log only, the last 10 min %s) = %.3f items/s (%s); want %.3f", tt.name, e.ItemsPerS,
					e.Reason, tt.want)
			}
		})
	}
}

func TestEstimateLogPause(t *testing.T) {
	// A log-only run whose completions stop for two minutes (a restart nobody logged) and resume.
	hist := estHist(7200, 30, 1, 25000, false)
	for i := range hist {
		switch o := &hist[i]; {
		case o.T > 3600 && o.T <= 3720:
			o.Done = 3600
		case o.T > 3720:
			o.Done -= 120
		}
	}
	e, _ := Compute(hist, Config{})
	want := float64(25000 - hist[len(hist)-1].Done)
	if e.Seconds == nil || math.Abs(*e.Seconds-want) > 0.01*want || e.ResetAt == nil || *e.ResetAt != 3720 {
		t.Errorf("Compute(log pause) = %+v; want %v s at 1 item/s (the pause is not work), reset at 3720", e, want)
	}
}

func TestEstLevel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noisy := func(level float64) measure { return measure{level * (1 + 0.03*rng.NormFloat64()) * 300, 300} }
	var flat, step, ramp []measure
	for i := 0; i < 40; i++ {
		flat = append(flat, noisy(1000))
		level := 1000.0
		if i >= 30 {
			level = 700
		}
		step = append(step, noisy(level))
		ramp = append(ramp, noisy(1000+math.Max(0, float64(i-20))*20))
	}
	tests := []struct {
		name      string
		blocks    []measure
		want      float64
		tolerance float64
		from      int
	}{
		{"flat", flat, 1000, 10, 0},
		{"step", step, 700, 15, 30},
		{"ramp", ramp, 1380, 60, -1},
	}
	for _, tt := range tests {
		f := fitLevel(tt.blocks, changeZ, true, 0, 1)
		if math.Abs(f.Level-tt.want) > tt.tolerance || tt.from >= 0 && f.From != tt.from || tt.from < 0 && f.From == 0 {
			t.Errorf("fitLevel(%s) = level %.0f from block %d; want %.0f ± %.0f from %d", tt.name, f.Level, f.From,
				tt.want, tt.tolerance, tt.from)
		}
	}
}

// TestEstLevelFewBlocks checks that a rate measured over fewer than estAutocorrBlocks blocks keeps its pooled
// level (its wobble cannot be told from a change yet), while tokens per item, whose noise does not linger from
// block to block, and a rate with enough blocks still show a change.
func TestEstLevelFewBlocks(t *testing.T) {
	items := func(counts ...float64) []measure {
		var bs []measure
		for _, c := range counts {
			bs = append(bs, measure{c, 300})
		}
		return bs
	}
	lengths := func(means ...float64) []measure {
		var bs []measure
		for _, m := range means {
			bs = append(bs, measure{m * 400, 400})
		}
		return bs
	}
	tests := []struct {
		name     string
		blocks   []measure
		autocorr bool
		want     float64 // level
		from     int
	}{
		{"rate, 5 blocks, the last 12% up", items(430, 433, 427, 431, 482), true, 2203.0 / 1500, 0},
		{"rate, 7 blocks, the last two 9% up", items(430, 436, 428, 432, 429, 470, 476), true, 3101.0 / 2100, 0},
		{"rate, 9 blocks, the last two 30% down", items(430, 436, 428, 432, 429, 431, 433, 301, 299), true, 1, 7},
		{"tokens per item, 5 blocks, the last two 50% up", lengths(1000, 1005, 995, 1500, 1510), false, 1505, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z, minRecent := rateChangeZ, 1
			if !tt.autocorr {
				z, minRecent = changeZ, 2
			}
			f := fitLevel(tt.blocks, z, tt.autocorr, 0, minRecent)
			if math.Abs(f.Level/tt.want-1) > 0.01 || f.From != tt.from {
				t.Errorf("fitLevel(%s) = level %.4g from block %d; want %.4g from %d", tt.name, f.Level, f.From,
					tt.want, tt.from)
			}
		})
	}
}

func TestEstResiduals(t *testing.T) {
	// The equilibrium residual of a length L has mean E[L²]/2E[L] = m(1+CV²)/2 when nothing caps it.
	for _, cv2 := range []float64{0.3, 1, 2} {
		res := residuals(1000, cv2, 1e9, 0.995, 256)
		mean := 0.0
		for _, r := range res {
			mean += r / float64(len(res))
		}
		if want := 1000 * (1 + cv2) / 2; math.Abs(mean-want) > 0.03*want {
			t.Errorf("residuals(m=1000, cv2=%v) mean %.0f; want %.0f", cv2, mean, want)
		}
	}
	res := residuals(1000, 1, 2000, 0.995, 64)
	if top := res[len(res)-1]; top > 2000 || top < 1800 {
		t.Errorf("residuals(max_tokens 2000) top quantile %.0f; want just under 2000", top)
	}
}

// TestEstimateMessyHistories feeds histories with everything a live sampler can produce (missing fields,
// counter resets, restarts, flat stretches, bursts, a total that appears late) and checks that the figures stay
// sane: never NaN, negative or out of order. It estimates at every point of 80 random runs (4 s); under the race
// detector, where each estimate costs ten times the CPU and one goroutine has no race to find, at every point
// of the first 10 (28 s -> 6 s), and .ci/run runs all 80 without it.
func TestEstimateMessyHistories(t *testing.T) {
	t.Parallel()
	runs := 80
	if raceDetector {
		runs = 10
	}
	rng := rand.New(rand.NewPCG(11, 12))
	maybe := func(p float64, v float64) *float64 {
		if rng.Float64() < p {
			return nil
		}
		return &v
	}
	for run := 0; run < runs; run++ {
		var hist []Observation
		var done int64
		var g, fin float64
		var restarts int64
		total := int64(rng.IntN(50000))
		for now := 0.0; now < 20000 && len(hist) < 200; now += 1 + 120*rng.Float64() {
			switch r := rng.Float64(); {
			case r < 0.02:
				g, fin = 0, 0 // the server restarted
				if rng.Float64() < 0.5 {
					restarts++
				}
			case r < 0.2: // flat
			default:
				n := int64(rng.ExpFloat64() * 50)
				done += n
				g += float64(n)*1000*rng.Float64() + 1000*rng.Float64()
				fin += float64(n) * 900 * rng.Float64()
			}
			o := Observation{T: now, Done: done, Total: total, GenTokens: maybe(0.3, g),
				Running: maybe(0.4, float64(rng.IntN(300))), FinishedLenSum: maybe(0.6, fin),
				AvgCompletion: maybe(0.5, 1000*rng.Float64()), Restarts: restarts, Elapsed: maybe(0.5, now)}
			if rng.Float64() < 0.3 {
				o.MaxTokens = 4096
			}
			if total > 0 && o.Done > total {
				o.Done = total
			}
			hist = append(hist, o)
			e, tp := Compute(Fold(hist), Config{})
			for _, v := range []float64{tp.TokensPerS, tp.ItemsPerS, tp.RunTokensPerS, tp.RunItemsPerS, e.ItemsLeft} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("run %d, %d points: throughput %+v, items left %v; want finite, non-negative", run,
						len(hist), tp, e.ItemsLeft)
				}
			}
			if e.Seconds == nil {
				continue
			}
			s, lo, hi := *e.Seconds, *e.LowS, *e.HighS
			if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 || !(lo <= s && s <= hi) || math.IsNaN(hi) || math.IsInf(hi, 0) {
				t.Fatalf("run %d, %d points: Estimate = %v s in [%v, %v] (%s); want a finite ordered range", run,
					len(hist), s, lo, hi, e.Reason)
			}
		}
	}
}

func obsF(v float64) *float64 { return &v }

// gaugeHist is a run whose batch gauge drops from 200 to 150 requests half-way (another replica's, or the KV
// cache taking fewer), the item rate going from 1 to rate items/s, with waiting requests after the change.
func gaugeHist(rate, waiting float64) ([]Observation, float64) {
	const m = 1400.0
	var hist []Observation
	done, gen := 0.0, 0.0
	for t := 0.0; t <= 3600; t += 30 {
		r, running, w := 1.0, 200.0, 50.0
		if t > 1800 {
			r, running, w = rate, 150.0, waiting
		}
		if t > 0 {
			done += r * 30
			gen += r * 30 * m
		}
		age := math.Min(gen, 200*m/2)
		hist = append(hist, Observation{T: t, Done: int64(done), Total: 25000, Elapsed: obsF(t), AvgCompletion: obsF(m),
			GenTokens: obsF(gen + age), Running: obsF(running), Waiting: obsF(w),
			FinishedLenSum: obsF(gen), FinishedLenCount: obsF(done), MaxTokens: int64(4 * m)})
	}
	return hist, 25000 - done
}

// TestEstimateFullBatchRateFloor: the batch gauge says the batch is no longer full (one replica's behind a
// shared address) and nothing waits, while the engines' tokens come twice as fast: the rate of the blocks that
// were full is not the run's any more; the latest blocks' rate is a floor under it.
func TestEstimateFullBatchRateFloor(t *testing.T) {
	hist, left := gaugeHist(2, 0)
	e, _ := Compute(hist, Config{Window: 900})
	if e.Seconds == nil || *e.Seconds > 0.6*left || *e.Seconds < 0.45*left {
		t.Errorf("Compute(gauge not full, tokens twice as fast) = %v s; want about %.0f s (2 items/s)", secondsOf(e), left/2)
	}
}

// TestEstimateQueuedIsFull: fewer requests run than before but others wait for a slot: the engine runs all it
// can take, and the blocks' slower rate is its full-batch rate.
func TestEstimateQueuedIsFull(t *testing.T) {
	hist, left := gaugeHist(0.8, 50)
	e, _ := Compute(hist, Config{Window: 900})
	want := left / 0.8
	if e.Seconds == nil || *e.Seconds < 0.93*want || *e.Seconds > 1.1*want {
		t.Errorf("Compute(fewer running, others waiting, 0.8 items/s) = %v s; want about %.0f s", secondsOf(e), want)
	}
}

// secondsOf is an estimate's seconds for a failure message (NaN when there are none).
func secondsOf(e ETA) float64 {
	if e.Seconds == nil {
		return math.NaN()
	}
	return *e.Seconds
}

// A finished run's rates end at its finish: the idle samples after it change neither the window nor the run
// average. A run whose total grew past the count it had reached goes on.
func TestEstimateThroughputStopsAtFinish(t *testing.T) {
	hist := estHist(1800, 30, 1, 1800, true)
	_, atFinish := Compute(hist, Config{})
	idle := append([]Observation(nil), hist...)
	last := hist[len(hist)-1]
	for t := last.T + 30; t <= last.T+1200; t += 30 {
		o := last
		o.T, o.Elapsed = t, obsF(t)
		idle = append(idle, o)
	}
	_, later := Compute(idle, Config{})
	if !atFinish.UntilFinish || later != atFinish || later.TokensPerS < 1300 || later.RunItemsPerS < 0.95 {
		t.Errorf("throughput 20 min after the finish = %+v; want it as at the finish, %+v (about 1,400 tok/s, 1 item/s)", later, atFinish)
	}
	grown := append([]Observation(nil), idle...)
	for i := len(hist) + 10; i < len(grown); i++ {
		grown[i].Total = 2400
		grown[i].Done = 1800 + int64(grown[i].T-grown[len(hist)+9].T)/2
	}
	if e, tp := Compute(grown, Config{}); e.State == StateDone || tp.UntilFinish {
		t.Errorf("Compute(total grown to 2,400) = %s, until finish %v; want the run going on", e.State, tp.UntilFinish)
	}
}

// TestStallNeedsASecondLook: one sample after a 50-minute gap (the machine asleep, the bot down) that shows
// nothing moved is not a stall yet, only a pause nobody watched; the next sample, still flat, is one. With
// the sampler running all along, a stall is called as soon as nothing moved for stall_after.
func TestStallNeedsASecondLook(t *testing.T) {
	hist := estHist(1800, 30, 1, 25000, true)
	last := hist[len(hist)-1]
	woke := last
	woke.T = last.T + 3000
	if e, _ := Compute(append(hist, woke), Config{StallAfter: 600}); e.State == StateStalled {
		t.Errorf("the first sample after a 50-minute gap, flat = %s (%s); want no stall yet", e.State, e.Reason)
	}
	again := woke
	again.T += 30
	if e, _ := Compute(append(hist, woke, again), Config{StallAfter: 600}); e.State != StateStalled {
		t.Errorf("a second flat sample after the gap = %s (%s); want stalled", e.State, e.Reason)
	}
	var watched []Observation
	watched = append(watched, hist...)
	for t0 := last.T + 30; t0 <= last.T+600; t0 += 30 {
		o := last
		o.T = t0
		watched = append(watched, o)
	}
	if e, _ := Compute(watched, Config{StallAfter: 600}); e.State != StateStalled {
		t.Errorf("flat for stall_after, sampled all along = %s (%s); want stalled", e.State, e.Reason)
	}
}

// TestEstimateElapsedNotTheJobs: a history that starts mid-job whose elapsed time comes from a server that
// started a day before the job (its counters the job's alone) gets the same ETA as one whose elapsed is the
// job's: the day before is not a block of the job at a hundredth of its rate.
func TestEstimateElapsedNotTheJobs(t *testing.T) {
	right := estHist(6000, 30, 1.4, 25000, true)[60:]
	wrong := make([]Observation, len(right))
	for i, o := range right {
		o.Elapsed = obsF(*o.Elapsed + 86400)
		wrong[i] = o
	}
	for _, n := range []int{5, 20, 60} {
		good, _ := Compute(right[:n], Config{})
		bad, _ := Compute(wrong[:n], Config{})
		if good.Seconds == nil || bad.Seconds == nil {
			t.Fatalf("%d samples: no ETA (%s / %s)", n, good.Reason, bad.Reason)
		}
		if r := *bad.Seconds / *good.Seconds; r < 0.9 || r > 1.1 {
			t.Errorf("%d samples: ETA %v s with the server's day-old start, %v s with the job's elapsed; want within 10%%: %s",
				n, *bad.Seconds, *good.Seconds, bad.Reason)
		}
	}
}
