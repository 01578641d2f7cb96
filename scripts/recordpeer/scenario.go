package main

import (
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"time"
)

// scenario is one job to record: the simulator's settings, the job's shape, and how often to sample.
type scenario struct {
	Name, About string
	Items       int
	Concurrency int
	// StartConcurrency workers start at once; the rest join one by one until RampUntil of the items are
	// done (0: all start at once).
	StartConcurrency int
	RampUntil        float64
	// MaxTokens is item i's max_tokens (of n items), PromptWords its prompt length in words.
	MaxTokens func(i, n int, r *rand.Rand) int
	// RunFileMaxTokens, when set, is the max_tokens every trace line gives, as a run file's one `max_tokens:`
	// would for a job whose items each have their own (0: the max_tokens of the request sent last).
	RunFileMaxTokens int
	PromptWords      func(i int, r *rand.Rand) int
	Chat             bool // /v1/chat/completions instead of /v1/completions
	Servers          []serverSpec
	// RestartAt is the fraction of items done when the first server is killed (SIGKILL) and started again
	// after Downtime; 0 never.
	RestartAt float64
	Downtime  time.Duration
	// PauseAt is the fraction of items done when the first server is stopped (SIGSTOP) for Pause, then
	// continued: it neither answers nor forgets; 0 never.
	PauseAt float64
	Pause   time.Duration
	// OneURL puts every server behind one round-robin proxy address, for the job and the scraper alike.
	OneURL bool
	Every  time.Duration // sampling interval
	Seed   int64         // the client's seed (prompts, max_tokens); servers have their own

	// Stream sends every request streamed and counts the tokens as they arrive, so that the recording gives a
	// second trace whose token counter moves per iteration, as vLLM's does (see meter).
	Stream bool
	// Clients, when set, is how many of the Concurrency workers send at each stretch of the job: from each
	// step's share of items done on, its count (a client that drops workers mid-run, or adds them).
	Clients []clientStep
	// Neighbour is another job sharing the servers: its tokens and requests are in the engines' counters and
	// gauges, not in this job's log.
	Neighbour *neighbour
	// Throttle slows the first server from a share of the job on (see throttle).
	Throttle *throttle
}

// clientStep is a share of the job's items done and how many workers send from then on.
type clientStep struct {
	At      float64
	Clients int
}

// neighbour is another job on the same servers. It starts Lead before the job (0: with it) or when the job
// has done From of its items, ramps its workers up to Clients over the job's items from From to RampTo (0: at
// once), and stops taking items once the job has done Until of its own (1: with the job's last).
type neighbour struct {
	Clients      int
	Lead         time.Duration
	From, RampTo float64
	Until        float64
	MaxTokens    int
	PromptWords  int
	Seed         int64
}

// throttle stops the first server (SIGSTOP) for a share of every Period, as a CPU or power cap does: from
// the job's From share of items done the share rises linearly to Max at To, and stays.
type throttle struct {
	From, To, Max float64
	Period        time.Duration
}

// duty is the share of each period the server is stopped at a share done of the job.
func (t throttle) duty(done float64) float64 {
	switch {
	case done < t.From:
		return 0
	case done >= t.To || t.To <= t.From:
		return t.Max
	}
	return t.Max * (done - t.From) / (t.To - t.From)
}

// clients is how many workers send once share of the job's items are done.
func (sc scenario) clients(share float64) int {
	n := sc.Concurrency
	for _, s := range sc.Clients {
		if share >= s.At {
			n = s.Clients
		}
	}
	return n
}

// serverSpec is one simulator process.
type serverSpec struct {
	Ranks int // data-parallel ranks (--data-parallel-size), one port each
	Seed  int64
	Flags []string
}

// simFlags are the flags every recording passes: a dummy model (no tokenizer download), a context long
// enough for every prompt, and the batch and latency model.
func simFlags(seqs int, ttft, itl time.Duration, loadFactor float64, extra ...string) []string {
	f := []string{
		"--model", "fake-model", "--max-model-len", "16384",
		"--max-num-seqs", strconv.Itoa(seqs),
		"--time-to-first-token", ttft.String(),
		"--inter-token-latency", itl.String(),
		"--time-factor-under-load", strconv.FormatFloat(loadFactor, 'g', -1, 64),
	}
	return append(f, extra...)
}

func fixed(m int) func(int, int, *rand.Rand) int { return func(int, int, *rand.Rand) int { return m } }

func one(ranks int, seed int64, flags []string) []serverSpec {
	return []serverSpec{{Ranks: ranks, Seed: seed, Flags: flags}}
}

const ms = time.Millisecond

