package testkit

import (
	"runwatch/monitor"
	"runwatch/reports"
)

// Eval is one sampled evaluation of run, running, changed by mod (nil: as it is).
func Eval(run string, mod func(*reports.RunStatus)) monitor.Evaluation {
	rs := reports.RunStatus{Name: run, ETA: &reports.ETA{State: reports.StateRunning}}
	if mod != nil {
		mod(&rs)
	}
	return monitor.Evaluation{Run: rs, Sample: true}
}

// Stalled makes a status stalled, for Eval.
func Stalled(rs *reports.RunStatus) {
	since := 1000.0
	rs.ETA = &reports.ETA{State: reports.StateStalled, StalledSince: &since, Reason: "no progress"}
}

// ProtectedWrite makes a status see a process writing to a protected /shared, for Eval.
func ProtectedWrite(rs *reports.RunStatus) {
	rs.Storage.Warnings = []reports.StorageWarning{{Kind: "protected_write", Mount: "/shared", Message: "1 process is writing to protected `/shared`"}}
}
