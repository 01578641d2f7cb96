package reports

import (
	"fmt"
	"math"
	"strings"
	"time"

	"runwatch/reports/estimate"
)

// ShiftConfig says how far and how surely the predicted finish must move before a warning. Zero fields take
// their defaults.
type ShiftConfig struct {
	MinFraction float64 // the finish moves by more than this share of the remaining time (default 0.25)
	MinSeconds  float64 // and by more than this (default 1200)
	Confirm     int     // on this many consecutive evaluations (default 2)
	Cooldown    float64 // at most one warning per this many seconds (default 1800)
	// MinProgress is the share of items that must be done before estimates are announced (default
	// 0.05): the first minutes of a run rest on a handful of finished items, and a warning then is
	// noise however confident the range looks.
	MinProgress float64
}

func (c ShiftConfig) withDefaults() ShiftConfig {
	if c.MinFraction <= 0 {
		c.MinFraction = 0.25
	}
	if c.MinSeconds <= 0 {
		c.MinSeconds = 1200
	}
	if c.Confirm <= 0 {
		c.Confirm = 2
	}
	if c.Cooldown <= 0 {
		c.Cooldown = 1800
	}
	if c.MinProgress <= 0 {
		c.MinProgress = 0.05
	}
	return c
}

// After a server restart the detector stays silent for half the Cooldown (the batch refills, the first requests
// finish short, and the estimate is not yet worth a warning); after a warning the estimate must stay calm for a
// third of it before the next can fire.

// ShiftParts are the components of an estimate: remaining ≈ ItemsLeft × TokensPerItem ÷ TokensPerS, or
// ItemsLeft ÷ ItemsPerS without token counts.
type ShiftParts struct {
	ItemsLeft     float64 `json:"items_left"`
	TokensPerItem float64 `json:"tokens_per_item"`
	TokensPerS    float64 `json:"tokens_per_s"`
	ItemsPerS     float64 `json:"items_per_s"`
	// Estimator is the estimator that priced the busy part (ETA.Estimator): a move that comes with another one
	// says so, as its figures alone read as the job having changed.
	Estimator string `json:"estimator,omitempty"`
}

func shiftPartsOf(e ETA) ShiftParts {
	return ShiftParts{ItemsLeft: e.ItemsLeft, TokensPerItem: e.TokensPerItem, TokensPerS: e.TokensPerS,
		ItemsPerS: e.ItemsPerS, Estimator: e.Estimator}
}

// estimatorChange says that a move came with another estimator pricing the items left, "" when it did not:
// "the estimate now prices the items at the latest item rate (before: tokens per item and tok/s)".
func estimatorChange(sh Shift) string {
	a, b := sh.From.Estimator, sh.To.Estimator
	if a == "" || b == "" || a == b {
		return ""
	}
	return "the estimate now prices the items at " + estimate.EstimatorWords(b) + " (before: " + estimate.EstimatorWords(a) + ")"
}

// ShiftDetector remembers the last announced finish. Its exported fields are its persisted state (JSON).
type ShiftDetector struct {
	Announced   bool       `json:"announced"`    // an estimate has been announced
	FinishT     float64    `json:"finish_t"`     // the announced finish (T)
	AnnouncedAt float64    `json:"announced_at"` // T of the announcement
	Parts       ShiftParts `json:"parts"`        // the announced estimate's components
	Pending     int        `json:"pending"`      // consecutive evaluations beyond the thresholds
	PendingSign int        `json:"pending_sign"` // +1 later, -1 earlier
	Warned      bool       `json:"warned"`       // a warning has been given
	LastWarning float64    `json:"last_warning"` // T of the last warning
	Armed       bool       `json:"armed"`        // false after a warning until the estimate settles
	Settled     int        `json:"settled"`      // consecutive evaluations that moved little
	CalmSince   float64    `json:"calm_since"`   // T of the first of them
	PrevFinish  float64    `json:"prev_finish"`  // the previous evaluation's finish
	Paused      bool       `json:"paused"`       // stalled or just restarted: re-announce silently on resume
	// Shown: the announced estimate is one the channel was given (an answer, a scheduled status, a warning),
	// not one taken silently (the first, or one the estimate crept to).
	Shown bool `json:"shown,omitempty"`
}

