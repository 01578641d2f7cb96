package reports

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runwatch/reports/estimate"
	"strings"
	"testing"
	"time"

	"runwatch/probes"
)

// traceBase puts a trace's T (seconds since the start) on the live clock, so answers name clock times.
var traceBase = float64(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).Unix())

// replayTrace feeds a recorded trace through the Replayer up to T until (seconds since the start; 0 for the
// whole trace) and returns the estimate, the throughput and the move log there, as the bot would hold them.
func replayTrace(t *testing.T, path string, until float64) (ETA, Throughput, MoveLog, []Observation) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg := EstimateConfig{Window: 900, StallAfter: 600}
	r := NewReplayer(cfg, ShiftConfig{})
	var all []Observation
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		o, err := ParseObservation(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if until > 0 && o.T > until {
			break
		}
		o.T += traceBase
		all = append(all, o)
		r.Step(o)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	e, tp := Estimate(r.History(), cfg)
	if e.Seconds != nil {
		at := estimate.Unix(r.History()[len(r.History())-1].T + *e.Seconds)
		e.FinishAt = &at
	}
	return e, tp, r.Moves(), all
}

// TestFollowupGolden renders each follow-up answer on a recorded history: the demo job's trace, whose
// completions grow and whose ETA moves once (at t=2,940 s).
func TestFollowupGolden(t *testing.T) {
	t.Parallel()
	const trace = "testdata/trace_length_drift.jsonl"
	e, tp, moves, hist := replayTrace(t, trace, 3600)
	if len(moves.Moves) == 0 || moves.First == nil {
		t.Fatalf("replay to t=3600: moves %+v; want a shift (the completions grow) and a first estimate", moves)
	}
	last := hist[len(hist)-1]
	rs, _ := sampleStatus()
	rs.Name = "demo"
	rs.Progress = &Progress{Done: last.Done, Total: last.Total, Errors: last.Errors, Source: "log"}
	rs.ETA, rs.Throughput, rs.Moves = &e, &tp, &moves

	// The same run with no writers yet and its symlinked output inside the protected mount.
	in := storageInput()
	in.Scan = &probes.WriterScan{Processes: 300, Invisible: 1, AsRoot: true, Hidden: []probes.HiddenProcess{{PID: 1, Command: "tini"}}}
	landing := BuildStorage(in, func(string) (float64, bool) { return 11400, true })

	fe, ftp, fmoves, fhist := replayTrace(t, trace, 0)
	fin := SummarizeFinish(fhist, EstimateConfig{Window: 900, StallAfter: 600}, fmoves.First)
	if fin == nil {
		t.Fatal("SummarizeFinish on the whole trace = nil; want a summary")
	}
	done := rs
	done.ETA, done.Finish, done.Throughput = &fe, fin, &ftp
	done.Progress = &Progress{Done: 25000, Total: 25000, Errors: 18, Source: "log"}

	cases := map[string]Message{
		"why":          AnswerWhy(rs.Name, rs.ETA, rs.Moves, time.UTC),
		"why_none":     AnswerWhy(rs.Name, rs.ETA, &MoveLog{First: moves.First, Announced: moves.First}, time.UTC),
		"ontrack":      AnswerOnTrack(rs.Name, rs.ETA, rs.Moves, nil, time.UTC),
		"ontrack_done": AnswerOnTrack(rs.Name, &fe, &fmoves, fin, time.UTC),
		"left":         AnswerLeft(rs, time.UTC),
		"left_done":    AnswerLeft(done, time.UTC),
		"safe_writing": AnswerSafe(rs.Name, rs.Storage, Target{}),
		"safe_landing": AnswerSafe(rs.Name, landing, Target{Path: "/shared", Resolved: "/shared"}),
		"status_moved": RenderStatus(rs, estimate.Unix(last.T), time.UTC),
		"status_done":  RenderStatus(done, estimate.Unix(fhist[len(fhist)-1].T), time.UTC),
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			golden(t, name+".txt.golden", []byte(m.Text()+"\n"))
			blocks, err := json.MarshalIndent(m.Blocks(), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			goldenJSON(t, name+".blocks.golden.json", blocks)
		})
	}
}

