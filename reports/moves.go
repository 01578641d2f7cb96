package reports

import (
	"fmt"
	"math"
	"runwatch/probes"
	"runwatch/reports/estimate"
	"strings"
	"time"
)

// EstimateMark is an estimate as it was announced: at T At the run was expected to finish at T FinishT.
type EstimateMark struct {
	At      float64 `json:"at"`
	FinishT float64 `json:"finish_t"`
}

// MoveLog is the story of a run's ETA, kept beside the shift detector: the first estimate announced, the one
// announced now, and the last sharp moves (the shift warnings), newest last. "Announced" is the detector's
// word for its baseline, which a shift warning posts but which is also taken silently (the first estimate, and
// one the ETA crept to over the cooldown), so answers call it the baseline estimate: "announced at 18:09"
// named a post nobody saw. The first is "the first baseline estimate", never "the first estimate": a rough or
// too-early figure answered before it is never announced (no warning may measure a move from it), and whoever
// asked then was told "no baseline estimate yet".
type MoveLog struct {
	First     *EstimateMark `json:"first,omitempty"`
	Announced *EstimateMark `json:"announced,omitempty"`
	Moves     []Shift       `json:"moves,omitempty"`
	// Drift is how the current estimate differs from the announced one, decomposed like a shift; filled in when
	// an answer is built, nil when there is no announced estimate or no running estimate.
	Drift *Shift `json:"drift,omitempty"`
}

// maxMoves bounds the moves a MoveLog keeps: a "why" answer names the last few, not the whole day.
const maxMoves = 8

// Record updates the log after ShiftDetector.Update: d is the detector after the update, sh the shift it
// reported (nil when none).
func (l *MoveLog) Record(d ShiftDetector, sh *Shift) {
	if d.Announced {
		mark := EstimateMark{At: d.AnnouncedAt, FinishT: d.FinishT}
		if l.First == nil {
			first := mark
			l.First = &first
		}
		l.Announced = &mark
	}
	if sh != nil {
		l.Moves = append(l.Moves, *sh)
		if len(l.Moves) > maxMoves {
			l.Moves = append(l.Moves[:0:0], l.Moves[len(l.Moves)-maxMoves:]...)
		}
	}
}

// Clone returns a deep copy, safe to hand to an answer while the sampler keeps recording.
func (l MoveLog) Clone() MoveLog {
	c := MoveLog{Moves: append([]Shift(nil), l.Moves...)}
	if l.First != nil {
		f := *l.First
		c.First = &f
	}
	if l.Announced != nil {
		a := *l.Announced
		c.Announced = &a
	}
	if l.Drift != nil {
		d := *l.Drift
		c.Drift = &d
	}
	return c
}

// Drift explains how the running estimate e, made at T t, differs from the announced one, the same way a
// shift warning would, without changing the detector. ok is false without an announced estimate or a running
// estimate.
func (d ShiftDetector) Drift(e ETA, t float64) (Shift, bool) {
	if !d.Announced || e.State != StateRunning || e.Seconds == nil {
		return Shift{}, false
	}
	return d.explain(e, t, t+*e.Seconds), true
}

// tTime turns a T into a time: unix seconds in live history.
func tTime(t float64) time.Time { return estimate.Unix(t) }

// signedDuration renders a move: "+38 min", "-12 min", "±0 s".
func signedDuration(s float64) string {
	switch {
	case s > 0:
		return "+" + Duration(s)
	case s < 0:
		return "-" + Duration(-s)
	}
	return "±0 s"
}

