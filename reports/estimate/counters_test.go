package estimate

import (
	"math"
	"testing"
)

// reading is one scrape in a counter test: generated tokens (and finished requests), the server's start time
// and the time of the scrape.
type reading struct {
	gen, done, start, now float64
}

func gen(g, done float64) Counts {
	c := Missing()
	c.Gen, c.Done = g, done
	return c
}

func TestCounterAdd(t *testing.T) {
	tests := []struct {
		name      string
		reads     []reading
		wantGen   float64
		wantDone  float64
		restarts  int64
		replicaAt []int // indexes of readings Add must call a replica
	}{
		{"steady", []reading{{100, 1, 0, 0}, {200, 2, 0, 0}, {300, 3, 0, 0}}, 300, 3, 0, nil},
		{"restart without a start time", []reading{{1000, 10, 0, 0}, {1010, 11, 0, 0}, {5, 0, 0, 0}, {15, 1, 0, 0}}, 1025, 12, 1, nil},
		{"restart with a start time", []reading{{1000, 10, 100, 110}, {1010, 11, 100, 120}, {5, 0, 125, 130}, {15, 1, 125, 140}}, 1025, 12, 1, nil},
		{"two replicas with start times", []reading{{1000, 10, 10, 100}, {600, 6, 20, 130}, {1010, 11, 10, 160}, {610, 7, 20, 190}, {1020, 12, 10, 220}},
			1030, 13, 0, []int{1}},
		{"two replicas without start times", []reading{{1000, 10, 0, 0}, {600, 6, 0, 0}, {1010, 11, 0, 0}, {610, 7, 0, 0}, {1020, 12, 0, 0}},
			1030, 13, 0, []int{1}},
		{"a counter that steps back", []reading{{1000, 10, 0, 0}, {1010, 11, 0, 0}, {990, 11, 0, 0}, {1030, 12, 0, 0}}, 1030, 12, 0, []int{2}},
		{"a glitch within one server lifetime", []reading{{1000, 10, 50, 100}, {990, 10, 50, 130}, {1020, 12, 50, 160}}, 1020, 12, 0, nil},
		{"a restart whose server clock is behind", []reading{{1000, 10, 50, 100}, {200, 1, 90, 130}, {210, 2, 90, 160}}, 1210, 12, 1, nil},
		{"an older replica found late", []reading{{1000, 10, 50, 100}, {200, 1, 20, 130}, {210, 2, 20, 160}}, 1010, 11, 0, []int{1}},
		{"a replica the server's clock puts before the last scrape", []reading{{1000, 10, 50, 100}, {700, 9, 90, 130}, {710, 10, 90, 160}},
			1010, 11, 0, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Counter
			replicas := map[int]bool{}
			for i, r := range tt.reads {
				var st Step
				c, st = c.Add(gen(r.gen, r.done), r.start, r.now)
				if st.Replica {
					replicas[i] = true
				}
			}
			if c.Total.Gen != tt.wantGen || c.Total.Done != tt.wantDone || c.Restarts != tt.restarts {
				t.Errorf("Add(%v) = gen %v, done %v, %d restarts; want %v, %v, %d", tt.reads, c.Total.Gen, c.Total.Done,
					c.Restarts, tt.wantGen, tt.wantDone, tt.restarts)
			}
			for _, i := range tt.replicaAt {
				if !replicas[i] {
					t.Errorf("Add(%v): reading %d not called a replica", tt.reads, i)
				}
			}
			if len(replicas) != len(tt.replicaAt) {
				t.Errorf("Add(%v): replicas at %v; want %v", tt.reads, replicas, tt.replicaAt)
			}
		})
	}
}

// TestCounterReplicasKeepTheRate is the case that once read 918 tok/s as 614,079 tok/s: two replicas behind one
// URL, each decoding 459 tok/s from counters in the tens of millions, answer scrapes in turn (or a stale
// reading steps the counter back now and then). The rate from the folded totals stays 918 tok/s.
func TestCounterReplicasKeepTheRate(t *testing.T) {
	for _, withStart := range []bool{true, false} {
		for _, stepBack := range []bool{false, true} {
			var c Counter
			a, b := 18e6, 17.4e6
			const every, rate = 30.0, 459.0
			var first, firstT float64
			var lastT float64
			for i := 0; i < 240; i++ {
				now := 1.7e9 + float64(i)*every
				a += rate * every
				b += rate * every
				g, start := a, 1.69e9
				if i%2 == 1 {
					g, start = b, 1.691e9
				}
				if stepBack && i%7 == 3 {
					g -= 5000 // a stale reading
				}
				if !withStart {
					start = 0
				}
				c, _ = c.Add(gen(g, math.NaN()), start, now)
				if i == 4 {
					first, firstT = c.Total.Gen, now
				}
				lastT = now
			}
			got := (c.Total.Gen - first) / (lastT - firstT)
			if math.Abs(got-2*rate) > 0.02*2*rate {
				t.Errorf("two replicas (start times %v, steps back %v): %.0f tok/s from the folded totals; want %.0f", withStart, stepBack, got, 2*rate)
			}
		}
	}
}

func TestCounterLanesBounded(t *testing.T) {
	var c Counter
	for i := 0; i < 50; i++ {
		c, _ = c.Add(gen(float64(1000-i), 0), float64(100+i), float64(1000+i)) // a new server every time
	}
	if len(c.Lanes) > maxLanes {
		t.Errorf("after 50 server lifetimes %d lanes; want at most %d", len(c.Lanes), maxLanes)
	}
}

