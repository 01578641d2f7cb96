package estimate

// Fold converts a history whose engine counters are as the servers gave them (a recorded trace: the sum over
// servers, starting again from zero at each restart, stepping back when replicas behind one address answer in
// turn) into the one form histories have everywhere: totals that only grow, as the monitor folds its live
// samples. It folds the sum with one Counter, as if it were one server: a counter that drops to a fraction of
// itself restarted (counted in Restarts), one that steps back a little (a replica answering, a stale reading)
// counts from there on (counted in StepsBack). A history already folded comes back as it is, so every reader of
// a trace can fold it once, when it reads it, and the estimator never folds again.
func Fold(hist []Observation) []Observation {
	out := make([]Observation, len(hist))
	var c Counter
	var restarts, steps int64
	for i, o := range hist {
		if o.GenTokens != nil || o.FinishedLenSum != nil {
			r := Missing()
			if o.GenTokens != nil {
				r.Gen = *o.GenTokens
			}
			if o.FinishedLenSum != nil && o.FinishedLenCount != nil {
				r.FinSum, r.FinCount = *o.FinishedLenSum, *o.FinishedLenCount
			}
			if o.LengthCapped != nil {
				r.Capped = *o.LengthCapped
			}
			st := c.Fold(r, 0, o.T)
			if st.Restart {
				restarts++
			}
			if st.Replica || st.Switched {
				steps++
			}
			tot := c.Total
			if o.GenTokens != nil {
				o.GenTokens = ptrTo(tot.Gen)
			}
			if o.FinishedLenSum != nil && o.FinishedLenCount != nil {
				o.FinishedLenSum, o.FinishedLenCount = ptrTo(tot.FinSum), ptrTo(tot.FinCount)
			}
			if o.LengthCapped != nil {
				o.LengthCapped = ptrTo(tot.Capped)
			}
		}
		o.Restarts += restarts
		o.StepsBack += steps
		out[i] = o
	}
	return out
}

func ptrTo(v float64) *float64 { return &v }

// Folded is one observation's engine counters as the estimator reads them: since the first observation, with
// the server lifetime they are in.
type Folded struct {
	Gen, Fin, FinN          float64 // generated tokens, finished-length sum and count, since the first observation
	HasGen, HasFin, HasFinN bool
	// GenBase and FinBase are Gen and Fin when the current server lifetime began, so that Gen-GenBase less
	// Fin-FinBase is what the requests in flight have decoded so far.
	GenBase, FinBase float64
	Seg              int  // server lifetime: increments at each restart
	Restart          bool // a restart happened between the previous observation and this one
	// Unreliable: the counters kept stepping back (replicas too close to tell apart) or see fewer of the job's
	// items than its log, and are left out.
	Unreliable bool
}

// folds reads a folded history's engine counters (see Fold): each as a difference from the first observation
// that has it, a restart where Restarts went up (the batch starts afresh there, the totals carry on).
func folds(hist []Observation) []Folded {
	out := make([]Folded, len(hist))
	var g0, f0, n0 float64
	var gSet, fSet bool
	reads := 0
	for i, o := range hist {
		f := Folded{}
		if i > 0 {
			p := out[i-1]
			f.Seg, f.GenBase, f.FinBase = p.Seg, p.GenBase, p.FinBase
			f.Gen, f.Fin, f.FinN = p.Gen, p.Fin, p.FinN
			if o.Restarts > hist[i-1].Restarts {
				f.Restart = true
				f.Seg++
				// What the new lifetime counted is in the totals already: its base is where the old one ended.
				f.GenBase, f.FinBase = p.Gen, p.Fin
			}
		}
		if o.GenTokens != nil || o.FinishedLenSum != nil {
			reads++
		}
		if o.GenTokens != nil {
			if !gSet {
				g0, gSet = *o.GenTokens, true
				if !f.Restart {
					f.GenBase = -g0 // the server counted from zero: the history began this far into its lifetime
				}
			}
			f.Gen, f.HasGen = *o.GenTokens-g0, true
		}
		if o.FinishedLenSum != nil && o.FinishedLenCount != nil {
			if !fSet {
				f0, n0, fSet = *o.FinishedLenSum, *o.FinishedLenCount, true
				if !f.Restart {
					f.FinBase = -f0
				}
			}
			f.Fin, f.FinN = *o.FinishedLenSum-f0, *o.FinishedLenCount-n0
			f.HasFin, f.HasFinN = true, true
		}
		out[i] = f
	}
	// Counters that keep stepping back are several servers answering in turn with values too close to tell
	// apart (replicas behind a proxy), and counters that see fewer of the job's items finish than its log
	// (coversJob) miss some of its servers: their sum is not known, and a rate from them is wrong either way. The
	// history then has no engine counters at all; the job's own progress says how fast it goes.
	steps := 0
	if n := len(hist); n > 0 {
		steps = int(hist[n-1].StepsBack - hist[0].StepsBack)
	}
	if steps > max(2, reads/20) || !coversJob(hist, out) {
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