// TestReplayedFinishSummary replays a finished job and checks its last answer says how long it took and how
// fast it went, from the trace's own numbers, and that throughput does not decay to "not measured yet".
func TestReplayedFinishSummary(t *testing.T) {
	t.Parallel()
	e, tp, moves, hist := replayTrace(t, "testdata/trace_length_drift.jsonl", 0)
	if e.State != StateDone {
		t.Fatalf("state after the whole trace = %q; want done", e.State)
	}
	f := SummarizeFinish(hist, EstimateConfig{Window: 900, StallAfter: 600}, moves.First)
	if f == nil {
		t.Fatal("SummarizeFinish = nil")
	}
	last := hist[len(hist)-1]
	if f.DurationS != *last.Elapsed || f.Items != 25000 || f.Errors != 18 {
		t.Errorf("summary %+v; want duration %v s, 25000 items, 18 errors", f, *last.Elapsed)
	}
	wantTok := *last.AvgCompletion * 25000
	if f.Tokens != wantTok || f.AvgTokensPerS != wantTok/f.DurationS {
		t.Errorf("tokens %v at %v tok/s; want %v at %v", f.Tokens, f.AvgTokensPerS, wantTok, wantTok/f.DurationS)
	}
	if f.PeakTokensPerS < f.AvgTokensPerS {
		t.Errorf("peak %v tok/s below the average %v", f.PeakTokensPerS, f.AvgTokensPerS)
	}
	line := FinishLine(*f, time.UTC)
	for _, want := range []string{"after " + Duration(f.DurationS), Rate(f.AvgTokensPerS, "tok/s"), "25,000 items", "18 errors", "first baseline estimate"} {
		if !strings.Contains(line, want) {
			t.Errorf("FinishLine = %q; want %q in it", line, want)
		}
	}
	tp = f.Throughput(tp)
	if got := ThroughputLine(tp); strings.Contains(got, "not measured") || !strings.Contains(got, "tok/s") {
		t.Errorf("throughput after the finish = %q; want a rate", got)
	}
}

// A metrics endpoint that fails is named once in an answer that carries the engine line, not again as a
// problem below it.
func TestMetricsErrorOnce(t *testing.T) {
	rs, now := sampleStatus()
	text := RenderStatus(rs, now, time.UTC).Text()
	if n := strings.Count(text, "connection refused"); n != 1 {
		t.Errorf("status names the failing endpoint %d times; want once:\n%s", n, text)
	}
	// A problem the engine line does not show (another error) stays.
	rs.Problems = append(rs.Problems, Problem{Probe: "log /data/gen.log", Error: "permission denied"})
	if text := RenderStatus(rs, now, time.UTC).Text(); !strings.Contains(text, "permission denied") {
		t.Errorf("status lost an unrelated problem:\n%s", text)
	}
}

// The storage headline leads with an output inside a protected mount, not with "no writes" above it.
func TestStorageHeadlineLeadsWithTheRisk(t *testing.T) {
	in := storageInput()
	in.Scan = &probes.WriterScan{Processes: 3}
	st := BuildStorage(in, func(string) (float64, bool) { return 11400, true })
	v := StorageVerdict(st, nil)
	if strings.Contains(v, "no writes to") || !strings.Contains(v, "1 output resolves inside protected `/shared`") {
		t.Errorf("StorageVerdict = %q; want the output inside /shared first, no all-clear", v)
	}
	w := AnswerWrites("demo", st, Target{}).Text()
	if !strings.Contains(w, "Not yet — no writes seen to /shared, but 1 output resolves inside it") {
		t.Errorf("AnswerWrites = %q; want the output that will land there", w)
	}
	// Root is not told to run as root; the hidden process is named.
	in.Scan = &probes.WriterScan{Processes: 3, Invisible: 1, AsRoot: true, Hidden: []probes.HiddenProcess{{PID: 1, Command: "tini"}}}
	st = BuildStorage(in, func(string) (float64, bool) { return 11400, true })
	w = AnswerWrites("demo", st, Target{}).Text()
	if strings.Contains(w, "or as root") || !strings.Contains(w, "tini pid 1") {
		t.Errorf("AnswerWrites as root = %q; want the hidden process named and no advice to run as root", w)
	}
	// Both notes in one parenthesis, not "(no writes there yet) (1 process not visible: ...)".
	if v, want := PlainText(StorageVerdict(st, nil)), "inside protected /shared (no writes there yet; 1 process not visible: tini pid 1)"; !strings.Contains(v, want) {
		t.Errorf("StorageVerdict = %q; want %q", v, want)
	}
}

