package estimate

// Compact bounds a history to at most max points (max >= 4; smaller values are raised to 4). The newest half
// of the budget is kept at full resolution; older points are thinned to an even spacing in time, except the
// first point and the points that mark structure the estimator needs: both sides of an engine counter reset,
// of the job starting over (done going backwards), and of every start and end of a flat stretch (stall or
// downtime). The input is not modified.
func Compact(hist []Observation, max int) []Observation {
	if max < 4 {
		max = 4
	}
	if len(hist) <= max {
		return hist
	}
	recent := max / 2
	split := len(hist) - recent
	older := hist[:split]
	keep := make([]bool, len(older))
	keep[0] = true
	structural := 1
	mark := func(i int) {
		if i >= 0 && i < len(older) && !keep[i] {
			keep[i] = true
			structural++
		}
	}
	// Restarts as the history counts them (the counters are folded; see estimate.Fold).
	lastG := -1
	for i := 1; i < len(hist) && i <= split; i++ {
		o, p := hist[i], hist[i-1]
		moved := o.Done != p.Done || o.GenTokens != nil && p.GenTokens != nil && *o.GenTokens != *p.GenTokens
		prevMoved := i >= 2 && (p.Done != hist[i-2].Done ||
			p.GenTokens != nil && hist[i-2].GenTokens != nil && *p.GenTokens != *hist[i-2].GenTokens)
		if o.Restarts > p.Restarts && lastG >= 0 {
			mark(lastG)
			mark(i)
		}
		if o.Done < p.Done || moved != prevMoved {
			mark(i - 1)
			mark(i)
		}
		if o.GenTokens != nil {
			lastG = i
		}
	}
	budget := max - recent - structural
	if budget > 0 {
		first, end := older[0].T, older[len(older)-1].T
		step := (end - first) / float64(budget+1)
		next := first + step
		for i := 1; i < len(older) && budget > 0; i++ {
			if keep[i] || older[i].T < next {
				continue
			}
			keep[i] = true
			budget--
			next = older[i].T + step
		}
	}
	out := make([]Observation, 0, max)
	for i, o := range older {
		if keep[i] {
			out = append(out, o)
		}
	}
	// Too many structural points (a run that stalls over and over): thin them evenly, keeping the first.
	if over := len(out) - (max - recent); over > 0 {
		thinned := append(make([]Observation, 0, max), out[0])
		n := len(out) - 1
		want := max - recent - 1
		for k := 0; k < want; k++ {
			thinned = append(thinned, out[1+k*n/want])
		}
		out = thinned
	}
	return append(out, hist[split:]...)
}
