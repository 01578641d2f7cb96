package estimate

import (
	"math"
	"strings"
	"testing"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

// slowingHist is a log-only run whose item rate keeps falling, from 2 to 0.5 items/s over its history: every
// past forecast of the time to today's done came out short, so the high end widens and the low end narrows.
func slowingHist() []Observation {
	var hist []Observation
	const end, dt = 6000.0, 30.0
	for t := 0.0; t <= end; t += dt {
		// rate(t) = 2 - 1.5 t/end; done is its integral.
		done := int64(2*t - 0.75*t*t/end)
		o := Observation{T: t, Done: done, Total: 20000, Elapsed: obsF(t)}
		if done > 0 {
			o.AvgCompletion = obsF(500)
		}
		hist = append(hist, o)
	}
	return hist
}

func TestBacktestRescalesTheRange(t *testing.T) {
	for _, c := range []struct {
		name  string
		hist  []Observation
		widen bool
	}{
		{"steady", estHist(12000, 30, 1.4, 25000, false), false},
		{"slowing", slowingHist(), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			with, _ := Compute(c.hist, Config{})
			without, _ := Compute(c.hist, Config{noBacktest: true})
			if with.Seconds == nil || without.Seconds == nil {
				t.Fatalf("Compute = %v, %v s; want an estimate both ways", with.Seconds, without.Seconds)
			}
			// The horizon's floor under the high end comes after the backtest (see horizonFloor): the range
			// without the backtest is compared with it under the same floor.
			w := PaceWindow(c.hist)
			without = horizonFloor(without, build(c.hist, Config{Window: w}).seen(w))
			sec := *with.Seconds
			if sec != *without.Seconds {
				t.Errorf("Compute point %v s with the backtest, %v s without; want the same", sec, *without.Seconds)
			}
			// The high end widens where past forecasts came out short and may narrow where they erred by less
			// than their widths, but the busy part's high end not below priorFloor of its calibrated width and
			// the drain's not below the drain's point; the low end may move either way, but not past the point.
			// Widened, or kept where it is already past the bound (btMaxErr: 2x the point).
			wider := *with.HighS > *without.HighS*1.01 || *with.HighS >= *without.HighS && *with.HighS >= 2*sec
			if wider != c.widen || *with.LowS > sec {
				t.Errorf("Compute range %v-%v s with the backtest, %v-%v s without; want the high end widened: %v",
					*with.LowS, *with.HighS, *without.LowS, *without.HighS, c.widen)
			}
			if sp := without.split; sp != nil && sp.busy > 0 {
				floor := sp.busy*math.Pow(sp.busyHigh/sp.busy, priorFloor) + sp.drain
				if *with.HighS < floor*(1-1e-9) {
					t.Errorf("Compute high %v s; want at least %v s (busy %v-%v s, drain %v s)", *with.HighS, floor,
						sp.busy, sp.busyHigh, sp.drain)
				}
			} else if *with.HighS < *without.HighS {
				t.Errorf("Compute high %v s with the backtest, %v s without; want it not narrowed without the parts",
					*with.HighS, *without.HighS)
			}
			// Past forecasts that came out short narrow the low end (a slowing run finishes no earlier than
			// its rate says); on a steady run it may move either way.
			if narrowed := *with.LowS > *without.LowS*1.01; c.widen && !narrowed {
				t.Errorf("Compute low %v s with the backtest, %v s without; want it narrowed", *with.LowS, *without.LowS)
			}
			if *with.HighS > math.Max(*without.HighS, sec*2)*(1+1e-9) {
				t.Errorf("Compute high %v s for a %v s point; want at most 2x, or the calibrated high", *with.HighS, sec)
			}
		})
	}
}

