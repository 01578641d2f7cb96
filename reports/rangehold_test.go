package reports_test

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"runwatch/reports"
	"runwatch/sim"
)

// steadiness counts what a person reading consecutive ETA answers sees of the range.
type steadiness struct {
	answers, pairs int
	flips          int     // the range's form changed: "(a – b)" ↔ "(or later, up to b)"
	flaps          int     // its width doubled or halved
	narrowed       int     // a side narrowed to less than half of what it was while the point held within 10%
	covered        int     // answers whose range held the finish
	width          float64 // sum of (high - low) ÷ time left
}

func (s *steadiness) add(o steadiness) {
	s.answers, s.pairs, s.flips, s.flaps, s.narrowed = s.answers+o.answers, s.pairs+o.pairs, s.flips+o.flips,
		s.flaps+o.flaps, s.narrowed+o.narrowed
	s.covered, s.width = s.covered+o.covered, s.width+o.width
}

func (s steadiness) String() string {
	n := float64(max(1, s.pairs))
	return fmt.Sprintf("%d answers: form flips %d (%.1f%%), width doubled/halved %d (%.1f%%), a side halved %d (%.1f%%); coverage %.1f%%, mean width %.0f%% of the time left",
		s.answers, s.flips, 100*float64(s.flips)/n, s.flaps, 100*float64(s.flaps)/n, s.narrowed, 100*float64(s.narrowed)/n,
		100*float64(s.covered)/float64(max(1, s.answers)), 100*s.width/float64(max(1, s.answers)))
}

// rangeForm is the form of the range an answer shows: "", "later", "sooner" or "both".
func rangeForm(sec, low, high float64) string {
	r := reports.Range(sec, low, high)
	switch {
	case r == "":
		return ""
	case strings.HasPrefix(r, " (or later"):
		return "later"
	case strings.HasPrefix(r, " (or sooner"):
		return "sooner"
	}
	return "both"
}

// steadyReplay replays obs as the channel is shown them (finish: the true finish) and scores the answers from 5%
// done on, with the estimator's own range (raw) and with the range shown.
func steadyReplay(obs []reports.Observation, finish float64) (raw, shown steadiness) {
	rp := reports.NewReplayer(reports.EstimateConfig{}, reports.ShiftConfig{}).AsShown()
	type answer struct{ t, sec, low, high float64 }
	var prevRaw, prevShown *answer
	score := func(s *steadiness, prev **answer, a answer) {
		s.answers++
		if left := finish - a.t; a.low <= left && left <= a.high {
			s.covered++
		}
		s.width += (a.high - a.low) / math.Max(1, finish-a.t)
		if p := *prev; p != nil {
			s.pairs++
			if rangeForm(p.sec, p.low, p.high) != rangeForm(a.sec, a.low, a.high) {
				s.flips++
			}
			wa, wb := (p.high-p.low)/p.sec, (a.high-a.low)/a.sec
			if wa > 0 && wb > 0 && math.Abs(math.Log(wb/wa)) > math.Ln2 {
				s.flaps++
			}
			below := func(x *answer) float64 { return math.Log(x.sec / math.Max(x.low, 1e-3*x.sec)) }
			above := func(x *answer) float64 { return math.Log(x.high / x.sec) }
			if math.Abs(math.Log(a.sec/p.sec)) < 0.1 &&
				(below(&a) < below(p)/2 && below(p) > 0.05 || above(&a) < above(p)/2 && above(p) > 0.05) {
				s.narrowed++
			}
		}
		*prev = &a
	}
	for _, o := range obs {
		l := rp.Step(o)
		if o.Total <= 0 || 20*o.Done < o.Total || o.Done >= o.Total || l.State != reports.StateRunning ||
			l.ETAS == nil || l.Low == nil || l.High == nil || l.OwnLow == nil || l.OwnHigh == nil || !(*l.ETAS > 0) {
			prevRaw, prevShown = nil, nil
			continue
		}
		score(&raw, &prevRaw, answer{l.T, *l.ETAS, *l.OwnLow, *l.OwnHigh})
		score(&shown, &prevShown, answer{l.T, *l.ETAS, *l.Low, *l.High})
	}
	return raw, shown
}

