package estimate

import (
	"math"
	"strings"
	"testing"
)

// TestPaceWindow: the window follows the job's pace (six request durations by Little's law) and scales with a
// job replayed slower; nothing in it is in seconds.
func TestPaceWindow(t *testing.T) {
	hist := estHist(3600, 30, 1.4, 25000, true)
	w := PaceWindow(hist)
	if want := paceRequests * 200 / 1.4; w < want/1.2 || w > want*1.2 {
		t.Errorf("PaceWindow(200 in flight at 1.4 items/s) = %v s; want about %v", w, want)
	}
	for _, k := range []float64{10, 100} {
		slow := make([]Observation, len(hist))
		for i, o := range hist {
			o.T *= k
			slow[i] = o
		}
		if got := PaceWindow(slow); math.Abs(got/(k*w)-1) > 1e-9 {
			t.Errorf("PaceWindow(the job %gx slower) = %v; want %v", k, got, k*w)
		}
	}
}

func TestFirstSampleThroughput(t *testing.T) {
	o := Observation{T: 1e9, Done: 300, Total: 25000, GenTokens: fp(565405), Running: fp(200), Elapsed: fp(408)}
	_, tp := Compute([]Observation{o}, Config{})
	if math.Abs(tp.TokensPerS-565405.0/408) > 1e-9 || tp.Basis != "565K tokens in 6 min 48 s" {
		t.Errorf("Compute(one sample) throughput = %+v; want 1,386 tok/s from 565K tokens in 6 min 48 s", tp)
	}
	if tp.ItemsPerS != 300.0/408 || tp.InFlight != 200 {
		t.Errorf("Compute(one sample) items %v/s, in flight %v; want 300 ÷ 408 s with the 200 in flight said", tp.ItemsPerS,
			tp.InFlight)
	}
	hist := estHist(1800, 30, 1, 25000, true)
	_, tp = Compute(hist, Config{})
	if tp.TokensPerS <= 0 || !strings.Contains(tp.Basis, "tokens in") {
		t.Errorf("Compute(a history) throughput = %+v; want counter deltas with their basis", tp)
	}
}

// TestThroughputCountersLeftOut: engine counters that count half the job's finished items (one replica of two
// behind a shared address) are left out: the token rate is not their tokens over the job's elapsed time (half
// the job's), but the job log's mean completion times the item rate, said so.
func TestThroughputCountersLeftOut(t *testing.T) {
	var hist []Observation
	for i := 0; i <= 40; i++ {
		done := 40.0 * float64(i) // 40 items/s
		hist = append(hist, Observation{T: 1e9 + float64(i), Done: int64(done), Total: 4000, Elapsed: fp(float64(i)),
			GenTokens: fp(150 * done / 2), FinishedLenSum: fp(150 * done / 2), FinishedLenCount: fp(done / 2),
			Running: fp(24), AvgCompletion: fp(150)})
	}
	_, tp := Compute(hist, Config{})
	if math.Abs(tp.TokensPerS-6000) > 300 || math.Abs(tp.RunTokensPerS-6000) > 300 || !strings.Contains(tp.Basis, "log's mean completion") {
		t.Errorf("throughput with half the job's items counted = %.0f tok/s (run %.0f), basis %q; want about 40 items/s × 150 tokens = 6,000, said as derived",
			tp.TokensPerS, tp.RunTokensPerS, tp.Basis)
	}
	// Without the log's mean, no token rate at all rather than half of one.
	for i := range hist {
		hist[i].AvgCompletion = nil
	}
	if _, tp := Compute(hist, Config{}); tp.TokensPerS != 0 || tp.RunTokensPerS != 0 || !(tp.ItemsPerS > 0) {
		t.Errorf("throughput with half the job's items counted, no log mean = %+v; want items/s only", tp)
	}
}
