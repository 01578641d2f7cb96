package monitor

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/reports"
	"runwatch/sim"
)

// TestShiftWarningMeasuresFromTheLastETAGiven watches the demo's job (its completions grow from 650 to 1,066
// tokens and move the finish by an hour) while someone asks "ETA?" every askEvery samples. A shift warning must
// measure the move from the ETA the channel was last given and name it: one measured from a baseline taken
// silently said "(!) finish moved +40 min (1 h 59 min → 2 h 39 min left)" in a demo walk while every answer for
// a minute before had shown 2 h 40 min. Asked every sample, no warning announces a move the answers showed;
// asked every half hour, the warnings that come compare against the answer before them.
func TestShiftWarningMeasuresFromTheLastETAGiven(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		askEvery int
		eta      bool // the question gives the ETA ("ETA?"), or only reads progress ("how fast?")
	}{{1, true}, {60, true}, {1, false}} {
		t.Run(fmt.Sprintf("ask every %d samples, ETA %v", mode.askEvery, mode.eta), func(t *testing.T) {
			t.Parallel() // three whole demo jobs, sampled every 30 s: beside each other
			shiftWarningFromTheLastETAGiven(t, mode.askEvery, mode.eta)
		})
	}
}

// shiftWarningFromTheLastETAGiven runs the demo job through its completions' growth, asking every askEvery samples for the ETA (askETA)
// or only for progress.
func shiftWarningFromTheLastETAGiven(t *testing.T, askEvery int, askETA bool) {
	dir := t.TempDir()
	w := &simWatched{job: sim.NewJob(sim.DemoScenario(), 1), log: filepath.Join(dir, "gen.log")}
	srv := httptest.NewServer(http.HandlerFunc(w.serve))
	w.advance(t, 600)
	f := &config.File{Runs: []config.Run{{Name: "demo", Log: w.log, Metrics: []string{srv.URL + "/metrics"},
		Total: int64(sim.DemoScenario().Items), MaxTokens: sim.DemoScenario().MaxTokens}}}
	m, _, err := New(f, Options{ProbeTimeout: 5 * time.Second, Now: w.now, Mono: w.mono, Fresh: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var given *reports.ETA // the last ETA an answer gave
	warnings := 0
	// The first 200 samples (1 h 40 min of the job, to 45% done) hold the completions' growth and the warnings
	// the old baseline gave (at samples 71 and 101); the rest of the job adds time, not cases.
	for i := 0; i < 200 && !w.job.Done(); i++ {
		w.advance(t, 30)
		ev := m.Sample(context.Background())[0]
		if sh := ev.Shift; sh != nil {
			warnings++
			if !askETA && warnings == 1 && sh.FromShown {
				t.Errorf("only \"how fast?\" asked: the first warning says its baseline was given: %s", reports.PlainText(reports.ShiftLead(*sh, time.UTC)))
			}
			lead := reports.PlainText(reports.ShiftLead(*sh, time.UTC))
			t.Logf("ask every %d samples, sample %d: %s", askEvery, i, lead)
			if given == nil {
				continue
			}
			was := given.At + *given.Seconds
			if math.Abs(sh.FromFinish-was) > 1 || !sh.FromShown || !strings.Contains(lead, "in the ETA last given, at ") {
				t.Errorf("ask every %d samples, sample %d: the warning measures from the finish %s, not the one last given (%s):\n  %s",
					askEvery, i, reports.Duration(sh.FromFinish-sh.At), reports.Duration(was-sh.At), lead)
			}
			if math.Abs(sh.ToFinish-was) < 1200 {
				t.Errorf("ask every %d samples, sample %d: a warning of a move of %s since the ETA last given:\n  %s",
					askEvery, i, reports.Duration(math.Abs(sh.ToFinish-was)), lead)
			}
		}
		if i%askEvery == 0 {
			// "how fast?" reads the same evaluation and gives no ETA: it tells the channel nothing.
			rs, err := m.RunStatus(context.Background(), "demo", Need{Progress: true, ETA: askETA})
			if err != nil {
				t.Fatal(err)
			}
			if e := rs.ETA; askETA && e != nil && e.State == reports.StateRunning && e.Seconds != nil && e.Progress >= 0.05 {
				given = e
			}
		}
	}
	srv.Close()
	if !askETA && warnings == 0 {
		t.Error("only \"how fast?\" asked: no shift warning; want the moves nobody was told of")
	}
	if askETA && askEvery == 1 && warnings > 0 {
		t.Errorf("asked every sample: %d shift warnings; want none (every answer showed the finish as it moved)", warnings)
	}
}
