package probes

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	dto "github.com/prometheus/client_model/go"
)

// Every number an Engine is built from is a count, a fraction or a time, none of which can be NaN,
// infinite, negative or past 2^53 (where float64 stops counting whole numbers; no server generates
// 9e15 tokens). A sample that is (a broken exporter, a proxy's arithmetic, a hostile
// endpoint) is left out here, at the edge, and named, so that answers never show "-Inf running"
// or a negative token count and the counters behind rates and ETAs never jump by one.

// metricsMaxValue is the largest number any sample runwatch reads can hold: 2^53.
const metricsMaxValue = 1 << 53

// metricsImpossible reports whether v cannot be any number runwatch reads.
func metricsImpossible(v float64) bool { return math.IsNaN(v) || v < 0 || v > metricsMaxValue }

// metricsSampleValue is the value of a scalar sample, or the first impossible one of a histogram's
// or summary's sum and count.
func metricsSampleValue(mt *dto.Metric) float64 {
	if v, ok := metricsValue(mt); ok {
		return v
	}
	if h := mt.GetHistogram(); h != nil {
		if metricsImpossible(h.GetSampleCountFloat()) {
			return h.GetSampleCountFloat()
		}
		return h.GetSampleSum()
	}
	if s := mt.GetSummary(); s != nil {
		return s.GetSampleSum()
	}
	return 0
}

// metricsDropImpossible removes from fams every sample with an impossible value and returns the
// families that had one, each with a sentence naming it and the value.
func metricsDropImpossible(fams map[string]*dto.MetricFamily) (map[*dto.MetricFamily]bool, []string) {
	var bad map[*dto.MetricFamily]bool
	var notes []string
	for name, f := range fams {
		kept := f.Metric[:0]
		var dropped []float64
		for _, mt := range f.GetMetric() {
			if v := metricsSampleValue(mt); metricsImpossible(v) {
				dropped = append(dropped, v)
				continue
			}
			kept = append(kept, mt)
		}
		if len(dropped) == 0 {
			continue
		}
		clear(f.Metric[len(kept):])
		f.Metric = kept
		if bad == nil {
			bad = map[*dto.MetricFamily]bool{}
		}
		bad[f] = true
		if len(dropped) == 1 {
			notes = append(notes, fmt.Sprintf("%s is %s, impossible for a count: left out", name, metricsSigned(dropped[0])))
		} else {
			notes = append(notes, fmt.Sprintf("%s is %s in %d series, impossible for a count: left out", name, metricsSigned(dropped[0]), len(dropped)))
		}
	}
	sort.Strings(notes)
	return bad, notes
}

// metricsSigned writes v as the exposition does: NaN, +Inf, -Inf or the number.
func metricsSigned(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}
