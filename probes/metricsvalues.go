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

// Finish reasons are a handful of short words (stop, length, abort, error); a label value is
// otherwise unbounded, and each reason is named in answers and kept in history.
const (
	MetricsMaxReasons     = 8  // distinct finish reasons kept; the rest are counted as "other"
	MetricsMaxReasonBytes = 32 // a longer reason is counted as "other"
)

// metricsReasons bounds finish-reason counts: reasons longer than MetricsMaxReasonBytes, and past
// the MetricsMaxReasons kept (the ones answers read first: stop, length, abort, error; then the
// most frequent), are summed under "other", so the total stays whole.
func metricsReasons(by map[string]float64) map[string]float64 {
	names := make([]string, 0, len(by))
	other := 0.0
	for r, v := range by {
		if len(r) > MetricsMaxReasonBytes || r == "other" {
			other += v
			continue
		}
		names = append(names, r)
	}
	known := func(r string) bool { return r == "stop" || r == "length" || r == "abort" || r == "error" }
	sort.Slice(names, func(i, j int) bool {
		if ki, kj := known(names[i]), known(names[j]); ki != kj {
			return ki
		}
		if by[names[i]] != by[names[j]] {
			return by[names[i]] > by[names[j]]
		}
		return names[i] < names[j]
	})
	out := make(map[string]float64, min(len(names), MetricsMaxReasons)+1)
	for i, r := range names {
		if i < MetricsMaxReasons {
			out[r] = by[r]
		} else {
			other += by[r]
		}
	}
	if other > 0 || by["other"] != 0 {
		out["other"] = other
	}
	return out
}
