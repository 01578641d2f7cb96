package reports

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
}

// Replayer feeds observations one at a time through the estimator and the shift detector, as the bot does live,
// keeping a bounded history.
type Replayer struct {
	ec   EstimateConfig
	sc   ShiftConfig
	hist []Observation
	det  ShiftDetector
}

// NewReplayer returns a Replayer with the given settings (zero fields take their defaults).
func NewReplayer(ec EstimateConfig, sc ShiftConfig) *Replayer {
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
	now := r.hist[len(r.hist)-1].T
	line := ReplayLine{T: now, ETAS: e.Seconds, Low: e.LowS, High: e.HighS, State: e.State, Reason: e.Reason}
	if sh, ok := r.det.Update(e, now, r.sc); ok {
		line.Shift, line.Reason = true, sh.Reason
	}
	return line
}

// History is the bounded history the Replayer keeps (shared; do not modify).
func (r *Replayer) History() []Observation { return r.hist }
