package reports

import "runwatch/reports/estimate"

// Replayer history bounds: when the history grows past replayMaxHistory points it is compacted to
// replayCompactTo, so compaction runs once every few hundred steps.
const (
	replayMaxHistory = 480
	replayCompactTo  = 360
)

// ReplayLine is one output line of `bot replay`.
type ReplayLine struct {
	T      float64  `json:"t"`
	ETAS   *float64 `json:"eta_s"` // null when unknown or stalled
	Low    *float64 `json:"eta_low_s"`
	High   *float64 `json:"eta_high_s"`
	State  string   `json:"state"`
	Shift  bool     `json:"shift"`
	Reason string   `json:"reason"` // the shift's reason when Shift is true, else the estimate's
	// ItemsPerS is the item rate the estimate priced the items left at (0 when none).
	ItemsPerS float64 `json:"items_per_s,omitempty"`
	// OwnLow and OwnHigh are the estimator's own range when the line gives the range as shown (AsShown), which
	// holds it to the one before: a benchmark can score both from one replay. Nil otherwise.
	OwnLow  *float64 `json:"eta_own_low_s,omitempty"`
	OwnHigh *float64 `json:"eta_own_high_s,omitempty"`
}

// Replayer feeds observations one at a time through the estimator and the shift detector, as the bot does live,
// keeping a bounded history.
type Replayer struct {
	ec   EstimateConfig
	sc   ShiftConfig
	hist []Observation
	det  ShiftDetector
	// moves and last feed Moves: the log of announced estimates and shifts, and the latest estimate.
	moves MoveLog
	last  ETA
	// shown: each estimate goes out as the channel is shown it, its range held (see RangeHold, AsShown).
	shown bool
	hold  RangeHold
}

// AsShown makes r give each estimate as an answer shows it, its range held from the answer before (see
// RangeHold), as the monitor does live; without it r gives the estimator's own range, which the accuracy
// benchmark scores. It returns r.
func (r *Replayer) AsShown() *Replayer {
	r.shown = true
	return r
}

// NewReplayer returns a Replayer with the given settings (zero fields take their defaults).
func NewReplayer(ec EstimateConfig, sc ShiftConfig) *Replayer {
	if ec.Memo == nil {
		ec.Memo = &estimate.Memo{} // what successive estimates share: one estimate's cost stays flat
	}
	return &Replayer{ec: ec, sc: sc}
}

// Step adds an observation and returns the estimate after it. An observation older than the previous one is
// not added; the line then repeats the current estimate.
func (r *Replayer) Step(o Observation) ReplayLine {
	if n := len(r.hist); n == 0 || o.T >= r.hist[n-1].T {
		r.hist = append(r.hist, o)
	}
	if len(r.hist) > replayMaxHistory {
		r.hist = append([]Observation(nil), Compact(r.hist, replayCompactTo)...)
	}
	e, _ := Estimate(r.hist, r.ec)
	own := e // the shift detector judges how sure an estimate is by the estimator's own range
	if r.shown {
		e = r.hold.Apply(e)
		r.hold.Keep(e)
	}
	now := r.hist[len(r.hist)-1].T
	line := ReplayLine{T: now, ETAS: e.Seconds, Low: e.LowS, High: e.HighS, State: e.State, Reason: e.Reason,
		ItemsPerS: e.ItemsPerS}
	if r.shown {
		line.OwnLow, line.OwnHigh = own.LowS, own.HighS
	}
	sh, ok := r.det.Update(own, now, r.sc)
	if ok {
		line.Shift, line.Reason = true, sh.Reason
		r.moves.Record(r.det, &sh)
	} else {
		r.moves.Record(r.det, nil)
	}
	r.last = e
	return line
}

// History is the bounded history the Replayer keeps (shared; do not modify).
func (r *Replayer) History() []Observation { return r.hist }

// Moves is the log of the estimates announced and the shifts reported so far, with the latest estimate's
// drift from the announced one, as the bot keeps it live.
func (r *Replayer) Moves() MoveLog {
	l := r.moves.Clone()
	if len(r.hist) > 0 {
		if d, ok := r.det.Drift(r.last, r.hist[len(r.hist)-1].T); ok {
			l.Drift = &d
		}
	}
	return l
}
