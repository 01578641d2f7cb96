package reports

import "runwatch/reports/estimate"

// ETA states.
const (
	StateRunning = estimate.StateRunning
	StateStalled = estimate.StateStalled
	StateDone    = estimate.StateDone
	StateUnknown = estimate.StateUnknown
)

// EstimateConfig tunes Estimate (see estimate.Config).
type EstimateConfig = estimate.Config

// Throughput is how fast the run goes (see estimate.Throughput).
type Throughput = estimate.Throughput

// ETA is a finish estimate with its range (see estimate.ETA).
type ETA = estimate.ETA

// Estimate computes a run's throughput and finish estimate from its history (see estimate.Compute).
func Estimate(hist []Observation, cfg EstimateConfig) (ETA, Throughput) {
	return estimate.Compute(hist, cfg)
}

// OnWall is e with the clock times it shows on the wall clock, ahead seconds from the run clock (see
// estimate.OnWall).
func OnWall(e ETA, ahead float64) ETA { return estimate.OnWall(e, ahead) }
