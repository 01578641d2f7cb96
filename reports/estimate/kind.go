package estimate

import "math"

// CounterKind says when an engine's generated-token counter moves.
type CounterKind int

// The kinds of generated-token counter.
const (
	// KindUnknown: the history does not tell (yet).
	KindUnknown CounterKind = iota
	// PerIteration: the counter grows as tokens are decoded (vLLM): it includes what the requests in flight
	// have decoded so far.
	PerIteration
	// OnFinish: the counter grows only when a request finishes (SGLang, llm-d-inference-sim): it says nothing
	// about the requests in flight.
	OnFinish
)

// String names the kind for explanations.
func (k CounterKind) String() string {
	switch k {
	case PerIteration:
		return "per iteration"
	case OnFinish:
		return "on finish"
	}
	return "unknown"
}

// DetectKind tells from a folded history what its token counter means. With the engines' finished-length
// histogram, a counter that equals the histogram's sum while requests are in flight only counts finished
// requests, and one that runs ahead of it by a share of a request per request in flight counts as it decodes.
// Without the histogram, an interval in which no item finished says it: tokens that still grew were decoded by
// the requests in flight; tokens that stayed flat while requests ran were waiting for a finish.
func DetectKind(hist []Observation, folded []Folded) CounterKind {
	var perIter, onFinish int
	for i, o := range hist {
		f := folded[i]
		if !f.HasGen || o.Running == nil || *o.Running < 1 {
			continue
		}
		if f.HasFin && f.HasFinN && f.FinN > 0 {
			age := (f.Gen - f.GenBase) - (f.Fin - f.FinBase)
			mean := f.Fin / f.FinN
			if math.Abs(age) <= 0.02**o.Running*mean {
				onFinish++
			} else if age > 0.05**o.Running*mean {
				perIter++
			}
			continue
		}
		if i == 0 || !folded[i-1].HasGen || f.Restart || o.Done != hist[i-1].Done || f.FinN != folded[i-1].FinN {
			continue
		}
		if f.Gen > folded[i-1].Gen {
			perIter++
		} else {
			onFinish++
		}
	}
	switch {
	case onFinish > 2*perIter && onFinish >= 2:
		return OnFinish
	case perIter > 2*onFinish && perIter >= 1:
		return PerIteration
	}
	return KindUnknown
}
