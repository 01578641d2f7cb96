package reports_test

import (
	"math"
	"reflect"
	"testing"

	"runwatch/reports"
	"runwatch/sim"
)

func compactTrace(t testing.TB, name string) []reports.Observation {
	t.Helper()
	for _, s := range sim.Scenarios() {
		if s.Name == name {
			obs, _ := sim.Trace(s, 1, 30)
			return obs
		}
	}
	t.Fatalf("no scenario %q", name)
	return nil
}

func TestCompactBounds(t *testing.T) {
	restart := compactTrace(t, "restart") // 590 points, a counter reset at t≈7080
	stall := compactTrace(t, "stall")     // a 30-minute flat stretch from t=6500
	for _, tt := range []struct {
		name string
		hist []reports.Observation
		max  int
	}{
		{"restart", restart, 120},
		{"restart", restart, 360},
		{"stall", stall, 100},
		{"tiny max", stall, 1},
		{"short", restart[:50], 100},
	} {
		orig := append([]reports.Observation(nil), tt.hist...)
		got := reports.Compact(tt.hist, tt.max)
		bound := max(tt.max, 4)
		if len(got) > bound || len(tt.hist) <= bound && len(got) != len(tt.hist) {
			t.Errorf("Compact(%s: %d points, %d) has %d points; want at most %d, all when they fit", tt.name,
				len(tt.hist), tt.max, len(got), bound)
		}
		if !reflect.DeepEqual(got[0], tt.hist[0]) {
			t.Errorf("Compact(%s, %d) dropped the first point", tt.name, tt.max)
		}
		recent := bound / 2
		if len(tt.hist) > bound && !reflect.DeepEqual(got[len(got)-recent:], tt.hist[len(tt.hist)-recent:]) {
			t.Errorf("Compact(%s, %d) thinned the newest %d points", tt.name, tt.max, recent)
		}
		for i := 1; i < len(got); i++ {
			if got[i].T <= got[i-1].T {
				t.Fatalf("Compact(%s, %d) is not in order at %d", tt.name, tt.max, i)
			}
		}
		if !reflect.DeepEqual(tt.hist, orig) {
			t.Errorf("Compact(%s, %d) modified its input", tt.name, tt.max)
		}
	}
}

// TestCompactKeepsStructure checks that the points around a counter reset and the ends of a flat stretch
// survive thinning.
func TestCompactKeepsStructure(t *testing.T) {
	keeps := func(hist []reports.Observation, t float64) bool {
		for _, o := range hist {
			if o.T == t {
				return true
			}
		}
		return false
	}
	restart := compactTrace(t, "restart")
	got := reports.Compact(restart, 120)
	lastBefore, firstAfter := -1.0, -1.0
	for i, o := range restart {
		if o.GenTokens != nil && i > 0 {
			for j := i - 1; j >= 0; j-- {
				if restart[j].GenTokens != nil {
					if o.Restarts > restart[j].Restarts {
						lastBefore, firstAfter = restart[j].T, o.T
					}
					break
				}
			}
		}
	}
	if lastBefore < 0 || !keeps(got, lastBefore) || !keeps(got, firstAfter) {
		t.Errorf("Compact(restart, 120) lost the points around the reset (t=%v, t=%v)", lastBefore, firstAfter)
	}
	stall := compactTrace(t, "stall")
	got = reports.Compact(stall, 100)
	for _, edge := range []float64{6510, 8310} { // the last moving point before the stall, the first after
		if !keeps(got, edge) {
			t.Errorf("Compact(stall, 100) lost t=%v at an end of the flat stretch", edge)
		}
	}
}

// TestCompactKeepsAccuracy compares estimates on the whole history with estimates on a compacted one.
func TestCompactKeepsAccuracy(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"steady", "length-drift", "restart", "stall"} {
		hist := compactTrace(t, name)
		for _, frac := range []float64{0.3, 0.6, 0.9} {
			h := hist[:int(frac*float64(len(hist)))]
			full, _ := reports.Estimate(h, reports.EstimateConfig{})
			small, _ := reports.Estimate(reports.Compact(h, 200), reports.EstimateConfig{})
			if full.State != small.State {
				t.Errorf("%s at %.0f%%: state %s on the whole history, %s compacted", name, 100*frac, full.State, small.State)
				continue
			}
			if full.Seconds == nil {
				continue
			}
			if d := math.Abs(*full.Seconds - *small.Seconds); d > 0.01**full.Seconds+60 {
				t.Errorf("%s at %.0f%%: %v s on the whole history, %v s compacted; want within 1%%", name, 100*frac,
					*full.Seconds, *small.Seconds)
			}
		}
	}
}

// BenchmarkEstimate runs the estimator on a history compacted the way the Replayer keeps it (360 points).
func BenchmarkEstimate(b *testing.B) {
	hist := reports.Compact(compactTrace(b, "restart"), 360)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		reports.Estimate(hist, reports.EstimateConfig{})
	}
}
