package estimate

import "testing"

func TestDetectKind(t *testing.T) {
	// A per-iteration counter runs ahead of the finished lengths by what the batch has decoded; an on-finish one
	// equals them.
	var perIter, onFinish, noHist, noHistOnFinish []Observation
	for i := 0; i < 10; i++ {
		done := float64(100 * i)
		perIter = append(perIter, Observation{T: float64(30 * i), Done: int64(done), GenTokens: fp(done*500 + 200*250),
			Running: fp(200), FinishedLenSum: fp(done * 500), FinishedLenCount: fp(done)})
		onFinish = append(onFinish, Observation{T: float64(30 * i), Done: int64(done), GenTokens: fp(done * 500),
			Running: fp(200), FinishedLenSum: fp(done * 500), FinishedLenCount: fp(done)})
		// Without the histogram: intervals in which no item finished tell.
		d := int64(100 * (i / 2))
		noHist = append(noHist, Observation{T: float64(30 * i), Done: d, GenTokens: fp(float64(1000 * i)), Running: fp(200)})
		noHistOnFinish = append(noHistOnFinish, Observation{T: float64(30 * i), Done: d, GenTokens: fp(float64(d * 500)), Running: fp(200)})
	}
	for _, tt := range []struct {
		name string
		hist []Observation
		want CounterKind
	}{
		{"per iteration", perIter, PerIteration},
		{"on finish", onFinish, OnFinish},
		{"per iteration without the histogram", noHist, PerIteration},
		{"on finish without the histogram", noHistOnFinish, OnFinish},
		{"one sample without the histogram", noHist[:1], KindUnknown},
	} {
		if got := DetectKind(tt.hist, foldSeries(tt.hist)); got != tt.want {
			t.Errorf("DetectKind(%s) = %v; want %v", tt.name, got, tt.want)
		}
	}
}
