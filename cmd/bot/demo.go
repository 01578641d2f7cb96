package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"runwatch/config"
	"runwatch/sim"
)

// demoSpeed is how many simulated seconds pass per real second in --demo.
const demoSpeed = 60

// demoStartAt is how far into the simulated job the demo starts: long enough for a rate and a first
// estimate, before the completions grow (after 15 simulated minutes) and move the ETA.
const demoStartAt = 10 * time.Minute

// demoJob is the simulated job behind --demo and the run file that watches it.
type demoJob struct {
	*sim.Demo
	file        *config.File
	root        string
	stateDir    string
	speed       float64
	sampleEvery time.Duration
}

// startDemo starts the simulated vLLM job in a temporary directory: a metrics endpoint on
// 127.0.0.1, a progress log, an output directory that grows, a "protected" shared directory and an
// output symlinked into it (the classic way data ends up on /shared).
func startDemo(ctx context.Context, log *slog.Logger) (*demoJob, error) {
	root, err := os.MkdirTemp("", "runwatch-demo-")
	if err != nil {
		return nil, fmt.Errorf("create demo directory: %w", err)
	}
	shared := filepath.Join(root, "shared")
	if err := os.MkdirAll(filepath.Join(shared, "hidden-states"), 0o755); err != nil {
		return nil, fmt.Errorf("create demo directory: %w", err)
	}
	hidden := filepath.Join(root, "hidden-states")
	if err := os.Symlink(filepath.Join(shared, "hidden-states"), hidden); err != nil {
		return nil, fmt.Errorf("create demo symlink: %w", err)
	}
	// The job's log and output go under data/, so "how much space is left on /data?" names a path of the
	// run; it starts demoStartAt into the job, so the first questions have progress to answer from.
	d, err := sim.StartDemo(ctx, sim.DemoOptions{Dir: filepath.Join(root, "data"), Speed: demoSpeed, Scenario: sim.DemoScenario(), Seed: 1,
		StartAt: demoStartAt})
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	file := &config.File{
		Source: "the built-in demo (" + root + ")",
		Runs: []config.Run{{
			Name:       "demo",
			Channel:    "#runwatch-demo",
			Log:        d.LogPath,
			Metrics:    []string{d.MetricsURL},
			Outputs:    []string{d.OutputDir, hidden},
			Protected:  []string{shared},
			Watch:      []string{root},
			Total:      int64(sim.DemoScenario().Items),
			MaxTokens:  sim.DemoScenario().MaxTokens,
			StallAfter: config.Duration{Duration: 10 * time.Minute},
			Schedule:   "@every 1m",
			Plans: []config.Plan{
				{Name: "hidden-states", Target: hidden, Tokens: config.Tokens{Auto: true},
					Layers: config.Layers{List: []int{2, 30, 58}}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"},
				{Name: "all-layers", Target: hidden, Tokens: config.Tokens{N: 25e6},
					Layers: config.Layers{All: true}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"},
			},
			Stages: []config.Stage{
				{Name: "vllm-server", Check: "http", URL: d.HealthURL},
				{Name: "generate", Check: "progress"},
				{Name: "outputs-growing", Check: "growing", Path: d.OutputDir},
				{Name: "review-samples", Check: "manual"},
			},
		}},
	}
	log.Debug("demo started", "dir", root, "metrics", d.MetricsURL)
	return &demoJob{
		Demo: d, file: file, root: root, stateDir: filepath.Join(root, "state"), speed: demoSpeed,
		// Sample every 30 simulated seconds.
		sampleEvery: time.Duration(float64(30*time.Second) / demoSpeed),
	}, nil
}

// warmUp waits (briefly) until the simulated job has logged progress, so one-shot questions
// have something to answer about.
func (d *demoJob) warmUp(ctx context.Context) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if info, err := os.Stat(d.LogPath); err == nil && info.Size() > 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close stops the job and removes its directory.
func (d *demoJob) Close() {
	d.Demo.Close()
	os.RemoveAll(d.root)
}
