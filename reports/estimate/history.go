package estimate

import (
	"math"
	"sort"
)

// The estimator's time scales all follow Config.Window, which by default follows the job's own pace
// (PaceWindow: about six request durations), so that a job watched at another pace (the accelerated demo, a
// job replayed 10x slower) gets the same figures: blocks of a third of it (whose rates it
// compares to find the current level of throughput and tokens per item), a warm-up of one window after a fresh
// start, a look-back of two thirds of it for pauses, and two and four windows for averaging the batch's age.

// point is one observation with the engines' counters read as folds reads them.
type point struct {
	t        float64
	active   float64 // seconds up to t in which the run progressed (stalls and downtime left out)
	done     float64
	g        float64 // generated tokens since the first point, folded
	fin      float64 // tokens of finished items since the first point (engine histogram or log average)
	finN     float64 // items the engine histogram counted since the first point (hasFinN)
	age      float64 // tokens decoded so far by the requests in flight (g minus fin since server start)
	hasG     bool    // the engines answered: g and running are known
	hasFin   bool    // fin is known
	hasFinN  bool    // finN is known: fin and finN come from the same scrape
	hasAge   bool    // age is known
	running  float64 // requests in the batch; 0 when unknown
	queued   bool    // requests were waiting for a slot: the engine ran as many as it could take
	seg      int     // engine counter segment: increments at each server restart
	progress bool    // done or tokens moved since the previous point
}

// series is a run's history prepared for estimation.
type series struct {
	window    float64 // Config.Window
	pts       []point
	resets    []float64 // T of each engine counter reset
	restarts  []float64 // T the batch started afresh: resets, and pauses in completions when there are no counters
	slots     float64   // largest batch seen: the engine's concurrency
	maxTokens float64   // the latest max_tokens
	// capAt is the max_tokens most of the finished items ran under (by items finished), the cap that capped
	// describes: a job that raises max_tokens for its last items (a second pass over the truncated ones) has
	// capped measured at the old cap.
	capAt float64
	// capped is the share of finished requests the engines stopped at max_tokens (LengthCapped over
	// FinishedLenCount of the latest scrape that has both; the two reset together), -1 when unknown.
	capped float64
	kind   CounterKind // what the engines' token counter means
	// pre is the job before the history, when the history starts mid-job (see before).
	pre before
	// runTokensPerS and runItemsPerS are the throughput's run averages: a rate the estimate says is the
	// whole run's must read as they do (see window.notAverage).
	runTokensPerS, runItemsPerS float64
	// logModified is when the job log last changed, as the latest observation says (0: unknown).
	logModified float64
	// countersLeftOut: the engines' counters were judged not to stand for the job (replicas answering in
	// turn, or a sum that misses servers; see folds), so no figure may come from them.
	countersLeftOut bool
	// foreign: they were left out because they count more than this job (another job on the same servers).
	foreign bool
	// kindMoving is what the counter meant up to the last progress (see stalledSince).
	kindMoving CounterKind
	// total is the job's item count (0 unknown); now is the T of the latest observation at which the engines
	// answered with requests running, nowSeg the engine counter segment it is in: the points the rates use may
	// end before it (busyUntil), and the drain counts the decoding since (survivors.go), within one server
	// lifetime.
	total, now float64
	nowSeg     int
	// cut is the first point of the batch's current regime (see regime.go): the rates' blocks start there.
	cut int
	// stall is how long nothing may move before the run is stalled: the run file's stall_after, or by the job's
	// own pace (stallAfter).
	stall float64
}

// cappedShare is the share of finished requests stopped at max_tokens, from the latest observation whose
// engines report both the capped count and the finished count (-1 when none does, or too few have finished
// for a share to mean anything).
func cappedShare(hist []Observation) float64 {
	for i := len(hist) - 1; i >= 0; i-- {
		o := hist[i]
		if o.LengthCapped != nil && o.FinishedLenCount != nil && *o.FinishedLenCount >= 20 {
			return math.Max(0, math.Min(1, *o.LengthCapped / *o.FinishedLenCount))
		}
	}
	return -1
}

// currentRun drops the history before the job last started over (done went backwards).
func currentRun(hist []Observation) []Observation {
	for i := len(hist) - 1; i > 0; i-- {
		if hist[i].Done < hist[i-1].Done {
			return hist[i:]
		}
	}
	return hist
}