// Shift is a sharp move of the predicted finish, with why.
type Shift struct {
	At         float64 `json:"at"`          // T of the warning
	FromFinish float64 `json:"from_finish"` // the announced finish (T)
	FromAt     float64 `json:"from_at"`     // T the announced estimate was made
	// FromShown: the announced estimate is the one the channel was last given; else one taken silently.
	FromShown bool       `json:"from_shown,omitempty"`
	ToFinish  float64    `json:"to_finish"` // the new finish (T)
	Reason    string     `json:"reason"`
	From      ShiftParts `json:"from"`
	To        ShiftParts `json:"to"`
	// Shares of the move, from the log-decomposition of the remaining time (they sum to 1): tokens per item,
	// throughput (tokens/s, or items/s without token counts), and the rest (progress against the old
	// schedule, the drain at the end).
	TokensPerItemShare float64 `json:"tokens_per_item_share"`
	ThroughputShare    float64 `json:"throughput_share"`
	OtherShare         float64 `json:"other_share"`
}

// Update feeds the estimate made at T t and reports a shift worth a warning: a move of the finish against the
// announced one by more than MinFraction of the remaining time (the larger of the old and the new) and more than
// MinSeconds, on Confirm consecutive estimates, at most once per Cooldown, and only once the estimate has
// settled after the previous warning (moved less than a quarter of the threshold between estimates for a third
// of the Cooldown). For half the Cooldown after a restart (ETA.ResetAt) it stays silent. Estimates whose own range is wider than such a move (half-range >
// MinFraction) are ignored. The first usable estimate is announced silently, and so is the first one after a
// stall or after the quiet period that follows a restart. With no shift pending, an announcement older than the
// Cooldown that the estimate has not left by half the threshold is silently replaced by the current estimate,
// so that noise and slow convergence never add up to a warning while a finish that keeps moving still does.
func (d *ShiftDetector) Update(e ETA, t float64, cfg ShiftConfig) (Shift, bool) {
	cfg = cfg.withDefaults()
	if e.State != StateRunning || e.Seconds == nil || e.Rough || e.Progress > 0 && e.Progress < cfg.MinProgress {
		d.Pending = 0
		if e.State == StateStalled {
			d.Paused = true
		}
		return Shift{}, false
	}
	if e.LowS == nil || e.HighS == nil || math.Min(*e.Seconds-*e.LowS, *e.HighS-*e.Seconds) > cfg.MinFraction**e.Seconds {
		// The estimate itself is less sure than the move a warning is about. A calibrated range is lopsided
		// when the run's past predictions erred one way (completions that keep growing): its near side is
		// how sure the estimate is that the finish is at least this far.
		d.Pending = 0
		return Shift{}, false
	}
	if e.ResetAt != nil && t-*e.ResetAt < cfg.Cooldown/2 {
		d.Pending, d.Paused = 0, true
		return Shift{}, false
	}
	finish := t + *e.Seconds
	if !d.Announced || d.Paused {
		d.announce(e, t, finish)
		d.Armed = true
		return Shift{}, false
	}
	remaining := math.Max(d.FinishT-t, *e.Seconds)
	if math.Abs(finish-d.PrevFinish) < cfg.MinFraction/4*remaining {
		if d.Settled == 0 {
			d.CalmSince = t
		}
		d.Settled++
	} else {
		d.Settled = 0
	}
	d.PrevFinish = finish
	if !d.Armed && d.Settled >= cfg.Confirm && t-d.CalmSince >= cfg.Cooldown/3 {
		d.Armed = true
	}
	move := finish - d.FinishT
	sign := 1
	if move < 0 {
		sign = -1
	}
	beyond := math.Abs(move) > cfg.MinFraction*remaining && math.Abs(move) > cfg.MinSeconds
	cooled := !d.Warned || t-d.LastWarning >= cfg.Cooldown
	if !beyond || !d.Armed || !cooled {
		d.Pending = 0
		// A warning is about a sharp move: an estimate that crept there over the cooldown is the new
		// reference, silently.
		if d.Armed && t-d.AnnouncedAt >= cfg.Cooldown && math.Abs(move) < cfg.MinFraction/2*remaining {
			d.announce(e, t, finish)
		}
		return Shift{}, false
	}
	if d.Pending > 0 && sign != d.PendingSign {
		d.Pending = 0
	}
	d.Pending++
	d.PendingSign = sign
	if d.Pending < cfg.Confirm {
		return Shift{}, false
	}
	sh := d.explain(e, t, finish)
	d.announce(e, t, finish)
	d.Warned, d.LastWarning, d.Armed = true, t, false
	d.Shown = true // the warning gives it
	return sh, true
}