func TestConformalQ(t *testing.T) {
	// Sorted, the twelve scores are -1, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9, 1, 1.2, 1.5, 2.
	scores := []float64{0.3, -1, 2, 0.5, 1, 0.1, 0.7, 1.5, 0.2, 0.9, 0.4, 1.2}
	for _, c := range []struct {
		n       int
		p, want float64
	}{
		{6, 0.9, 2},    // rank ceil(7 × 0.9) = 7 of 6: the largest
		{12, 0.9, 2},   // rank ceil(13 × 0.9) = 12 of 12
		{12, 0.8, 1.5}, // rank 11
		{12, 0.5, 0.7}, // rank 7
	} {
		if got := conformalQ(scores[:c.n], c.p); got != c.want {
			t.Errorf("conformalQ(%v, %v) = %v; want %v", scores[:c.n], c.p, got, c.want)
		}
	}
}

// TestBacktestPastsSpanABlock checks the past forecasts scored: each at least a block of active time back (the
// shortest fractions of a short history are raised to one), each once, oldest last.
func TestBacktestPastsSpanABlock(t *testing.T) {
	for _, end := range []float64{1500, 3000, 12000} {
		hist := estHist(end, 30, 1.4, 25000, false)
		cfg := Config{Window: PaceWindow(hist)}.withDefaults()
		s := build(hist, cfg)
		block := cfg.Window / 3
		n := len(s.pts) - 1
		pasts := s.backtestPasts(block)
		if len(pasts) < 2 || len(pasts) > len(btFractions) {
			t.Fatalf("end %v: backtestPasts(%v) = %v; want 2 to %d points", end, block, pasts, len(btFractions))
		}
		for k, i := range pasts {
			if h := s.pts[n].active - s.pts[i].active; h < block {
				t.Errorf("end %v: past point %d is %v s of active time back; want at least a block (%v s)", end, i, h,
					block)
			}
			if k > 0 && i >= pasts[k-1] {
				t.Errorf("end %v: backtestPasts = %v; want each once, oldest last", end, pasts)
			}
		}
		// The newest past forecast is the 5% fraction's (taken down to the grid: at most an eighth further back
		// and a sample), or a block back when that is less.
		back := s.pts[n].t - s.pts[pasts[0]].t
		h := btFractions[0] * (s.pts[n].t - s.pts[0].t)
		lo, hi := h, h*(1+1.0/pastGrid)+30
		if h < block {
			lo, hi = block, block+30
		}
		t.Logf("end %v: block %v s, pasts %v, the newest %v s back", end, block, pasts, back)
		if back < lo || back > hi {
			t.Errorf("end %v (block %v s): backtestPasts = %v, the newest %v s back; want %v to %v s", end, block,
				pasts, back, lo, hi)
		}
	}
}

func TestTrimmedMean(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		trim float64
		want float64
	}{
		{[]float64{1, 2, 3, 4, 100}, 0.2, 3},                 // one of five off each end: 2, 3, 4
		{[]float64{-50, 1, 1, 1, 1}, 0.2, 1},                 // the outlier is trimmed, and a 1 with it
		{[]float64{0.1, 0.3}, 0.2, 0.2},                      // too few to trim: the mean
		{[]float64{5, 1, 3, 2, 4, 9, 7, 6, 8, 10}, 0.2, 5.5}, // 3 to 8
	} {
		if got := trimmedMean(c.v, c.trim); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("trimmedMean(%v, %v) = %v; want %v", c.v, c.trim, got, c.want)
		}
	}
	if got := trimmedMean(nil, 0.2); !math.IsNaN(got) {
		t.Errorf("trimmedMean(nil) = %v; want NaN", got)
	}
}