// LastMoveLine is the one line every ETA answer carries about how the estimate moved: the last sharp move
// with its cause, or how far the estimate is from the first one when it never moved sharply. It is "" without
// a move log and before the first baseline estimate: "no baseline estimate yet, so none has moved" under
// every early answer told the reader nothing ("why did the ETA move?" still says when one is taken).
func LastMoveLine(l *MoveLog, e *ETA, loc *time.Location) string {
	if l == nil {
		return ""
	}
	if n := len(l.Moves); n > 0 {
		mv := l.Moves[n-1]
		s := fmt.Sprintf("Last move: at %s the finish moved *%s* (%s)", SlackTime(tTime(mv.At), loc),
			signedDuration(mv.ToFinish-mv.FromFinish), leftSpan(mv.FromFinish, mv.ToFinish, mv.At))
		if c := mainCause(mv); c != "" {
			s += ", mostly " + c
		}
		s += ". Ask _why did the ETA move?_ for the breakdown."
		if d := driftSince(l, loc); d != "" {
			s += " " + d
		}
		return s
	}
	if l.First == nil {
		return ""
	}
	s := fmt.Sprintf("No sharp move since the first baseline estimate, at %s (finish %s)", SlackTime(tTime(l.First.At), loc),
		SlackTime(tTime(l.First.FinishT), loc))
	if l.Drift != nil && l.Announced != nil && l.Announced.At == l.First.At {
		// The first estimate is the one announced: "first at 16:36 ... baseline of 16:36" read as two.
		return s + fmt.Sprintf("; the finish is %s against it now.", signedDuration(l.Drift.ToFinish-l.Drift.FromFinish))
	}
	s += sinceFirst(l, e) + "."
	if d := driftSince(l, loc); d != "" {
		s += " " + d
	}
	return s
}

// sinceFirst is how far the finish moved since the first baseline estimate without a sharp move, when it moved
// a minute or more: "; the finish has moved +1 h 37 min since, in smaller steps". Each answer measured against
// the one before, "No sharp move since the first baseline estimate (finish 13:26)" read beside "done around
// 15:03" as a contradiction.
func sinceFirst(l *MoveLog, e *ETA) string {
	if l == nil || l.First == nil || e == nil || e.State != StateRunning || e.Seconds == nil || !(e.At > 0) {
		return ""
	}
	mv := clockGap(l.First.FinishT, e.At+*e.Seconds)
	if math.Abs(mv) < 60 {
		return ""
	}
	return fmt.Sprintf("; the finish has moved %s since, in smaller steps", signedDuration(mv))
}

// driftSince says how far the finish moved since the ETA the channel was last given (the detector's baseline,
// see ShiftDetector.Told), and mostly why, when the move is one a reader notices: a tenth of the time left (of
// the job's own pace, not a fixed number of minutes). A finish that jumps between two answers then says which
// part of the estimate moved it; one that moved less is the same answer as before, said again.
func driftSince(l *MoveLog, loc *time.Location) string {
	if l == nil || l.Drift == nil || l.Announced == nil {
		return ""
	}
	d := *l.Drift
	mv := d.ToFinish - d.FromFinish
	if math.Abs(mv) < math.Max(1, 0.1*math.Max(0, d.ToFinish-d.At)) {
		return ""
	}
	ref := "the ETA last given, at " + SlackTime(tTime(l.Announced.At), loc)
	if !d.FromShown {
		ref = "the baseline estimate of " + SlackTime(tTime(l.Announced.At), loc)
	}
	s := fmt.Sprintf("Since %s (finish %s), the finish is *%s*", ref, SlackTime(tTime(d.FromFinish), loc), signedDuration(mv))
	if c := mainCause(d); c != "" {
		s += ", mostly " + c
	}
	if c := estimatorChange(d); c != "" {
		s += "; " + c
	}
	return s + "."
}

// announceWait says what an estimate still lacks before it becomes the baseline moves are measured from, from
// the conditions ShiftDetector.Told takes an ETA given on, so the answer never names one the ETA line above it
// already meets ("once 5% are done" under "1,296 / 25,000 done (5%)"); an estimate that meets them all is the
// baseline once this answer gives it.
func announceWait(e *ETA) string {
	cfg := ShiftConfig{}.withDefaults()
	switch {
	case e != nil && e.State == StateStalled:
		return "once the run is moving again"
	case e == nil || e.State != StateRunning || e.Seconds == nil:
		return "once the ETA is known"
	case e.Rough:
		return "once the samples span enough time to measure a rate (this one is rough)"
	case e.Progress > 0 && e.Progress < cfg.MinProgress:
		return fmt.Sprintf("once %s of the items are done (%.1f%% now)", Percent(cfg.MinProgress), 100*e.Progress)
	case e.ResetAt != nil && e.At-*e.ResetAt < cfg.Cooldown/2:
		return fmt.Sprintf("once the servers have run %s since their restart", Duration(cfg.Cooldown/2))
	}
	return "with this answer: the next moves are measured from the ETA last given"
}