// steadyTraces are the recorded corpora's committed traces (each job's first draw, its counter on finish) and the
// demo's job sampled every 30 s.
func steadyTraces(t *testing.T) (map[string][]reports.Observation, map[string]float64) {
	out, finish := map[string][]reports.Observation{}, map[string]float64{}
	for _, dir := range []string{"testdata/peer", "testdata/peer2", "testdata/peer3"} {
		files, err := filepath.Glob(dir + "/*.jsonl")
		if err != nil || len(files) == 0 {
			t.Fatalf("no traces in %s (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, ".iter.jsonl") {
				continue
			}
			obs := readPeerTrace(t, f)
			out[f], finish[f] = obs, obs[len(obs)-1].T
		}
	}
	for _, seed := range []int64{1, 2} {
		obs, f := sim.Trace(sim.DemoScenario(), seed, 30)
		name := fmt.Sprintf("demo seed %d", seed)
		out[name], finish[name] = obs, f
	}
	return out, finish
}

// TestRangeHoldKeepsAnswersSteady replays the recorded corpora and the demo's job as the channel is shown them and
// reads consecutive answers as a person would: the range's ends must not swing from one answer to the next, nor
// its form flip between "(a – b)" and "(or later, up to b)", and the range shown must hold the finish at least
// as often as the estimator's own.
func TestRangeHoldKeepsAnswersSteady(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the recorded corpora")
	}
	if raceDetector {
		// Pure arithmetic, like TestAccuracy: 73 s under the race detector, which finds nothing here. .ci/run
		// runs it without -race.
		t.Skip("replays the corpora; .ci/run runs it without -race")
	}
	t.Parallel()
	var raw, shown steadiness
	traces, finishes := steadyTraces(t)
	for name, obs := range traces {
		finish := finishes[name]
		r, s := steadyReplay(obs, finish)
		t.Logf("%s\n  estimator: %v\n  shown:     %v", name, r, s)
		raw.add(r)
		shown.add(s)
	}
	t.Logf("all\n  estimator: %v\n  shown:     %v", raw, shown)
	pairs := float64(shown.pairs)
	if f := float64(shown.flips) / pairs; f > 0.005 {
		t.Errorf("the range's form flipped in %.1f%% of consecutive answers shown (estimator %.1f%%); want at most 0.5%%",
			100*f, 100*float64(raw.flips)/float64(raw.pairs))
	}
	if f := float64(shown.narrowed) / pairs; f > 0.005 {
		t.Errorf("a side of the range halved while the point held in %.1f%% of consecutive answers shown (estimator %.1f%%); want at most 0.5%%",
			100*f, 100*float64(raw.narrowed)/float64(raw.pairs))
	}
	if shown.covered < raw.covered {
		t.Errorf("the range shown held the finish in %d answers, the estimator's in %d; want at least as many", shown.covered, raw.covered)
	}
	if shown.width > 1.25*raw.width {
		t.Errorf("the range shown is %.0f%% of the time left on average, the estimator's %.0f%%; want at most a quarter wider",
			100*shown.width/float64(shown.answers), 100*raw.width/float64(raw.answers))
	}
}

