package estimate

import (
	"math"
	"testing"
)

func TestCalibrate(t *testing.T) {
	// No errors yet: the structural model's own range.
	if lo, hi := calibrate(1000, 0.2, nil, 1); math.Abs(lo-800) > 1e-6 || math.Abs(hi-1200) > 1e-6 {
		t.Errorf("calibrate(no errors) = %v, %v; want 800, 1,200", lo, hi)
	}
	// Past rates came in 10-30% slower than predicted: the time is longer, the range lopsided toward later.
	var slow []float64
	for i := 0; i < 12; i++ {
		slow = append(slow, math.Log(0.7+0.2*float64(i)/11))
	}
	lo, hi := calibrate(1000, 0.05, slow, 1)
	if !(lo <= 1000*math.Exp(priorFloor*math.Log(0.95))+1e-6) || hi < 1000/0.72 {
		t.Errorf("calibrate(rates 10-30%% slow) = %v, %v; want a high past 1,389 and the low no higher than the model's", lo, hi)
	}
	// A longer horizon than the errors were measured over widens the range.
	lo2, hi2 := calibrate(1000, 0.05, slow, 2)
	if hi2 <= hi || lo2 > lo {
		t.Errorf("calibrate(stretch 2) = %v, %v; want wider than %v, %v", lo2, hi2, lo, hi)
	}
}

// TestSelectKeepsTheStructuralModel: on a steady run every estimator predicts well, and the structural model
// keeps the busy part.
func TestSelectKeepsTheStructuralModel(t *testing.T) {
	e, _ := Compute(estHist(12000, 30, 1.4, 25000, true), Config{})
	if e.Estimator != "the structural model" || e.Seconds == nil {
		t.Errorf("Compute(steady) estimator %q, %v s; want the structural model", e.Estimator, e.Seconds)
	}
}
