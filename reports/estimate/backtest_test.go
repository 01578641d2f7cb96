package estimate

import (
	"math"
	"testing"
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
			if narrowed := *with.LowS > *without.LowS*1.01; narrowed != c.widen {
				t.Errorf("Compute low %v s with the backtest, %v s without; want it narrowed: %v", *with.LowS,
					*without.LowS, c.widen)
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
		var raised bool
		for k, i := range pasts {
			if h := s.pts[n].active - s.pts[i].active; h < block {
				t.Errorf("end %v: past point %d is %v s of active time back; want at least a block (%v s)", end, i, h,
					block)
			}
			if k > 0 && i >= pasts[k-1] {
				t.Errorf("end %v: backtestPasts = %v; want each once, oldest last", end, pasts)
			}
		}
		// The newest past forecast is the 5% fraction's, unless that was less than a block back.
		raised = s.pts[n].t-s.pts[pasts[0]].t > btFractions[0]*(s.pts[n].t-s.pts[0].t)+30
		t.Logf("end %v: block %v s, pasts %v", end, block, pasts)
		if want := end*btFractions[0] < block; raised != want {
			t.Errorf("end %v (block %v s): backtestPasts = %v, a fraction raised to a block: %v; want %v", end, block,
				pasts, raised, want)
		}
	}
}