// TestFinishSummaryPeerCorpus summarises every job of the peer corpus (recorded against a third-party vLLM
// simulator) and checks the summary against the trace's own numbers: items and errors at the end, the
// job's elapsed time, and tokens from the log's mean completion agreeing with the engine's counter where
// the counter saw every request (one server, no restart).
func TestFinishSummaryPeerCorpus(t *testing.T) {
	paths, err := filepath.Glob("testdata/peer/*.jsonl")
	if err != nil || len(paths) == 0 {
		t.Fatalf("peer corpus: %v, %d traces", err, len(paths))
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			_, _, moves, hist := replayTrace(t, p, 0)
			last := hist[len(hist)-1]
			if last.Total == 0 || last.Done < last.Total {
				t.Skipf("the job did not finish (%d/%d)", last.Done, last.Total)
			}
			f := SummarizeFinish(hist, EstimateConfig{Window: 900, StallAfter: 600}, moves.First)
			if f == nil {
				t.Fatal("SummarizeFinish = nil for a finished job")
			}
			if f.Items != last.Total || f.Errors != last.Errors {
				t.Errorf("items %d errors %d; want %d and %d", f.Items, f.Errors, last.Total, last.Errors)
			}
			if last.Elapsed != nil && math.Abs(f.DurationS-*last.Elapsed) > 1e-6 {
				t.Errorf("duration %v s; want the job's elapsed %v s", f.DurationS, *last.Elapsed)
			}
			if f.Tokens <= 0 || f.AvgTokensPerS <= 0 || f.PeakTokensPerS <= 0 {
				t.Errorf("tokens %v, avg %v, peak %v tok/s; want all measured", f.Tokens, f.AvgTokensPerS, f.PeakTokensPerS)
			}
			// The peak is the throughput answers showed along the way: well under the average, they showed a share
			// of the job's (replicas behind one URL: one replica's counter over the job's elapsed time, 3,585 tok/s
			// for a job that averaged 7,070).
			if f.PeakTokensPerS < 0.9*f.AvgTokensPerS {
				t.Errorf("peak %.0f tok/s under the average %.0f: the throughput shown along the way was a share of the job's",
					f.PeakTokensPerS, f.AvgTokensPerS)
			}
			counted := last.GenTokens != nil && last.FinishedLenCount != nil && *last.FinishedLenCount == float64(last.Done) && last.Restarts == 0
			if counted && math.Abs(f.Tokens-*last.GenTokens) > 0.01**last.GenTokens {
				t.Errorf("tokens %v from the log's mean completion; the engine counted %v", f.Tokens, *last.GenTokens)
			}
			if line := FinishLine(*f, time.UTC); !strings.Contains(line, "after "+Span(f.DurationS)) || !strings.Contains(line, Rate(f.AvgTokensPerS, "tok/s")) {
				t.Errorf("FinishLine = %q; want the duration and the average rate", line)
			}
		})
	}
}

// TestAnnounceWaitMatchesDetector holds the "no baseline estimate yet" answer to the detector's own rule: it
// names the condition that keeps a fresh ShiftDetector from taking the ETA an answer gives (Told), and says this
// answer's ETA is the baseline only when the detector takes it.
func TestAnnounceWaitMatchesDetector(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		name string
		e    ETA
		want string
	}{
		{"rough", ETA{State: StateRunning, Seconds: f(3600), LowS: f(3300), HighS: f(3900), Progress: 0.2, Rough: true}, "measure a rate"},
		{"early", ETA{State: StateRunning, Seconds: f(3600), LowS: f(3300), HighS: f(3900), Progress: 0.012}, "(1.2% now)"},
		{"wide", ETA{State: StateRunning, Seconds: f(3600), LowS: f(1000), HighS: f(9000), Progress: 0.2}, "with this answer"},
		{"stalled", ETA{State: StateStalled, Progress: 0.2}, "moving again"},
		{"unknown", ETA{State: StateUnknown, Progress: 0.2}, "once the ETA is known"},
		{"restarted", ETA{State: StateRunning, At: 1000, ResetAt: f(700), Seconds: f(3600), LowS: f(3300), HighS: f(3900), Progress: 0.2}, "since their restart"},
		{"ready", ETA{State: StateRunning, Seconds: f(3600), LowS: f(3300), HighS: f(3900), Progress: 0.2}, "with this answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := announceWait(&c.e)
			if !strings.Contains(got, c.want) {
				t.Errorf("announceWait(%s) = %q; want it to contain %q", c.name, got, c.want)
			}
			// An answer gives its ETA: the detector takes it as the baseline exactly when the answer says so.
			var d ShiftDetector
			d.Told(c.e, c.e.At, ShiftConfig{})
			if promised := strings.Contains(got, "with this answer"); promised != d.Announced {
				t.Errorf("announceWait(%s) = %q, but the detector took it = %v", c.name, got, d.Announced)
			}
		})
	}
}

