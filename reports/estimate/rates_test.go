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
