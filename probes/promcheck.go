package probes

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Check runs a `promql` stage check at at: done when any series of the answer has a non-zero
// value. detail says what the answer held, for the checklist.
func (p *Prometheus) Check(ctx context.Context, query string, at time.Time) (done bool, detail string, err error) {
	res, err := p.Query(ctx, query, at)
	if err != nil {
		return false, "", err
	}
	return promCheckVerdict(res)
}

// promCheckVerdict reads a promql check's answer: true when any value is non-zero.
func promCheckVerdict(res PromResult) (bool, string, error) {
	if len(res.Series) == 0 {
		return false, "the query returns no series", nil
	}
	var hits []string
	for _, s := range res.Series {
		if len(s.Samples) == 0 {
			continue
		}
		v := s.Samples[len(s.Samples)-1].V
		if v != 0 && !math.IsNaN(v) {
			val := strconv.FormatFloat(v, 'g', 6, 64)
			if l := promLabelString(s.Labels); l != "{}" {
				hits = append(hits, l+" = "+val)
			} else {
				// An aggregate without by() (count(up == 1) >= 4) has no labels to name.
				hits = append(hits, "the query returns "+val)
			}
		}
	}
	if len(hits) == 0 {
		if len(res.Series) == 1 {
			return false, "the query returns 1 series, all 0", nil
		}
		return false, fmt.Sprintf("the query returns %s series, all 0", promGrouped(len(res.Series))), nil
	}
	detail := hits[0]
	if len(hits) > 1 {
		detail += fmt.Sprintf(" (and %d more)", len(hits)-1)
	}
	return true, detail, nil
}

// promGrouped writes n with thousands separators, as answers write counts.
func promGrouped(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// promLabelString writes a series the way PromQL does, for a checklist detail. A label value
// holding a URL (blackbox_exporter's instance is the probed URL) names it as RedactURL does.
func promLabelString(l map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		if k != "__name__" {
			parts = append(parts, k+"="+strconv.Quote(RedactURLsIn(l[k])))
		}
	}
	return l["__name__"] + "{" + strings.Join(parts, ",") + "}"
}
