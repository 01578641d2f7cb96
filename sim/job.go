package sim

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"runwatch/reports"
)

// jitterStep is how often (sim seconds) the throughput wobble takes a new value; jitterTau is how long a wobble
// lasts.
const (
	jitterStep = 10.0
	jitterTau  = 300.0
)

// slowdownEnd is the internal event that undoes a Slowdown with a Duration.
const slowdownEnd EventKind = 100

// defaultEpoch is the unix time of sim second 0 in Metrics output unless a demo sets a real clock.
const defaultEpoch = 1_750_000_000.0

// Job is a simulated generation job. It advances event by event: all running requests decode at the same
// per-request speed, so the next request to finish is the one with the fewest tokens left, kept at the top of a
// heap. A step costs O(log concurrency) per finished request, independent of the job's size.
type Job struct {
	s       Scenario
	rng     *rand.Rand
	a, b    float64 // aggregate decode rate a*B/(1+b*B)
	events  []Event
	nextEv  int
	drifts  []Event
	slow    float64 // product of active slowdown factors
	jitterX float64 // current wobble, log scale
	nextJit float64

	t          float64
	v          float64 // tokens decoded so far by a request that has run since sim second 0
	running    requestHeap
	started    int // distinct items started
	retry      int // lost items waiting to run again
	done       int64
	errors     int64
	finishedTk float64 // client-side sum of completion tokens of finished items
	finishT    float64
	downUntil  float64
	stallUntil float64

	engines     []engineCounters
	serverStart float64 // sim time the current server process started
	epoch       float64 // unix time of sim second 0, for timestamps in Metrics
	nextEngine  int

	collect  bool  // keep finished lengths for takeFinished (the demo writes them out)
	finished []int // lengths finished since the last takeFinished
}

// request is one in-flight request.
type request struct {
	finishV float64 // value of Job.v at which it finishes
	startV  float64
	length  int
	engine  int
}

// requestHeap keeps the running requests ordered by when they finish (container/heap).
type requestHeap []request

func (h requestHeap) Len() int           { return len(h) }
func (h requestHeap) Less(i, j int) bool { return h[i].finishV < h[j].finishV }
func (h requestHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *requestHeap) Push(x any)        { *h = append(*h, x.(request)) }
func (h *requestHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

// engineCounters are one engine's Prometheus counters; a restart zeroes them.
type engineCounters struct {
	running     int
	startVSum   float64 // sum of startV of its running requests, for the KV cache gauge
	gen, prompt float64
	stop, capd  float64
	hist        []float64 // per-bucket (not cumulative) counts of finished lengths
	histSum     float64
	histCount   float64
}

// genBuckets are the upper bounds of vllm:request_generation_tokens (vLLM's 1-2-5 buckets up to the model
// length).
var genBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}

// NewJob starts a job at sim second 0. The same scenario and seed always give the same job.
func NewJob(s Scenario, seed int64) *Job {
	if s.Concurrency < 1 {
		s.Concurrency = 1
	}
	if s.Engines < 1 {
		s.Engines = 1
	}
	if s.MaxTokens < 1 {
		s.MaxTokens = 4096
	}
	if s.MeanTokens <= 0 {
		s.MeanTokens = 1000
	}
	if s.PeakTokensPerS <= 0 {
		s.PeakTokensPerS = 1400
	}
	if s.SingleTokensPerS <= 0 {
		s.SingleTokensPerS = s.PeakTokensPerS / float64(s.Concurrency) * 5
	}
	if s.Model == "" {
		s.Model = "meta-llama/Llama-3.1-8B-Instruct"
	}
	j := &Job{
		s:       s,
		rng:     rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)),
		slow:    1,
		nextJit: jitterStep,
		epoch:   defaultEpoch,
		engines: make([]engineCounters, s.Engines),
	}
	j.a, j.b = engineCurve(float64(s.Concurrency), s.PeakTokensPerS, s.SingleTokensPerS)
	for _, e := range s.Events {
		j.events = append(j.events, e)
		if e.Kind == Slowdown && e.Duration > 0 {
			j.events = append(j.events, Event{At: e.At + e.Duration, Kind: slowdownEnd, Factor: e.Factor})
		}
		if e.Kind == LengthDrift {
			j.drifts = append(j.drifts, e)
		}
	}
	sort.SliceStable(j.events, func(x, y int) bool { return j.events[x].At < j.events[y].At })
	for i := range j.engines {
		j.engines[i].hist = make([]float64, len(genBuckets)+1)
	}
	j.applyEvents()
	return j
}