// TestBiasCorrected: the busy part moves by onFinishBias of the past forecasts' mean error, later when they came
// out fast and earlier when slow, never past the calibrated range, and the reason says so when it is a minute
// or more.
func TestBiasCorrected(t *testing.T) {
	base := func() ETA {
		sec, lo, hi := 3600.0, 3000.0, 5000.0
		f := Unix(1e9 + sec)
		return ETA{State: StateRunning, Seconds: &sec, LowS: &lo, HighS: &hi, FinishAt: &f, Reason: "1,000 items left"}
	}
	for _, c := range []struct {
		name      string
		errs      []float64
		sec, want float64 // the busy part and its point after; the rest of the 3,600 s is the drain's
		lo, hi    float64
		says      string
	}{
		{"fast", []float64{0.2, 0.2, 0.2, 0.2, 0.2}, 3000, 3000 * math.Exp(onFinishBias*0.2), 2500, 4500,
			"and 2 min 34 s more because so far this run has taken 22% longer than its own earlier forecasts said"},
		{"slow", []float64{-0.2, -0.2, -0.2}, 3000, 3000 * math.Exp(-onFinishBias*0.2), 2500, 4500,
			"and 2 min 26 s less because so far this run has taken 18% less time than its own earlier forecasts said"},
		{"held to the range", []float64{2, 2, 2}, 3000, 3100, 2500, 3100,
			"and 1 min 40 s more because so far this run has taken 7.4x as long as its own earlier forecasts said"},
		// A young run's first batch can make its past forecasts 16x fast: the point moves as if 2x (maxBias), and
		// the reason still says what the forecasts did.
		{"bounded", []float64{math.Log(16), math.Log(16), math.Log(16)}, 3000, 3000 * math.Pow(2, onFinishBias), 2500, 9000,
			"and 9 min 28 s more because so far this run has taken 16.0x as long as its own earlier forecasts said"},
		{"bounded the other way", []float64{-math.Log(16), -math.Log(16)}, 3000, 3000 * math.Pow(2, -onFinishBias), 500, 4500,
			"less because so far this run has taken 94% less time than its own earlier forecasts said"},
		{"too small to say", []float64{0.01, 0.01}, 3000, 3000 * math.Exp(onFinishBias*0.01), 2500, 4500, ""},
		{"none", nil, 3000, 3000, 2500, 4500, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := biasCorrected(base(), c.sec, c.lo, c.hi, c.errs)
			if want := 3600 - c.sec + c.want; math.Abs(*e.Seconds-want) > 1e-6 {
				t.Errorf("point %v s; want %v s", *e.Seconds, want)
			}
			if got, want := e.FinishAt.Sub(Unix(1e9)).Seconds(), *e.Seconds; math.Abs(got-want) > 1e-3 {
				t.Errorf("finish %v s after now; want the point, %v s", got, want)
			}
			if *e.LowS != 3000 || *e.HighS != 5000 {
				t.Errorf("range %v-%v s; want it kept, 3000-5000 s", *e.LowS, *e.HighS)
			}
			said := strings.TrimPrefix(e.Reason, "1,000 items left")
			if c.says == "" && said != "" || c.says != "" && !strings.Contains(said, c.says) {
				t.Errorf("reason %q; want it to say %q after the rest", e.Reason, c.says)
			}
		})
	}
}

// TestBiasCorrectedSaysOnlyBigMoves: the reason names a move when it is both a minute and 1% of the time left,
// or a twentieth of it (a short job); one that is only a minute or 1% stays unsaid.
func TestBiasCorrectedSaysOnlyBigMoves(t *testing.T) {
	for _, c := range []struct {
		name      string
		sec, bias float64 // the time left (all busy) and the past forecasts' error
		says      bool
	}{
		{"1% but under a minute", 3000, 0.06, false},   // 45 s of 3,045 s
		{"a minute but under 1%", 20000, 0.02, false},  // 100 s of 20,100 s
		{"both", 20000, 0.05, true},                    // 252 s of 20,252 s
		{"a twentieth of a short job", 120, 0.4, true}, // 12.6 s of 132.6 s
		{"a short job's 2.5%", 120, 0.1, false},        // 3 s of 123 s
	} {
		t.Run(c.name, func(t *testing.T) {
			sec, lo, hi := c.sec, c.sec/2, c.sec*2
			f := Unix(1e9 + sec)
			e := biasCorrected(ETA{State: StateRunning, Seconds: &sec, LowS: &lo, HighS: &hi, FinishAt: &f, Reason: "r"},
				c.sec, lo, hi, []float64{c.bias, c.bias})
			if d := *e.Seconds - c.sec; d <= 0 {
				t.Fatalf("moved %v s; want later", d)
			}
			if said := e.Reason != "r"; said != c.says {
				t.Errorf("biasCorrected moved %v s of %v s: reason %q; want a clause %v", *e.Seconds-c.sec, *e.Seconds, e.Reason, c.says)
			}
		})
	}
}