// TestCounterSwitched: a reading that continues a lane left unread for more than a turn is a switch (its growth
// arrives in one lump); replicas answering strictly in turn, or one server, never are.
func TestCounterSwitched(t *testing.T) {
	tests := []struct {
		name string
		gens []float64
		want []int // indexes of the readings Add must call switched
	}{
		{"one server", []float64{100, 200, 300, 400, 500}, nil},
		{"two replicas in turn", []float64{1000, 600, 1010, 610, 1020, 620, 1030}, nil},
		{"a replica that answers now and then", []float64{1000, 600, 1010, 1020, 1030, 700, 1040}, []int{5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Counter
			var got []int
			for i, g := range tt.gens {
				var st Step
				c, st = c.Add(gen(g, math.NaN()), 0, 0)
				if st.Switched {
					got = append(got, i)
				}
			}
			if len(got) != len(tt.want) || len(got) > 0 && got[0] != tt.want[0] {
				t.Errorf("Add(%v): switched at %v; want %v", tt.gens, got, tt.want)
			}
		})
	}
}

// TestCounterNamed: counters by name (finishes by reason, the drafter's) fold by the same rules as the six,
// matched on finished requests when the readings have no token counter, else on the named counters' sum.
func TestCounterNamed(t *testing.T) {
	reading := func(done float64, named map[string]float64) Counts {
		c := Missing()
		c.Done, c.Named = done, named
		return c
	}
	tests := []struct {
		name  string
		reads []Counts
		want  map[string]float64
	}{
		{"growing", []Counts{reading(10, map[string]float64{"stop": 8, "length": 2}), reading(30, map[string]float64{"stop": 25, "length": 5})},
			map[string]float64{"stop": 25, "length": 5}},
		{"a restart without token counters", []Counts{reading(160, map[string]float64{"stop": 138, "length": 22}), reading(40, map[string]float64{"stop": 38, "length": 2})},
			map[string]float64{"stop": 176, "length": 24}},
		{"a reason seen late counts from zero", []Counts{reading(10, map[string]float64{"stop": 10}), reading(13, map[string]float64{"stop": 11, "abort": 2})},
			map[string]float64{"stop": 11, "abort": 2}},
		{"drafter counters only, restarted", []Counts{reading(math.NaN(), map[string]float64{"drafts": 1000, "accepted": 700}),
			reading(math.NaN(), map[string]float64{"drafts": 1500, "accepted": 1000}), reading(math.NaN(), map[string]float64{"drafts": 100, "accepted": 60})},
			map[string]float64{"drafts": 1600, "accepted": 1060}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Counter
			for i, r := range tt.reads {
				c, _ = c.Add(r, 0, float64(100+30*i))
			}
			for k, v := range tt.want {
				if got := c.Total.Named[k]; got != v {
					t.Errorf("Add(%v): %s = %v; want %v", tt.reads, k, got, v)
				}
			}
		})
	}
	// A Counter is a value: folding into the next one leaves the one before as it was.
	var c Counter
	c, _ = c.Add(reading(10, map[string]float64{"stop": 10}), 0, 100)
	next, _ := c.Add(reading(20, map[string]float64{"stop": 20}), 0, 130)
	if c.Total.Named["stop"] != 10 || c.Lanes[0].Last.Named["stop"] != 10 || next.Total.Named["stop"] != 20 {
		t.Errorf("after Add: before %v (lane %v), next %v; want 10, 10, 20", c.Total.Named, c.Lanes[0].Last.Named, next.Total.Named)
	}
}

// TestCoversJobAcrossALaggingLog: a log read just before it was written is behind the engines, and its next
// reading's count takes in the lag. The demo's first reading said 1,250 done where the engines had finished
// 1,296; the next, 30 s later, 1,367 by both: 117 items by the log against 71 by the engines, and the
// counters were dropped for the whole run ("the engines' counters do not cover the job", a false "ETA moved
// +1 h 24 min"). The log's own elapsed time moved 45 s: at its clock the two agree. Replicas behind one URL,
// whose engines count half the job's items at the log's own pace, are still caught.
func TestCoversJobAcrossALaggingLog(t *testing.T) {
	obs := func(t0, el float64, done int64, fin float64) Observation {
		return Observation{T: t0, Done: done, Total: 25000, Elapsed: obsF(el), FinishedLenCount: obsF(fin), GenTokens: obsF(fin * 600),
			FinishedLenSum: obsF(fin * 560), Running: obsF(200)}
	}
	lagging := []Observation{obs(0, 600, 1250, 1296), obs(30, 645, 1367, 1367), obs(60, 675, 1430, 1430), obs(90, 705, 1493, 1493)}
	if foldSeries(lagging)[len(lagging)-1].Unreliable {
		t.Errorf("a log read 15 s behind the engines at the first sample: the counters were taken not to cover the job")
	}
	// One of two replicas answers every scrape: the engines count half the items the log does at its own pace.
	var replicas []Observation
	for i := range 6 {
		done := int64(1000 + 60*i)
		replicas = append(replicas, obs(float64(30*i), float64(600+30*i), done, float64(500+30*i)))
	}
	if !foldSeries(replicas)[len(replicas)-1].Unreliable {
		t.Errorf("engines counting half the job's items: taken to cover the job")
	}
}
