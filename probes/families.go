package probes

import (
	"math"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// The families of one exposition, read the ways an engine status needs: sums over data-parallel
// engines, means, maxima, values by label, histograms.

// metricsFamilies looks families up by the sample name an engine emits,
// whichever way the exposition spelled counters: text format names the
// family "x_total", OpenMetrics names it "x" with "x_total" samples, and some
// exporters drop the suffix altogether.
type metricsFamilies map[string]*dto.MetricFamily

func (m metricsFamilies) family(name string) *dto.MetricFamily {
	if name == "" {
		return nil
	}
	if f := m[name]; f != nil {
		return f
	}
	if base, ok := strings.CutSuffix(name, "_total"); ok {
		if f := m[base]; f != nil && f.GetType() == dto.MetricType_COUNTER {
			return f
		}
		return nil
	}
	return m[name+"_total"]
}

// metricsValue is a sample's value for the scalar types.
func metricsValue(mt *dto.Metric) (float64, bool) {
	switch {
	case mt.GetCounter() != nil:
		return mt.GetCounter().GetValue(), true
	case mt.GetGauge() != nil:
		return mt.GetGauge().GetValue(), true
	case mt.GetUntyped() != nil:
		return mt.GetUntyped().GetValue(), true
	}
	return 0, false
}

// each calls fn for every scalar sample of the family name.
func (m metricsFamilies) each(name string, fn func(mt *dto.Metric, v float64)) bool {
	f := m.family(name)
	found := false
	for _, mt := range f.GetMetric() {
		if v, ok := metricsValue(mt); ok {
			fn(mt, v)
			found = true
		}
	}
	return found
}

func (m metricsFamilies) sum(name string) (float64, bool) {
	var s float64
	ok := m.each(name, func(_ *dto.Metric, v float64) { s += v })
	return s, ok
}

func (m metricsFamilies) mean(name string) (float64, bool) {
	var s float64
	n := 0
	m.each(name, func(_ *dto.Metric, v float64) { s += v; n++ })
	if n == 0 {
		return math.NaN(), false
	}
	return s / float64(n), true
}

func (m metricsFamilies) max(name string) (float64, bool) {
	best := math.Inf(-1)
	ok := m.each(name, func(_ *dto.Metric, v float64) { best = math.Max(best, v) })
	return best, ok
}

func (m metricsFamilies) byLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	m.each(name, func(mt *dto.Metric, v float64) {
		if l, ok := metricsLabel(mt, label); ok {
			out[l] += v
		}
	})
	return out
}

// hist sums a histogram (or summary) over its series. Without a TYPE line
// the parser leaves name_sum and name_count as plain samples; those count too.
func (m metricsFamilies) hist(name string) (sum, count float64, ok bool) {
	if name == "" {
		return 0, 0, false
	}
	for _, mt := range m[name].GetMetric() {
		switch {
		case mt.GetHistogram() != nil:
			h := mt.GetHistogram()
			sum += h.GetSampleSum()
			count += float64(h.GetSampleCount()) + h.GetSampleCountFloat()
			ok = true
		case mt.GetSummary() != nil:
			sum += mt.GetSummary().GetSampleSum()
			count += float64(mt.GetSummary().GetSampleCount())
			ok = true
		}
	}
	if ok {
		return sum, count, true
	}
	s, ok1 := m.sum(name + "_sum")
	c, ok2 := m.sum(name + "_count")
	if ok1 && ok2 {
		return s, c, true
	}
	return 0, 0, false
}

func (m metricsFamilies) counterOrHist(counter, hist string) float64 {
	if v, ok := m.sum(counter); ok {
		return v
	}
	if sum, _, ok := m.hist(hist); ok {
		return sum
	}
	return math.NaN()
}

func metricsLabel(mt *dto.Metric, name string) (string, bool) {
	for _, lp := range mt.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue(), true
		}
	}
	return "", false
}