// untilFinish cuts a finished run's history at its finish, the first sample with every item done: the samples
// after it are idle time, and rates over them would fall further the longer the finished run is asked about.
// A run whose total grew after it was reached is not finished.
func untilFinish(hist []Observation) []Observation {
	if last := hist[len(hist)-1]; last.Total <= 0 || last.Done < last.Total {
		return hist
	}
	for i, o := range hist {
		if o.Total > 0 && o.Done >= o.Total {
			return hist[:i+1]
		}
	}
	return hist
}

// build reads the engine counters as folds does (restarts, replicas, steps back) and measures
// active time: an interval with no progress counts as idle when the
// engines say they generated nothing or do not answer (a restart), or, without token data, when the flat
// stretch lasts half of stallAfter.
func build(hist []Observation, cfg Config) series {
	s := series{window: cfg.Window, pts: make([]point, len(hist))}
	engineFin := false
	for _, o := range hist {
		if o.FinishedLenSum != nil {
			engineFin = true
			break
		}
	}
	folded := folds(hist)
	s.countersLeftOut = len(folded) > 0 && folded[len(folded)-1].Unreliable
	s.foreign = len(folded) > 0 && folded[len(folded)-1].Foreign
	s.pre = beforeHistory(hist[0], s.countersLeftOut || !CountsJob(hist[0], float64(hist[0].MaxTokens)))
	if last := hist[len(hist)-1]; s.pre.ok && last.T > hist[0].T && last.Done > hist[0].Done {
		// An elapsed time the job cannot have taken: the engines' start time of a server that idled before the
		// job (started last night, the job this morning, its counters the job's alone) made the job before the
		// history one block of a day at a tenth of a token a second, and the ETA 324,853,262 s.
		seen := float64(last.Done-hist[0].Done) / (last.T - hist[0].T)
		if s.pre.items/s.pre.seconds < seen/preSlowest {
			s.pre = before{}
		}
	}
	if m := hist[len(hist)-1].LogModified; m != nil {
		s.logModified = *m
	}
	s.capped = cappedShare(hist)
	logFinBase := 0.0 // the log's finished tokens when the current server lifetime began
	finishedUnder := map[int64]float64{}
	for i, o := range hist {
		if i > 0 && o.MaxTokens > 0 && o.Done > hist[i-1].Done {
			finishedUnder[o.MaxTokens] += float64(o.Done - hist[i-1].Done)
			if most := finishedUnder[int64(s.capAt)]; finishedUnder[o.MaxTokens] > most {
				s.capAt = float64(o.MaxTokens)
			}
		}
		f := folded[i]
		p := point{t: o.T, done: float64(o.Done), g: f.Gen, seg: f.Seg}
		if o.MaxTokens > 0 {
			s.maxTokens = float64(o.MaxTokens)
		}
		if f.Restart {
			s.resets = append(s.resets, o.T)
		}
		gBase, finBase := f.GenBase, f.FinBase
		if f.HasGen {
			p.hasG = true
			if o.Running != nil {
				p.running = *o.Running
				s.slots = math.Max(s.slots, p.running)
			}
			p.queued = o.Waiting != nil && *o.Waiting > 0
		}
		switch {
		case engineFin:
			p.fin, p.finN = f.Fin, f.FinN
			p.hasFin, p.hasFinN = f.HasFin, f.HasFinN
		case o.AvgCompletion != nil:
			p.hasFin = true
			p.fin = *o.AvgCompletion * float64(o.Done)
			// The log's finished tokens are the whole job's: the current lifetime's base is where it began.
			finBase = logFinBase
			if f.Restart && i > 0 {
				finBase = s.pts[i-1].fin
				logFinBase = finBase
			}
		}
		// The age means something only with the batch it belongs to.
		if p.hasG && p.hasFin && o.Running != nil {
			p.age, p.hasAge = (p.g-gBase)-(p.fin-finBase), true
		}
		// The age of the batch cannot be negative nor exceed max_tokens per request; anything else means the
		// counters cover more than this job.
		if p.hasAge && (p.age < 0 || s.maxTokens > 0 && p.age > p.running*s.maxTokens) {
			p.hasAge = false
		}
		if i > 0 {
			prev := s.pts[i-1]
			p.progress = p.done > prev.done || p.hasG && p.g > prev.g
		}
		if p.hasG && p.running > 0 {
			s.now, s.nowSeg = p.t, p.seg
		}
		s.total = float64(o.Total)
		s.pts[i] = p
	}
	// A counter that moves only when requests finish says nothing of the batch's age.
	if s.kind = DetectKind(hist, folded); s.kind == OnFinish {
		for i := range s.pts {
			s.pts[i].hasAge = false
		}
	}
	// What the counter meant up to the last progress: a stretch in which nothing moves at all (a stall, a
	// hung server) reads like a counter that waits for finishes when the engines give no finished lengths.
	// Only an on-finish reading can change: a flat stretch adds no vote for a counter per iteration.
	s.kindMoving = s.kind
	if lp := s.lastProgress(); s.kind == OnFinish && lp < len(hist)-1 {
		s.kindMoving = DetectKind(hist[:lp+1], folded[:lp+1])
	}
	s.stall = cfg.StallAfter
	if s.stall <= 0 {
		s.stall = s.stallAfter()
	}
	// Active time: leave out idle stretches.
	engines := false
	for _, p := range s.pts {
		engines = engines || p.hasG
	}
	// quiet is an interval with no progress or, without token counts, with far fewer items than the rate
	// before it would have finished (a server restart the log does not mention: the few items in flight
	// finish, then nothing until the batch refills).
	//
	// Not in the job's first window: its first batch started all at once, the short requests finish in a
	// burst and the long ones after a gap, which is the job's start, not a restart (with replicas behind one
	// address, whose counters are left out, the gap took a second of the first 2.5 s for a restart, and the
	// rates from the active time after it ran 10% ahead of the job's).
	quiet := func(i int) bool {
		if !s.pts[i].progress {
			return true
		}
		if engines || s.starting(i-1) {
			return false
		}
		return isPause(s.pts[i].done-s.pts[i-1].done, s.recentItemRate(i-1)*(s.pts[i].t-s.pts[i-1].t))
	}
	for i := 1; i < len(s.pts); {
		if !quiet(i) {
			s.pts[i].active = s.pts[i-1].active + s.pts[i].t - s.pts[i-1].t
			i++
			continue
		}
		j := i // the quiet stretch is the intervals i..j-1, ending at point j-1
		tokensKnown, down, flat, decoding := true, false, true, s.kind == OnFinish
		for j < len(s.pts) && quiet(j) {
			// A counter that moves only on finish stands still while requests decode: flat is not idle.
			tokensKnown = tokensKnown && s.pts[j].hasG && s.pts[j-1].hasG && s.kind != OnFinish
			down = down || engines && !s.pts[j].hasG
			flat = flat && !s.pts[j].progress
			decoding = decoding && s.pts[j].hasG && s.pts[j].running > 0
			j++
		}
		span := s.pts[j-1].t - s.pts[i-1].t
		pause := false
		if !engines && !s.starting(i-1) {
			pause = isPause(s.pts[j-1].done-s.pts[i-1].done, s.recentItemRate(i-1)*span)
		}
		// An on-finish counter's flat stretch with requests running is those requests decoding, until it has
		// lasted longer than the longest of them can take (then the engine is frozen, answering or not).
		long := s.stall / 2
		if decoding {
			long = math.Max(long, stallLongest*s.longestRequest(i))
		}
		idle := flat && (tokensKnown || span >= long) || down || pause
		if pause && j < len(s.pts) {
			s.restarts = append(s.restarts, s.pts[j-1].t)
		}
		for k := i; k < j; k++ {
			s.pts[k].active = s.pts[k-1].active
			if !idle {
				s.pts[k].active += s.pts[k].t - s.pts[k-1].t
			}
		}
		i = j
	}
	s.restarts = append(s.restarts, s.resets...)
	sort.Float64s(s.restarts)
	return s
}

