package probes

import (
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Signals are what an engine says about the quality of what it produced, beside how much: why
// requests finished (a completion cut at max_tokens is a truncated sample) and, when the server
// runs speculative decoding, how many of the drafter's tokens the target model accepted.
type Signals struct {
	// Finished counts finished requests by why they ended, summed over the server: "stop",
	// "length" (hit max_tokens), "abort" (cancelled by the client or the server), "error";
	// other reasons keep their own name. Nil when the engine does not say why.
	Finished map[string]float64

	// Drafts, DraftTokens and Accepted are the speculative-decoding counters (vLLM V1:
	// spec_decode_num_drafts_total, _num_draft_tokens_total, _num_accepted_tokens_total);
	// NaN when absent. AcceptedPerPos[i] counts accepted tokens at draft position i; nil when absent.
	Drafts, DraftTokens, Accepted float64
	AcceptedPerPos                []float64

	// AcceptRate and AcceptLength are gauges for engines that export no counters (SGLang's
	// spec_accept_rate and spec_accept_length, vLLM V0's draft_acceptance_rate); NaN when absent.
	AcceptRate, AcceptLength float64
}

// Drafting reports whether the server says anything about speculative decoding.
func (s Signals) Drafting() bool {
	return !math.IsNaN(s.DraftTokens) || !math.IsNaN(s.Drafts) || !math.IsNaN(s.AcceptRate) || !math.IsNaN(s.AcceptLength)
}

// metricsReasonAliases maps the finish reasons engines spell differently onto runwatch's four.
var metricsReasonAliases = map[string]string{
	"cancelled": "abort", "canceled": "abort", "aborted": "abort",
	"failed": "error", "timeout": "error",
	"eos": "stop", "stop_sequence": "stop", "max_tokens": "length",
}

// metricsNoSignals is Signals with every number unknown.
func metricsNoSignals() Signals {
	nan := math.NaN()
	return Signals{Drafts: nan, DraftTokens: nan, Accepted: nan, AcceptRate: nan, AcceptLength: nan}
}

func metricsSignals(m metricsFamilies, src *metricsSource, e Engine) Signals {
	nan := math.NaN()
	s := metricsNoSignals()
	if len(e.FinishedByReason) > 0 {
		s.Finished = map[string]float64{}
		for r, v := range e.FinishedByReason {
			r = strings.ToLower(r)
			if a, ok := metricsReasonAliases[r]; ok {
				r = a
			}
			s.Finished[r] += v
		}
	} else if !math.IsNaN(e.RequestsFinished) && (m.has(src.aborted) || m.has(src.failed)) {
		// Without reasons, an engine that counts its failures still gives an error share. SGLang's
		// aborts are taken as part of num_requests_total (if they are not, the share reads a little
		// high); TGI and Triton count failures apart from successes.
		s.Finished = map[string]float64{"stop": e.RequestsFinished}
		if v, ok := m.sum(src.aborted); ok {
			s.Finished["abort"] = v
			s.Finished["stop"] = math.Max(0, e.RequestsFinished-v)
		}
		if v, ok := m.sum(src.failed); ok {
			s.Finished["error"] = v
		}
	}
	get := func(name string) float64 {
		if v, ok := m.sum(name); ok {
			return v
		}
		return nan
	}
	s.Drafts, s.DraftTokens, s.Accepted = get(src.specDrafts), get(src.specDraftTokens), get(src.specAccepted)
	if pos := m.byLabel(src.specPerPos, "position"); len(pos) > 0 {
		keys := make([]int, 0, len(pos))
		for k := range pos {
			if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < 64 {
				keys = append(keys, i)
			}
		}
		sort.Ints(keys)
		if len(keys) > 0 {
			s.AcceptedPerPos = make([]float64, keys[len(keys)-1]+1)
			for _, i := range keys {
				s.AcceptedPerPos[i] = pos[strconv.Itoa(i)]
			}
		}
	}
	if v, ok := m.mean(src.specAcceptRate); ok {
		s.AcceptRate = v
	}
	if v, ok := m.mean(src.specAcceptLength); ok {
		s.AcceptLength = v
	}
	// A server started without a drafter exports SGLang's gauges as 0: that is not a drafter at 0%.
	if math.IsNaN(s.DraftTokens) && s.AcceptRate == 0 && (math.IsNaN(s.AcceptLength) || s.AcceptLength == 0) {
		s.AcceptRate, s.AcceptLength = nan, nan
	}
	return s
}

// metricsKnownName reports whether a family must reach the parser: a name the table reads (in any
// of its sample spellings), or one that looks like a known engine metric under another prefix, so
// drift.go can name it.
func metricsKnownName(name []byte) bool {
	if metricsUsed[string(name)] {
		return true
	}
	for _, suffix := range []string{"_sum", "_count", "_total", "_created"} {
		if base, ok := strings.CutSuffix(string(name), suffix); ok && metricsUsed[base] {
			return true
		}
	}
	_, ok := metricsStemOf(string(name))
	return ok
}

// has reports whether a family is there with at least one sample.
func (m metricsFamilies) has(name string) bool {
	return m.each(name, func(*dto.Metric, float64) {})
}
