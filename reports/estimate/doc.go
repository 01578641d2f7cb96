// Package estimate owns the finish estimate of a run and the facts it rests on: engine counters folded into
// totals that only grow (restarts, replicas behind one address, counters that step back, servers that stop
// answering), what a token counter means (per iteration or on finish), the mean completion length with the
// items in flight as censored observations, throughput, the candidate estimators and the choice between them by
// their own past errors, and the calibrated range. It is pure: no I/O, no clock; time is a parameter.
package estimate
