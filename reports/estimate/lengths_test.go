package estimate

import (
	"math"
	"testing"
)

func fp(v float64) *float64 { return &v }

func TestCensoredMean(t *testing.T) {
	tests := []struct {
		name            string
		o               Observation
		kind            CounterKind
		low, point, hig float64
	}{
		// The seed's moment: 300 done at 1,066 tokens, 200 in flight, 565,405 generated.
		{"log mean and a per-iteration counter", Observation{Done: 300, GenTokens: fp(565405), Running: fp(200), AvgCompletion: fp(1066)},
			KindUnknown, 565405.0 / 500, (319800 + 1.5*245605) / 500.0, (319800 + 2*245605) / 500.0},
		{"the engines' histogram", Observation{Done: 300, GenTokens: fp(565405), Running: fp(200), FinishedLenSum: fp(319800), FinishedLenCount: fp(300)},
			KindUnknown, 565405.0 / 500, (319800 + 1.5*245605) / 500.0, (319800 + 2*245605) / 500.0},
		{"no finished lengths", Observation{Done: 300, GenTokens: fp(565405), Running: fp(200)},
			KindUnknown, 565405.0 / 500, math.Sqrt(565405.0 / 500 * 565405.0 / 300), 565405.0 / 300},
		{"an on-finish counter", Observation{Done: 300, GenTokens: fp(60000), Running: fp(100), FinishedLenSum: fp(60000), FinishedLenCount: fp(300)},
			OnFinish, 200, 200 * (1 + 0.5*0.25), 200 * 1.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := CensoredMean(tt.o, tt.kind)
			if !ok || math.Abs(l.Low-tt.low) > 1e-6 || math.Abs(l.Point-tt.point) > 1e-6 || math.Abs(l.High-tt.hig) > 1e-6 {
				t.Errorf("CensoredMean(%s) = %+v, %v; want %.1f, %.1f, %.1f", tt.name, l, ok, tt.low, tt.point, tt.hig)
			}
			if !(l.Low <= l.Point && l.Point <= l.High) {
				t.Errorf("CensoredMean(%s) = %+v; want low <= point <= high", tt.name, l)
			}
		})
	}
	if _, ok := CensoredMean(Observation{Done: 0, GenTokens: fp(1000), Running: fp(10)}, KindUnknown); ok {
		t.Errorf("CensoredMean(nothing finished) ok; want no figure")
	}
}
