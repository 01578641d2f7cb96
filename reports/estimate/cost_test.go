package estimate_test

import (
	"fmt"
	"testing"

	"runwatch/reports/estimate"
	"runwatch/sim"
)

// historyOf is the steady sim job sampled n times up to 60% done, then extra more times at the same interval,
// with everything the engines export (a counter per iteration, the finished-length histogram): at n = 20,160
// the history a week of samples at 30 s makes.
func historyOf(tb testing.TB, n, extra int) []estimate.Observation {
	tb.Helper()
	s := sim.Scenarios()[0]
	_, finish := sim.Trace(s, 1, 300)
	obs, _ := sim.Trace(s, 1, 0.6*finish/float64(n))
	return obs[:n+extra]
}

// BenchmarkEstimateHistory is the cost of one estimate over a history of 100, 2,000 and 20,000 samples, as a
// run's estimates are made: the next sample's, with the memo the earlier ones left (the sampler's, an answer's),
// and a one-shot estimate without one (`bot status` from the state directory). Neither may grow with the
// history.
func BenchmarkEstimateHistory(b *testing.B) {
	for _, n := range []int{100, 2000, 20000} {
		extra := n / 2
		hist := historyOf(b, n, extra)
		b.Run(fmt.Sprintf("next/samples=%d", n), func(b *testing.B) {
			// Each op is the estimate after one more sample; every extra samples the memo starts again from
			// the first n (that estimate counted too, once per extra ops).
			b.ReportAllocs()
			var memo *estimate.Memo
			i := extra
			for range b.N {
				if i == extra {
					memo, i = &estimate.Memo{}, 0
					estimate.Compute(hist[:n], estimate.Config{Memo: memo})
				}
				i++
				estimate.Compute(hist[:n+i], estimate.Config{Memo: memo})
			}
		})
		b.Run(fmt.Sprintf("one-shot/samples=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				estimate.Compute(hist[:n], estimate.Config{})
			}
		})
	}
}
