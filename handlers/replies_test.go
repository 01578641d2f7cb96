package handlers

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/monitor"
	"runwatch/probes"
	"runwatch/reports"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fakeRuns stands in for the monitor: one run with a fixed status. Methods no reply calls are
// left to the nil interface.
type fakeRuns struct {
	Runs
	file *config.File
	now  time.Time
	rs   reports.RunStatus
	hist []reports.Observation
}

func (f *fakeRuns) Config() *config.File { return f.file }
func (f *fakeRuns) Now() time.Time       { return f.now }
func (f *fakeRuns) RunNames() []string   { return []string{f.file.Runs[0].Name} }
func (f *fakeRuns) RunStatus(context.Context, string, monitor.Need) (reports.RunStatus, error) {
	return f.rs, nil
}
func (f *fakeRuns) History(string) []reports.Observation { return f.hist }
func (f *fakeRuns) EstimateConfig(string) reports.EstimateConfig {
	return reports.EstimateConfig{Window: 900, StallAfter: 600}
}
func (f *fakeRuns) SnoozedUntil(string) (time.Time, bool) { return time.Time{}, false }
func (f *fakeRuns) Snooze(string, time.Time) error        { return nil }
func (f *fakeRuns) MarkStage(_, _, _, _ string) error     { return nil }
func (f *fakeRuns) ReadOnly() error                       { return nil }
func (f *fakeRuns) ResolveTarget(_ context.Context, _, path string) (reports.Target, error) {
	if reports.Under(path, "/shared") {
		return reports.Target{Path: path, Resolved: path, Exists: true, Mount: "/shared", FSType: "nfs4", Device: "nas:/export", MountPoint: path == "/shared"}, nil
	}
	return reports.Target{Path: path, Resolved: path, Exists: true, Mount: "/data", FSType: "xfs", Device: "/dev/nvme1n1"}, nil
}

// replyRuns is a run 300 items into 25,000, with an engine, storage read from the /proc fixture
// (one process writing into protected /shared), a plan, a checklist, a problem and a notice.
func replyRuns(t *testing.T) *fakeRuns {
	t.Helper()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Channel: "#synth",
		Outputs: []string{"/data/runs/gen-0412"}, Protected: []string{"/shared"},
		Plans: []config.Plan{{Name: "hidden-states", Target: "/data/runs/gen-0412"}}}}}
	ctx := context.Background()
	table, err := probes.NewMounts("../probes/testdata/proc").Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scan, err := probes.NewWriters("../probes/testdata/proc").Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	obs := func(path, role string, free uint64) reports.PathObservation {
		mt, ok := table.Lookup(path)
		u := probes.Usage{Total: 2 << 40, Free: free, Used: 2<<40 - free}
		return reports.PathObservation{Path: path, Role: role, Resolved: path, Exists: true, Mount: mt, HasMount: ok, Usage: &u}
	}
	eta, low, high := 4.5*3600, 4*3600.0, 5.25*3600
	finish := now.Add(time.Duration(eta) * time.Second)
	run, wait, kv, gen := 200.0, 12.0, 0.87, 4.1e6
	free := uint64(900 << 30)
	rs := reports.RunStatus{
		Name:       "synth",
		Progress:   &reports.Progress{Done: 300, Total: 25000, AvgTokens: 1066, Source: "log"},
		Throughput: &reports.Throughput{TokensPerS: 1386, ItemsPerS: 1.3, WindowS: 900, RunTokensPerS: 1402, RunItemsPerS: 1.31},
		ETA: &reports.ETA{State: reports.StateRunning, Seconds: &eta, LowS: &low, HighS: &high, FinishAt: &finish,
			Reason: "24,700 items left at 1.3 items/s (1,066 tokens each at 1,386 tokens/s)", Progress: 0.012,
			ItemsLeft: 24700, TokensPerItem: 1066, TokensPerS: 1386, ItemsPerS: 1.3},
		Engines: []reports.EngineStatus{{URL: "http://127.0.0.1:8000/metrics", Kind: "vllm", OK: true, Running: &run, Waiting: &wait, KVCacheUsage: &kv, GenerationTokens: &gen}},
		Storage: reports.BuildStorage(reports.StorageInput{
			Paths: []reports.PathObservation{obs("/data/runs/gen-0412", reports.RoleOutput, 900<<30), obs("/shared", reports.RoleProtected, 50<<30)},
			Scan:  &scan, Table: table, WriteRates: map[string]float64{"/data": 48 << 20},
		}, func(string) (float64, bool) { return eta, true }),
		Plans: []reports.PlanResult{reports.EvaluatePlan(reports.PlanSpec{Name: "hidden-states", Target: "/data/runs/gen-0412",
			Tokens: 26.6e6, TokensSrc: "projected", AllLayers: true, NumLayers: 32, Hidden: 4096, DType: "bfloat16", ElemBytes: 2, ModelSrc: "run file"},
			&free, "/data", "")},
		Stages:   []reports.StageStatus{{Name: "generate", State: reports.StageInProgress, Detail: "300 / 25,000 (1%)"}, {Name: "review", State: reports.StagePending, Detail: "set it with /runwatch stage review done"}},
		Problems: []reports.Problem{{Probe: "metrics http://127.0.0.1:8001/metrics", Error: "connection refused"}},
		Notices:  []string{"log /data/runs/gen-0412/gen.log was rotated (new file)"},
	}
	var hist []reports.Observation
	for i := range 20 {
		tok := 565000 + float64(i)*41580
		hist = append(hist, reports.Observation{T: float64(now.Unix()) - float64(19-i)*30, Done: int64(280 + i), Total: 25000, GenTokens: &tok})
	}
	return &fakeRuns{file: f, now: now, rs: rs, hist: hist}
}

