package reports

import "runwatch/reports/estimate"

// Compact bounds a history to at most max points (see estimate.Compact).
func Compact(hist []Observation, max int) []Observation { return estimate.Compact(hist, max) }
