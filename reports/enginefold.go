package reports

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"runwatch/probes"
	"runwatch/reports/estimate"
)

// One sample's engine readings folded into what the run counted: each server's counters carried
// across restarts, replicas and steps back by estimate.Counter (the one owner of those rules), then
// summed over servers. The monitor folds live samples with it, and Prometheus history the same way.

// EngineTotals are the engines' counts summed over servers, counters carried across restarts.
type EngineTotals struct {
	tokens, done, prompt, running, waiting         float64
	haveTokens, haveDone, haveRunning, haveWaiting bool
	oldestStart                                    float64 // unix seconds the oldest server started; 0 when unknown
	// The finished-length histogram and length-capped finishes count only when every server that
	// answered exports them: a partial sum would misstate tokens per item.
	finSum, finCount, capped float64
	noFin, noCapped          bool
	restarts, stepsBack      int64
}

// EngineFold is one sample's readings folded: the totals, every server's counter after it (servers
// not read this time keep theirs), a status line per reading, and the restarts worth a notice.
type EngineFold struct {
	Totals   EngineTotals
	Counters map[string]estimate.Counter
	Engines  []EngineStatus
	Notices  []string
}

// EngineCounts is a scrape's cumulative counters as the fold takes them (NaN where absent).
func EngineCounts(e probes.Engine) estimate.Counts {
	c := estimate.Counts{Gen: e.GenerationTokens, Done: e.RequestsFinished, Prompt: e.PromptTokens,
		FinSum: math.NaN(), FinCount: math.NaN(), Capped: math.NaN()}
	if countable(e.FinishedLenSum) && countable(e.FinishedLenCount) {
		c.FinSum, c.FinCount = e.FinishedLenSum, e.FinishedLenCount
	}
	if v, ok := e.FinishedByReason["length"]; ok {
		c.Capped = v
	}
	return c
}