// TestBacktestMovesOnlyAnOnFinishPoint: on the peer corpus's steady trace, whose counter moves when a request
// finishes, the backtest moves the point by the run's own past errors, within its range; a counter that moves
// per iteration keeps its point.
func TestBacktestMovesOnlyAnOnFinishPoint(t *testing.T) {
	t.Parallel()
	full := readTrace(t, "../testdata/peer/steady.jsonl")
	moved := 0
	for _, k := range []int{40, 70, 100} {
		hist := full[:k]
		cfg := Config{Window: PaceWindow(hist)}.withDefaults()
		if kind := build(hist, cfg).kind; kind != OnFinish {
			t.Fatalf("%d samples: counter kind %v; want on finish", k, kind)
		}
		with, _ := Compute(hist, Config{})
		without, _ := Compute(hist, Config{noBacktest: true})
		if with.Seconds == nil || without.Seconds == nil || with.LowS == nil || with.HighS == nil {
			t.Fatalf("%d samples: no estimate", k)
		}
		if *with.Seconds < *with.LowS || *with.Seconds > *with.HighS {
			t.Errorf("%d samples: point %v s outside its range %v-%v s", k, *with.Seconds, *with.LowS, *with.HighS)
		}
		if *with.Seconds != *without.Seconds {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("the backtest moved no on-finish point; want the run's own past errors to move it")
	}
	// A pause is not a bias: after the peer stall's SIGSTOP (done stands at 1,200 for 10 s, a request or two
	// finishing before it) the past forecasts scored across it all came out long, and the point must not
	// follow them later. (It may move earlier: this simulator finishes a burst of requests as it resumes.)
	stall := readTrace(t, "../testdata/peer/stall.jsonl")
	for k := range stall {
		if stall[k].Done < 1240 {
			continue
		}
		for _, n := range []int{k, k + 10} {
			with, _ := Compute(stall[:n], Config{})
			without, _ := Compute(stall[:n], Config{noBacktest: true})
			if with.Seconds == nil || without.Seconds == nil {
				t.Fatalf("stall, %d samples: no estimate", n)
			}
			if moved := *with.Seconds / *without.Seconds - 1; moved > 0.02 {
				t.Errorf("stall, %d samples (%d done, after the pause): the point moved %.1f%% later (%v s -> %v s); want at most 2%%: %s",
					n, stall[n-1].Done, 100*moved, *without.Seconds, *with.Seconds, with.Reason)
			}
		}
		break
	}
	// In the drain itself (no busy part left) the point stays: the past forecasts never reached a drain.
	drains := 0
	tail := readTrace(t, "../testdata/peer/stragglers.jsonl")
	for n := len(tail) / 2; n < len(tail); n++ {
		without, _ := Compute(tail[:n], Config{noBacktest: true})
		if without.split == nil || without.split.busy > 0 || without.Seconds == nil {
			continue
		}
		drains++
		if with, _ := Compute(tail[:n], Config{}); with.Seconds == nil || *with.Seconds != *without.Seconds {
			t.Errorf("%d samples, in the drain: point %v s with the backtest, %v s without; want the same", n,
				secondsOf(with), *without.Seconds)
		}
	}
	if drains == 0 {
		t.Errorf("stragglers trace: no answer in the drain; want some to test")
	}
	// A counter per iteration keeps the point the backtest did not touch (a log-only history too:
	// TestBacktestRescalesTheRange).
	hist := estHist(12000, 30, 1.4, 25000, true)
	if kind := build(hist, Config{Window: PaceWindow(hist)}.withDefaults()).kind; kind == OnFinish {
		t.Fatalf("estHist with tokens: counter kind %v; want not on finish", kind)
	}
	with, _ := Compute(hist, Config{})
	without, _ := Compute(hist, Config{noBacktest: true})
	if with.Seconds == nil || without.Seconds == nil || *with.Seconds != *without.Seconds {
		t.Errorf("per-iteration counter: point %v s with the backtest, %v s without; want the same",
			secondsOf(with), secondsOf(without))
	}
}