// pauseShare and pauseItems are the pause rule: a stretch in which fewer than pauseShare of the items the
// recent item rate expects finished, pauseItems or more expected in all, is a pause (a server restart the log
// does not mention, a SIGSTOP), not a slow stretch of the job. build uses it for active time without token
// counts, gapCounts for the past forecasts the point's errors leave out.
const pauseShare, pauseItems = 0.2, 20

// isPause applies the pause rule to a stretch in which done items finished of expected.
func isPause(done, expected float64) bool {
	return expected >= pauseItems && done < pauseShare*expected
}

// starting reports whether point i is in the job's first window. Its first batch started all at once, the
// short requests finish in a burst and the long ones after a gap: the job's start, not a pause.
func (s series) starting(i int) bool { return s.pts[0].done == 0 && s.pts[i].t < s.pts[0].t+s.window }

// recentItemRate is the item rate over two thirds of a window up to point i (0 when unknown).
func (s series) recentItemRate(i int) float64 {
	// The last point at least two thirds of a window before i, else the first: a binary search, as the
	// chart runs the estimator over every prefix of a long history.
	k := max(0, sort.Search(i+1, func(j int) bool { return s.pts[i].t-s.pts[j].t < 2*s.window/3 })-1)
	if d := s.pts[i].t - s.pts[k].t; d > 0 {
		return (s.pts[i].done - s.pts[k].done) / d
	}
	return 0
}

