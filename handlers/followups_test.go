package handlers

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/reports"
)

// replayLog plays a recorded trace into the run's log, one progress line per step, sampling the monitor
// at each step's time the way `bot serve` does, up to T until (0: the whole trace). every thins the trace.
func replayLog(t *testing.T, e *botEnv, clock *testkit.Clock, t0 time.Time, until float64, every int) []reports.Observation {
	t.Helper()
	f, err := os.Open("testdata/trace_length_drift.jsonl")
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
	return obs
}

// TestReplayedJobAnswers replays the demo job's trace through a real monitor and asks what people ask:
// after the ETA moved, "why" names the move with its time and causes and every ETA answer carries it; after
// the finish, the last ETA answer gives the duration and the average throughput, the throughput answer
// still has a rate, and "on track?" compares the first estimate with the real finish.
func TestReplayedJobAnswers(t *testing.T) {
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

func TestFinishedPostSummarises(t *testing.T) {
	a := NewAlerter(time.UTC, nil)
	t0 := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	fin := &reports.FinishSummary{StartedAt: float64(t0.Add(-5 * time.Hour).Unix()), FinishedAt: float64(t0.Unix()), DurationS: 5 * 3600,
		Items: 25000, Errors: 3, Tokens: 25e6, AvgTokensPerS: 25e6 / (5 * 3600), PeakTokensPerS: 1700, AvgItemsPerS: 25000.0 / (5 * 3600)}
	done := ev("synth", func(rs *reports.RunStatus) {
		rs.ETA = &reports.ETA{State: reports.StateDone, Reason: "all done"}
		rs.Progress = &reports.Progress{Done: 25000, Total: 25000, Errors: 3}
		rs.Finish = fin
	})
	posts := a.Process([]monitor.Evaluation{done}, t0, func(string) bool { return false })
	if len(posts) != 1 {
		t.Fatalf("posts = %v", kinds(posts))
	}
	text := posts[0].Message.Text()
	for _, want := range []string{"after 5 h", "25,000 items", "3 errors", "25M tokens", "Averaged 1,389 tok/s", "peak 1,700 tok/s"} {
		if !strings.Contains(text, want) {
			t.Errorf("finished post = %q; want %q", text, want)
		}
	}
}

func TestAskUnknownRunSaysSo(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	ctx := context.Background()
	for _, req := range []Request{
		{Text: "ETA for synth-99k?", Source: "console"},
		{Text: "how is synth-99k doing? status of synth-99k", Source: "mention", Channel: "C1"},
		{Command: "eta", Text: "synth-99k", Source: "slash", Channel: "C1"},
		{Text: "/runwatch why synth-99k", Source: "mention", Channel: "C1"},
	} {
		rep := e.bot.Ask(ctx, req)
		text := rep.Message.Text()
		if !rep.Refused || !strings.Contains(text, "I don't watch a run called synth-99k") || !strings.Contains(text, "synth") {
			t.Errorf("Ask(%+v) = %q (refused %v); want a refusal naming synth-99k and the runs", req, text, rep.Refused)
		}
	}
	if rep := e.bot.Ask(ctx, Request{Text: "ETA for synth?", Source: "console"}); rep.Refused {
		t.Errorf("ETA for the configured run was refused: %q", rep.Message.Text())
	}
}

func TestAskPathAsPeopleSayIt(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) {
		r.Protected = []string{filepath.Dir(r.Outputs[0]) + "/shared"}
	}})
	os.MkdirAll(e.Dir+"/shared", 0o755)
	ctx := context.Background()
	tests := []struct {
		text, intent, want string
		refused            bool
	}{
		{"are we writing to /shared?", "writes", "`" + e.Dir + "/shared`", false},
		{"is /shared safe?", "safe", "`" + e.Dir + "/shared`", false},
		{"is shared safe?", "safe", "`" + e.Dir + "/shared`", false},
		{"are we writing to the shared dir?", "writes", "`" + e.Dir + "/shared`", false},
		{"how much space is left on /out?", "space", "holds `" + e.Dir + "/out`", false},
		{"how much space is left on /etc?", "space", "isn't one of them", true},
		{"are we writing to /etc/shared?", "writes", "isn't one of them", true},
	}
	for _, tt := range tests {
		rep := e.bot.Ask(ctx, Request{Text: tt.text, Source: "console"})
		if rep.Intent != tt.intent || rep.Refused != tt.refused || !strings.Contains(rep.Message.Mrkdwn(), tt.want) {
			t.Errorf("Ask(%q) = intent %q refused %v %q; want %q refused %v containing %q", tt.text, rep.Intent, rep.Refused,
				rep.Message.Mrkdwn(), tt.intent, tt.refused, tt.want)
		}
	}
}

func TestPathAliasAmbiguous(t *testing.T) {
	r := &config.Run{Protected: []string{"/mnt/a/shared", "/mnt/b/shared"}, Outputs: []string{"/data/out"}}
	if a, ok := pathAlias(r, "/shared"); ok {
		t.Errorf("pathAlias(/shared) = %q with two shared mounts; want no alias", a)
	}
	if a, ok := pathAlias(r, "/a/shared"); !ok || a != "/mnt/a/shared" {
		t.Errorf("pathAlias(/a/shared) = %q, %v; want /mnt/a/shared", a, ok)
	}
	if a, ok := pathAlias(r, "/data"); ok {
		t.Errorf("pathAlias(/data) = %q; want none: a configured prefix is the monitor's to allow, not an alias", a)
	}
	if _, ok := bareWordPath(r, "is shared safe?"); ok {
		t.Error("bareWordPath(shared) with two shared mounts answered; want ambiguity refused")
	}
}

// A /runwatch subcommand is a command even when its name starts sentences ("left", "why", "safe").
func TestSlashSubcommandsThatStartSentences(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	ctx := context.Background()
	for _, tc := range []struct{ text, intent string }{
		{"left synth", "left"}, {"why", "why"}, {"safe", "safe"}, {"ontrack synth", "ontrack"},
	} {
		if rep := e.bot.Ask(ctx, Request{Text: tc.text, Source: "slash", Channel: "C1"}); rep.Intent != tc.intent {
			t.Errorf("/runwatch %s: intent %q; want %q (%q)", tc.text, rep.Intent, tc.intent, rep.Message.Text())
		}
	}
	// In a mention the same words start a sentence.
	if rep := e.bot.Ask(ctx, Request{Text: "why is it stuck?", Source: "mention", Channel: "C1"}); rep.Intent != "stuck" {
		t.Errorf("mention 'why is it stuck?': intent %q; want stuck", rep.Intent)
	}
}
