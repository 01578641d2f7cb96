package reports_test

import (
	"testing"

	"runwatch/reports"
	"runwatch/sim"
)

func TestReplayer(t *testing.T) {
	t.Parallel()
	obs, finish := sim.Trace(sim.Scenarios()[0], 1, 30) // steady, 585 points
	rp := reports.NewReplayer(reports.EstimateConfig{}, reports.ShiftConfig{})
	var last reports.ReplayLine
	for i, o := range obs {
		last = rp.Step(o)
		if last.T != o.T {
			t.Fatalf("Step(t=%v).T = %v", o.T, last.T)
		}
		if n := len(rp.History()); n > 480 {
			t.Fatalf("after %d steps the history holds %d points; want at most 480", i+1, n)
		}
		if float64(o.Done) > 0.05*float64(o.Total) && o.Done < o.Total &&
			(last.State != reports.StateRunning || last.ETAS == nil || last.Low == nil || last.High == nil) {
			t.Fatalf("Step(t=%v) = %+v; want a running estimate with a range", o.T, last)
		}
		if last.Shift {
			t.Errorf("Step(t=%v) warned on a steady run: %s", o.T, last.Reason)
		}
	}
	if last.State != reports.StateDone || last.T < finish {
		t.Errorf("last line %+v; want done", last)
	}
	// An observation older than the newest is not added.
	before := len(rp.History())
	stale := obs[10]
	if line := rp.Step(stale); len(rp.History()) != before || line.T != last.T {
		t.Errorf("Step(an old observation) = %+v with %d points; want it ignored", line, len(rp.History()))
	}
}
