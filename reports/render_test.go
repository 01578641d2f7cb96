package reports

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/internal/testkit/goldenfile"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func fp(v float64) *float64 { return &v }

// sampleStatus is a run in the middle of a generation job, with one problem.
func sampleStatus() (RunStatus, time.Time) {
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	finish := now.Add(3*time.Hour + 10*time.Minute)
	free := uint64(2.8e12)
	return RunStatus{
		Name:       "synth-25k",
		Storage:    BuildStorage(storageInput(), func(string) (float64, bool) { return 11400, true }),
		Progress:   &Progress{Done: 12340, Total: 25000, Errors: 3, AvgTokens: 1066, Source: "log"},
		Throughput: &Throughput{TokensPerS: 1386, ItemsPerS: 1.3, WindowS: 900, RunTokensPerS: 1402, RunItemsPerS: 1.41},
		ETA: &ETA{State: StateRunning, Seconds: fp(11400), LowS: fp(10200), HighS: fp(13300), FinishAt: &finish,
			Reason: "12,660 items left x ~1,066 tokens each at 1,386 tok/s."},
		Engines: []EngineStatus{
			{URL: "http://gpu-1:8000/metrics", Kind: "vllm", OK: true, Engines: 2, Running: fp(198), Waiting: fp(12), KVCacheUsage: fp(0.87), GenerationTokens: fp(13.1e6)},
			{URL: "http://gpu-2:8000/metrics", Kind: "vllm", OK: false, Error: "dial tcp 10.0.0.2:8000: connection refused"},
		},
		Plans: []PlanResult{
			EvaluatePlan(PlanSpec{Name: "hidden-states", Target: "/data/hs", Tokens: 25e6, TokensSrc: "configured", Layers: []int{2, 30, 58}, NumLayers: 61, Hidden: 7168, DType: "bfloat16", ElemBytes: 2}, &free, "/data", ""),
			{Name: "unknown", Fits: nil, Sentence: "*unknown*: free space unknown"},
		},
		Stages: []StageStatus{
			{Name: "vllm-server", State: StageDone, Detail: "http://gpu-1:8000/health answers 200 in 3 ms"},
			{Name: "generate", State: StageInProgress, Detail: "12,340 / 25,000 (49%)"},
			{Name: "hidden-states", State: StagePending, Detail: "/data/hs does not exist yet"},
			{Name: "review <samples>", State: StageFailed, Detail: "marked failed by U1"},
		},
		Problems: []Problem{{Probe: "metrics http://gpu-2:8000/metrics", Error: "dial tcp 10.0.0.2:8000: connection refused"}},
		Notices:  []string{"log /data/gen.log was rotated (new file)"},
	}, now
}