// engineCurve solves a*B/(1+b*B) for the aggregate rate peak at B = slots and single at B = 1. When the two
// figures are inconsistent (single*slots <= peak) decoding is taken as perfectly parallel.
func engineCurve(slots, peak, single float64) (a, b float64) {
	if single*slots <= peak || single >= peak {
		return peak / slots, 0
	}
	b = (slots*single - peak) / (slots * (peak - single))
	return single * (1 + b), b
}

// decodeRate is one request's decode rate with n requests running.
func (j *Job) decodeRate(n int) float64 {
	return j.a / (1 + j.b*float64(n)) * j.slow * math.Exp(j.jitterX)
}

// Advance runs the job for dt sim seconds. Time passes even after the job is done.
func (j *Job) Advance(dt float64) {
	end := j.t + dt
	for j.t < end {
		j.applyEvents()
		next := end
		if j.nextEv < len(j.events) {
			next = math.Min(next, j.events[j.nextEv].At)
		}
		next = math.Min(next, j.nextJit)
		switch {
		case j.t < j.downUntil:
			j.t = math.Min(next, j.downUntil)
		case j.t < j.stallUntil:
			j.t = math.Min(next, j.stallUntil)
		default:
			j.fill()
			if n := len(j.running); n > 0 {
				r := j.decodeRate(n)
				if tf := j.t + (j.running[0].finishV-j.v)/r; tf < next {
					next = tf
				}
				step := r * (next - j.t)
				j.v += step
				for i := range j.engines {
					j.engines[i].gen += step * float64(j.engines[i].running)
				}
			}
			j.t = next
			j.finishDue()
		}
		if j.t >= j.nextJit {
			rho := math.Exp(-jitterStep / jitterTau)
			j.jitterX = rho*j.jitterX + math.Sqrt(1-rho*rho)*j.s.Jitter*j.rng.NormFloat64()
			j.nextJit += jitterStep
		}
	}
	j.applyEvents()
}

// applyEvents applies the scenario events that are due.
func (j *Job) applyEvents() {
	for j.nextEv < len(j.events) && j.events[j.nextEv].At <= j.t {
		e := j.events[j.nextEv]
		j.nextEv++
		switch e.Kind {
		case Restart:
			d := e.Duration
			if d <= 0 {
				d = 60
			}
			j.retry += len(j.running)
			j.running = j.running[:0]
			for i := range j.engines {
				j.engines[i] = engineCounters{hist: make([]float64, len(genBuckets)+1)}
			}
			j.downUntil = j.t + d
			j.serverStart = j.downUntil
		case Stall:
			j.stallUntil = math.Max(j.stallUntil, j.t+e.Duration)
		case Slowdown:
			if e.Factor > 0 {
				j.slow *= e.Factor
			}
		case slowdownEnd:
			if e.Factor > 0 {
				j.slow /= e.Factor
			}
		}
	}
}

// unstarted is the number of items not running and not done.
func (j *Job) unstarted() int {
	return j.s.Items - j.started + j.retry
}

// fill starts requests while there are free slots and items to run.
func (j *Job) fill() {
	for len(j.running) < j.s.Concurrency && j.unstarted() > 0 {
		if j.retry > 0 {
			j.retry--
		} else {
			j.started++
		}
		e := j.leastLoadedEngine()
		n := j.sampleLength()
		heap.Push(&j.running, request{finishV: j.v + float64(n), startV: j.v, length: n, engine: e})
		ec := &j.engines[e]
		ec.running++
		ec.startVSum += j.v
		ec.prompt += math.Round(j.s.PromptTokens * (0.5 + j.rng.Float64()))
	}
}

func (j *Job) leastLoadedEngine() int {
	best := j.nextEngine % len(j.engines)
	for i := range j.engines {
		k := (j.nextEngine + i) % len(j.engines)
		if j.engines[k].running < j.engines[best].running {
			best = k
		}
	}
	j.nextEngine++
	return best
}