func countable(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

func valueOf(v float64) *float64 { return &v }

// FoldEngines folds the readings taken at t (unix seconds) into the counters of prev. A server that
// did not answer (Err set, already worded for a person) adds nothing new but keeps what it counted.
func FoldEngines(readings []probes.EngineReading, prev map[string]estimate.Counter, t float64) EngineFold {
	f := EngineFold{Counters: make(map[string]estimate.Counter, len(prev)+len(readings))}
	for k, v := range prev {
		f.Counters[k] = v
	}
	tot := &f.Totals
	for _, rd := range readings {
		memo := prev[rd.Key]
		es := EngineStatus{URL: rd.URL, Host: rd.Host, OK: rd.Err == nil}
		if rd.Err != nil {
			es.Error = rd.Err.Error()
			es.Answers = errors.Is(rd.Err, probes.ErrNotMetrics)
			if memo.Reads > 0 {
				tot.add(memo.Total, memo.Restarts, memo.StepsBack)
				tot.haveTokens = tot.haveTokens || memo.Total.Gen > 0
			}
			f.Engines = append(f.Engines, es)
			continue
		}
		e := rd.Engine
		es.Kind, es.Engines, es.Missing = e.Kind, e.Engines, e.Missing
		if e.Kind == "" {
			es.Kind = "unknown"
		}
		if countable(e.Running) {
			es.Running = valueOf(e.Running)
			tot.running += e.Running
			tot.haveRunning = true
		}
		if countable(e.Waiting) {
			es.Waiting = valueOf(e.Waiting)
			tot.waiting += e.Waiting
			tot.haveWaiting = true
		}
		if countable(e.KVCacheUsage) {
			es.KVCacheUsage = valueOf(e.KVCacheUsage)
		}
		if countable(e.GenerationTokens) {
			es.GenerationTokens = valueOf(e.GenerationTokens)
		}
		nm, step := memo.Add(EngineCounts(e), e.StartTime, t)
		if step.Restart {
			name := rd.URL
			if rd.Host != "" {
				name = rd.Host
			}
			f.Notices = append(f.Notices, fmt.Sprintf("%s restarted; its counters start over and the totals carry on.", name))
		}
		f.Counters[rd.Key] = nm
		c := nm.Total
		if countable(e.GenerationTokens) {
			tot.tokens += c.Gen
			tot.haveTokens = true
		}
		if countable(e.RequestsFinished) {
			tot.done += c.Done
			tot.haveDone = true
		}
		tot.prompt += c.Prompt
		tot.restarts += nm.Restarts
		tot.stepsBack += nm.StepsBack
		if countable(e.FinishedLenSum) && countable(e.FinishedLenCount) {
			tot.finSum += c.FinSum
			tot.finCount += c.FinCount
		} else {
			tot.noFin = true
		}
		if v, ok := e.FinishedByReason["length"]; ok && countable(v) {
			tot.capped += c.Capped
		} else {
			tot.noCapped = true
		}
		if e.StartTime > 0 && (tot.oldestStart == 0 || e.StartTime < tot.oldestStart) {
			tot.oldestStart = e.StartTime
		}
		f.Engines = append(f.Engines, es)
	}
	return f
}

// add counts what a server that did not answer had counted.
func (t *EngineTotals) add(c estimate.Counts, restarts, stepsBack int64) {
	t.tokens += c.Gen
	t.done += c.Done
	t.prompt += c.Prompt
	t.finSum += c.FinSum
	t.finCount += c.FinCount
	t.capped += c.Capped
	t.restarts += restarts
	t.stepsBack += stepsBack
}

// Tokens is what the engines generated and read as prompts; ok is false when no engine counts tokens.
func (t EngineTotals) Tokens() (gen, prompt float64, ok bool) {
	return t.tokens, t.prompt, t.haveTokens
}

// Apply puts the engines' counts into an observation.
func (t EngineTotals) Apply(o *Observation) {
	if t.haveTokens {
		o.GenTokens = valueOf(t.tokens)
	}
	if t.haveRunning {
		o.Running = valueOf(t.running)
	}
	if t.haveWaiting {
		o.Waiting = valueOf(t.waiting)
	}
	if t.haveTokens && !t.noFin && t.finCount > 0 {
		o.FinishedLenSum, o.FinishedLenCount = valueOf(t.finSum), valueOf(t.finCount)
	}
	if t.haveTokens && !t.noCapped {
		o.LengthCapped = valueOf(t.capped)
	}
	o.Restarts, o.StepsBack = t.restarts, t.stepsBack
}

// Progress makes the engines' finished requests the progress of an observation; ok is false when
// no engine counts finished requests.
func (t EngineTotals) Progress(o *Observation, total int64) (Progress, bool) {
	if !t.haveDone {
		return Progress{}, false
	}
	o.Done, o.Total = int64(t.done), total
	if t.oldestStart > 0 {
		o.Elapsed = valueOf(math.Max(0, o.T-t.oldestStart))
	}
	return Progress{Done: int64(t.done), Total: total}, true
}

// PromHistory folds Prometheus history steps as if the engines had been sampled at every step:
// counters are carried across server restarts from prev, and each step where the engines say how
// many requests finished becomes an observation. Steps at or before after are skipped (but folded).
//
// A query_range answer's series start at different steps (a server's first scrape lands after
// another's, a target is relabelled in): a step before every engine of the newest step has a series
// sums only some of them, and the step where the others appear adds their whole counters at once. The
// history starts at the first step where all of them are present (the steps before are folded, not
// observed); an engine that went away before the newest step does not hold it back, nor does one at
// the steps before its server started (a replica scaled up an hour ago: it counted nothing then, and
// waiting for it cost the hours of history before it).
func PromHistory(steps []probes.PromStep, where string, prev map[string]estimate.Counter, total int64, after float64) ([]Observation, map[string]estimate.Counter) {
	counters := prev
	known := map[string]bool{}
	for k := range counters {
		known[k] = true
	}
	// The engines of the newest step, each with its server's start as of its first step here (0: not said).
	started := map[string]float64{}
	if n := len(steps); n > 0 {
		for _, pi := range steps[n-1].Instances {
			if pi.Engine.Kind != "" {
				started[pi.Name] = -1
			}
		}
		for _, step := range steps {
			for _, pi := range step.Instances {
				if v, ok := started[pi.Name]; ok && v < 0 && pi.Engine.Kind != "" {
					started[pi.Name] = pi.Engine.StartTime
				}
			}
		}
	}
	complete := false // every engine of the newest step that was running has been present
	var out []Observation
	for _, step := range steps {
		readings, _ := probes.PromReadings(step.Instances, where, known)
		f := FoldEngines(readings, counters, step.T)
		counters = f.Counters
		for k := range counters {
			known[k] = true
		}
		if !complete {
			complete = true
			for name, start := range started {
				if start > step.T {
					continue // not started yet
				}
				complete = complete && slices.ContainsFunc(step.Instances, func(pi probes.PromInstance) bool {
					return pi.Name == name && pi.Engine.Kind != ""
				})
			}
		}
		if step.T <= after || !complete {
			continue
		}
		o := Observation{T: step.T}
		f.Totals.Apply(&o)
		if _, ok := f.Totals.Progress(&o, total); ok {
			out = append(out, o)
		}
	}
	return out, counters
}
