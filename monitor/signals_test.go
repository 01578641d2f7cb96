package monitor

import (
	"math"
	"testing"

	"runwatch/reports"
)

func TestSignalBookThinsOldSamples(t *testing.T) {
	var b signalBook
	var series reports.SignalSeries
	// 1,000 samples of a server finishing 10 requests per sample, one in ten cut at max_tokens.
	for i := 1; i <= 1000; i++ {
		s := reports.SignalSample{T: float64(i), Finished: map[string]float64{"stop": float64(9 * i), "length": float64(i)},
			Drafts: math.NaN(), DraftTokens: math.NaN(), Accepted: math.NaN(), AcceptRate: math.NaN(), AcceptLength: math.NaN()}
		series = b.add("synth", map[string]reports.SignalSample{"a": s})
	}
	got := series["a"]
	if len(got) > signalMaxSamples || got[0].T != 1 || got[len(got)-1].T != 1000 {
		t.Fatalf("kept %d samples from T=%v to %v; want at most %d, the first and the last", len(got), got[0].T, got[len(got)-1].T, signalMaxSamples)
	}
	for i := 1; i < len(got); i++ {
		if got[i].T <= got[i-1].T {
			t.Fatalf("samples out of order at %d: %v after %v", i, got[i].T, got[i-1].T)
		}
	}
	// Thinning merges steps, it loses no finishes.
	q := reports.AssessQuality(series, 0, reports.QualityConfig{})
	if q.Finished != 10000 || math.Abs(q.Shares["length"]-0.1) > 1e-12 || q.Jump != nil {
		t.Errorf("quality = %+v; want 10,000 finished, 10%% length, no jump", q)
	}
	// The same T again is not a new sample.
	again := b.add("synth", map[string]reports.SignalSample{"a": got[len(got)-1]})
	if len(again["a"]) != len(got) {
		t.Errorf("a repeated sample was added: %d samples, had %d", len(again["a"]), len(got))
	}
}