// mainCause names the largest share of a move in plain words: "longer completions (650 → 1,066 tokens)".
func mainCause(sh Shift) string {
	type cause struct {
		share float64
		text  string
	}
	var cs []cause
	if sh.From.TokensPerItem > 0 && sh.To.TokensPerItem > 0 {
		word := "longer"
		if sh.To.TokensPerItem < sh.From.TokensPerItem {
			word = "shorter"
		}
		cs = append(cs, cause{sh.TokensPerItemShare, fmt.Sprintf("%s completions (%s → %s tokens each)", word,
			Count(sh.From.TokensPerItem), Count(sh.To.TokensPerItem))})
	}
	if sh.From.TokensPerS > 0 && sh.To.TokensPerS > 0 {
		word := "slower"
		if sh.To.TokensPerS > sh.From.TokensPerS {
			word = "faster"
		}
		cs = append(cs, cause{sh.ThroughputShare, fmt.Sprintf("%s generation (%s → %s)", word,
			shiftNum(sh.From.TokensPerS), Rate(sh.To.TokensPerS, "tok/s"))})
	} else if sh.From.ItemsPerS > 0 && sh.To.ItemsPerS > 0 {
		word := "slower"
		if sh.To.ItemsPerS > sh.From.ItemsPerS {
			word = "faster"
		}
		cs = append(cs, cause{sh.ThroughputShare, fmt.Sprintf("%s items (%s → %s)", word,
			shiftNum(sh.From.ItemsPerS), Rate(sh.To.ItemsPerS, "items/s"))})
	}
	cs = append(cs, cause{sh.OtherShare, paceWords(sh.OtherShare * (sh.ToFinish - sh.FromFinish))})
	best := cause{}
	for _, c := range cs {
		if math.Abs(c.share) > math.Abs(best.share) {
			best = c
		}
	}
	if math.Abs(best.share) < 0.05 {
		return ""
	}
	return best.text
}

// moveBreakdown lists a move's parts in plain numbers, one bullet each: what changed, by how much, and what it
// did to the finish ("completions grew 666 → 903 tokens (+36%): +56 min"), as the shift warnings read. A share
// of the move ("+83% of the move") reads like growth; minutes do not.
func moveBreakdown(sh Shift) []string {
	var lines []string
	move := sh.ToFinish - sh.FromFinish
	effect := func(f float64) string {
		if f == 0 {
			return ""
		}
		return ": " + shiftMinutes(f*move)
	}
	// A part that changed by less than half a percent reads "+0%" and is noise ("throughput grew 1,352 →
	// 1,355 tok/s (+0%): -23 s"): it is left out.
	moved := func(from, to float64) bool { return from > 0 && to > 0 && math.Abs(to-from) >= 0.005*from }
	if moved(sh.From.TokensPerItem, sh.To.TokensPerItem) {
		lines = append(lines, fmt.Sprintf("• completions %s %s → %s tokens per item (%s)%s", shiftVerb(sh.To.TokensPerItem, sh.From.TokensPerItem),
			Count(sh.From.TokensPerItem), Count(sh.To.TokensPerItem), pctChange(sh.From.TokensPerItem, sh.To.TokensPerItem), effect(sh.TokensPerItemShare)))
	}
	if sh.From.TokensPerS > 0 && sh.To.TokensPerS > 0 {
		if moved(sh.From.TokensPerS, sh.To.TokensPerS) {
			lines = append(lines, fmt.Sprintf("• throughput %s %s → %s (%s)%s", shiftVerb(sh.To.TokensPerS, sh.From.TokensPerS), shiftNum(sh.From.TokensPerS),
				Rate(sh.To.TokensPerS, "tok/s"), pctChange(sh.From.TokensPerS, sh.To.TokensPerS), effect(sh.ThroughputShare)))
		}
	} else if moved(sh.From.ItemsPerS, sh.To.ItemsPerS) {
		lines = append(lines, fmt.Sprintf("• throughput %s %s → %s (%s)%s", shiftVerb(sh.To.ItemsPerS, sh.From.ItemsPerS), shiftNum(sh.From.ItemsPerS),
			Rate(sh.To.ItemsPerS, "items/s"), pctChange(sh.From.ItemsPerS, sh.To.ItemsPerS), effect(sh.ThroughputShare)))
	}
	if c := estimatorChange(sh); c != "" {
		lines = append(lines, "• "+c)
	}
	if sh.From.ItemsLeft > 0 || sh.To.ItemsLeft > 0 {
		line := fmt.Sprintf("• items left: %s at the baseline, %s at the move", Count(sh.From.ItemsLeft), Count(sh.To.ItemsLeft))
		if sh.OtherShare != 0 {
			line += "; " + paceWords(sh.OtherShare*move) + effect(sh.OtherShare)
		}
		lines = append(lines, line)
	}
	return lines
}