// TestRepliesGolden asks one question per intent of a bot over the fake and compares each reply's
// plain text and Block Kit with testdata/replies/<name>.{txt,blocks.json}.golden
// (go test ./handlers -run TestRepliesGolden -update rewrites them).
func TestRepliesGolden(t *testing.T) {
	runs := replyRuns(t)
	b := NewBot(runs, time.UTC, config.Env{Admins: []string{"UADMIN"}})
	questions := []struct{ name, text, user string }{
		{"eta", "ETA?", ""},
		{"why", "why did the ETA move?", ""},
		{"ontrack", "are we on track?", ""},
		{"left", "what's left to do?", ""},
		{"safe", "is /shared safe?", ""},
		{"logs", "logs", ""},
		{"throughput", "how fast are we going?", ""},
		{"stuck", "is it stuck?", ""},
		{"servers", "is vllm up?", ""},
		{"status", "status", ""},
		{"writes", "are we writing to /shared?", ""},
		{"where", "where does the output go?", ""},
		{"space", "how much space is left on /data/runs/gen-0412?", ""},
		{"fit", "will the hidden states fit?", ""},
		{"storage", "storage", ""},
		{"runs", "runs", ""},
		{"help", "help", ""},
		{"chart", "chart", ""},
		{"snooze", "snooze 2h", "UADMIN"},
		{"snooze_refused", "snooze 2h", "UOTHER"},
		{"unsnooze", "unsnooze", "UADMIN"},
		{"stage", "stage review done", "UADMIN"},
		{"unknown", "what is the meaning of life?", ""},
		{"thanks", "thanks!", ""},
		{"hello", "hi", ""},
	}
	for _, q := range questions {
		t.Run(q.name, func(t *testing.T) {
			rep := b.Ask(context.Background(), Request{Text: q.text, User: q.user, Source: "mention", Channel: "C1"})
			replyGolden(t, filepath.Join("replies", q.name+".txt.golden"), []byte(rep.Message.Text()+"\n"))
			blocks, err := json.MarshalIndent(rep.Message.Blocks(), "", "  ")
			if err != nil {
				t.Fatalf("marshal blocks: %v", err)
			}
			replyGoldenJSON(t, filepath.Join("replies", q.name+".blocks.json.golden"), blocks)
		})
	}
}

func replyGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./handlers -run TestRepliesGolden -update creates it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (-update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// replyGoldenJSON compares Block Kit after unmarshalling, so formatting does not matter.
func replyGoldenJSON(t *testing.T, name string, got []byte) {
	t.Helper()
	if *update {
		replyGolden(t, name, append(got, '\n'))
		return
	}
	want, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("%v (go test ./handlers -run TestRepliesGolden -update creates it)", err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("golden %s: %v", name, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s differs from the golden file (-update rewrites it):\n--- got\n%s", name, strings.TrimSpace(string(got)))
	}
}

// TestWarningsGolden runs the alerter over the same fake status, sampled twice (a failing source
// is worth a warning the second time), and compares every warning it posts with
// testdata/replies/warning_<kind>.{txt,blocks.json}.golden.
func TestWarningsGolden(t *testing.T) {
	runs := replyRuns(t)
	a := NewAlerter(time.UTC, func(string) string { return "#synth" })
	ev := monitor.Evaluation{Run: runs.rs, Sample: true,
		Shift: &reports.Shift{Reason: "completions got longer: 650 -> 1,066 tokens per item (+64%) while throughput held"}}
	notSnoozed := func(string) bool { return false }
	posts := a.Process([]monitor.Evaluation{ev}, runs.now, notSnoozed)
	posts = append(posts, a.Process([]monitor.Evaluation{ev}, runs.now.Add(30*time.Second), notSnoozed)...)
	// Later the job stalls, and later still it finishes.
	stalled := runs.rs
	since := float64(runs.now.Unix()) - 900
	stalled.ETA = &reports.ETA{State: reports.StateStalled, StalledSince: &since, Reason: "no progress for 15 min (stall_after 10 min)"}
	posts = append(posts, a.Process([]monitor.Evaluation{{Run: stalled, Sample: true}}, runs.now.Add(time.Hour), notSnoozed)...)
	done := runs.rs
	done.Progress = &reports.Progress{Done: 25000, Total: 25000, Source: "log"}
	done.ETA = &reports.ETA{State: reports.StateDone, Reason: "all 25,000 items done"}
	posts = append(posts, a.Process([]monitor.Evaluation{{Run: done, Sample: true}}, runs.now.Add(5*time.Hour), notSnoozed)...)
	kinds := map[string]bool{}
	for _, p := range posts {
		kinds[p.Kind] = true
	}
	for _, k := range []string{AlertShift, AlertProtected, AlertProbe, AlertStall, AlertFinished} {
		if !kinds[k] {
			t.Errorf("warnings = %v; want one of kind %s", kinds, k)
		}
	}
	seen := map[string]bool{}
	for _, p := range posts {
		// A reminder repeats its warning word for word: one golden file per kind.
		if seen[p.Kind] {
			continue
		}
		seen[p.Kind] = true
		name := "warning_" + p.Kind
		replyGolden(t, filepath.Join("replies", name+".txt.golden"), []byte(p.Message.Text()+"\n"))
		blocks, err := json.MarshalIndent(p.Message.Blocks(), "", "  ")
		if err != nil {
			t.Fatalf("marshal blocks: %v", err)
		}
		replyGoldenJSON(t, filepath.Join("replies", name+".blocks.json.golden"), blocks)
	}
}

// A run read from the engines alone (Prometheus, no total:) has no ETA, but its history shows items and tokens
// moving: "is it stuck?" answers no, and says why there is no ETA, instead of "Can't tell yet". A flat
// history past stall_after still reads as stuck.
func TestStuckWithoutTotal(t *testing.T) {
	cases := []struct {
		name      string
		perSample int64
		want      []string
		not       string
	}{
		{"moving", 20, []string{"No, it's moving.", "ETA: unknown — the total number of items is unknown"}, "Can't tell"},
		{"flat", 0, []string{"(!!) Yes, it looks stuck. Stalled since"}, "moving"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs := replyRuns(t)
			var hist []reports.Observation
			for i := range 40 {
				tok := 7.5e6 + float64(c.perSample*int64(i))*1000
				hist = append(hist, reports.Observation{T: float64(runs.now.Unix()) - float64(39-i)*30, Done: 11228 + c.perSample*int64(i), GenTokens: &tok})
			}
			eta, tp := reports.Estimate(hist, reports.EstimateConfig{Window: 900, StallAfter: 600})
			runs.rs.ETA, runs.rs.Throughput = &eta, &tp
			runs.rs.Progress = &reports.Progress{Done: hist[len(hist)-1].Done, Source: "prometheus"}
			b := NewBot(runs, time.UTC, config.Env{})
			got := b.Ask(context.Background(), Request{Text: "is it stuck?", Source: "mention", Channel: "C1"}).Message.Text()
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("is it stuck? (state %s) = %q; want it to say %q", eta.State, got, w)
				}
			}
			if strings.Contains(got, c.not) {
				t.Errorf("is it stuck? (state %s) = %q; want nothing with %q", eta.State, got, c.not)
			}
		})
	}
}
