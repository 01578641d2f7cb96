package main

import (
	"math"
	"math/rand"
	"time"
)

// heldout are jobs recorded after the estimator was tuned on the corpus above, with settings unlike any of
// it (batch sizes, slowdown under load, latencies, max_tokens, clients fewer than slots, ranks, the time and
// length of each event), to check that what the corpus taught holds on jobs it never saw. Their traces live
// apart, in reports/testdata/peer/heldout/, and the accuracy benchmark reports them in a table of their own.
// Latencies are a few times the corpus's, so that a busy machine's scheduling jitter is small beside them.
func heldout() []scenario {
	return []scenario{
		{
			Name: "ho-wide", About: "96 slots, a 2.5x slowdown when full, max_tokens 768",
			Items: 4000, Concurrency: 96, MaxTokens: fixed(768),
			Servers: one(1, 41, simFlags(96, 60*ms, 6*ms, 2.5)), Every: time.Second, Seed: 41,
		},
		{
			Name: "ho-underfilled", About: "20 clients against 64 slots: the batch is never full",
			Items: 2000, Concurrency: 20, MaxTokens: fixed(512),
			Servers: one(1, 42, simFlags(64, 40*ms, 8*ms, 2)), Every: time.Second, Seed: 42,
		},
		{
			Name: "ho-mixed-max", About: "each item's max_tokens drawn log-uniformly from 128 to 2048 (the run file says 2048)",
			Items: 2000, Concurrency: 32, MaxTokens: logUniform(128, 2048), RunFileMaxTokens: 2048,
			Servers: one(1, 43, simFlags(32, 40*ms, 6*ms, 1.6)), Every: time.Second, Seed: 43,
		},
		{
			Name: "ho-prefill", About: "a 400 ms time to first token, 40 clients against 32 slots",
			Items: 2500, Concurrency: 40, MaxTokens: fixed(256),
			Servers: one(1, 44, simFlags(32, 400*ms, 5*ms, 1.5)), Every: 750 * ms, Seed: 44,
		},
		{
			Name: "ho-dp4", About: "one simulator with --data-parallel-size 4, 16 slots a rank",
			Items: 3000, Concurrency: 64, MaxTokens: fixed(512),
			Servers: one(4, 45, simFlags(16, 40*ms, 6*ms, 1.5)), Every: 500 * ms, Seed: 45,
		},
		{
			Name: "ho-restart-early", About: "the server is killed at 15% and started again 8 s later",
			Items: 2500, Concurrency: 32, MaxTokens: fixed(512), RestartAt: 0.15, Downtime: 8 * time.Second,
			Servers: one(1, 46, simFlags(32, 40*ms, 6*ms, 1.4)), Every: 750 * ms, Seed: 46,
		},
		{
			Name: "ho-pause-late", About: "the server stops answering (SIGSTOP) at 70% for 15 s",
			Items: 3000, Concurrency: 48, MaxTokens: fixed(640), PauseAt: 0.7, Pause: 15 * time.Second,
			Servers: one(1, 47, simFlags(48, 40*ms, 5*ms, 1.8)), Every: 750 * ms, Seed: 47,
		},
		{
			Name: "ho-drift-down", About: "max_tokens 1024 for the first 20% of items, shrinking to 256 by 60%",
			Items: 3000, Concurrency: 32, MaxTokens: drift(1024, 256, 0.2, 0.6),
			Servers: one(1, 48, simFlags(32, 40*ms, 5*ms, 1.5)), Every: 750 * ms, Seed: 48,
		},
		{
			Name: "ho-queued-slow", About: "48 clients against 24 slots, 10 ms a token, a 2x slowdown when full",
			Items: 1500, Concurrency: 48, MaxTokens: fixed(384),
			Servers: one(1, 49, simFlags(24, 50*ms, 10*ms, 2)), Every: time.Second, Seed: 49,
		},
		{
			Name: "ho-long", About: "long completions (max_tokens 2048), 64 slots, a 3x slowdown when full",
			Items: 2000, Concurrency: 64, MaxTokens: fixed(2048),
			Servers: one(1, 50, simFlags(64, 60*ms, 4*ms, 3)), Every: 1500 * ms, Seed: 50,
		},
	}
}

// logUniform draws each item's max_tokens log-uniformly between lo and hi.
func logUniform(lo, hi int) func(int, int, *rand.Rand) int {
	return func(_ int, _ int, r *rand.Rand) int {
		return int(float64(lo) * math.Pow(float64(hi)/float64(lo), r.Float64()))
	}
}