func pctChange(from, to float64) string {
	if from == 0 {
		return "new"
	}
	return fmt.Sprintf("%+.0f%%", 100*(to-from)/from)
}

// AnswerWhy answers "why did the ETA move?": the last sharp moves with their times and causes in plain
// numbers, then how the current estimate compares with the one announced, then the estimate itself.
func AnswerWhy(run string, e *ETA, l *MoveLog, loc *time.Location) Message {
	m := Message{Title: run + " · why the ETA moved"}
	if e == nil {
		m.Sections = append(m.Sections, "There is no estimate yet, so nothing has moved: no progress has been reported.")
		return m
	}
	var moves []Shift
	if l != nil {
		moves = l.Moves
	}
	if len(moves) == 0 {
		lead := ":large_green_circle: *It has not moved sharply.*"
		if l == nil || l.First == nil {
			lead = ":information_source: *No baseline estimate yet*, so none has moved. I take one " + announceWait(e) + "."
		} else {
			lead += fmt.Sprintf(" The first baseline estimate, at %s, said the run would finish at %s", SlackTime(tTime(l.First.At), loc),
				SlackTime(tTime(l.First.FinishT), loc)) + sinceFirst(l, e) + "."
		}
		m.Sections = append(m.Sections, lead)
	} else {
		last := moves[len(moves)-1]
		lead := fmt.Sprintf(":warning: *At %s the finish moved %s* (%s).", SlackTime(tTime(last.At), loc),
			signedDuration(last.ToFinish-last.FromFinish), leftSpan(last.FromFinish, last.ToFinish, last.At))
		if c := mainCause(last); c != "" {
			lead += " Mostly " + c + "."
		}
		m.Sections = append(m.Sections, lead+"\n"+strings.Join(moveBreakdown(last), "\n"))
		if len(moves) > 1 {
			var earlier []string
			for i := len(moves) - 2; i >= 0 && len(earlier) < 3; i-- {
				mv := moves[i]
				line := fmt.Sprintf("• %s: %s", SlackTime(tTime(mv.At), loc), signedDuration(mv.ToFinish-mv.FromFinish))
				if c := mainCause(mv); c != "" {
					line += ", " + c
				}
				earlier = append(earlier, line)
			}
			m.Sections = append(m.Sections, "*Earlier moves*\n"+strings.Join(earlier, "\n"))
		}
	}
	if l != nil && l.Drift != nil && l.Announced != nil {
		d := l.Drift
		mv := d.ToFinish - d.FromFinish
		ref := "the baseline estimate of " + SlackTime(tTime(l.Announced.At), loc) + " (the one warnings compare against)"
		if d.FromShown {
			ref = "the ETA last given (at " + SlackTime(tTime(l.Announced.At), loc) + ", the one warnings compare against)"
		}
		s := fmt.Sprintf("Since %s the finish is %s", ref, signedDuration(mv))
		if math.Abs(mv) >= 60 {
			if c := mainCause(*d); c != "" {
				s += ", mostly " + c
			}
		}
		m.Sections = append(m.Sections, s+".")
	}
	now := ETALine(*e, loc)
	if !strings.HasPrefix(now, ":") {
		// A finished or stalled run's line leads with its own glyph: "Now: [done] Done: ..." read as a stutter.
		now = "Now: " + now
	}
	m.Sections = append(m.Sections, now)
	return m
}