// meanTokens is the mean completion length of a request starting now.
func (j *Job) meanTokens() float64 {
	m := j.s.MeanTokens
	for _, d := range j.drifts {
		if j.t < d.At {
			continue
		}
		frac := 1.0
		if d.Duration > 0 {
			frac = math.Min(1, (j.t-d.At)/d.Duration)
		}
		m *= 1 + (d.Factor-1)*frac
	}
	return m
}

// sampleLength draws a completion length: lognormal with the current mean, capped at MaxTokens.
func (j *Job) sampleLength() int {
	sigma := j.s.Sigma
	mu := math.Log(j.meanTokens()) - sigma*sigma/2
	n := int(math.Ceil(math.Exp(mu + sigma*j.rng.NormFloat64())))
	return max(1, min(n, j.s.MaxTokens))
}

// finishDue completes the requests whose tokens are all decoded.
func (j *Job) finishDue() {
	for len(j.running) > 0 && j.running[0].finishV <= j.v+1e-6 {
		r := heap.Pop(&j.running).(request)
		ec := &j.engines[r.engine]
		ec.running--
		ec.startVSum -= r.startV
		if r.length >= j.s.MaxTokens {
			ec.capd++
		} else {
			ec.stop++
		}
		ec.hist[sort.SearchFloat64s(genBuckets, float64(r.length))]++
		ec.histSum += float64(r.length)
		ec.histCount++
		j.done++
		j.finishedTk += float64(r.length)
		if j.collect {
			j.finished = append(j.finished, r.length)
		}
		if j.s.ErrorRate > 0 && j.rng.Float64() < j.s.ErrorRate {
			j.errors++
		}
		if j.done == int64(j.s.Items) {
			j.finishT = j.t
		}
	}
}

// takeFinished returns the lengths of the items finished since the last call (with collect set).
func (j *Job) takeFinished() []int {
	f := j.finished
	j.finished = nil
	return f
}

// Done reports whether every item has finished.
func (j *Job) Done() bool { return j.done >= int64(j.s.Items) }

// FinishedAt is the sim time the last item finished; 0 while the job runs.
func (j *Job) FinishedAt() float64 { return j.finishT }

// Now is the job's sim time in seconds since its start.
func (j *Job) Now() float64 { return j.t }

// serverDown reports whether the inference server is restarting (its endpoints do not answer).
func (j *Job) serverDown() bool { return j.t < j.downUntil }

// waiting is what the engine queue holds: the client keeps QueueDepth requests queued beyond the slots.
func (j *Job) waiting() int {
	return max(0, min(j.unstarted(), j.s.QueueDepth))
}

// Observation is what a sampler would record now. T and Elapsed are sim seconds; the engine's fields are nil
// while the server is down.
func (j *Job) Observation() reports.Observation {
	o := reports.Observation{
		T:         j.t,
		Done:      j.done,
		Total:     int64(j.s.Items),
		Errors:    j.errors,
		MaxTokens: int64(j.s.MaxTokens),
	}
	elapsed := j.t
	o.Elapsed = &elapsed
	if j.done > 0 {
		avg := math.Round(j.finishedTk / float64(j.done)) // the log prints whole tokens
		o.AvgCompletion = &avg
	}
	if j.serverDown() {
		return o
	}
	var gen, finSum, finCount, capped float64
	for _, e := range j.engines {
		gen += math.Floor(e.gen)
		finSum += e.histSum
		finCount += e.histCount
		capped += e.capd
	}
	running := float64(len(j.running))
	waiting := float64(j.waiting())
	o.GenTokens, o.Running, o.Waiting = &gen, &running, &waiting
	o.FinishedLenSum, o.FinishedLenCount, o.LengthCapped = &finSum, &finCount, &capped
	return o
}

// ProgressLine is the generation script's log line for now, elapsed in sim seconds.
func (j *Job) ProgressLine() string {
	elapsed := j.t
	rate := 0.0
	if elapsed > 0 {
		rate = float64(j.done) / elapsed
	}
	avg := 0.0
	if j.done > 0 {
		avg = j.finishedTk / float64(j.done)
	}
	return fmt.Sprintf("Progress: %d/%d (%d errors), %.1f req/s, avg completion: %.0f tokens, elapsed: %.0fs",
		j.done, j.s.Items, j.errors, rate, avg, elapsed)
}
