package reports

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"
)

func TestChartIndices(t *testing.T) {
	tests := []struct {
		n, max int
		stride int // between the second and the last point; 1: every sample
		want   int // points
	}{
		{1, 120, 1, 0},
		{2, 120, 1, 1},
		{10, 120, 1, 9},
		{121, 120, 1, 120},
		{122, 120, 2, 62}, // just past maxPoints: stride 2 halves them
		{600, 120, 6, 101},
		{2000, 120, 24, 85},
		{2000, 20, 128, 17},
		{600, 2, 768, 2}, // the second and the last
	}
	for _, tc := range tests {
		idx := chartIndices(tc.n, tc.max)
		if len(idx) != tc.want {
			t.Errorf("chartIndices(%d, %d) has %d points; want %d", tc.n, tc.max, len(idx), tc.want)
			continue
		}
		if len(idx) == 0 {
			continue
		}
		if idx[0] != 1 || idx[len(idx)-1] != tc.n-1 {
			t.Errorf("chartIndices(%d, %d) = %v…%v; want from 1 to %d", tc.n, tc.max, idx[0], idx[len(idx)-1], tc.n-1)
		}
		for k := 1; k < len(idx)-1; k++ {
			if idx[k]%tc.stride != 0 || (k > 1 && idx[k]-idx[k-1] != tc.stride) {
				t.Errorf("chartIndices(%d, %d) = %v; want every %d-th sample between the second and the last", tc.n, tc.max, idx, tc.stride)
				break
			}
		}
	}
	// The points stay where they were as the history grows (until the stride changes): a chart a sample later
	// has every point of the one before but its last.
	for n := 1500; n < 2500; n++ {
		before, after := chartIndices(n, 120), chartIndices(n+1, 120)
		if len(after) > 2 && len(before) > 2 && after[2]-after[1] == before[2]-before[1] {
			for _, i := range before[:len(before)-1] {
				if _, ok := slices.BinarySearch(after, i); !ok {
					t.Fatalf("chartIndices(%d, 120) has %d; chartIndices(%d, 120), at the same stride, does not", n, i, n+1)
				}
			}
		}
		if len(after) > 120 || len(after) <= 80 {
			t.Fatalf("chartIndices(%d, 120) has %d points; want 81 to 120", n+1, len(after))
		}
	}
}

// historyIndex is the index of the sample at T t.
func historyIndex(t *testing.T, hist []Observation, at float64) int {
	t.Helper()
	i, ok := slices.BinarySearchFunc(hist, at, func(o Observation, t float64) int {
		switch {
		case o.T < t:
			return -1
		case o.T > t:
			return 1
		}
		return 0
	})
	if !ok {
		t.Fatalf("no sample at T %v", at)
	}
	return i
}

// pointString shows a chart point's figures (not its pointers).
func pointString(p ChartPoint) string {
	f := func(v *float64) string {
		if v == nil {
			return "nil"
		}
		return fmt.Sprint(*v)
	}
	return fmt.Sprintf("{T %v, %v tok/s, %v items/s, ETA %s (%s–%s)}", p.T, p.TokensPerS, p.ItemsPerS, f(p.ETAS), f(p.LowS), f(p.HighS))
}