// scenarios are the recorded jobs. The simulator's token counter grows only when a request finishes in every
// one of them (its only behaviour); onfinish-lumpy makes that most visible.
func scenarios() []scenario {
	return []scenario{
		{
			Name: "steady", About: "full batch, fixed max_tokens, mild slowdown under load",
			Items: 3000, Concurrency: 32, MaxTokens: fixed(512),
			Servers: one(1, 11, simFlags(32, 40*ms, 4*ms, 1.2)), Every: 500 * ms, Seed: 1,
		},
		{
			Name: "steady-chat", About: "as steady over /v1/chat/completions, jittered latencies, other seeds",
			Items: 3000, Concurrency: 32, MaxTokens: fixed(512), Chat: true,
			Servers: one(1, 12, simFlags(32, 40*ms, 4*ms, 1.2,
				"--time-to-first-token-std-dev", "10ms", "--inter-token-latency-std-dev", "1ms")),
			Every: 500 * ms, Seed: 2,
		},
		{
			Name: "queued", About: "64 clients against 16 batch slots: a standing queue of 48",
			Items: 2500, Concurrency: 64, MaxTokens: fixed(384),
			Servers: one(1, 13, simFlags(16, 30*ms, 3*ms, 1.5)), Every: 500 * ms, Seed: 3,
		},
		{
			Name: "queued-deep", About: "128 clients against 8 batch slots with a 3x slowdown when full: a queue of 120",
			Items: 1500, Concurrency: 128, MaxTokens: fixed(256),
			Servers: one(1, 27, simFlags(8, 20*ms, 2*ms, 3)), Every: 500 * ms, Seed: 16,
		},
		{
			Name: "length-drift", About: "max_tokens 256 for the first 30% of items, growing to 1024 by 70%",
			Items: 3000, Concurrency: 32, MaxTokens: drift(256, 1024, 0.3, 0.7),
			Servers: one(1, 14, simFlags(32, 40*ms, 3*ms, 1.2)), Every: 750 * ms, Seed: 4,
		},
		{
			Name: "slowdown", About: "clients ramp 8 -> 64 over the first 40% against a server that slows 4x when full",
			Items: 3000, Concurrency: 64, StartConcurrency: 8, RampUntil: 0.4, MaxTokens: fixed(384),
			Servers: one(1, 15, simFlags(64, 30*ms, 2*ms, 4)), Every: 750 * ms, Seed: 5,
		},
		{
			Name: "stragglers", About: "max_tokens 256, the last 40 items 4096",
			Items: 2500, Concurrency: 32, MaxTokens: stragglers(256, 4096, 40),
			Servers: one(1, 16, simFlags(32, 40*ms, 4*ms, 1.2)), Every: 500 * ms, Seed: 6,
		},
		{
			Name: "restart", About: "the server is killed at 45% and started again 5 s later: its counters start at 0",
			Items: 3000, Concurrency: 32, MaxTokens: fixed(512), RestartAt: 0.45, Downtime: 5 * time.Second,
			Servers: one(1, 17, simFlags(32, 40*ms, 4*ms, 1.2)), Every: 500 * ms, Seed: 7,
		},
		{
			Name: "stall", About: "the server stops answering (SIGSTOP) at 40% for 10 s, then carries on where it was",
			Items: 3000, Concurrency: 32, MaxTokens: fixed(512), PauseAt: 0.4, Pause: 10 * time.Second,
			Servers: one(1, 30, simFlags(32, 40*ms, 4*ms, 1.2)), Every: 500 * ms, Seed: 17,
		},
		{
			Name: "replicas-one-url", About: "two simulator processes behind one round-robin address: each scrape reads one replica's counters",
			Items: 3000, Concurrency: 48, MaxTokens: fixed(512), OneURL: true,
			Servers: []serverSpec{
				{Ranks: 1, Seed: 28, Flags: simFlags(24, 40*ms, 4*ms, 1.3)},
				{Ranks: 1, Seed: 29, Flags: simFlags(24, 40*ms, 4*ms, 1.3)},
			},
			Every: 500 * ms, Seed: 18,
		},
		{
			Name: "dp2", About: "one simulator with --data-parallel-size 2 (a port per rank), requests alternate",
			Items: 3000, Concurrency: 48, MaxTokens: fixed(512),
			Servers: one(2, 18, simFlags(24, 40*ms, 4*ms, 1.3)), Every: 500 * ms, Seed: 8,
		},
		{
			Name: "dp2-uneven", About: "two simulator processes, the second 2x slower per token, requests alternate",
			Items: 3000, Concurrency: 48, MaxTokens: fixed(512),
			Servers: []serverSpec{
				{Ranks: 1, Seed: 19, Flags: simFlags(24, 40*ms, 3*ms, 1.3)},
				{Ranks: 1, Seed: 20, Flags: simFlags(24, 40*ms, 6*ms, 1.3)},
			},
			Every: 750 * ms, Seed: 9,
		},
		{
			Name: "onfinish-lumpy", About: "8 slots, long completions: the on-finish counter moves in big steps",
			Items: 400, Concurrency: 8, MaxTokens: fixed(2048),
			Servers: one(1, 21, simFlags(8, 50*ms, 2*ms, 1.1)), Every: 500 * ms, Seed: 10,
		},
		{
			Name: "small", About: "a short job: 150 items",
			Items: 150, Concurrency: 16, MaxTokens: fixed(512),
			Servers: one(1, 22, simFlags(16, 50*ms, 5*ms, 1.2)), Every: 250 * ms, Seed: 11,
		},
		{
			Name: "prompt-var", About: "prompts of 20-6000 words (lognormal), prefill time per prompt token",
			Items: 2500, Concurrency: 32, MaxTokens: fixed(384), PromptWords: lognormalWords(300, 1.2, 20, 6000),
			Servers: one(1, 23, simFlags(32, 0, 3*ms, 1.3,
				"--prefill-overhead", "20ms", "--prefill-time-per-token", "200us")),
			Every: 500 * ms, Seed: 12,
		},
		{
			Name: "failures", About: "3% of requests fail (server_error); the job retries them",
			Items: 3000, Concurrency: 32, MaxTokens: fixed(512),
			Servers: one(1, 24, simFlags(32, 40*ms, 4*ms, 1.2,
				"--failure-injection-rate", "3", "--failure-types", "server_error")),
			Every: 500 * ms, Seed: 13,
		},
		{
			Name: "seed-moment", About: "the seed's shape scaled down: 200 clients over 2 data-parallel ranks, max_tokens 3400",
			Items: 12000, Concurrency: 200, MaxTokens: fixed(3400),
			Servers: one(2, 25, simFlags(128, 60*ms, 1*ms, 1.3)), Every: time.Second, Seed: 14,
		},
		{
			Name: "seed-moment-25k", About: "the seed's own size: 25,000 items, 200 clients, 2 ranks, max_tokens 3940 (~1,130-token mean)",
			Items: 25000, Concurrency: 200, MaxTokens: fixed(3940),
			Servers: one(2, 26, simFlags(128, 60*ms, 1*ms, 1.3)), Every: time.Second, Seed: 15,
		},
	}
}

