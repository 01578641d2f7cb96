package reports

import (
	"math"

	"runwatch/reports/format"
)

// RangeHold keeps the range an ETA is shown with steady from one answer to the next. The estimator's range
// is recalibrated on every sample, and its ends swung with it: "2 h 40 min (1 h 21 min – 5 h 23 min)", a
// sample later "2 h 39 min (1 h 20 min – 3 h 2 min)", then wide again; "3 h 9 min (2 h 44 min – 3 h 39 min)",
// "3 h 6 min (1 h 33 min – 6 h 14 min)", "3 h 4 min (or later, up to 6 h 10 min)" ten seconds apart. Read in
// the channel, each answer contradicted the one before.
//
// The hold is the range last shown, as its widths either side of the point (log-ratios, so that they follow
// the point). A side of the range shown now is the estimator's, or the side shown before if that was wider,
// narrowed by how much of the time then left has passed since: it halves over rangeHalfLife of it, and narrows by
// at least rangeSampleKeep's 40% each newer sample. A range widens at once (new evidence of doubt is news), and
// narrows as the job makes its way through the time left, never by half from one sample's recalibration alone.
// The range shown is never narrower than the estimator's, so it holds the finish at least as often.
//
// A side within format.OneSided of the point is said in words ("or later, up to 6 h 10 min"); once said so, it
// stays in words until the estimator's side passes rangeReopen, so that the form does not flip between "(a – b)"
// and "(or later, up to b)" from one answer to the next as a side hovers about the threshold.
//
// Its fields are the run's persisted state (JSON). The zero value holds nothing.
type RangeHold struct {
	At       float64 `json:"at"`      // T of the estimate last shown; 0 for none
	Seconds  float64 `json:"seconds"` // its time left
	Below    float64 `json:"below"`   // its range's width below the point: ln(point ÷ low)
	Above    float64 `json:"above"`   // and above: ln(high ÷ point)
	LowShut  bool    `json:"low_shut,omitempty"`
	HighShut bool    `json:"high_shut,omitempty"`
}

// rangeHalfLife is the share of the time left, as last shown, over which a held side of the range halves: a
// range shown wide narrows to the estimator's over about a third of the time it had left, not in one sample.
// Over the recorded corpora's traces and the demo's job (TestRangeHoldKeepsAnswersSteady, 4,151 answers; the
// estimator with the Newey-West slope test) it takes the consecutive answers in which a side of the range halved
// while the point held from 7.6% to 0.2%, the form flips from 1.8% to 0.2%, and those whose width doubled or
// halved from 4.2% to 1.5%; the range holds the finish in 92.7% of answers (88.2%) at a mean width of 109% of the
// time left (95%). Measured on the estimator before it: at 0.05 sides halved 1.2%, width 102%; at 0.2 none,
// width 115%.
const rangeHalfLife = 0.1

// rangeSampleKeep is the most of a held side a newer sample keeps, whatever the time between them: the held side
// narrows toward the estimator's by at least 40% a sample, and no sample alone halves a side
// (0.5 would: TestRangeHoldKeepsAnswersSteady's sides halved in 5.1% of consecutive answers). Held by time
// alone, a range widened for one sample of a densely sampled job stayed wide for dozens: scored as shown
// (BenchmarkAccuracy), the first corpus's ranges held the finish in 97-100% of answers up to 60% done where the
// estimator's own held 86-94%, 26 of its rows above 92% coverage. At 0.85, 20 rows of each of the first two
// corpora were outside 70-92%, all above (of the recorded rows, 14 and 20; at 0.6, 13 and 16); over
// TestRangeHoldKeepsAnswersSteady's 4,151 answers coverage 91.9% -> 90.2%, the mean width 103% -> 98% of the
// time left, form flips 0.1% and sides halved 0.2% either way, widths doubled or halved 1.7% -> 2.3%.
const rangeSampleKeep = 0.6

// rangeReopen is how far (as a log-ratio) the estimator's side of a range must stand from the point before a
// side said in words ("or later") is given a figure again: three times format.OneSided, so that a side
// wandering about the threshold keeps one form.
const rangeReopen = 3 * format.OneSided

// shutWidth is the width of a side that format.Range says in words.
var shutWidth = -math.Log(1 - format.OneSided)

// Apply is e as it is shown after the range the hold keeps: its range no narrower than the estimator's, each
// side no narrower than the held one after the time since (see RangeHold). An estimate that is not running,
// has no range, or comes after a restart the hold predates, is shown as it is. Apply does not change the hold:
// Keep records what was shown.
func (h RangeHold) Apply(e ETA) ETA {
	sec, below, above, ok := rangeWidths(e)
	if !ok {
		return e
	}
	held := h.holds(e)
	if held {
		byTime := math.Exp2(-math.Min(1, math.Max(0, (e.At-h.At)/h.Seconds)) / rangeHalfLife)
		keep := byTime
		if e.At > h.At {
			keep = math.Min(keep, rangeSampleKeep)
		}
		// A sample's narrowing brings a side shown with a figure down to the threshold, not across it, so that the
		// form does not flip from "(a – b)" to "(or later, up to b)" and back as a side hovers about it. It goes
		// into words only when the time since the last sample alone takes the held side below a third of the
		// threshold (the mirror of rangeReopen): late in a job, where a sample is a good share of the time left.
		// Until then a side the estimator would say in words is shown a hair past the threshold ("3 h 24 min
		// (3 h 20 min – 6 h 51 min)").
		side := func(own, held float64) float64 {
			v := math.Max(own, held*keep)
			if held > shutWidth && v <= shutWidth && held*byTime > shutWidth/3 {
				v = 1.01 * shutWidth
			}
			return v
		}
		below, above = side(below, h.Below), side(above, h.Above)
	}
	lowShut := below <= shutWidth || held && h.LowShut && below < rangeReopen
	highShut := above <= shutWidth || held && h.HighShut && above < rangeReopen
	low, high := sec*math.Exp(-below), sec*math.Exp(above)
	if lowShut {
		low = sec
	}
	if highShut {
		high = sec
	}
	e.LowS, e.HighS = &low, &high
	return e
}

// Keep records e as the estimate shown (after Apply); one that is not running or has no range clears the hold.
func (h *RangeHold) Keep(e ETA) {
	sec, below, above, ok := rangeWidths(e)
	if !ok {
		*h = RangeHold{}
		return
	}
	*h = RangeHold{At: e.At, Seconds: sec, Below: below, Above: above, LowShut: below <= shutWidth, HighShut: above <= shutWidth}
}

// holds says whether the hold speaks for e: it was kept on the same run of the job (no restart since). An
// estimate from before the hold (an answer's own sample, taken while the sampler's newer one was kept) is held
// to it whole: it is shown after it.
func (h RangeHold) holds(e ETA) bool {
	return h.At > 0 && h.Seconds > 0 && (e.ResetAt == nil || *e.ResetAt <= h.At)
}

// rangeWidths is a running estimate's time left and its range's widths either side (log-ratios, at least 0);
// ok is false for an estimate without both.
func rangeWidths(e ETA) (sec, below, above float64, ok bool) {
	if e.State != StateRunning || e.Seconds == nil || e.LowS == nil || e.HighS == nil || !(*e.Seconds > 0) {
		return 0, 0, 0, false
	}
	sec = *e.Seconds
	// A low end at 0 (a job that could be done any moment) is as wide as the held side may be.
	below = math.Log(sec / math.Max(*e.LowS, sec*1e-3))
	above = math.Log(math.Max(*e.HighS, sec) / sec)
	return sec, math.Max(0, below), above, true
}