// busyUntil is the index of the last point the rates may use: the last that moved, or with a counter that
// moves only on finish, in the warm-up after a fresh start, the last of the points after it at which the
// engines answered with requests running. Such a counter stands still while requests decode, and a batch
// that started all at once finishes its short requests first, then nothing while its long ones decode: that
// is work the items in flight are doing, not a pause. peer small (150 items, 16 at a time) went 1.25 s
// without a finished item in its first batch, and the estimate kept the rate of the short ones before (34%
// early where linear extrapolation, which counts the time, was 2% late): 14.00% -> 12.44% (linear 12.64%).
// Past the warm-up a flat stretch is one of a lumpy job's gaps, and counting it there moved onfinish-lumpy
// 5.21% -> 6.06% (linear 5.78%).
func (s series) busyUntil() int {
	last := s.lastProgress()
	if s.kind != OnFinish {
		return last
	}
	for i := last + 1; i < len(s.pts) && s.pts[i].hasG && s.pts[i].running > 0 && s.warming(s.pts[i].t, s.pts[i].t, s.window); i++ {
		last = i
	}
	return last
}

// lastProgress is the index of the last point that moved (0 when none did).
func (s series) lastProgress() int {
	for i := len(s.pts) - 1; i > 0; i-- {
		if s.pts[i].progress {
			return i
		}
	}
	return 0
}

// warming reports whether a block from T a to T z overlaps the warm-up after a fresh start of the batch: the
// job's start, a server restart, or (without engine counters) a pause in completions. All requests then start
// together, the short ones finish first, and the finished items are biased short for a while.
func (s series) warming(a, z, warm float64) bool {
	if s.pts[0].done == 0 && a < s.pts[0].t+warm {
		return true
	}
	for _, r := range s.restarts {
		if a < r+warm && z > r {
			return true
		}
	}
	return false
}

// restartIn reports whether the batch started afresh after T a and by T z.
func (s series) restartIn(a, z float64) bool {
	for _, r := range s.restarts {
		if a < r && r <= z {
			return true
		}
	}
	return false
}

// saturated reports whether every request slot was busy through a block (after its first point), so its
// token rate is the engine's full-batch rate.
//
// onFinishFull: with a counter that moves on finish, a block whose batch was at most one request short on
// average is full. Such a counter credits a block with the tokens of the requests that finished in it, decoded
// over their whole lives, and the gauge is read as they leave, so the blocks in which most requests finish (and
// most tokens arrive) are the ones whose samples show the batch short. With a small batch 0.9 of it is less than
// one request (7.2 of 8), and such a block was left out of the token rate while its items counted in tokens per
// item: peer onfinish-lumpy (8 slots, ~2,000 tokens a request) lost a block of 12,700 tokens and 19 items at
// 37% done, its rate 2,570 tok/s where every block gave 3,100 (the rest of the job ran at 3,200-3,400), and the
// estimate came out 10-22% of the job late where linear extrapolation was within 1%: 6.00% -> 5.00% of the job
// (linear 5.78%), no other trace of the corpus moved (their batches are 16 or more, or queued).

