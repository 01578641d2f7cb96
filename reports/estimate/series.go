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
			st = c.Fold(r, 0, o.T)
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
	// apart (replicas behind a proxy), and counters that see fewer of the job's items finish than its log
	// (coversJob) miss some of its servers: their sum is not known, and a rate from them is wrong either way. The
	// history then has no engine counters at all; the job's own progress says how fast it goes.
	if replicas > max(2, reads/20) || !coversJob(hist, out) {
		for i := range out {
			out[i] = Folded{Seg: out[i].Seg, Restart: out[i].Restart, Unreliable: true}
		}
	}
	return out
}

// coverShare is the least share of the job's finished items the engines' finished-request count must show, once
// coverItems of them have finished, for the counters to stand for the job's servers.
const (
	coverShare = 0.8
	coverItems = 50
)

// coversJob reports whether the engines' folded finished-request count (the histogram's count) kept up with the
// job's own count of finished items at every point of the history. Counters summed over the job's servers count
// every request that finishes; a sum that counts markedly fewer is missing servers: replicas behind one URL,
// each scrape answered by one of them (peer replicas-one-url: the engines counted 60% of the items the job did
// by 1 s and 50% by 4.5 s, while every other trace of the corpus shows 98.9% or more throughout), or a
// data-parallel rank nobody scrapes. Their tokens are a share of the job's, and so are their batch gauges:
// before the steps back gave the replicas away (t = 8.5 s), the estimate from them came out 23% early, 39%
// early and 22% late of the job in successive samples where linear extrapolation was within 6%. Once short, a
// history stays short (a later lump when the other replica answers, 87% at 5.5 s, does not make up for it),
// so the verdict does not flip from one sample to the next. Without the histogram it says nothing.
//
// With the time of blocks without a finished item kept (structural.go), replicas-one-url comes to 1.91% of the
// job, linear extrapolation's own figure (the job's log alone, at a steady rate, is linear extrapolation),
// from 2.44%; no other trace or sim run moves.
func coversJob(hist []Observation, folded []Folded) bool {
	first := -1
	for i, f := range folded {
		if !f.HasFinN {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		done := float64(hist[i].Done - hist[first].Done)
		// The log's count is as of the log's own clock: a log written every 15 s read just before a write is
		// behind the engines, and the items of that lag fall in the next reading's delta (the demo, read at
		// 1,250 done where the engines had finished 1,296: 117 items by the log in 30 s, 71 by the engines, and
		// the counters were dropped for the run). Where the log's elapsed time moved further than the
		// readings' did, its delta is scaled down to the readings' span.
		if a, z := hist[first].Elapsed, hist[i].Elapsed; a != nil && z != nil {
			if span, logSpan := hist[i].T-hist[first].T, *z-*a; span > 0 && logSpan > span {
				done *= span / logSpan
			}
		}
		if done >= coverItems && f.FinN-folded[first].FinN < coverShare*done {
			return false
		}
	}
	return true
}
