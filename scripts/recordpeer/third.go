package main

import "time"

// third are the jobs of the third corpus, recorded after the estimator's constants were last chosen (some of
// them on the second corpus) to report on only: a client that does not stream (the engines' token counter
// moves when a request finishes, and nothing else counts tokens), sampled every 2.5-3 s, 3-5% of the job
// (sparser than the second corpus), with changes the other two corpora do not have in this form: clients
// halving, an early throttle, work per item shrinking, a neighbour that leaves, clients ramping up. They live
// in reports/testdata/peer3/.
func third() []scenario {
	return []scenario{
		{
			Name: "c3-workers-halve", About: "48 clients until 50% done, then 24 (no streaming)",
			Items: 2400, Concurrency: 48, Clients: []clientStep{{0.5, 24}}, MaxTokens: fixed(320),
			Servers: one(1, 81, simFlags(48, 30*ms, 3*ms, 1.8)), Every: 2500 * ms, Seed: 81,
		},
		{
			Name: "c3-throttle-early", About: "the server is throttled from 15% done, stopped a rising share of each 100 ms up to 45% by 45% done",
			Items: 2400, Concurrency: 32, MaxTokens: fixed(384),
			Throttle: &throttle{From: 0.15, To: 0.45, Max: 0.45, Period: 100 * ms},
			Servers:  one(1, 82, simFlags(32, 40*ms, 4*ms, 1.2)), Every: 3 * time.Second, Seed: 82,
		},
		{
			Name: "c3-drift-down", About: "max_tokens shrinks from 768 to 128 across the whole job (it speeds up)",
			Items: 2400, Concurrency: 32, MaxTokens: drift(768, 128, 0, 1),
			Servers: one(1, 83, simFlags(32, 40*ms, 3*ms, 1.3)), Every: 3 * time.Second, Seed: 83,
		},
		{
			Name: "c3-neighbour-leaves", About: "another job (24 clients) on the server from before this one until it is 45% done",
			Items: 2400, Concurrency: 32, MaxTokens: fixed(384),
			Neighbour: &neighbour{Clients: 24, Lead: 4 * time.Second, Until: 0.45, MaxTokens: 384, PromptWords: 24, Seed: 184},
			Servers:   one(1, 84, simFlags(64, 30*ms, 3*ms, 1.8)), Every: 2500 * ms, Seed: 84,
		},
		{
			Name: "c3-workers-ramp", About: "8 clients until 25% done, then 40",
			Items: 2400, Concurrency: 40, Clients: []clientStep{{0, 8}, {0.25, 40}}, MaxTokens: fixed(320),
			Servers: one(1, 85, simFlags(40, 30*ms, 3*ms, 1.6)), Every: 2500 * ms, Seed: 85,
		},
		{
			Name: "c3-steady", About: "40 slots, 40 clients, max_tokens 384, no streaming: nothing changes",
			Items: 2400, Concurrency: 40, MaxTokens: fixed(384),
			Servers: one(1, 86, simFlags(40, 40*ms, 4*ms, 1.3)), Every: 2500 * ms, Seed: 86,
		},
	}
}
