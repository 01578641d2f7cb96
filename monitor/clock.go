package monitor

import (
	"math"
	"time"

	"runwatch/probes"
)

// The run clock. Samples, free-space readings and the ETA's history are stamped with T, seconds on a
// monotonic clock (Options.Mono) anchored to the wall clock once, when the monitor starts: a wall-clock step
// (NTP, a VM resumed) moves neither the intervals between samples nor the history. The wall clock (Now) is
// for what a person reads: the finish time an answer shows, when the log last changed.
//
// A run's history outlives the process. A state file records the T and the wall time of its last sample
// (clockMark); the next process continues that run's clock from there by the wall time that passed while no
// process watched (the only clock that spans the gap), so the history keeps going forward whatever the wall
// clock did meanwhile.

// clockMark is a run's last sample on the run clock and on the wall clock, persisted with its history.
type clockMark struct {
	T    float64 `json:"t"`
	Wall float64 `json:"wall"`
}

// clockNow is the monitor's clock now: the wall time it started at plus the monotonic time since.
func (m *Monitor) clockNow() float64 { return m.wall0 + m.opts.Mono().Seconds() }

// runClock is T now on the run's clock: the monitor's, shifted where the run's history began before this
// process (see continueClock).
func (m *Monitor) runClock(rs *runState) float64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return m.clockNow() + rs.shift
}

// continueClock sets how far the run's clock is from the monitor's, so that the run's history carries on from
// its last sample by the wall time since it was taken (none when the wall clock went back).
func (m *Monitor) continueClock(rs *runState) {
	now := m.clockNow()
	switch {
	case rs.Clock != nil:
		gap := math.Max(0, probes.UnixSeconds(m.opts.Now())-rs.Clock.Wall)
		rs.shift = rs.Clock.T + gap - now
	case len(rs.History) > 0:
		// A state file from before the run clock: its T are the wall times of its samples.
		rs.shift = math.Max(0, rs.History[len(rs.History)-1].T-now)
	}
}

// defaultMono is the monotonic clock when Options.Mono is nil: the time since the monitor started, from now's
// monotonic reading (time.Now has one; a test's clock without one counts its wall time).
func defaultMono(now func() time.Time) func() time.Duration {
	origin := now()
	return func() time.Duration { return now().Sub(origin) }
}
