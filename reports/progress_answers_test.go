package reports

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestProgressAnswersGolden renders the answers to "ETA?", "how fast are we going?" and "is it stuck?"
// (and "is it still running?") over the sample status, a replayed job moving and finished, a stalled run,
// a run with no total and one with nothing known, and compares each with testdata/answer_<name>.*.golden
// (go test ./reports -run TestProgressAnswersGolden -update rewrites them).
func TestProgressAnswersGolden(t *testing.T) {
	t.Parallel()
	rs, now := sampleStatus()
	const trace = "testdata/trace_length_drift.jsonl"
	e, tp, moves, hist := replayTrace(t, trace, 3600)
	last := hist[len(hist)-1]
	moved := rs
	moved.Name = "demo"
	moved.Progress = &Progress{Done: last.Done, Total: last.Total, Errors: last.Errors, Source: "log"}
	moved.ETA, moved.Throughput, moved.Moves = &e, &tp, &moves

	fe, ftp, fmoves, fhist := replayTrace(t, trace, 0)
	fin := SummarizeFinish(fhist, EstimateConfig{Window: 900, StallAfter: 600}, fmoves.First)
	if fin == nil {
		t.Fatal("SummarizeFinish on the whole trace = nil; want a summary")
	}
	done := moved
	done.ETA, done.Finish, done.Throughput, done.Moves = &fe, fin, &ftp, &fmoves
	done.Progress = &Progress{Done: 25000, Total: 25000, Errors: 18, Source: "log"}

	stalled := rs
	stalled.ETA = &ETA{State: StateStalled, StalledSince: fp(float64(now.Add(-38 * time.Minute).Unix())), Reason: "no progress for 38 min"}
	noTotal := rs
	noTotal.Progress = &Progress{Done: 12340, Source: "log"}
	noTotal.ETA = &ETA{State: StateUnknown, Reason: "no total: set `total:` in the run file or log 'Progress: done/total'"}
	unknown := rs
	unknown.ETA, unknown.Throughput, unknown.Progress, unknown.Engines = nil, nil, nil, nil
	const why = "no progress reported yet."

	cases := map[string]Message{
		"eta":                    AnswerETA(rs, time.UTC, why),
		"eta_moved":              AnswerETA(moved, time.UTC, why),
		"eta_done":               AnswerETA(done, time.UTC, why),
		"eta_stalled":            AnswerETA(stalled, time.UTC, why),
		"eta_unknown":            AnswerETA(unknown, time.UTC, why),
		"throughput":             AnswerThroughput(rs, time.UTC, why),
		"throughput_done":        AnswerThroughput(done, time.UTC, why),
		"throughput_unknown":     AnswerThroughput(unknown, time.UTC, why),
		"stuck_moving":           AnswerStuck(rs, time.UTC, false, why),
		"stuck_moving_asked_ok":  AnswerStuck(rs, time.UTC, true, why),
		"stuck_stalled":          AnswerStuck(stalled, time.UTC, false, why),
		"stuck_stalled_asked_ok": AnswerStuck(stalled, time.UTC, true, why),
		"stuck_done":             AnswerStuck(done, time.UTC, false, why),
		"stuck_done_asked_ok":    AnswerStuck(done, time.UTC, true, why),
		"stuck_no_total":         AnswerStuck(noTotal, time.UTC, false, why),
		"stuck_unknown":          AnswerStuck(unknown, time.UTC, false, why),
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			golden(t, "answer_"+name+".txt.golden", []byte(m.Text()+"\n"))
			blocks, err := json.MarshalIndent(m.Blocks(), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			goldenJSON(t, "answer_"+name+".blocks.golden.json", blocks)
		})
	}
}

// TestAnswerStuckNeverMovingWithoutEvidence: a run with nothing known, or a rough figure from one sample, is
// "can't tell", never "moving", whichever way the question is asked.
func TestAnswerStuckNeverMovingWithoutEvidence(t *testing.T) {
	rs, _ := sampleStatus()
	rough := rs
	rough.ETA = &ETA{State: StateUnknown, Rough: true, Reason: "one sample so far"}
	none := rs
	none.ETA = nil
	for name, r := range map[string]RunStatus{"rough": rough, "none": none} {
		for _, asked := range []bool{false, true} {
			got := AnswerStuck(r, time.UTC, asked, "no progress reported yet.").Text()
			if want := "Can't tell"; !strings.Contains(got, want) || strings.Contains(got, "moving") {
				t.Errorf("AnswerStuck(%s, asks if moving %v) = %q; want %q and no \"moving\"", name, asked, got, want)
			}
		}
	}
}