// AnswerOnTrack answers "are we on track?": the current finish against the first baseline estimate (and the one
// announced now, when it differs).
func AnswerOnTrack(run string, e *ETA, l *MoveLog, f *FinishSummary, loc *time.Location) Message {
	m := Message{Title: run + " · on track?"}
	if e == nil || e.State == StateUnknown {
		reason := "no progress reported yet"
		if e != nil && e.Reason != "" {
			reason = e.Reason
		}
		m.Sections = append(m.Sections, ":large_yellow_circle: *Can't tell yet* — "+Esc(reason)+".")
		return m
	}
	if e.State == StateDone {
		s := ":white_check_mark: *It finished.*"
		if f != nil {
			s += " " + FinishLine(*f, loc)
		}
		m.Sections = append(m.Sections, s)
		return m
	}
	if l == nil || l.First == nil {
		m.Sections = append(m.Sections, ":information_source: *No baseline estimate yet* to be on track against. "+ETALine(*e, loc))
		return m
	}
	first := l.First
	if e.State == StateStalled {
		m.Sections = append(m.Sections, fmt.Sprintf(":rotating_light: *No — it is stalled.* The first baseline estimate (at %s) said it would finish at %s. %s",
			SlackTime(tTime(first.At), loc), SlackTime(tTime(first.FinishT), loc), ETALine(*e, loc)))
		return m
	}
	if e.Seconds == nil || e.FinishAt == nil {
		m.Sections = append(m.Sections, ":large_yellow_circle: *Can't tell yet* — "+ETALine(*e, loc))
		return m
	}
	// The finish on the run clock, which first's times are on (FinishAt is for display, on the wall clock).
	finish := probes.UnixSeconds(*e.FinishAt)
	if e.At > 0 {
		finish = e.At + *e.Seconds
	}
	late := finish - first.FinishT
	// On track means within a tenth of the time the first estimate planned, or ten minutes.
	tol := math.Max(600, 0.1*math.Max(0, first.FinishT-first.At))
	var lead string
	switch {
	case math.Abs(late) <= tol:
		lead = ":large_green_circle: *Yes, on track*"
	case late > 0:
		lead = ":large_yellow_circle: *Behind*"
	default:
		lead = ":large_green_circle: *Ahead*"
	}
	rel := "later than"
	if late < 0 {
		rel = "earlier than"
	}
	s := fmt.Sprintf("%s — finish around %s, %s %s the first baseline estimate (at %s, finish %s).", lead, SlackDateTime(*e.FinishAt, loc),
		Duration(math.Abs(clockGap(first.FinishT, finish))), rel, SlackTime(tTime(first.At), loc), SlackTime(tTime(first.FinishT), loc))
	if a := l.Announced; a != nil && a.At != first.At {
		s += fmt.Sprintf(" Against the baseline estimate of %s (finish %s, the one warnings compare against) it is %s.", SlackTime(tTime(a.At), loc),
			SlackTime(tTime(a.FinishT), loc), signedDuration(clockGap(a.FinishT, finish)))
	}
	m.Sections = append(m.Sections, s, ETALine(*e, loc))
	if line := LastMoveLine(l, e, loc); line != "" {
		m.Sections = append(m.Sections, line)
	}
	return m
}

// clockGap is to-from as the two finishes' clock times, which show the minute they are in, say it: "finish
// around 16:08, 1 h 37 min later than ... finish 14:30" (16:08:10 against 14:30:50) read as a subtraction gone
// wrong. A gap under 90 s, which Duration says in seconds, is the exact one.
func clockGap(from, to float64) float64 {
	if math.Abs(to-from) < 90 {
		return to - from
	}
	return 60 * (math.Floor(to/60) - math.Floor(from/60))
}

// leftSpan is a move's time left before and after it, as of the move: "2 h 30 min → 3 h 23 min left". An old
// finish already past says how long ago it was due: "+21 min (0 s → 10 min left)" read as a move of 10 min.
func leftSpan(from, to, at float64) string {
	if at-from >= 1 {
		return fmt.Sprintf("due %s ago → %s left", Duration(at-from), Duration(math.Max(0, to-at)))
	}
	return fmt.Sprintf("%s → %s left", Duration(math.Max(0, from-at)), Duration(math.Max(0, to-at)))
}
