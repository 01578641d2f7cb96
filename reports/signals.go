package reports

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"

	"runwatch/probes"
	"runwatch/reports/estimate"
)

// Engine signals beside progress: why requests finished (quality.go) and how well the drafter does
// (drafter.go). Both are read from the engines' counters over a window of recent samples; a window is
// a number of finished requests or draft tokens, never a span of time, so a job replayed ten times
// slower reads the same.

// SignalSample is one server's finish and drafter counters at one moment, as scraped. The counters
// are the server's own: they start over when it restarts.
type SignalSample struct {
	T float64 // unix seconds
	// Finished counts finished requests by reason ("stop", "length", "abort", "error", …); nil when
	// the engine does not say why requests finished.
	Finished map[string]float64
	// Drafter says the speculative-decoding counters were there: Drafts (verification steps),
	// DraftTokens and Accepted, with Accepted split by draft position in PerPos. Drafts is NaN when
	// only token counters exist (vLLM V0).
	Drafter                       bool
	Drafts, DraftTokens, Accepted float64
	PerPos                        []float64
	// AcceptRate and AcceptLength are gauges of engines that export no counters (SGLang); NaN when absent.
	AcceptRate, AcceptLength float64
}

// SignalSampleOf takes the signals of one scrape, at unix time t.
func SignalSampleOf(t float64, e probes.Engine) SignalSample {
	g := e.Signals
	return SignalSample{
		T: t, Finished: maps.Clone(g.Finished),
		Drafter: !math.IsNaN(g.DraftTokens) && !math.IsNaN(g.Accepted),
		Drafts:  g.Drafts, DraftTokens: g.DraftTokens, Accepted: g.Accepted, PerPos: slices.Clone(g.AcceptedPerPos),
		AcceptRate: g.AcceptRate, AcceptLength: g.AcceptLength,
	}
}

// SignalSeries is each server's samples, oldest first, keyed by server.
type SignalSeries map[string][]SignalSample

// signalStep is what changed between two samples of one server: counts, not totals.
type signalStep struct {
	t                             float64
	finished                      map[string]float64
	drafts, draftTokens, accepted float64
	perPos                        []float64
	drafter                       bool
}

// steps turns each server's counters into the counts each sample added, in time order. Each server's
// counters are folded by estimate.Counter, the one owner of counter folding: a server's first sample counts
// what it did before runwatch looked, a counter that drops to a fraction of itself restarted and what it shows
// is what it did since, and one that steps back a little (another replica, a stale reading) adds nothing.
func (s SignalSeries) steps() []signalStep {
	var out []signalStep
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var c estimate.Counter
		for _, cur := range s[k] {
			before := c.Total.Named
			c.Fold(signalCounts(cur), 0, cur.T)
			d := func(name string) float64 { return c.Total.Named[name] - before[name] }
			st := signalStep{t: cur.T, drafter: cur.Drafter}
			if cur.Finished != nil {
				st.finished = map[string]float64{}
				for r := range cur.Finished {
					st.finished[r] = d("finished:" + r)
				}
			}
			if cur.Drafter {
				st.drafts, st.draftTokens, st.accepted = d("drafts"), d("draft_tokens"), d("accepted")
				st.perPos = make([]float64, len(cur.PerPos))
				for i := range cur.PerPos {
					st.perPos[i] = d("pos:" + strconv.Itoa(i))
				}
			}
			out = append(out, st)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].t < out[j].t })
	return out
}

// signalCounts is a sample's counters as estimate.Counter folds them: finished requests (all reasons together)
// match the reading to a server lifetime; each reason and drafter counter is a named counter.
func signalCounts(smp SignalSample) estimate.Counts {
	r := estimate.Missing()
	r.Named = map[string]float64{}
	if smp.Finished != nil {
		r.Done = 0
		for reason, v := range smp.Finished {
			r.Named["finished:"+reason] = v
			if !math.IsNaN(v) {
				r.Done += v
			}
		}
	}
	if smp.Drafter {
		for name, v := range map[string]float64{"drafts": smp.Drafts, "draft_tokens": smp.DraftTokens, "accepted": smp.Accepted} {
			if !math.IsNaN(v) {
				r.Named[name] = v
			}
		}
		for i, v := range smp.PerPos {
			r.Named["pos:"+strconv.Itoa(i)] = v
		}
	}
	return r
}

// signalSplit finds the recent window: the latest steps whose weight adds up to at least min. It
// returns the index where the window starts, or -1 when all steps together weigh less.
func signalSplit(n int, weight func(i int) float64, min float64) int {
	var w float64
	for i := n - 1; i >= 0; i-- {
		w += weight(i)
		if w >= min {
			return i
		}
	}
	return -1
}

// signalZ is the two-proportion z statistic of k1/n1 against k0/n0.
func signalZ(k0, n0, k1, n1 float64) float64 {
	p := (k0 + k1) / (n0 + n1)
	se := math.Sqrt(p * (1 - p) * (1/n0 + 1/n1))
	if se == 0 || math.IsNaN(se) {
		return 0
	}
	return (k1/n1 - k0/n0) / se
}