// Told records that e, the estimate at T t, was given to the channel (an answer, a scheduled status): the next
// warning measures the finish's move from it and names it. A warning measured from the last estimate announced
// said "(!) finish moved +40 min (1 h 59 min → 2 h 39 min left)" while every answer for a minute before had
// shown 2 h 40 min: it announced a move the answers had already shown, from a baseline the channel never saw.
// An estimate the detector would not take (not running, rough, too early, just after a restart) changes
// nothing; nor does one older than the baseline. It reports whether the baseline changed.
func (d *ShiftDetector) Told(e ETA, t float64, cfg ShiftConfig) bool {
	cfg = cfg.withDefaults()
	if e.State != StateRunning || e.Seconds == nil || e.Rough || e.Progress > 0 && e.Progress < cfg.MinProgress ||
		e.ResetAt != nil && t-*e.ResetAt < cfg.Cooldown/2 || d.Announced && t < d.AnnouncedAt {
		return false
	}
	finish := t + *e.Seconds
	if d.Announced && !d.Paused && d.Shown && d.AnnouncedAt == t && d.FinishT == finish {
		return false
	}
	first := !d.Announced
	d.announce(e, t, finish)
	d.Shown = true
	if first {
		d.Armed = true
	}
	return true
}

func (d *ShiftDetector) announce(e ETA, t, finish float64) {
	d.Announced, d.Paused, d.Shown = true, false, false
	d.FinishT, d.AnnouncedAt, d.Parts = finish, t, shiftPartsOf(e)
	d.Pending, d.Settled, d.PrevFinish = 0, 0, finish
}

// explain splits the move by the log-decomposition of the remaining time. The announced estimate, as of now,
// expects FinishT - t more seconds; the new one ItemsLeft × TokensPerItem ÷ TokensPerS. The log of their ratio
// is the sum of the log-ratios of tokens per item and of throughput (the same items left priced at old and at
// new rates) plus the rest.
func (d *ShiftDetector) explain(e ETA, t, finish float64) Shift {
	from, to := d.Parts, shiftPartsOf(e)
	sh := Shift{At: t, FromFinish: d.FinishT, FromAt: d.AnnouncedAt, FromShown: d.Shown, ToFinish: finish, From: from, To: to}
	oldLeft := math.Max(d.FinishT-t, 60)
	total := math.Log(math.Max(*e.Seconds, 60) / oldLeft)
	var tpi, thr float64
	tokens := from.TokensPerItem > 0 && to.TokensPerItem > 0 && from.TokensPerS > 0 && to.TokensPerS > 0
	switch {
	case tokens:
		tpi = math.Log(to.TokensPerItem / from.TokensPerItem)
		thr = -math.Log(to.TokensPerS / from.TokensPerS)
	case from.ItemsPerS > 0 && to.ItemsPerS > 0:
		thr = -math.Log(to.ItemsPerS / from.ItemsPerS)
	}
	if total != 0 {
		sh.TokensPerItemShare, sh.ThroughputShare = tpi/total, thr/total
		sh.OtherShare = 1 - sh.TokensPerItemShare - sh.ThroughputShare
	}
	move := finish - d.FinishT
	sign := "+"
	if move < 0 {
		sign = "-"
	}
	sh.Reason = fmt.Sprintf("finish moved %s%s (%s)", sign, Duration(math.Abs(move)), leftSpan(d.FinishT, t+*e.Seconds, t))
	if parts := shiftCauses(sh); len(parts) > 0 {
		sh.Reason += ": " + strings.Join(parts, "; ")
	}
	return sh
}

