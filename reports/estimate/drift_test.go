package estimate

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// paced is a log-only history of a job of n items whose k-th item takes cost(k) seconds of a steady worker, give or
// take half of it at random (seeded), sampled every dt seconds until done items have finished.
func paced(n int64, done float64, dt float64, cost func(k float64) float64) []Observation {
	rng := rand.New(rand.NewPCG(1, 2))
	var hist []Observation
	var t, k float64
	next := cost(0)
	for k < done {
		// Items finished in the next dt: step through them at their own cost.
		end := t + dt
		for t+next <= end && k < done {
			t += next
			k++
			next = cost(k) * (0.5 + rng.Float64())
		}
		t = end
		el := t
		hist = append(hist, Observation{T: 1e9 + t, Done: int64(k), Total: n, Elapsed: &el})
	}
	return hist
}

// TestDriftCarriesOnARisingCost: a job whose items take steadily longer (each 0.1 s more per 10,000 items) is
// priced along that trend, and says so beside the rate it measured, as is one whose items take steadily less; a job
// that stepped once to a slower pace, and a steady one, are priced at the rate measured.
func TestDriftCarriesOnARisingCost(t *testing.T) {
	const n = 20000
	cases := []struct {
		name  string
		cost  func(k float64) float64
		drift bool
	}{
		{"rising", func(k float64) float64 { return 0.1 * (1 + k/n) }, true},
		{"one step", func(k float64) float64 {
			if k < 0.2*n {
				return 0.1
			}
			return 0.15
		}, false},
		{"steady", func(float64) float64 { return 0.1 }, false},
	}
	// A job whose items take steadily less time is priced earlier, and says so in words that read.
	falling := paced(n, 0.4*n, 40, func(k float64) float64 { return 0.2 * (1 - 0.75*k/n) })
	if e, _ := Compute(falling, Config{}); e.Seconds == nil || !strings.Contains(e.Reason, "each item has taken less time steadily") ||
		!(*e.Seconds < e.ItemsLeft/e.ItemsPerS) {
		t.Errorf("falling: %+v %q; want it priced earlier than the rate measured, and said", e.Seconds, e.Reason)
	}
	for _, c := range cases {
		hist := paced(n, 0.4*n, 20, c.cost)
		e, _ := Compute(hist, Config{})
		if e.State != StateRunning || e.Seconds == nil {
			t.Fatalf("%s: %s %q; want a running estimate", c.name, e.State, e.Reason)
		}
		priced := e.ItemsLeft / e.ItemsPerS
		said := strings.Contains(e.Reason, "each item has taken longer steadily")
		if c.drift {
			// What is left: 12,000 items from 0.14 s to 0.2 s each, 2,040 s; at the latest rate, 1,680 s.
			truth := 0.0
			for k := 0.4 * n; k < n; k++ {
				truth += c.cost(k)
			}
			if !said || !(*e.Seconds > priced) || math.Abs(*e.Seconds-truth) > math.Abs(priced-truth) {
				t.Errorf("%s: ETA %.0f s (priced at the rate measured: %.0f s, truth %.0f s), reason %q; want it carried on the trend, nearer the truth, and said",
					c.name, *e.Seconds, priced, truth, e.Reason)
			}
			continue
		}
		if said || math.Abs(*e.Seconds-priced) > 0.05*priced {
			t.Errorf("%s: ETA %.0f s against %.0f s at the rate measured, reason %q; want no drift carried on", c.name, *e.Seconds, priced, e.Reason)
		}
	}
}