// drift is max_tokens lo until fraction from of the items, growing linearly to hi at fraction to.
func drift(lo, hi int, from, to float64) func(int, int, *rand.Rand) int {
	return func(i, n int, _ *rand.Rand) int {
		f := float64(i) / float64(n)
		switch {
		case f <= from:
			return lo
		case f >= to:
			return hi
		}
		return lo + int(float64(hi-lo)*(f-from)/(to-from))
	}
}

// stragglers is max_tokens m except for the last k items, which get long.
func stragglers(m, long, k int) func(int, int, *rand.Rand) int {
	return func(i, n int, _ *rand.Rand) int {
		if i >= n-k {
			return long
		}
		return m
	}
}

// lognormalWords draws prompt lengths with the given median and sigma, clamped to [lo, hi].
func lognormalWords(median, sigma float64, lo, hi int) func(int, *rand.Rand) int {
	return func(_ int, r *rand.Rand) int {
		w := int(median * math.Exp(sigma*r.NormFloat64()))
		return max(lo, min(hi, w))
	}
}

// seedStep is how far apart the seeds of one scenario's draws are (see reseed): more than any seed listed
// above (1-30), so draws 1-9 use none of the listed seeds nor each other's.
const seedStep = 100

// reseed is sc with every seed it uses, the client's and each server's, moved by n*seedStep: another draw of
// the same job (prompts, completion lengths), its shape (items, clients, flags, events) unchanged. The
// servers move together, so they still differ from each other; n == 0 is sc itself.
func reseed(sc scenario, n int) scenario {
	off := int64(n) * seedStep
	sc.Seed += off
	sc.Servers = append([]serverSpec(nil), sc.Servers...)
	for i := range sc.Servers {
		sc.Servers[i].Seed += off
	}
	return sc
}

// tracePath is where the trace of draw seed of the scenario called name is kept, from the repository root:
// the corpus's in reports/testdata/peer (other draws in seeds/), the held-out jobs' apart in heldout/, so that
// recording them never adds them to the corpus the estimator is tuned and scored on.
func tracePath(name string, seed int) string {
	dir := "reports/testdata/peer"
	for _, s := range heldout() {
		if s.Name == name {
			dir += "/heldout"
		}
	}
	for _, s := range second() {
		if s.Name == name {
			dir = "reports/testdata/peer2"
		}
	}
	for _, s := range third() {
		if s.Name == name {
			dir = "reports/testdata/peer3"
		}
	}
	if seed > 0 {
		return fmt.Sprintf("%s/seeds/%s.s%d.jsonl", dir, name, seed)
	}
	return dir + "/" + name + ".jsonl"
}

func find(name string) (scenario, bool) {
	for _, s := range append(append(append(scenarios(), heldout()...), second()...), third()...) {
		if s.Name == name {
			return s, true
		}
	}
	return scenario{}, false
}