// shiftCauses are a move's parts in plain words, each with what it did to the finish: "completions grew 650 →
// 1,066 tokens (+64%): +48 min". A share of the move reads like growth; minutes do not.
func shiftCauses(sh Shift) []string {
	from, to := sh.From, sh.To
	move := sh.ToFinish - sh.FromFinish
	tokens := from.TokensPerItem > 0 && to.TokensPerItem > 0 && from.TokensPerS > 0 && to.TokensPerS > 0
	var parts []string
	if tokens && math.Abs(sh.TokensPerItemShare) >= 0.05 {
		parts = append(parts, fmt.Sprintf("completions %s %s → %s tokens (%s): %s", shiftVerb(to.TokensPerItem, from.TokensPerItem),
			Count(from.TokensPerItem), Count(to.TokensPerItem), shiftChange(to.TokensPerItem/from.TokensPerItem),
			shiftMinutes(sh.TokensPerItemShare*move)))
	}
	if math.Abs(sh.ThroughputShare) >= 0.05 && (tokens || from.ItemsPerS > 0 && to.ItemsPerS > 0) {
		a, b, unit := from.ItemsPerS, to.ItemsPerS, "items/s"
		if tokens {
			a, b, unit = from.TokensPerS, to.TokensPerS, "tok/s"
		}
		parts = append(parts, fmt.Sprintf("throughput %s %s → %s (%s): %s", shiftVerb(b, a), shiftNum(a), Rate(b, unit),
			shiftChange(b/a), shiftMinutes(sh.ThroughputShare*move)))
	}
	if math.Abs(sh.OtherShare) >= 0.05 {
		parts = append(parts, fmt.Sprintf("%s: %s", paceWords(sh.OtherShare*move), shiftMinutes(sh.OtherShare*move)))
	}
	return parts
}

// ShiftLead is a shift warning's first line: the move, the finish now, and the finish it moved from, named as
// the channel had it: "*Finish moved +40 min*, to 12:28 (2 h 39 min left), from 11:48 in the ETA last given, at
// 09:10: completions grew …". The move is measured from the ETA the channel was last given (see
// ShiftDetector.Told); one measured from an estimate taken silently says so.
func ShiftLead(sh Shift, loc *time.Location) string {
	if sh.ToFinish == 0 && sh.FromFinish == 0 {
		// A shift without its finishes (one recorded before they were kept) has its reason alone to say.
		return ":warning: " + Esc(sh.Reason)
	}
	move := sh.ToFinish - sh.FromFinish
	ref := "in the ETA last given, at " + SlackTime(tTime(sh.FromAt), loc)
	if !sh.FromShown {
		ref = "in my estimate of " + SlackTime(tTime(sh.FromAt), loc) + ", which no answer or post gave"
	}
	s := fmt.Sprintf(":warning: *Finish moved %s*, to %s (%s left), from %s %s", signedDuration(move),
		SlackTime(tTime(sh.ToFinish), loc), Duration(math.Max(0, sh.ToFinish-sh.At)), SlackTime(tTime(sh.FromFinish), loc), ref)
	parts := shiftCauses(sh)
	if c := estimatorChange(sh); c != "" {
		parts = append(parts, c)
	}
	if len(parts) > 0 {
		s += ": " + Esc(strings.Join(parts, "; "))
	}
	return s + "."
}

// paceWords names the rest of a move, what tokens per item and throughput leave over, from what it did to
// the finish (minutes > 0: later). That rest is the items left now, priced at the old rates, against the time
// the old estimate still expected: more items left than it expected by now (fewer finished since) is a later
// finish, fewer left an earlier one.
func paceWords(minutes float64) string {
	if minutes < 0 {
		return "items finishing ahead of the old estimate's pace"
	}
	return "items finishing behind the old estimate's pace"
}

// shiftVerb says which way a quantity moved.
func shiftVerb(to, from float64) string {
	switch {
	case to > from:
		return "grew"
	case to < from:
		return "fell"
	}
	return "held"
}

// shiftChange is a ratio as a signed percentage: +28%, -37%.
func shiftChange(r float64) string { return fmt.Sprintf("%+.0f%%", 100*(r-1)) }

// shiftMinutes is what a part did to the finish: +54 min, -1 h 5 min.
func shiftMinutes(s float64) string {
	if s < 0 {
		return "-" + Duration(-s)
	}
	return "+" + Duration(s)
}

// shiftNum formats a rate without its unit, with the precision Rate uses.
func shiftNum(v float64) string {
	return strings.TrimSpace(Rate(v, ""))
}
