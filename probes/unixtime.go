package probes

import (
	"math"
	"time"
)

// Every reading, observation and history point carries its time as float unix seconds (as
// Prometheus does); these two are the one conversion between that and time.Time.

// UnixSeconds is t as float unix seconds.
func UnixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// UnixTime is float unix seconds as a time.
func UnixTime(s float64) time.Time {
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(frac*1e9))
}
