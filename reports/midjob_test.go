package reports_test

import (
	"math"
	"strings"
	"testing"

	"runwatch/reports"
	"runwatch/sim"
)

// TestMidJobFirstAnswers: runwatch started on a steady job already 10% done. Its first answer is the one
// sample's (the job's own tokens over its elapsed time, the finished items' lengths and the batch in flight);
// the answers after it must not swing away from it on a minute of samples. They did: the steady run's seed 1
// went 4 h 4 min, then 4 h 59 min (1,140 tokens an item from the history's first block), seed 2 4 h 12 min,
// then 3 h 26 min (765), and a shift warning followed. The job before the history now counts as one block of
// each measure.
func TestMidJobFirstAnswers(t *testing.T) {
	steady := sim.Scenarios()[0]
	if steady.Name != "steady" {
		t.Fatalf("first sim scenario is %q; want steady", steady.Name)
	}
	for _, seed := range []int64{1, 2, 3, 4} {
		c := accCase{s: steady, mode: accFull, from: 0.10}
		obs, _ := c.run(seed, 30)
		rp := reports.NewReplayer(reports.EstimateConfig{}, reports.ShiftConfig{})
		var first float64
		for i, o := range obs[:12] {
			line := rp.Step(o)
			if line.ETAS == nil {
				t.Fatalf("seed %d, answer %d: no estimate (%s)", seed, i, line.Reason)
			}
			if i == 0 {
				if !strings.HasPrefix(line.Reason, "From one sample") {
					t.Fatalf("seed %d: the first answer is %q; want the one sample's", seed, line.Reason)
				}
				first = *line.ETAS
				continue
			}
			if r := *line.ETAS / first; math.Abs(r-1) > 0.10 {
				t.Errorf("seed %d, answer %d (%s): ETA %.0f s against the first answer's %.0f s (%+.0f%%); want within 10%%",
					seed, i, line.Reason, *line.ETAS, first, 100*(r-1))
			}
			if line.Shift {
				t.Errorf("seed %d, answer %d: a shift warning on a steady run", seed, i)
			}
		}
	}
}

// TestMidJobRestart: runwatch started on a job 300 items in, sampling every 3 s, and the server restarted 36 s
// later (its counters carried over). Every answer after it said "no item has finished yet and the engines
// give no token counts" for the rest of the 10 minutes recorded, beside "336 / 25,000 done" and 647 tok/s
// (a new user's console recording, testdata/restart_midjob.jsonl). Every answer must be a running estimate.
func TestMidJobRestart(t *testing.T) {
	obs := readPeerTrace(t, "testdata/restart_midjob.jsonl")
	rp := reports.NewReplayer(reports.EstimateConfig{}, reports.ShiftConfig{})
	bad := 0
	for i, o := range obs {
		line := rp.Step(o)
		if line.State != reports.StateRunning || line.ETAS == nil {
			if bad++; bad <= 3 {
				t.Errorf("answer %d (t=%.0f, %d done): %s, %q; want a running estimate", i, o.T, o.Done, line.State, line.Reason)
			}
		}
	}
	if bad > 3 {
		t.Errorf("...and %d more answers without a running estimate, of %d", bad-3, len(obs))
	}
}