// "Is it stuck?" over silent servers: none answering is "can't tell" (the pace so far is no evidence the
// job moves now); one of two answering is still moving; one answering without metrics is up.
func TestStuckOverSilentServers(t *testing.T) {
	running := &ETA{State: StateRunning, Reason: "steady"}
	tp := &Throughput{TokensPerS: 1200, ItemsPerS: 1.2, WindowS: 300}
	down := EngineStatus{URL: "http://gpu-1:8000/metrics", Error: "connection refused"}
	up := EngineStatus{URL: "http://gpu-2:8000/metrics", OK: true}
	notMetrics := EngineStatus{URL: "http://gpu-3:8000/metrics", Error: "an HTML page", Answers: true}
	for _, tc := range []struct {
		name    string
		engines []EngineStatus
		want    string
	}{
		{"both down", []EngineStatus{down, down}, "(?) Can't tell — none of the run's 2 servers answers (below); before: 1,200 tok/s"},
		{"one of two down", []EngineStatus{down, up}, "(ok) No, it's moving."},
		{"one answering without metrics", []EngineStatus{down, notMetrics}, "(ok) No, it's moving."},
		{"no servers", nil, "(ok) No, it's moving."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := RunStatus{Name: "synth", ETA: running, Throughput: tp, Engines: tc.engines}
			first := strings.SplitN(AnswerStuck(rs, time.UTC, false, "").Text(), "\n", 3)[1]
			if !strings.HasPrefix(first, tc.want) {
				t.Errorf("AnswerStuck over %s = %q; want it to start %q", tc.name, first, tc.want)
			}
		})
	}
}

// "Is it stuck?" from one look: a job killed a second before keeps its average since the start, so that
// average is no evidence it moves now. Servers with a request running are, and so is a log that changed
// within a minute; idle servers say the job may have stopped. Before: "(ok) No, it's moving. 192 tok/s" 5 s after kill -9, its servers at 0 running.
func TestStuckFromOneLookNeedsWorkNow(t *testing.T) {
	rough := &ETA{State: StateRunning, Rough: true, Reason: "From one sample"}
	tp := &Throughput{TokensPerS: 192, ItemsPerS: 0.3, RunTokensPerS: 192, RunItemsPerS: 0.3, WindowS: 660, SinceStart: true, Basis: "127K tokens in 11 min"}
	zero, two := 0.0, 2.0
	idle := EngineStatus{URL: "http://127.0.0.1:8000/metrics", OK: true, Running: &zero, Waiting: &zero}
	busy := EngineStatus{URL: "http://127.0.0.1:8000/metrics", OK: true, Running: &two, Waiting: &zero}
	for _, tc := range []struct {
		name    string
		engines []EngineStatus
		want    string
	}{
		{"idle servers", []EngineStatus{idle}, "(?) Can't tell yet — one look so far: 192 tok/s · 0.30 items/s (127K tokens in 11 min) is the average since the job started; its servers have no request running or waiting, so the job may have stopped."},
		{"no servers", nil, "(?) Can't tell yet — one look so far: 192 tok/s · 0.30 items/s (127K tokens in 11 min) is the average since the job started. Ask again"},
		{"a request running", []EngineStatus{idle, busy}, "(ok) No, it's moving. 192 tok/s"},
		{"a log changed 5 s ago", []EngineStatus{idle}, "(ok) No, it's moving. 192 tok/s"},
		{"a log changed 5 min ago", []EngineStatus{idle}, "(?) Can't tell yet — one look so far: 192 tok/s · 0.30 items/s (127K tokens in 11 min) is the average since the job started; the log last changed 5 min before this look; its servers have no request running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := *tp
			if strings.HasPrefix(tc.name, "a log changed") {
				age := 5.0
				if strings.HasSuffix(tc.name, "min ago") {
					age = 300
				}
				tp.LogAgeS = &age
			}
			rs := RunStatus{Name: "synth", ETA: rough, Throughput: &tp, Engines: tc.engines}
			first := strings.SplitN(AnswerStuck(rs, time.UTC, false, "").Text(), "\n", 3)[1]
			if !strings.HasPrefix(first, tc.want) {
				t.Errorf("AnswerStuck from one look, %s = %q; want it to start %q", tc.name, first, tc.want)
			}
		})
	}
}