func (s series) saturated(b block) bool {
	pts := s.pts[b.from+1 : b.to+1]
	// Requests waiting throughout: the engine ran all it could take (its KV cache, not the largest batch seen,
	// set the batch), so the block's rate is its full rate whatever the gauge of running requests says.
	queued := len(pts) > 0
	for _, p := range pts {
		queued = queued && p.hasG && p.queued
	}
	if queued {
		return true
	}
	if s.kind == OnFinish {
		// Tokens counted on finish arrive as a request leaves, when the batch is one short for a moment: a
		// sample there says nothing of the batch. The mean over the block does, and one short on average is
		// still full (onFinishFull).
		var sum float64
		n := 0
		for _, p := range pts {
			if p.hasG {
				sum += p.running
				n++
			}
		}
		return n == 0 || sum/float64(n) >= math.Min(0.9*s.slots, s.slots-1)
	}
	for _, p := range pts {
		if p.hasG && p.running < 0.9*s.slots {
			return false
		}
	}
	return true
}

// stalledSince returns the T of the last progress when nothing has moved for stallAfter seconds, seen by two
// samples after it at least. One sample after a gap longer than stallAfter (the bot's machine suspended with
// the job's, or the bot down a while) says only that nothing moved while nobody looked: the job may be
// carrying on already, and the next sample tells. Without the second look a laptop's 50-minute sleep read as
// a 50-minute stall, and warned.
//
// A history in which nothing has moved yet can still show a stall the job's log dates: when the log, the
// progress source, last changed stallAfter ago and no engine has requests running, the job stopped then. A bot
// started (or a `bot ask`) two hours after the job died read its last progress line as the job's pace: "No,
// it's moving. 0.74 items/s", "ETA 9 h 20 min". That needs no second look: the log's own time says it.
func (s series) stalledSince(stallAfter float64) (float64, bool) {
	lp := s.lastProgress()
	since := s.pts[lp].t
	// A server restart since is activity too: its requests are sent again and start decoding from nothing.
	for _, r := range s.resets {
		if r > since {
			since = r
			for lp < len(s.pts)-1 && s.pts[lp].t < r {
				lp++
			}
		}
	}
	lastPt := s.pts[len(s.pts)-1]
	last := lastPt.t
	if lp == 0 && s.logModified > 0 && s.logModified < since && !(lastPt.hasG && lastPt.running > 0) {
		return s.logModified, last-s.logModified >= stallAfter
	}
	if s.kindMoving == OnFinish && lastPt.hasG && lastPt.running > 0 && lastPt.seg == s.pts[lp].seg {
		// A counter that moves on finish stands still while the requests running decode: nothing moves
		// until one finishes, and the longest may take as long as max_tokens takes a request in a full
		// batch. The peer's stragglers replayed 100x slower (fourteen requests of up to 4,096 tokens, 21 s
		// each at its own pace) read "stalled" for ten minutes of such decoding. What the counter meant is
		// judged up to the last progress: without the engines' finished lengths, a stall's flat counter with
		// requests running reads as one that waits for finishes (runwatch's sim stalled for 30 min, as its
		// monitor records it, was called stalled 8 min late).
		stallAfter = math.Max(stallAfter, stallLongest*s.longestRequest(len(s.pts)))
	}
	return since, last-since >= stallAfter && len(s.pts)-1-lp >= 2
}

// longestRequest is how long the longest request the job can send takes in a full batch: max_tokens (or, where
// it is unknown, inflightCap times the mean finished length) at one request's share of the run's token rate
// over its active time, measured in the latest server lifetime that shows one (a restarted server's first
// seconds show none) and up to its last progress (a flat stretch of decoding is active time that shows no
// tokens yet), from the points before end. 0 when the history does not say.
func (s series) longestRequest(end int) float64 {
	if s.slots <= 0 || end <= 0 {
		return 0
	}
	for seg := s.pts[end-1].seg; seg >= 0; seg-- {
		first, last := -1, -1
		for i, p := range s.pts[:end] {
			if p.hasG && p.seg == seg {
				if first < 0 {
					first = i
				}
				if p.progress || last < 0 {
					last = i
				}
			}
		}
		if first < 0 {
			continue
		}
		a, z := s.pts[first], s.pts[last]
		active := z.active - a.active
		if !(active > 0) || !(z.g > a.g) {
			continue
		}
		cap := s.maxTokens
		if cap <= 0 && z.done > a.done {
			cap = inflightCap * (z.g - a.g) / (z.done - a.done)
		}
		return cap / ((z.g - a.g) / active / s.slots)
	}
	return 0
}