func equalPtr(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// TestChartSeriesIsTheEstimatorsAnswers: every point of a chart, drawn by a memo over a history that grew
// since its last chart, is the estimator's own answer at that sample, from the history up to it: the figures
// Estimate gives there, and the ETA the Replayer (the bot live, sample by sample) gave at that moment.
func TestChartSeriesIsTheEstimatorsAnswers(t *testing.T) {
	t.Parallel()
	hist := chartHistory(1200, 30, 0.7, 1066, 20000)
	var m ChartMemo
	m.Series(hist[:1100], EstimateConfig{}, 0)
	pts := m.Series(hist, EstimateConfig{}, 0)
	if len(pts) <= DefaultChartPoints*2/3 || len(pts) > DefaultChartPoints {
		t.Fatalf("chart of %d samples has %d points; want %d to %d", len(hist), len(pts), DefaultChartPoints*2/3+1, DefaultChartPoints)
	}
	for _, p := range pts {
		i := historyIndex(t, hist, p.T)
		e, tp := Estimate(hist[:i+1], EstimateConfig{})
		want := ChartPoint{T: hist[i].T, TokensPerS: tp.TokensPerS, ItemsPerS: tp.ItemsPerS}
		if e.State == StateRunning {
			want.ETAS, want.LowS, want.HighS = e.Seconds, e.LowS, e.HighS
		}
		if p.TokensPerS != want.TokensPerS || p.ItemsPerS != want.ItemsPerS || !equalPtr(p.ETAS, want.ETAS) ||
			!equalPtr(p.LowS, want.LowS) || !equalPtr(p.HighS, want.HighS) {
			t.Errorf("chart point at sample %d = %s; want the estimator's answer there, %s", i, pointString(p), pointString(want))
		}
	}

	// The Replayer keeps every sample up to replayMaxHistory: its answer at each moment is the chart's there.
	short := hist[:replayMaxHistory]
	rp := NewReplayer(EstimateConfig{}, ShiftConfig{})
	live := map[float64]ReplayLine{}
	for _, o := range short {
		live[o.T] = rp.Step(o)
	}
	for _, p := range (&ChartMemo{}).Series(short, EstimateConfig{}, 60) {
		l := live[p.T]
		if l.State != StateRunning {
			l.ETAS, l.Low, l.High = nil, nil, nil
		}
		if !equalPtr(p.ETAS, l.ETAS) || !equalPtr(p.LowS, l.Low) || !equalPtr(p.HighS, l.High) {
			t.Errorf("chart ETA at T %v = %v (%v–%v); the Replayer said %v (%v–%v)", p.T, p.ETAS, p.LowS, p.HighS, l.ETAS, l.Low, l.High)
		}
	}
}

// TestChartMemo: a memo's chart is the chart without one, however the history changed since the last, and it
// estimates only the points whose history did: none for the same history, the new last one a sample later,
// those past an edit, all of them for another configuration.
func TestChartMemo(t *testing.T) {
	t.Parallel()
	full := chartHistory(700, 30, 1, 500, 9000)
	const max = 40
	var m ChartMemo
	check := func(name string, hist []Observation, cfg EstimateConfig, estimates int) {
		t.Helper()
		before := m.estimates
		got := m.Series(hist, cfg, max)
		if want := ChartSeries(hist, cfg, max); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the memo's chart differs from the chart without one", name)
		}
		if n := m.estimates - before; estimates >= 0 && n != estimates {
			t.Errorf("%s: %d estimates taken; want %d", name, n, estimates)
		}
	}
	newPoints := func(from, to []Observation) int {
		n := 0
		old := chartIndices(len(from), max)
		for _, i := range chartIndices(len(to), max) {
			if _, ok := slices.BinarySearch(old, i); !ok {
				n++
			}
		}
		return n
	}
	check("first chart", full[:500], EstimateConfig{}, len(chartIndices(500, max)))
	check("the same history", full[:500], EstimateConfig{}, 0)
	check("a sample later", full[:501], EstimateConfig{}, 1)
	check("37 samples later", full[:538], EstimateConfig{}, newPoints(full[:501], full[:538]))
	check("a shorter history", full[:520], EstimateConfig{}, 1) // its grid points were estimated; its last was not

	edited := slices.Clone(full[:520])
	g := *edited[300].GenTokens + 1
	edited[300].GenTokens = &g
	past := 0
	for _, i := range chartIndices(len(edited), max) {
		if i >= 300 {
			past++
		}
	}
	check("a sample edited", edited, EstimateConfig{}, past)
	check("another configuration", edited, EstimateConfig{StallAfter: 900}, len(chartIndices(520, max)))
	check("compacted", Compact(full[:520], 300), EstimateConfig{StallAfter: 900}, -1)

	// Concurrent charts of one memo (the scheduled post and an answer) get the same chart.
	var wg sync.WaitGroup
	charts := make([][]ChartPoint, 4)
	for k := range charts {
		wg.Go(func() { charts[k] = m.Series(full[:530+k%2], EstimateConfig{}, max) })
	}
	wg.Wait()
	for k, c := range charts {
		if want := ChartSeries(full[:530+k%2], EstimateConfig{}, max); !reflect.DeepEqual(c, want) {
			t.Errorf("concurrent chart %d differs from the chart without a memo", k)
		}
	}
}

// TestChartMemoHashesEveryField: a change to any field of an observation changes the hash a memo keeps its
// points with; a field appendObservation leaves out would let a chart keep a point estimated from a history
// that is no longer the run's.
func TestChartMemoHashesEveryField(t *testing.T) {
	base := appendObservation(nil, Observation{})
	typ := reflect.TypeFor[Observation]()
	for i := range typ.NumField() {
		var o Observation
		f := reflect.ValueOf(&o).Elem().Field(i)
		switch {
		case f.Kind() == reflect.Float64:
			f.SetFloat(1.5)
		case f.Kind() == reflect.Int64:
			f.SetInt(7)
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Float64:
			v := 0.0 // a zero that is there is not a zero that is not
			f.Set(reflect.ValueOf(&v))
		default:
			t.Fatalf("Observation.%s is a %s: teach appendObservation (and this test) to hash it", typ.Field(i).Name, f.Type())
		}
		if slices.Equal(appendObservation(nil, o), base) {
			t.Errorf("an observation whose %s is set hashes as the zero one: appendObservation leaves it out", typ.Field(i).Name)
		}
	}
	nan := math.NaN()
	if !slices.Equal(appendObservation(nil, Observation{T: nan}), appendObservation(nil, Observation{T: nan})) {
		t.Errorf("two observations with the same NaN hash differently")
	}
}
