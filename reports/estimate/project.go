package estimate

import "math"

// Projection is the tokens a job will have processed when it ends, prompt and completion both (hidden states
// cover whole sequences), with the range of the censored mean completion.
type Projection struct {
	Low, Point, High float64 // tokens
	Items            float64 // items in the job
	// PerItemLow, PerItem and PerItemHigh are the tokens per item the figures use: prompt tokens per started
	// item plus the mean completion.
	PerItemLow, PerItem, PerItemHigh float64
	// PromptPerItem is the prompt part of those (the completions are the rest), so that an answer can set
	// them beside the completion lengths it shows elsewhere.
	PromptPerItem float64
	Measured      bool // the job is done: the counts are what was processed
}

// Project projects a job's tokens from an observation (the engines' generated-token totals, the log's
// progress) and the engines' prompt tokens. The items started (finished and in flight) count at the censored
// mean completion (see CensoredMean): finished items at their lengths, in-flight ones at least as long as they
// are. The items not started yet count at perItem, when positive: the estimator's own tokens per item for the
// items to come, from a longer history, which follows lengths that drift where the mean of the run so far
// lags (the demo at 29% done projected 785-807 completion tokens per item, the verdict's high figure among
// them, while its items were coming out at 1,051); the range spans both figures. Without perItem they count at
// the censored mean too. Before 1% of the items are done it gives nothing rather than a wild guess.
func Project(o Observation, prompt, perItem float64) (Projection, bool) {
	if o.Total <= 0 {
		return Projection{}, false
	}
	items := float64(o.Total)
	if o.GenTokens != nil && o.Done >= o.Total {
		t := *o.GenTokens + prompt
		return Projection{Low: t, Point: t, High: t, Items: items, PerItemLow: t / items, PerItem: t / items,
			PerItemHigh: t / items, Measured: true}, true
	}
	if float64(o.Done) < 0.01*items {
		return Projection{}, false
	}
	l, ok := CensoredMean(o, KindUnknown)
	if !ok {
		// The log only: its mean completion, prompts not counted.
		if o.AvgCompletion == nil || *o.AvgCompletion <= 0 {
			return Projection{}, false
		}
		m := *o.AvgCompletion
		l = Lengths{Low: m, Point: m, High: m}
	}
	started := l.Finished + l.InFlight
	promptPer := 0.0
	if started > 0 {
		promptPer = prompt / started
	}
	fwdLow, fwd, fwdHigh := l.Low, l.Point, l.High
	if perItem > 0 {
		if o.MaxTokens > 0 {
			perItem = math.Min(perItem, float64(o.MaxTokens)) // no completion is longer
		}
		fwdLow, fwd, fwdHigh = math.Min(l.Low, perItem), perItem, math.Max(l.High, perItem)
	}
	rest := math.Max(0, items-started)
	mean := func(now, ahead float64) float64 { return (math.Min(started, items)*now + rest*ahead) / items }
	p := Projection{Items: items, PerItemLow: promptPer + mean(l.Low, fwdLow), PerItem: promptPer + mean(l.Point, fwd),
		PerItemHigh: promptPer + mean(l.High, fwdHigh), PromptPerItem: promptPer}
	p.Low, p.Point, p.High = items*p.PerItemLow, items*p.PerItem, items*p.PerItemHigh
	return p, true
}