func TestRenderGolden(t *testing.T) {
	rs, now := sampleStatus()
	st := rs.Storage
	cases := map[string]Message{
		"status": RenderStatus(rs, now, time.UTC),
		"writes": AnswerWrites(rs.Name, st, Target{}),
		"where":  AnswerWhere(rs.Name, st),
		"free":   AnswerFree(rs.Name, st.Paths, st.WriteRates, rs.ETA.Seconds, nil),
		"fit":    AnswerFit(rs.Name, rs.Plans),
		"eta_stalled": {Sections: []string{ETALine(ETA{State: StateStalled, StalledSince: fp(float64(now.Add(-38 * time.Minute).Unix())),
			StalledAt: ptrTime(now.Add(-38 * time.Minute)), Reason: "no progress for 38 min: finished items and generated tokens are flat"}, time.UTC)}},
		"eta_rough": {Sections: []string{ETALine(ETA{State: StateRunning, Seconds: fp(18000), LowS: fp(9000), HighS: fp(36000), Rough: true, Reason: "565K tokens in 408 s"}, time.UTC)}},
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

// golden compares got with testdata/name (goldenfile.Text; -update rewrites it).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Text(t, filepath.Join("testdata", name), got, *update)
}

// goldenJSON compares Block Kit JSON with testdata/name after unmarshalling, so formatting does not matter.
func goldenJSON(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.JSON(t, filepath.Join("testdata", name), got, *update)
}

// A problem is one line, and says its probe once: an error that joins two (the disk counters' block
// and NFS reads) used to put the second on a line of its own with no probe, and a statfs error that
// names its mount read "statfs /data: statfs /data: permission denied". A dead metrics endpoint read
// "metrics http://127.0.0.1:1/metrics: scrape http://127.0.0.1:1/metrics: dial tcp …", the URL twice.
func TestProblemContextOneLineEach(t *testing.T) {
	ps := []Problem{
		{Probe: "disk activity", Error: "read /proc/diskstats: no such file or directory\nread /proc/self/mountstats: permission denied"},
		{Probe: "statfs /data", Error: "statfs /data: permission denied"},
		{Probe: "metrics http://127.0.0.1:1/metrics", Error: "scrape http://127.0.0.1:1/metrics: dial tcp 127.0.0.1:1: connect: connection refused"},
		{Probe: "metrics http://h/metrics (metrics entry 2)", Error: "scrape http://h/metrics: HTTP 500 Internal Server Error"},
	}
	got := ProblemContext(ps)
	want := []string{
		":warning: disk activity: read /proc/diskstats: no such file or directory; read /proc/self/mountstats: permission denied",
		":warning: statfs /data: permission denied",
		":warning: metrics http://127.0.0.1:1/metrics: dial tcp 127.0.0.1:1: connect: connection refused",
		":warning: metrics http://h/metrics (metrics entry 2): HTTP 500 Internal Server Error",
	}
	if len(got) != len(want) {
		t.Fatalf("ProblemContext(%+v) = %q; want %q", ps, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ProblemContext line %d = %q; want %q", i, got[i], want[i])
		}
	}
}

// A stall says its time once: the heading's "Stalled since 02:04 UTC" stood before the estimator's "no progress
// since 02:04 UTC (13 min): …", the same clock time twice on one line. The estimator names no clock time now
// ("no progress for 13 min: …"); the heading does, from the wall clock.
func TestETALineStalledSaysItsTimeOnce(t *testing.T) {
	since := time.Date(2026, 12, 2, 2, 4, 0, 0, time.UTC)
	at := float64(since.Unix())
	e := ETA{State: StateStalled, StalledSince: &at, StalledAt: &since, Reason: "no progress for 13 min: the job log has not changed since then"}
	want := "(!!) Stalled since 02:04 UTC (13 min): the job log has not changed since then"
	if got := PlainText(ETALine(e, time.UTC)); got != want {
		t.Errorf("ETALine(%+v) = %q; want %q", e, got, want)
	}
	// A reason in other words is kept whole.
	e.Reason = "the server stopped answering"
	if got, want := PlainText(ETALine(e, time.UTC)), "(!!) Stalled since 02:04 UTC — the server stopped answering"; got != want {
		t.Errorf("ETALine(%+v) = %q; want %q", e, got, want)
	}
}

// Once every item is done the servers are stopped to free their GPUs: a server that no longer answers then is
// said plainly, with when the job finished, not marked down with its error below; the footnotes leave its
// error out. The new-user pass saw "(!!) http://…/metrics is down (below)" under a finished run.
func TestEngineLineAfterTheFinish(t *testing.T) {
	bad := EngineStatus{URL: "http://gpu-2:8000/metrics", Error: "scrape http://gpu-2:8000/metrics: connection refused"}
	fin := time.Date(2026, 12, 6, 14, 2, 0, 0, time.UTC)
	r := RunStatus{Engines: []EngineStatus{bad}, Progress: &Progress{Done: 25000, Total: 25000},
		Problems: []Problem{{Probe: "metrics " + bad.URL, Error: bad.Error}, {Probe: "log /x.log", Error: "gone"}},
		Finish:   &FinishSummary{FinishedAt: float64(fin.Unix()), Items: 25000}}
	for _, tt := range []struct {
		name string
		at   float64
		want string
	}{
		{"finish seen", float64(fin.Unix()), "http://gpu-2:8000/metrics no longer answers (the job finished at 14:02 UTC)"},
		{"first seen finished", 0, "http://gpu-2:8000/metrics no longer answers (the job has finished)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r.Finish.FinishedAt = tt.at
			got := PlainText(EngineLineBeside(r, time.UTC))
			if !strings.Contains(got, tt.want) || strings.Contains(got, "(!!)") || strings.Contains(got, "down") {
				t.Errorf("EngineLineBeside = %q; want %q and no alarm", got, tt.want)
			}
			if ps := r.LiveProblems(); len(ps) != 1 || ps[0].Probe != "log /x.log" {
				t.Errorf("LiveProblems = %+v; want the log's alone", ps)
			}
		})
	}
	r.Progress.Done = 24000
	if got := PlainText(EngineLineBeside(r, time.UTC)); !strings.Contains(got, "(!!) http://gpu-2:8000/metrics is down (below)") {
		t.Errorf("EngineLineBeside mid-job = %q; want the server down", got)
	}
}

// A server whose metrics endpoint answers HTTP 500 or a login page is up: "is down" would send a
// person to restart it. Only one that did not answer (refused, unreachable, timed out) is down.
func TestEngineLineBesideDownOrAnswering(t *testing.T) {
	up := EngineStatus{URL: "http://gpu-1:8000/metrics", Kind: "vllm", OK: true}
	tests := []struct {
		name    string
		err     string
		answers bool
		want    []string
	}{
		{"refused", "scrape http://gpu-2:8000/metrics: dial tcp 10.0.0.2:8000: connect: connection refused", false,
			[]string{"Servers: 1 of 2 up", "`http://gpu-2:8000/metrics` is down (below)"}},
		{"HTTP 500", "scrape http://gpu-2:8000/metrics: HTTP 500 Internal Server Error", true,
			[]string{"Servers: 1 of 2 serving metrics", "`http://gpu-2:8000/metrics` answers, but not with metrics (below)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := EngineStatus{URL: "http://gpu-2:8000/metrics", Error: tt.err, Answers: tt.answers}
			ps := []Problem{{Probe: "metrics " + bad.URL, Error: tt.err, Answers: tt.answers}}
			got := EngineLineBeside(RunStatus{Engines: []EngineStatus{up, bad}, Problems: ps}, time.UTC)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("EngineLineBeside(%s) = %q; want it to contain %q", tt.name, got, w)
				}
			}
			if tt.answers && strings.Contains(got, "down") {
				t.Errorf("EngineLineBeside(%s) = %q; says a server that answers is down", tt.name, got)
			}
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }
