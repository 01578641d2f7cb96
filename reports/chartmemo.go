package reports

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"sync"
)

// DefaultChartPoints is how many points a chart estimates at most when its options say none: the PNG's,
// and the series the Slack-drawn charts are thinned from, so that both read one memo (see ChartMemo).
const DefaultChartPoints = 120

// chartIndices are the samples of a history of n a chart estimates at, at most maxPoints of them: the second
// (the first with a rate), every stride-th, and the last. The stride is the smallest of 1, 2, 3, 4, 6, 8, 12,
// 16, 24, ... (powers of two and one and a half times them) that keeps them within maxPoints, so that
// between two thirds of maxPoints and maxPoints are evenly spaced (half of maxPoints at stride 2, for a
// history just past maxPoints samples); and they stay where they were as the history grows until it is a
// third or half as long again: a chart a sample later adds only its new last point. Evenly spaced over n
// instead, every point moved with each sample, and a chart could reuse none of the estimates the one before
// it took.
func chartIndices(n, maxPoints int) []int {
	if n < 2 {
		return nil
	}
	if n-1 <= maxPoints {
		idx := make([]int, 0, n-1)
		for i := 1; i < n; i++ {
			idx = append(idx, i)
		}
		return idx
	}
	stride := 2
	for 2+(n-2)/stride > maxPoints {
		if stride&(stride-1) == 0 {
			stride += stride / 2 // 2^k → 3·2^(k-1)
		} else {
			stride += stride / 3 // 3·2^(k-1) → 2^(k+1)
		}
	}
	idx := make([]int, 0, 2+(n-2)/stride)
	idx = append(idx, 1)
	for i := stride; i < n-1; i += stride {
		idx = append(idx, i)
	}
	return append(idx, n-1)
}

// chartPoint is the estimator's answer at sample i, from the history up to it.
func chartPoint(hist []Observation, i int, cfg EstimateConfig) ChartPoint {
	e, tp := Estimate(hist[:i+1], cfg)
	p := ChartPoint{T: hist[i].T, TokensPerS: tp.TokensPerS, ItemsPerS: tp.ItemsPerS}
	if e.State == StateRunning && e.Seconds != nil {
		p.ETAS, p.LowS, p.HighS = e.Seconds, e.LowS, e.HighS
	}
	return p
}

// ChartMemo keeps the estimates of one run's charts, so that the next chart of its history, grown since,
// estimates only the points it adds. An estimate at a sample depends on the history up to that sample alone,
// which a growing history does not change; each point is kept with a hash of that part of the history, and
// is estimated again when it differs (the history compacted, or another run's), as all are when the
// estimator's configuration does. It holds one chart's points: give each run, and each number of points, a
// memo of its own. The zero value is ready to use; it is safe for concurrent use.
type ChartMemo struct {
	mu     sync.Mutex
	seeded bool
	seed   maphash.Seed
	cfg    EstimateConfig
	pts    map[int]chartMemoPoint // by index into the history
	// estimates counts the estimates taken (tests read it).
	estimates int
}

type chartMemoPoint struct {
	sum uint64 // hash of the history up to the point (prefixSums)
	p   ChartPoint
}

// Series is ChartSeries, reusing the points of the memo's previous chart where the history up to them is
// the same. A nil memo keeps nothing. The points' ETA fields may be shared with later charts: do not modify
// them.
func (m *ChartMemo) Series(hist []Observation, cfg EstimateConfig, maxPoints int) []ChartPoint {
	if maxPoints <= 1 {
		maxPoints = DefaultChartPoints
	}
	idx := chartIndices(len(hist), maxPoints)
	out := make([]ChartPoint, 0, len(idx))
	if m == nil {
		for _, i := range idx {
			out = append(out, chartPoint(hist, i, cfg))
		}
		return out
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.seeded {
		m.seed, m.seeded = maphash.MakeSeed(), true
	}
	if cfg != m.cfg {
		m.cfg, m.pts = cfg, nil
	}
	sums := prefixSums(m.seed, hist, idx)
	next := make(map[int]chartMemoPoint, len(idx))
	for k, i := range idx {
		e, ok := m.pts[i]
		if !ok || e.sum != sums[k] {
			e = chartMemoPoint{sum: sums[k], p: chartPoint(hist, i, cfg)}
			m.estimates++
		}
		next[i] = e
		out = append(out, e.p)
	}
	m.pts = next
	return out
}

// prefixSums returns, for each index of idx (ascending), a hash of the history up to it.
func prefixSums(seed maphash.Seed, hist []Observation, idx []int) []uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	sums := make([]uint64, 0, len(idx))
	var buf [16 * 9]byte
	for i, o := range hist {
		if len(sums) == len(idx) {
			break
		}
		h.Write(appendObservation(buf[:0], o))
		if i == idx[len(sums)] {
			sums = append(sums, h.Sum64())
		}
	}
	return sums
}

// appendObservation appends every field of o to b, a pointer's presence before its value: two observations
// with the same bytes are the same to the estimator. TestChartMemoHashesEveryField fails when Observation
// gains a field this leaves out.
func appendObservation(b []byte, o Observation) []byte {
	le := binary.LittleEndian
	b = le.AppendUint64(b, math.Float64bits(o.T))
	for _, v := range []int64{o.Done, o.Total, o.Errors, o.MaxTokens, o.Restarts, o.StepsBack} {
		b = le.AppendUint64(b, uint64(v))
	}
	for _, p := range []*float64{o.GenTokens, o.Running, o.Waiting, o.AvgCompletion, o.Elapsed, o.FinishedLenSum,
		o.FinishedLenCount, o.LengthCapped, o.LogModified} {
		if p == nil {
			b = append(b, 0)
			continue
		}
		b = le.AppendUint64(append(b, 1), math.Float64bits(*p))
	}
	return b
}
