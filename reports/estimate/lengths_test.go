package estimate

import (
	"math"
	"strings"
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
		// A batch that has just started: 1,884 tokens a finished item, 200 in flight with about a token each.
		// Taken at their age, 1,131-1,131 tokens, below the finished mean the same answer calls shorter.
		{"a fresh batch", Observation{Done: 300, GenTokens: fp(565405), Running: fp(200), AvgCompletion: fp(1884)},
			KindUnknown, 565405.0 / 500, 1884, (565200 + 200*2*1884) / 500.0},
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

// TestCountsJob: an engine counter that holds far more tokens than the job's finished items and the requests
// in flight could have decoded is the server's life, not the job's (an SGLang server up for days: 7.56M
// tokens beside 300 finished items of 1,066 tokens and 162 in flight), and the one-sample answer falls back to
// items/s; the seed's 565,405 tokens with 200 in flight are the job's.
func TestCountsJob(t *testing.T) {
	obs := func(g, running float64) Observation {
		avg, el := 1066.0, 408.0
		return Observation{T: 1e9, Done: 300, Total: 25000, GenTokens: &g, Running: &running, AvgCompletion: &avg, Elapsed: &el}
	}
	if o := obs(565405, 200); !CountsJob(o, 0) {
		t.Errorf("the seed's counter (565,405 tokens, 300 done at 1,066, 200 in flight) taken for more than the job's")
	}
	server := obs(7.56e6, 162)
	if CountsJob(server, 0) {
		t.Errorf("a server's lifetime counter (7.56M tokens, 300 done at 1,066, 162 in flight) taken for the job's")
	}
	if CountsJob(obs(565405, 200), 512) {
		t.Errorf("565,405 tokens with 200 in flight at max_tokens 512 (at most 422K) taken for the job's")
	}
	e, tp := Compute([]Observation{server}, Config{})
	if tp.TokensPerS > 0 && tp.TokensPerS > 2*300*1066/408.0 {
		t.Errorf("one sample with a server's lifetime counter: throughput %.0f tok/s; want none from the counter (at most the log's)", tp.TokensPerS)
	}
	if e.TokensPerS > 0 || !strings.Contains(e.Reason, "300 items in 6 min 48 s") || !strings.Contains(e.Reason, "counter runs from before the job") {
		t.Errorf("one sample with a server's lifetime counter: %.0f tok/s, %q; want items/s from the log, saying why", e.TokensPerS, e.Reason)
	}
}
