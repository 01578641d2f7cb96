package testkit

import (
	"context"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/monitor"
	"runwatch/probes"
	"runwatch/reports"
)

// FakeRuns stands in for the monitor in the conversation's and the posts' tests: one run with a fixed
// status and history, at a fixed time. It has every method of conversation.Runs.
type FakeRuns struct {
	File *config.File
	At   time.Time
	RS   reports.RunStatus
	Hist []reports.Observation
}

func (f *FakeRuns) Config() *config.File { return f.File }
func (f *FakeRuns) Now() time.Time       { return f.At }
func (f *FakeRuns) RunNames() []string   { return []string{f.File.Runs[0].Name} }
func (f *FakeRuns) Status(context.Context, monitor.Need) reports.Status {
	return reports.Status{GeneratedAt: f.At, Runs: []reports.RunStatus{f.RS}}
}
func (f *FakeRuns) RunStatus(context.Context, string, monitor.Need) (reports.RunStatus, error) {
	return f.RS, nil
}
func (f *FakeRuns) Sample(context.Context) []monitor.Evaluation {
	return []monitor.Evaluation{{Run: f.RS}}
}
func (f *FakeRuns) History(string) []reports.Observation { return f.Hist }
func (f *FakeRuns) EstimateConfig(string) reports.EstimateConfig {
	return reports.EstimateConfig{Window: 900, StallAfter: 600}
}
func (f *FakeRuns) SnoozedUntil(string) (time.Time, bool) { return time.Time{}, false }
func (f *FakeRuns) Snooze(string, time.Time) error        { return nil }
func (f *FakeRuns) MarkStage(_, _, _, _ string) error     { return nil }
func (f *FakeRuns) ReadOnly() error                       { return nil }
func (f *FakeRuns) ResolveTarget(_ context.Context, _, path string) (reports.Target, error) {
	if reports.Under(path, "/shared") {
		return reports.Target{Path: path, Resolved: path, Exists: true, Mount: "/shared", FSType: "nfs4", Device: "nas:/export", MountPoint: path == "/shared"}, nil
	}
	return reports.Target{Path: path, Resolved: path, Exists: true, Mount: "/data", FSType: "xfs", Device: "/dev/nvme1n1"}, nil
}

// ReplyRuns is a run 300 items into 25,000, with an engine, storage read from the /proc fixture
// (one process writing into protected /shared), a plan, a checklist, a problem and a notice.
func ReplyRuns(t testing.TB) *FakeRuns {
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
	return &FakeRuns{File: f, At: now, RS: rs, Hist: hist}
}