// TestRangeHoldApply: a wider range is shown at once; a narrower one as the held sides narrow with the time
// passed (half over rangeHalfLife of the time then left), and by at least 40% a newer sample (rangeSampleKeep); a side said in words stays so until the estimator's
// passes three times the threshold; a restart since the hold, or an estimate without a range, starts afresh.
func TestRangeHoldApply(t *testing.T) {
	eta := func(at, sec, low, high float64) reports.ETA {
		return reports.ETA{State: reports.StateRunning, At: at, Seconds: &sec, LowS: &low, HighS: &high}
	}
	var h reports.RangeHold
	h.Keep(eta(1000, 10000, 5000, 20000)) // shown: 2x either way
	for _, c := range []struct {
		name            string
		e               reports.ETA
		wantLow, wantHi float64
		wantRange       string
	}{
		{"a second later the estimator narrows: held, 40% narrower a sample", eta(1001, 10000, 9000, 11000), 6597.5, 15157.2, " (1 h 50 min – 4 h 13 min)"},
		{"a tenth of the time left later: half", eta(2000, 9000, 8500, 9500), 9000 / math.Sqrt2, 9000 * math.Sqrt2, " (1 h 46 min – 3 h 32 min)"},
		{"wider: at once", eta(1001, 10000, 2000, 30000), 2000, 30000, " (33 min – 8 h 20 min)"},
		{"an answer's sample older than the hold: held whole", eta(990, 10000, 9000, 11000), 5000, 20000, " (1 h 23 min – 5 h 33 min)"},
		{"all the time left later: the estimator's", eta(11000, 10000, 9000, 11000), 9000, 11000, " (2 h 30 min – 3 h 3 min)"},
	} {
		got := h.Apply(c.e)
		if math.Abs(*got.LowS-c.wantLow) > 1 || math.Abs(*got.HighS-c.wantHi) > 1 || reports.Range(*got.Seconds, *got.LowS, *got.HighS) != c.wantRange {
			t.Errorf("%s: Apply = %.1f – %.1f%q; want %.1f – %.1f%q", c.name, *got.LowS, *got.HighS,
				reports.Range(*got.Seconds, *got.LowS, *got.HighS), c.wantLow, c.wantHi, c.wantRange)
		}
	}

	// A side said in words keeps its form while the estimator's wanders under rangeReopen.
	h.Keep(eta(1000, 10000, 10000, 20000))
	if got := h.Apply(eta(1010, 10000, 9700, 20000)); reports.Range(*got.Seconds, *got.LowS, *got.HighS) != " (or later, up to 5 h 33 min)" {
		t.Errorf("low side 3%% below after one said in words: %q; want it still in words", reports.Range(*got.Seconds, *got.LowS, *got.HighS))
	}
	if got := h.Apply(eta(1010, 10000, 9000, 20000)); reports.Range(*got.Seconds, *got.LowS, *got.HighS) != " (2 h 30 min – 5 h 33 min)" {
		t.Errorf("low side 10%% below after one said in words: %q; want a figure", reports.Range(*got.Seconds, *got.LowS, *got.HighS))
	}
	var fresh reports.RangeHold
	if got := fresh.Apply(eta(1010, 10000, 9700, 20000)); reports.Range(*got.Seconds, *got.LowS, *got.HighS) != " (2 h 42 min – 5 h 33 min)" {
		t.Errorf("low side 3%% below with no hold: %q; want a figure", reports.Range(*got.Seconds, *got.LowS, *got.HighS))
	}

	// The demo walk's pair: "56 min (or later, up to 1 h 54 min)", then 10 s later the estimator's "46 min (38 min –
	// 56 min)", whose high end was the last answer's point. The high end shown holds (the job did not get through
	// a tenth of its time left in 10 s) but for the sample's 40%; the low end opens, as the estimator's is 17% below
	// its point.
	h.Keep(eta(5000, 3360, 3360, 6840))
	if got := h.Apply(eta(5010, 2760, 2280, 3360)); reports.Duration(*got.Seconds)+reports.Range(*got.Seconds, *got.LowS, *got.HighS) != "46 min (38 min – 1 h 10 min)" {
		t.Errorf("the walk's second answer = %q; want 46 min (38 min – 1 h 10 min)", reports.Duration(*got.Seconds)+reports.Range(*got.Seconds, *got.LowS, *got.HighS))
	}

	// After a restart the hold says nothing; nor once an estimate had no range.
	h.Keep(eta(1000, 10000, 10000, 20000))
	restart := 1005.0
	after := eta(1010, 10000, 9000, 11000)
	after.ResetAt = &restart
	if got := h.Apply(after); *got.LowS != 9000 || *got.HighS != 11000 {
		t.Errorf("after a restart: %.0f – %.0f; want the estimator's 9000 – 11000", *got.LowS, *got.HighS)
	}
	h.Keep(reports.ETA{State: reports.StateStalled, At: 1020})
	if got := h.Apply(eta(1030, 10000, 9000, 11000)); *got.LowS != 9000 || *got.HighS != 11000 {
		t.Errorf("after a stall: %.0f – %.0f; want the estimator's 9000 – 11000", *got.LowS, *got.HighS)
	}
}
