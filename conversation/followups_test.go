package conversation

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/reports"
)

// replayLog plays a recorded trace into the run's log, one progress line per step, sampling the monitor
// at each step's time the way `bot serve` does, up to T until (0: the whole trace). every thins the trace.
func replayLog(t *testing.T, e *botEnv, clock *testkit.Clock, t0 time.Time, until float64, every int) []reports.Observation {
	t.Helper()
	f, err := os.Open("../reports/testdata/trace_length_drift.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var obs []reports.Observation
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		o, err := reports.ParseObservation(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if until > 0 && o.T > until {
			break
		}
		obs = append(obs, o)
	}
	for i, o := range obs {
		if i%every != 0 && i != len(obs)-1 {
			continue
		}
		avg := 0.0
		if o.AvgCompletion != nil {
			avg = *o.AvgCompletion
		}
		line := fmt.Sprintf("Progress: %d/%d (%d errors), 1.4 req/s, avg completion: %.0f tokens, elapsed: %.0fs\n", o.Done, o.Total, o.Errors, avg, *o.Elapsed)
		if err := os.WriteFile(e.Log, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		clock.Set(t0.Add(time.Duration(o.T * float64(time.Second))))
		e.Mon.Sample(context.Background())
	}
	if last := obs[len(obs)-1]; last.Total > 0 && last.Done >= last.Total {
		// One line saying every item is done is a finish once a second sample confirms it, as the
		// sampler's next one does.
		clock.Set(clock.Now().Add(30 * time.Second))
		e.Mon.Sample(context.Background())
	}
	return obs
}

// TestReplayedJobAnswers replays the demo job's trace through a real monitor and asks what people ask:
// after the ETA moved, "why" names the move with its time and causes and every ETA answer carries it; after
// the finish, the last ETA answer gives the duration and the average throughput, the throughput answer
// still has a rate, and "on track?" compares the first estimate with the real finish.
func TestReplayedJobAnswers(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	clock := testkit.NewClock(t0)
	e := newBotEnv(t, botOpts{Clock: clock, NoLogFile: true, Run: func(r *config.Run) {
		r.Outputs, r.Stages = nil, nil
	}})
	ctx := context.Background()
	ask := func(q string) string {
		t.Helper()
		return e.bot.Ask(ctx, Request{Text: q, Source: "console"}).Message.Text()
	}
	replayLog(t, e, clock, t0, 4200, 2)
	why := ask("why did the ETA move?")
	for _, want := range []string{"the finish moved +", "• throughput ", "items left:", "Now: ETA"} {
		if !strings.Contains(why, want) {
			t.Errorf("why after the move = %q; want %q", why, want)
		}
	}
	if eta := ask("ETA?"); !strings.Contains(eta, "Last move: at") {
		t.Errorf("ETA after the move = %q; want its last move", eta)
	}

	obs := replayLog(t, e, clock, t0, 0, 3)
	last := obs[len(obs)-1]
	eta := ask("ETA?")
	dur := reports.Duration(*last.Elapsed)
	avg := reports.Rate(*last.AvgCompletion*float64(last.Done) / *last.Elapsed, "tok/s")
	for _, want := range []string{"Finished at", "after " + dur, "25,000 items", "Averaged " + avg, "first baseline estimate"} {
		if !strings.Contains(eta, want) {
			t.Errorf("last ETA answer = %q; want %q", eta, want)
		}
	}
	if tp := ask("how fast are we going?"); strings.Contains(tp, "not measured") || !strings.Contains(tp, avg) {
		t.Errorf("throughput after the finish = %q; want the run average %s", tp, avg)
	}
	if on := ask("are we on track?"); !strings.Contains(on, "It finished") || !strings.Contains(on, "first baseline estimate") {
		t.Errorf("on track after the finish = %q", on)
	}
}