// before is what the first observation says of the job before the history began, when runwatch started
// watching (or lost its history) mid-job: items done in the job's own elapsed seconds, and the engines' tokens
// over them when their counter stands for the job. It is one long block of the job's past, the same evidence
// a single sample's estimate uses, so that the first answers after a mid-job start do not rest on a minute of
// samples alone.
type before struct {
	ok             bool
	items, seconds float64
	tokens         float64 // 0 when unknown
	lengths        measure // tokens of finished items over their count (den 0 when unknown)
}

// preSlowest is how many times slower than the history's own item rate the job before it may have run and
// still count: a job whose rate fell 4x (a throughput drop, a queue that emptied) is still one job; a rate a
// tenth of the history's, or a thousandth, says the elapsed time is not the job's.
const preSlowest = 4.0

func beforeHistory(o Observation, countersLeftOut bool) before {
	if o.Done <= 0 || o.Elapsed == nil || !(*o.Elapsed > 0) || o.Running != nil && float64(o.Done) < *o.Running {
		return before{} // the job's start is in the history, or its first batch has not turned over
	}
	b := before{ok: true, items: float64(o.Done), seconds: *o.Elapsed}
	if o.GenTokens != nil && *o.GenTokens > 0 && !countersLeftOut {
		b.tokens = *o.GenTokens
	}
	switch {
	case o.FinishedLenSum != nil && o.FinishedLenCount != nil && *o.FinishedLenCount > 0 && !countersLeftOut:
		b.lengths = measure{*o.FinishedLenSum, *o.FinishedLenCount}
	case o.AvgCompletion != nil && *o.AvgCompletion > 0:
		b.lengths = measure{*o.AvgCompletion * float64(o.Done), float64(o.Done)}
	}
	return b
}

// stallGaps is how many of the job's own longer gaps between progress (the 90th percentile of them) nothing may
// move before the run is stalled, and stallSamples the fewest sampling intervals: a threshold that follows the
// job's pace, where a fixed 600 s never called a frozen server stalled on a job that moves every second (150 s
// without progress on a held-out job read "running" with a sliding finish), and would call a slow one stalled
// between two of its finishes. stallMinGaps is how many gaps make a pace; with fewer, the longest gap so far
// stands for it. A history in which nothing has moved yet has no pace at all: stallUnknown seconds (the old
// default) then, as the first batch of a job may take that long to turn over.
const (
	// stallLongest is how many times the longest request a full batch can take a counter that moves on finish
	// may stand still while requests run (see stalledSince).
	stallLongest = 1.2
	stallGaps    = 6
	stallSamples = 4
	stallMinGaps = 5
	stallUnknown = 600
)

// stallAfter is how long nothing may move before the run is stalled, by the job's own pace: stallGaps times the
// 90th percentile of its gaps between progress (points where done or the tokens moved), and no less than
// stallSamples sampling intervals.
func (s series) stallAfter() float64 {
	var gaps, steps []float64
	last := -1
	for i, p := range s.pts {
		if i > 0 {
			steps = append(steps, p.t-s.pts[i-1].t)
		}
		if i == 0 || p.progress {
			if last >= 0 {
				gaps = append(gaps, p.t-s.pts[last].t)
			}
			last = i
		}
	}
	if len(gaps) == 0 || len(steps) == 0 {
		return stallUnknown
	}
	sort.Float64s(gaps)
	q := gaps[len(gaps)-1]
	if len(gaps) >= stallMinGaps {
		q = gaps[int(0.9*float64(len(gaps)-1))]
	}
	return math.Max(stallGaps*q, stallSamples*median(steps))
}

// frozen reports whether the engines stopped answering when progress stopped at T since: every point after it
// lacks them, and some point before it had them.
func (s series) frozen(since float64) bool {
	had, after := false, 0
	for _, p := range s.pts {
		if p.t <= since {
			had = had || p.hasG
			continue
		}
		if p.hasG {
			return false
		}
		after++
	}
	return had && after > 0
}
