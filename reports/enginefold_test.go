package reports

import (
	"errors"
	"math"
	"strings"
	"testing"

	"runwatch/probes"
)

func TestFoldEngines(t *testing.T) {
	nan := math.NaN()
	vllm := func(gen, done, start float64) probes.Engine {
		return probes.Engine{Kind: "vllm", Engines: 1, GenerationTokens: gen, RequestsFinished: done, PromptTokens: done * 10,
			Running: 4, Waiting: 1, StartTime: start, FinishedLenSum: nan, FinishedLenCount: nan, KVCacheUsage: nan}
	}
	a := probes.EngineReading{Key: "a", URL: "http://a/metrics", Probe: "metrics a"}
	b := probes.EngineReading{Key: "b", URL: "http://b/metrics", Probe: "metrics b"}
	down := errors.New("connection refused")
	at := func(rd probes.EngineReading, e probes.Engine, err error) probes.EngineReading {
		rd.Engine, rd.Err = e, err
		return rd
	}

	// Two data-parallel servers sum.
	f := FoldEngines([]probes.EngineReading{at(a, vllm(1000, 10, 100), nil), at(b, vllm(500, 5, 100), nil)}, nil, 200)
	if gen, prompt, ok := f.Totals.Tokens(); !ok || gen != 1500 || prompt != 150 {
		t.Errorf("two servers: tokens %v, prompt %v, ok %v; want 1500, 150, true", gen, prompt, ok)
	}
	var o Observation
	o.T = 200
	f.Totals.Apply(&o)
	if p, ok := f.Totals.Progress(&o, 100); !ok || p.Done != 15 || o.Running == nil || *o.Running != 8 || o.Elapsed == nil || *o.Elapsed != 100 {
		t.Errorf("two servers: progress %+v ok %v, running %v, elapsed %v; want 15 done, 8 running, 100 s", p, ok, o.Running, o.Elapsed)
	}
	if len(f.Engines) != 2 || !f.Engines[0].OK || f.Engines[0].Running == nil {
		t.Errorf("status lines = %+v; want two that answered", f.Engines)
	}

	// b restarts (counter from zero, later start time): its earlier counts carry on, and it is named.
	f2 := FoldEngines([]probes.EngineReading{at(a, vllm(2000, 20, 100), nil), at(b, vllm(100, 1, 300), nil)}, f.Counters, 310)
	if gen, _, _ := f2.Totals.Tokens(); gen != 2600 {
		t.Errorf("after b restarted: tokens %v; want 2600 (2000 + 500 + 100)", gen)
	}
	if len(f2.Notices) != 1 || !strings.Contains(f2.Notices[0], "http://b/metrics restarted") {
		t.Errorf("notices = %q; want b's restart", f2.Notices)
	}

	// A server that does not answer adds nothing new but keeps every count it reported, prompt
	// tokens included (they size `tokens: auto` plans); one never read is kept in the counters.
	f3 := FoldEngines([]probes.EngineReading{at(a, probes.Engine{}, down)}, f2.Counters, 320)
	if gen, prompt, ok := f3.Totals.Tokens(); !ok || gen != 2000 || prompt != 200 || f3.Totals.done != 20 {
		t.Errorf("a down: tokens %v, prompt %v, done %v; want 2000, 200, 20", gen, prompt, f3.Totals.done)
	}
	if _, kept := f3.Counters["b"]; !kept || f3.Engines[0].OK || f3.Engines[0].Error != "connection refused" {
		t.Errorf("a down: counters %v, status %+v; want b kept and a's error shown", f3.Counters, f3.Engines[0])
	}
	if f3.Totals.haveDone {
		t.Error("a down: finished requests counted as read this sample; a dead server only keeps its totals")
	}
}

// TestPromHistoryWaitsForEveryInstance: query_range answers with series that start at different steps (a
// second server's first scrape lands a few steps after the first's, or its series was just relabelled in).
// Steps before every instance of the newest step is present sum some of the servers only: a history built
// from them ran at half the job's rate for its first blocks, and the ETA via Prometheus came out 1.6x the
// direct one's (212 s against 127 s, 1 run in 12 of TestPrometheusIntegration under load). The history
// starts where every instance is present; the counters are folded from the first step on.
func TestPromHistoryWaitsForEveryInstance(t *testing.T) {
	nan := math.NaN()
	inst := func(name string, gen, done float64) probes.PromInstance {
		return probes.PromInstance{Name: name, Up: 1, HasUp: true, Engine: probes.Engine{Kind: "vllm", Engines: 1,
			GenerationTokens: gen, RequestsFinished: done, PromptTokens: nan, Running: 8, Waiting: 0, StartTime: 1000,
			FinishedLenSum: nan, FinishedLenCount: nan, KVCacheUsage: nan}}
	}
	const rate = 3000.0 // tokens/s per server
	var steps []probes.PromStep
	for i := range 20 {
		t0 := 2000 + float64(i)
		s := probes.PromStep{T: t0, Instances: []probes.PromInstance{inst("a:8000", rate*(t0-1000), 20*(t0-1000))}}
		if i >= 6 {
			s.Instances = append(s.Instances, inst("b:8000", rate*(t0-1000), 20*(t0-1000)))
		}
		steps = append(steps, s)
	}
	obs, _ := PromHistory(steps, "http://prom", nil, 100000, 0)
	if len(obs) == 0 {
		t.Fatal("no observations")
	}
	if obs[0].T < 2006 {
		t.Errorf("the history starts at %g, before b's first step (2006): those steps count one server of two", obs[0].T)
	}
	for i := 1; i < len(obs); i++ {
		a, z := obs[i-1], obs[i]
		if got := (*z.GenTokens - *a.GenTokens) / (z.T - a.T); math.Abs(got-2*rate) > 1 {
			t.Errorf("tokens/s from %g to %g = %.0f; want both servers' %.0f", a.T, z.T, got, 2*rate)
		}
	}
}

// TestPromHistoryDoesNotWaitForAScaledUpServer: a replica the autoscaler added late (its server started
// after the history's first steps, its counters near zero) counted nothing before it started; the history
// starts at the first step, not where the new server first appears (which dropped the hours before it).
func TestPromHistoryDoesNotWaitForAScaledUpServer(t *testing.T) {
	nan := math.NaN()
	inst := func(name string, gen, done, start float64) probes.PromInstance {
		return probes.PromInstance{Name: name, Up: 1, HasUp: true, Engine: probes.Engine{Kind: "vllm", Engines: 1,
			GenerationTokens: gen, RequestsFinished: done, PromptTokens: nan, Running: 8, Waiting: 0, StartTime: start,
			FinishedLenSum: nan, FinishedLenCount: nan, KVCacheUsage: nan}}
	}
	const rate = 3000.0
	var steps []probes.PromStep
	for i := range 20 {
		t0 := 2000 + float64(i)
		s := probes.PromStep{T: t0, Instances: []probes.PromInstance{inst("a:8000", rate*(t0-1000), 20*(t0-1000), 1000)}}
		if i >= 15 { // started at 2014.5, first scraped at 2015
			s.Instances = append(s.Instances, inst("c:8000", rate*(t0-2014.5), 20*(t0-2014.5), 2014.5))
		}
		steps = append(steps, s)
	}
	obs, _ := PromHistory(steps, "http://prom", nil, 100000, 0)
	if len(obs) == 0 || obs[0].T != 2000 {
		var first float64
		if len(obs) > 0 {
			first = obs[0].T
		}
		t.Fatalf("the history starts at %g (%d points); want 2000, the first step: c had not started before 2014.5", first, len(obs))
	}
}
