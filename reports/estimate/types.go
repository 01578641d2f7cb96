package estimate

import (
	"time"
)

// ETA states.
const (
	StateRunning = "running"
	StateStalled = "stalled"
	StateDone    = "done"
	StateUnknown = "unknown"
)

// Config tunes Estimate. Zero fields take their defaults.
type Config struct {
	// Window is the estimator's unit of time: seconds of recent history for the "recent" rate, a third of it
	// a block of rates. 0 follows the job's own pace (see PaceWindow), so that a job replayed 10x slower gets
	// the same relative figures.
	Window float64
	// StallAfter: no progress (done and tokens flat) for this long -> stalled; 0 follows the job's own pace (see
	// stallAfter).
	StallAfter float64
	// Memo, when set, is what the run's successive estimates share (see Memo): with it an estimate's cost does
	// not grow with the history.
	Memo *Memo `json:"-"`
	// noBacktest leaves out the range's last check (backtest): set for the estimates at past times it scores.
	noBacktest bool
	// memo is Memo while an estimate holds its lock.
	memo *Memo
}

func (c Config) withDefaults() Config {
	return c
}

// Throughput is how fast the run goes.
type Throughput struct {
	TokensPerS    float64 `json:"tokens_per_s"` // recent window (0 when unknown)
	ItemsPerS     float64 `json:"items_per_s"`
	WindowS       float64 `json:"window_s"`         // the window actually used
	RunTokensPerS float64 `json:"run_tokens_per_s"` // over the whole run
	RunItemsPerS  float64 `json:"run_items_per_s"`
	// Basis says how the figures were derived: "565K tokens in 6 min 48 s" (the log's elapsed time, from one
	// sample) or "1.2M tokens in 15 min" (counter deltas over the window).
	Basis string `json:"basis,omitempty"`
	// InFlight is the requests still in flight when ItemsPerS comes from one sample (finished items ÷ the
	// job's elapsed time): that rate counts none of them, and runs below the one the ETA uses.
	InFlight float64 `json:"in_flight,omitempty"`
	// UntilFinish marks the figures of a finished run: the window and the run end at the finish, not now.
	UntilFinish bool `json:"until_finish,omitempty"`
	// SinceStart marks figures of one sample: the job's counts over its elapsed time, an average since it
	// started that says nothing of whether it still moves.
	SinceStart bool `json:"since_start,omitempty"`
	// LogAgeS is, for one sample read from a job log, how long before the sample the log last changed: the
	// sign of work now that an average since the start is not (nil when unknown).
	LogAgeS *float64 `json:"log_age_s,omitempty"`
}

// ETA is a finish estimate with its range.
type ETA struct {
	State   string   `json:"state"`   // StateRunning, StateStalled, StateDone or StateUnknown
	Seconds *float64 `json:"seconds"` // nil when unknown or stalled
	LowS    *float64 `json:"low_s"`
	HighS   *float64 `json:"high_s"`
	// At is the T of the latest observation: the estimate's moment on the run clock.
	At float64 `json:"at,omitempty"`
	// FinishAt is when the run will finish, for display: At + Seconds on a clock anchored at the unix epoch,
	// put on the wall clock by whoever knows it (OnWall).
	FinishAt     *time.Time `json:"finish_at"`
	Reason       string     `json:"reason"` // one sentence: how it was computed, why unknown, how long stalled
	Rough        bool       `json:"rough,omitempty"`
	StalledSince *float64   `json:"stalled_since,omitempty"` // T when progress stopped
	// StalledAt is StalledSince as a clock time, for display (see FinishAt).
	StalledAt *time.Time `json:"stalled_at,omitempty"`
	// Progress is the share of items done (0 to 1; 0 when the total is unknown).
	Progress float64 `json:"progress,omitempty"`
	// ResetAt is the T of the latest server restart in the history, if any: an engine counter reset, a change
	// of Observation.Restarts, or, without token counts, a pause in completions.
	ResetAt *float64 `json:"reset_at,omitempty"`

	// The parts of the estimate, used to explain shifts: remaining ≈ ItemsLeft × TokensPerItem / TokensPerS,
	// or ItemsLeft / ItemsPerS when tokens are unknown.
	ItemsLeft     float64 `json:"items_left"`
	TokensPerItem float64 `json:"tokens_per_item"` // 0 when tokens unknown
	TokensPerS    float64 `json:"tokens_per_s"`
	ItemsPerS     float64 `json:"items_per_s"`
	// Lengths is the censored mean completion length the estimate used, when it comes from one sample.
	Lengths *Lengths `json:"lengths,omitempty"`
	// Estimator names the estimator that the run's own history weighed most for the busy part.
	Estimator string `json:"estimator,omitempty"`

	// split is the range's two parts, the busy part and the drain, each with its own range: the backtest
	// rescales the busy part alone (see backtest). Nil when the estimate has no such parts.
	split *rangeSplit
	// notes are the reason's clauses after the structural model's figures and their windows (a regime since,
	// another job's work), which hold whichever estimator prices the busy part.
	notes string
}

// rangeSplit is the time left as its busy part and its drain, each with its low and high.
type rangeSplit struct {
	busy, busyLow, busyHigh    float64
	drain, drainLow, drainHigh float64
}
