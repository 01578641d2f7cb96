package sim

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"runwatch/probes"
	"runwatch/reports"
)

// smallScenario is a quick job for tests: 600 items, 40 slots.
func smallScenario(events ...Event) Scenario {
	s := baseScenario("test")
	s.Items, s.Concurrency, s.QueueDepth = 600, 40, 10
	s.PeakTokensPerS, s.SingleTokensPerS = 400, 30
	s.Events = events
	return s
}

func TestTraceDeterministic(t *testing.T) {
	a, fa := Trace(smallScenario(), 7, 30)
	b, fb := Trace(smallScenario(), 7, 30)
	if !reflect.DeepEqual(a, b) || fa != fb {
		t.Fatalf("Trace(seed 7) twice differs: finish %v vs %v", fa, fb)
	}
	c, fc := Trace(smallScenario(), 8, 30)
	if reflect.DeepEqual(a, c) || fa == fc {
		t.Errorf("Trace(seed 7) and Trace(seed 8) are identical")
	}
}

func TestTraceInvariants(t *testing.T) {
	for _, s := range append(Scenarios(), DemoScenario()) {
		s.Items = min(s.Items, 3000) // keep the test quick; the events still happen early enough
		t.Run(s.Name, func(t *testing.T) {
			obs, finish := Trace(s, 1, 60)
			last := obs[len(obs)-1]
			if last.Done != int64(s.Items) || finish <= 0 || finish > last.T || finish <= obs[len(obs)-2].T {
				t.Fatalf("last observation %+v, finish %v: want all %d done, finishing in the last interval",
					last, finish, s.Items)
			}
			for i := 1; i < len(obs); i++ {
				o, p := obs[i], obs[i-1]
				if o.Done < p.Done || o.Done > o.Total {
					t.Fatalf("t=%v: done %d after %d of %d", o.T, o.Done, p.Done, o.Total)
				}
				if o.Running != nil && (*o.Running < 0 || *o.Running > float64(s.Concurrency)) {
					t.Fatalf("t=%v: running %v with %d slots", o.T, *o.Running, s.Concurrency)
				}
				if o.GenTokens != nil && o.FinishedLenSum != nil && *o.FinishedLenSum > *o.GenTokens+1 {
					t.Fatalf("t=%v: finished tokens %v exceed generated %v", o.T, *o.FinishedLenSum, *o.GenTokens)
				}
			}
		})
	}
}

// tokenRate is the generation rate between the first and the last observation of obs with token counts in
// [from, to] of sim time.
func tokenRate(t *testing.T, obs []reports.Observation, from, to float64) float64 {
	t.Helper()
	var a, b *reports.Observation
	for i := range obs {
		o := &obs[i]
		if o.T < from || o.T > to || o.GenTokens == nil {
			continue
		}
		if a == nil {
			a = o
		}
		b = o
	}
	if a == nil || b == a {
		t.Fatalf("no token counts between t=%v and t=%v", from, to)
	}
	return (*b.GenTokens - *a.GenTokens) / (b.T - a.T)
}

func TestEvents(t *testing.T) {
	t.Run("restart", func(t *testing.T) {
		obs, _ := Trace(smallScenario(Event{At: 600, Kind: Restart, Duration: 90}), 1, 30)
		var down, reset bool
		lastG := -1.0
		for _, o := range obs {
			if o.T > 600 && o.T < 690 && o.GenTokens != nil {
				t.Errorf("t=%v: engine answered during the restart", o.T)
			}
			down = down || o.GenTokens == nil
			if o.GenTokens != nil {
				// The trace is what a sampler records: the counter carries on, the restart is counted.
				reset = reset || o.Restarts > 0
				if *o.GenTokens < lastG {
					t.Errorf("t=%v: the token total went back (%v after %v); want it carried across the restart", o.T, *o.GenTokens, lastG)
				}
				lastG = *o.GenTokens
			}
		}
		if !down || !reset {
			t.Errorf("restart: engine down %v, restart counted %v; want both", down, reset)
		}
	})
	t.Run("stall", func(t *testing.T) {
		obs, _ := Trace(smallScenario(Event{At: 600, Kind: Stall, Duration: 600}), 1, 30)
		for i := 1; i < len(obs); i++ {
			o, p := obs[i], obs[i-1]
			if p.T >= 600 && o.T <= 1200 && (o.Done != p.Done || *o.GenTokens != *p.GenTokens) {
				t.Errorf("t=%v: progress during the stall (done %d -> %d)", o.T, p.Done, o.Done)
			}
		}
	})
	t.Run("slowdown", func(t *testing.T) {
		s := smallScenario(Event{At: 600, Kind: Slowdown, Factor: 0.5})
		s.Jitter = 0
		obs, _ := Trace(s, 1, 30)
		before, after := tokenRate(t, obs, 300, 600), tokenRate(t, obs, 660, 960)
		if r := after / before; math.Abs(r-0.5) > 0.05 {
			t.Errorf("token rate %v -> %v after a 0.5 slowdown: ratio %v, want 0.5", before, after, r)
		}
	})
	t.Run("length drift", func(t *testing.T) {
		s := smallScenario(Event{At: 300, Kind: LengthDrift, Factor: 2, Duration: 300})
		s.Items = 2000
		obs, _ := Trace(s, 1, 30)
		early := mean(t, obs, 120, 300)
		late := mean(t, obs, 1500, 2500)
		if r := late / early; r < 1.7 || r > 2.3 {
			t.Errorf("mean length %v -> %v after doubling: ratio %v, want about 2", early, late, r)
		}
	})
}

