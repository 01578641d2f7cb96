package estimate

import "testing"

// foldSeries folds a history as a trace is folded when read (Fold) and reads it as the estimator does (folds).
func foldSeries(hist []Observation) []Folded { return folds(Fold(hist)) }

func TestFold(t *testing.T) {
	obs := func(g ...float64) []Observation {
		var h []Observation
		for i, v := range g {
			h = append(h, Observation{T: float64(30 * i), GenTokens: fp(v)})
		}
		return h
	}
	tests := []struct {
		name     string
		hist     []Observation
		wantGen  float64 // since the first observation, at the last
		restarts int
	}{
		{"steady", obs(1000, 2000, 3000), 2000, 0},
		{"a restart", obs(1000, 2000, 100, 1100), 1000 + 1100, 1},
		{"a step back", obs(1000, 2000, 1900, 3000), 2000, 0},
	}
	for _, tt := range tests {
		f := foldSeries(tt.hist)
		n := 0
		for _, x := range f {
			if x.Restart {
				n++
			}
		}
		if got := f[len(f)-1].Gen; got != tt.wantGen || n != tt.restarts {
			t.Errorf("foldSeries(%s) = gen %v, %d restarts; want %v, %d", tt.name, got, n, tt.wantGen, tt.restarts)
		}
	}
	// A restart the sampler saw while carrying its counters: the batch's base moves, the counter does not drop.
	marked := obs(1000, 2000, 2500)
	marked[2].Restarts = 1
	f := foldSeries(marked)
	if !f[2].Restart || f[2].Seg != 1 || f[2].GenBase != f[1].Gen {
		t.Errorf("foldSeries(marked restart) = %+v; want a restart whose base is the previous total", f[2])
	}
	// Two replicas answering in turn: each lane grows on its own and the fold sums them (A from 0 to 38,000,
	// B from 1,500 to 37,500).
	var turns []Observation
	for i := 0; i < 40; i++ {
		g := float64(1000 * i)
		if i%2 == 1 {
			g -= 1500
		}
		turns = append(turns, Observation{T: float64(30 * i), GenTokens: fp(g), FinishedLenSum: fp(g), FinishedLenCount: fp(float64(i))})
	}
	if f := foldSeries(turns); f[len(f)-1].Gen != 38000+36000 || f[len(f)-1].Unreliable {
		t.Errorf("foldSeries(two replicas in turn) = %+v; want 74,000 tokens", f[len(f)-1])
	}
	// Two replicas answering irregularly (one of them now and then, its growth landing in lumps): the folded
	// rate would be lumpy either way, so the counters are left out and the job's own progress speaks.
	var irregular []Observation
	a, b := 0.0, -1500.0
	for i := 0; i < 60; i++ {
		a, b = a+1000, b+1000
		g := a
		if i%5 == 4 {
			g = b
		}
		irregular = append(irregular, Observation{T: float64(30 * i), GenTokens: fp(g)})
	}
	if f := foldSeries(irregular); !f[len(f)-1].Unreliable {
		t.Errorf("foldSeries(replicas answering irregularly) = %+v; want them left out as unreliable", f[len(f)-1])
	}
	// The engines' finished count falls behind the job's (one of two replicas answering every scrape): the
	// counters miss servers and are left out.
	var half []Observation
	for i := 0; i < 40; i++ {
		g, n := float64(1000*i), float64(i)
		half = append(half, Observation{T: float64(30 * i), Done: int64(2 * i), GenTokens: fp(g), FinishedLenSum: fp(g),
			FinishedLenCount: fp(n)})
	}
	if f := foldSeries(half); !f[len(f)-1].Unreliable || f[len(f)-1].HasGen {
		t.Errorf("foldSeries(counters that see half the job's items) = %+v; want them left out as unreliable", f[len(f)-1])
	}
	// One server's counters that jitter: the fold follows them and never adds the jitter up (the truth is
	// 39,000 tokens since the first reading).
	var jittery []Observation
	for i := 0; i < 40; i++ {
		g := float64(1000*i) + float64(i*7919%17-8)*150
		n := float64(i) + float64(i*104729%7-3)
		jittery = append(jittery, Observation{T: float64(30 * i), GenTokens: fp(g), FinishedLenSum: fp(g), FinishedLenCount: fp(n + 5)})
	}
	if f := foldSeries(jittery); f[len(f)-1].Gen < 30000 || f[len(f)-1].Gen > 42000 {
		t.Errorf("foldSeries(counters that jitter) = %+v; want about 39,000 tokens", f[len(f)-1])
	}
	// Readings that land below the lanes over and over, each its own: replicas too many or too close to tell
	// apart. Their sum is not known: left out.
	var jumbled []Observation
	for i := 0; i < 40; i++ {
		g, n := float64(1000*i), float64(i)
		if i%2 == 1 {
			k := 0.5 + float64(i*7919%13)/26
			g, n = g*k, n*(1.6-k)
		}
		jumbled = append(jumbled, Observation{T: float64(30 * i), GenTokens: fp(g), FinishedLenSum: fp(g), FinishedLenCount: fp(n)})
	}
	if f := foldSeries(jumbled); !f[len(f)-1].Unreliable || f[len(f)-1].HasGen {
		t.Errorf("foldSeries(readings below every lane, over and over) = %+v; want them left out as unreliable", f[len(f)-1])
	}
}
