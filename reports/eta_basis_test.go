package reports_test

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/internal/testkit/goldenfile"
	"runwatch/reports"
	"runwatch/sim"
)

// TestETASaysItsOwnBasis replays the demo's job as the demo watches it (runwatch started 10 min into it, a
// sample every 30 s) and reads every fifth evaluation up to half done, ETA and throughput from one estimate:
//   - a rate the ETA says is the whole run's is the throughput line's run average, figure for figure (the
//     demo said "1,349 tok/s (… tok/s of the whole run)" beside "run average 1,331 tok/s");
//   - an ETA priced by another estimator than the structural model leads with that estimator's items/s and
//     says no "tokens each at … tok/s" it did not use (the demo said "21,428 items left × 718 tokens each at
//     1,349 tok/s …; priced at 1.37 items/s": the first is 3 h 10 min, the ETA 4 h 21 min).
//
// The first evaluation of each kind (seed 1) is kept as a golden answer: testdata/answer_eta_basis_*.golden
// (go test ./reports -run TestETASaysItsOwnBasis -update rewrites them).
func TestETASaysItsOwnBasis(t *testing.T) {
	t.Parallel()
	var whole, priced int
	goldens := map[string]bool{}
	for seed := int64(1); seed <= 3; seed++ {
		obs, _ := sim.Trace(sim.DemoScenario(), seed, 30)
		var hist []reports.Observation
		for _, o := range obs {
			if o.T < 600 {
				continue
			}
			hist = append(hist, o)
			if len(hist)%5 != 0 || 2*o.Done > o.Total {
				continue
			}
			e, tp := reports.Estimate(hist, reports.EstimateConfig{})
			if e.State != reports.StateRunning {
				continue
			}
			kind := ""
			switch {
			case e.Estimator != "" && e.Estimator != "the structural model":
				priced++
				kind = "priced"
				lead := reports.Count(e.ItemsLeft) + " items left at " + reports.Rate(e.ItemsPerS, "items/s") + " ("
				if !strings.HasPrefix(e.Reason, lead) || strings.Contains(e.Reason, "tokens each at") {
					t.Errorf("seed %d t=%.0f: priced by %q, the reason is %q; want it to lead with %q and no tokens each at tok/s",
						seed, o.T, e.Estimator, e.Reason, lead)
				}
			case e.TokensPerS > 0 && (strings.Contains(e.Reason, "(rates of the whole run)") ||
				strings.Contains(e.Reason, "tok/s of the whole run") && !strings.Contains(e.Reason, "tok/s of the whole run,")):
				whole++
				kind = "whole_run"
				if got, want := reports.Rate(e.TokensPerS, "tok/s"), reports.Rate(tp.RunTokensPerS, "tok/s"); got != want {
					t.Errorf("seed %d t=%.0f: the ETA says %s of the whole run (%q), the throughput's run average %s",
						seed, o.T, got, e.Reason, want)
				}
			}
			if kind != "" && seed == 1 && !goldens[kind] {
				goldens[kind] = true
				rs := reports.RunStatus{Name: "demo", ETA: &e, Throughput: &tp,
					Progress: &reports.Progress{Done: o.Done, Total: o.Total, Errors: o.Errors, Source: "log"}}
				m := reports.AnswerETA(rs, time.UTC, "no progress reported yet.")
				goldenfile.Text(t, filepath.Join("testdata", "answer_eta_basis_"+kind+".txt.golden"), []byte(m.Text()+"\n"),
					flag.Lookup("update").Value.(flag.Getter).Get().(bool))
			}
		}
	}
	// Both kinds of answer must have been read, or the test checks nothing.
	if whole == 0 || priced == 0 {
		t.Errorf("read %d answers with a whole run's rate and %d priced by another estimator; want some of each", whole, priced)
	}
}
