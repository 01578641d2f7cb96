package main

import (
	"math/rand"
	"time"
)

// second are the jobs of the second corpus, recorded to score the estimator on jobs unlike the first corpus's
// (which it was tuned on): sampled every 1-3% of the job (the first corpus samples every 0.3-1%), clients that
// drop or add workers mid-run, another job sharing the server, a server throttled from mid-run, prompts that
// grow, a server frozen for a long while. Every request is streamed, so each recording gives two traces: the
// simulator's own token counter, which moves when a request finishes (NAME.jsonl), and the tokens as they
// are decoded, as vLLM counts them (NAME.iter.jsonl). They live in reports/testdata/peer2/.
func second() []scenario {
	return []scenario{
		{
			Name: "c2-workers-drop", About: "64 clients until 35% done, then 16 (the batch empties to a quarter)",
			Items: 3000, Concurrency: 64, Clients: []clientStep{{0.35, 16}}, MaxTokens: fixed(384),
			Servers: one(1, 61, simFlags(64, 30*ms, 3*ms, 2)), Every: 1500 * ms, Seed: 61, Stream: true,
		},
		{
			Name: "c2-workers-rise", About: "12 clients until 40% done, then 64",
			Items: 3000, Concurrency: 64, Clients: []clientStep{{0, 12}, {0.4, 64}}, MaxTokens: fixed(384),
			Servers: one(1, 62, simFlags(64, 30*ms, 3*ms, 2)), Every: 1500 * ms, Seed: 62, Stream: true,
		},
		{
			Name: "c2-neighbour", About: "another job (32 clients, max_tokens 768) shares the server from 20% to 65% done",
			Items: 3000, Concurrency: 32, MaxTokens: fixed(384),
			Neighbour: &neighbour{Clients: 32, From: 0.2, Until: 0.65, MaxTokens: 768, PromptWords: 24, Seed: 163},
			Servers:   one(1, 63, simFlags(64, 30*ms, 3*ms, 1.8)), Every: 1500 * ms, Seed: 63, Stream: true,
		},
		{
			Name: "c2-neighbour-before", About: "another job (24 clients) on the server since 6 s before this one, to the end",
			Items: 3000, Concurrency: 32, MaxTokens: fixed(512),
			Neighbour: &neighbour{Clients: 24, Lead: 6 * time.Second, Until: 1, MaxTokens: 512, PromptWords: 24, Seed: 164},
			Servers:   one(1, 64, simFlags(64, 30*ms, 3*ms, 1.8)), Every: 1500 * ms, Seed: 64, Stream: true,
		},
		{
			Name: "c2-neighbour-ramp", About: "another job ramps 0 -> 48 clients from 10% to 70% done: a slowdown building over minutes",
			Items: 3000, Concurrency: 32, MaxTokens: fixed(384),
			Neighbour: &neighbour{Clients: 48, From: 0.1, RampTo: 0.7, Until: 1, MaxTokens: 384, PromptWords: 24, Seed: 165},
			Servers:   one(1, 65, simFlags(48, 30*ms, 3*ms, 2.5)), Every: 1500 * ms, Seed: 65, Stream: true,
		},
		{
			Name: "c2-throttle", About: "the server is throttled from 30% done, stopped a rising share of each 100 ms up to 60% by 60% done",
			Items: 3000, Concurrency: 32, MaxTokens: fixed(512),
			Throttle: &throttle{From: 0.3, To: 0.6, Max: 0.6, Period: 100 * ms},
			Servers:  one(1, 66, simFlags(32, 40*ms, 4*ms, 1.2)), Every: 1500 * ms, Seed: 66, Stream: true,
		},
		{
			Name: "c2-prompts-grow", About: "prompts grow from 40 to 3,000 words over the job, prefill 100 us a token",
			Items: 2500, Concurrency: 32, MaxTokens: fixed(256), PromptWords: growingWords(40, 3000, 2500),
			Servers: one(1, 67, simFlags(32, 0, 3*ms, 1.3,
				"--prefill-overhead", "10ms", "--prefill-time-per-token", "100us")),
			Every: 1100 * ms, Seed: 67, Stream: true,
		},
		{
			Name: "c2-frozen", About: "the server freezes (SIGSTOP) at 50% done for 40 s: /metrics does not answer",
			Items: 3000, Concurrency: 32, MaxTokens: fixed(512), PauseAt: 0.5, Pause: 40 * time.Second,
			Servers: one(1, 68, simFlags(32, 40*ms, 4*ms, 1.2)), Every: 1500 * ms, Seed: 68, Stream: true,
		},
		{
			Name: "c2-steady", About: "48 slots, 48 clients, max_tokens 512: nothing changes",
			Items: 3000, Concurrency: 48, MaxTokens: fixed(512),
			Servers: one(1, 69, simFlags(48, 40*ms, 4*ms, 1.3)), Every: 1500 * ms, Seed: 69, Stream: true,
		},
		{
			Name: "c2-queued", About: "96 clients against 24 slots, a 1.6x slowdown when full",
			Items: 3000, Concurrency: 96, MaxTokens: fixed(384),
			Servers: one(1, 70, simFlags(24, 30*ms, 3*ms, 1.6)), Every: 1500 * ms, Seed: 70, Stream: true,
		},
		{
			Name: "c2-drift-up", About: "max_tokens grows from 128 to 768 across the whole job",
			Items: 3000, Concurrency: 32, MaxTokens: drift(128, 768, 0, 1),
			Servers: one(1, 71, simFlags(32, 40*ms, 3*ms, 1.3)), Every: 1500 * ms, Seed: 71, Stream: true,
		},
	}
}

// growingWords is prompts of lo words for the first item growing linearly to hi for the last of n.
func growingWords(lo, hi, n int) func(int, *rand.Rand) int {
	return func(i int, _ *rand.Rand) int { return lo + (hi-lo)*i/max(1, n-1) }
}