// While processes write to the protected mount, the advice does not say "before the job writes it":
// it already is. With no writer yet, it still does.
func TestAnswerSafeAdviceMatchesTheWrites(t *testing.T) {
	rs, _ := sampleStatus()
	writing := AnswerSafe(rs.Name, rs.Storage, Target{}).Text()
	if !strings.Contains(writing, "are writing to") || strings.Contains(writing, "before the job writes it") ||
		!strings.Contains(writing, "and what is already written there") {
		t.Errorf("AnswerSafe with writers = %q; want the advice to move what is already written, not 'before the job writes it'", writing)
	}
	in := storageInput()
	in.Scan = &probes.WriterScan{Processes: 300}
	landing := AnswerSafe(rs.Name, BuildStorage(in, nil), Target{}).Text()
	if !strings.Contains(landing, "before the job writes it") {
		t.Errorf("AnswerSafe with an output landing and no writers = %q; want 'before the job writes it'", landing)
	}
}

// "is /data safe?" of a path that is not protected says what writes there without the writes answer's own
// "Yes —" or "No —", which read as the answer to "safe?": "…here is what writes to it. Yes — 1 process is
// writing to /data".
func TestAnswerSafeOnAnUnprotectedPathSaysNoYesOrNo(t *testing.T) {
	rs, _ := sampleStatus()
	data := Target{Path: "/data", Resolved: "/data", Exists: true, Mount: "/data", FSType: "ext4", Device: "/dev/nvme1n1"}
	in := storageInput()
	in.Scan = &probes.WriterScan{Processes: 300}
	for name, st := range map[string]Storage{"writers": rs.Storage, "none": BuildStorage(in, nil)} {
		got := AnswerSafe(rs.Name, st, data).Text()
		if !strings.Contains(got, "here is what writes to it. ") || strings.Contains(got, "Yes —") || strings.Contains(got, "No —") {
			t.Errorf("AnswerSafe(%s, /data) = %q; want what writes there, without a Yes or No", name, got)
		}
	}
}

// TestAnswerLeftCheckFailed: a stage whose check cannot run (a query that fails) says so, not "waits on" the
// stage before it or "not started"; the stages after it still wait on it.
func TestAnswerLeftCheckFailed(t *testing.T) {
	rs := RunStatus{Name: "synth", Stages: []StageStatus{
		{Name: "generate", State: StageDone},
		{Name: "eight-up", State: StageInProgress, Detail: "3 of 8 up"},
		{Name: "bad-query", State: StagePending, Detail: "query failed: parse error", Unchecked: true},
		{Name: "review", State: StagePending},
	}}
	txt := AnswerLeft(rs, time.UTC).Text()
	if !strings.Contains(txt, "bad-query — its check failed: query failed: parse error") || strings.Contains(txt, "bad-query — waits on") {
		t.Errorf("left = %q; want the failing check named as such", txt)
	}
	if !strings.Contains(txt, "review — waits on eight-up") {
		t.Errorf("left = %q; want review still waiting on the first stage not done", txt)
	}
}

// "What's left?" with a progress source that failed names it; "no progress source" would tell the user to
// add what the run file already has.
func TestLeftNamesAFailedSource(t *testing.T) {
	r := RunStatus{Name: "synth", Problems: []Problem{{Probe: "metrics http://127.0.0.1:8000/metrics", Error: "connection refused"}}}
	got := AnswerLeft(r, time.UTC).Text()
	if strings.Contains(got, "no progress source") || !strings.Contains(got, "metrics http://127.0.0.1:8000/metrics") {
		t.Errorf("AnswerLeft(metrics down) = %q; want it to name the failed metrics source, not ask for one", got)
	}
}

// A log-only run first seen after it finished has one span, the log's elapsed time, so its one figure is the
// run average. It said "1.00 items/s (25,000 items in 6 h 57 min up to the finish); run average 1,066 tok/s ·
// 1.00 items/s": the items/s twice, the tok/s only as an average. One line now, each rate once.
func TestThroughputOfARunFirstSeenFinished(t *testing.T) {
	elapsed, avg := 25000.0, 1066.0
	hist := []Observation{{T: 1_800_000_000, Done: 25000, Total: 25000, Elapsed: &elapsed, AvgCompletion: &avg}}
	cfg := EstimateConfig{Window: 900, StallAfter: 600}
	_, tp := Estimate(hist, cfg)
	f := SummarizeFinish(hist, cfg, nil)
	if f == nil {
		t.Fatal("SummarizeFinish = nil")
	}
	got := PlainText(ThroughputLine(f.Throughput(tp)))
	if want := "1,066 tok/s · 1.00 items/s (25,000 items in 6 h 57 min up to the finish)"; got != want {
		t.Errorf("ThroughputLine = %q; want %q", got, want)
	}
}
