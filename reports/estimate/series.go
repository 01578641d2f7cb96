package estimate

// Folded is one observation's engine counters folded across the history (see FoldSeries).
type Folded struct {
	Gen, Fin, FinN          float64 // generated tokens, finished-length sum and count, since the first observation
	HasGen, HasFin, HasFinN bool
	// GenBase and FinBase are Gen and Fin when the current server lifetime began, so that Gen-GenBase less
	// Fin-FinBase is what the requests in flight have decoded so far.
	GenBase, FinBase float64
	Seg              int  // server lifetime: increments at each restart
	Restart          bool // a restart happened between the previous observation and this one
	// Unreliable: the counters kept stepping back (replicas too close to tell apart) and are left out.
	Unreliable bool
}

// FoldSeries folds the engine counters of a history (sorted by T) with one Counter, as if the observations'
// sums were one server: a counter that drops to a fraction of itself restarted, one that steps back a little
// (a replica answering, a stale reading) counts from there on, and an observation whose Restarts went up marks
// a restart the sampler saw while carrying its counters.
func FoldSeries(hist []Observation) []Folded {
	out := make([]Folded, len(hist))
	var c Counter
	var reads, replicas int
	var first Counts
	firstSet := [3]bool{}
	for i, o := range hist {
		f := Folded{}
		if i > 0 {
			p := out[i-1]
			f.Seg, f.GenBase, f.FinBase = p.Seg, p.GenBase, p.FinBase
		}
		r := Missing()
		if o.GenTokens != nil {
			r.Gen = *o.GenTokens
		}
		if o.FinishedLenSum != nil {
			r.FinSum = *o.FinishedLenSum
			if o.FinishedLenCount != nil {
				r.FinCount = *o.FinishedLenCount
			}
		}
		before := c.Total
		var st Step
		if o.GenTokens != nil || o.FinishedLenSum != nil {
			c, st = c.Add(r, 0, o.T)
			reads++
			if st.Replica || st.Switched {
				replicas++
			}
		}
		marked := i > 0 && o.Restarts > hist[i-1].Restarts
		if st.Restart || marked {
			f.Restart = true
			f.Seg++
		}
		tot := c.Total
		// The first reading of each counter is where "since the first observation" starts.
		if valid(r.Gen) && !firstSet[0] {
			firstSet[0], first.Gen = true, tot.Gen
			f.GenBase = -first.Gen
		}
		if valid(r.FinSum) && !firstSet[1] {
			firstSet[1], first.FinSum = true, tot.FinSum
			f.FinBase = -first.FinSum
		}
		if valid(r.FinCount) && !firstSet[2] {
			firstSet[2], first.FinCount = true, tot.FinCount
		}
		f.HasGen, f.HasFin, f.HasFinN = valid(r.Gen), valid(r.FinSum), valid(r.FinSum) && valid(r.FinCount)
		f.Gen, f.Fin, f.FinN = tot.Gen-first.Gen, tot.FinSum-first.FinSum, tot.FinCount-first.FinCount
		if f.Restart {
			// What the new lifetime counted is in the totals already: its base is where the old one ended.
			f.GenBase, f.FinBase = before.Gen-first.Gen, before.FinSum-first.FinSum
			if marked && !st.Restart {
				f.GenBase, f.FinBase = out[i-1].Gen, out[i-1].Fin
			}
		}
		if i > 0 {
			p := out[i-1]
			if !f.HasGen {
				f.Gen = p.Gen
			}
			if !f.HasFin {
				f.Fin, f.FinN = p.Fin, p.FinN
			}
		}
		out[i] = f
	}
	// Counters that keep stepping back are several servers answering in turn with values too close to tell
	// apart (replicas behind a proxy): their sum is not known, and a rate from them is wrong either way. The
	// history then has no engine counters at all; the job's own progress says how fast it goes.
	if replicas > max(2, reads/20) {
		for i := range out {
			out[i] = Folded{Seg: out[i].Seg, Restart: out[i].Restart, Unreliable: true}
		}
	}
	return out
}