// mean is the mean length of the items finished between sim times from and to.
func mean(t *testing.T, obs []reports.Observation, from, to float64) float64 {
	t.Helper()
	var a, b *reports.Observation
	for i := range obs {
		if o := &obs[i]; o.T >= from && o.T <= to && o.FinishedLenSum != nil {
			if a == nil {
				a = o
			}
			b = o
		}
	}
	if a == nil || *b.FinishedLenCount == *a.FinishedLenCount {
		t.Fatalf("no items finished between t=%v and t=%v", from, to)
	}
	return (*b.FinishedLenSum - *a.FinishedLenSum) / (*b.FinishedLenCount - *a.FinishedLenCount)
}

// TestMetricsParse reads the simulated /metrics page with the probe that reads real vLLM servers.
func TestMetricsParse(t *testing.T) {
	for _, engines := range []int{1, 2} {
		s := smallScenario()
		s.Engines = engines
		j := NewJob(s, 1)
		j.Advance(300)
		o := j.Observation()
		e, err := probes.ParseMetrics(bytes.NewReader(j.Metrics()))
		if err != nil {
			t.Fatalf("ParseMetrics(sim metrics, %d engines) error: %v", engines, err)
		}
		want := probes.Engine{Kind: "vllm", Engines: engines, Running: *o.Running, Waiting: *o.Waiting,
			GenerationTokens: *o.GenTokens, RequestsFinished: float64(o.Done),
			FinishedLenSum: *o.FinishedLenSum, FinishedLenCount: *o.FinishedLenCount,
			StartTime: defaultEpoch}
		got := probes.Engine{Kind: e.Kind, Engines: e.Engines, Running: e.Running, Waiting: e.Waiting,
			GenerationTokens: e.GenerationTokens, RequestsFinished: e.RequestsFinished,
			FinishedLenSum: e.FinishedLenSum, FinishedLenCount: e.FinishedLenCount, StartTime: e.StartTime}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseMetrics(sim metrics, %d engines) = %+v; want %+v", engines, got, want)
		}
		if len(e.Skipped) > 0 {
			t.Errorf("ParseMetrics(sim metrics) skipped lines: %q", e.Skipped)
		}
		if e.KVCacheUsage <= 0 || e.KVCacheUsage > 1 {
			t.Errorf("KV cache usage %v, want in (0, 1]", e.KVCacheUsage)
		}
	}
}

// TestMetricsRestart checks that a restart shows as the engine would show it: counters from zero and a later
// start time.
func TestMetricsRestart(t *testing.T) {
	j := NewJob(smallScenario(Event{At: 300, Kind: Restart, Duration: 60}), 1)
	j.Advance(290)
	before, err := probes.ParseMetrics(bytes.NewReader(j.Metrics()))
	if err != nil {
		t.Fatal(err)
	}
	j.Advance(120)
	after, err := probes.ParseMetrics(bytes.NewReader(j.Metrics()))
	if err != nil {
		t.Fatal(err)
	}
	if after.GenerationTokens >= before.GenerationTokens || after.StartTime != before.StartTime+360 {
		t.Errorf("after a restart: tokens %v -> %v, start %v -> %v; want fewer tokens and a start 360 s later",
			before.GenerationTokens, after.GenerationTokens, before.StartTime, after.StartTime)
	}
}

// TestProgressLine reads the simulated log line with the probe that reads real job logs.
func TestProgressLine(t *testing.T) {
	j := NewJob(smallScenario(), 1)
	j.Advance(408)
	line := j.ProgressLine()
	p, ok := probes.ParseProgress([]byte(line), nil)
	o := j.Observation()
	if !ok || p.Done != o.Done || p.Total != o.Total || p.Elapsed != 408 || math.Abs(p.AvgTokens-*o.AvgCompletion) > 1 {
		t.Errorf("ParseProgress(%q) = %+v, %v; want done %d/%d, elapsed 408, avg %v", line, p, ok, o.Done, o.Total,
			*o.AvgCompletion)
	}
}

func TestTraceRoundTrip(t *testing.T) {
	obs, _ := Trace(smallScenario(Event{At: 300, Kind: Restart}), 1, 60)
	var buf bytes.Buffer
	if err := WriteTrace(&buf, obs); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTrace(&buf)
	if err != nil {
		t.Fatalf("ReadTrace(WriteTrace(obs)) error: %v", err)
	}
	if !reflect.DeepEqual(got, obs) {
		t.Errorf("ReadTrace(WriteTrace(obs)) differs from obs")
	}
}

func TestReadTraceError(t *testing.T) {
	in := "{\"t\":0,\"done\":0,\"total\":10}\n\n{\"t\":60,\"done\":-1}\n"
	if _, err := ReadTrace(bytes.NewBufferString(in)); err == nil || !bytes.Contains([]byte(err.Error()), []byte("line 3")) {
		t.Errorf("ReadTrace(%q) error = %v; want one naming line 3", in, err)
	}
}

// BenchmarkJobAdvance measures a simulated minute of the 25,000-item demo job; its cost depends on the
// concurrency and the items finishing in that minute, not on the job's size.
func BenchmarkJobAdvance(b *testing.B) {
	j := NewJob(DemoScenario(), 1)
	j.Advance(600)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if j.Done() {
			b.StopTimer()
			j = NewJob(DemoScenario(), 1)
			j.Advance(600)
			b.StartTimer()
		}
		j.Advance(60)
	}
}
