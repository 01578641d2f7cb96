package monitor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"
	"runwatch/reports/estimate"
)

// sample is one probe of a run's progress sources, ready to join the history.
type sample struct {
	obs         reports.Observation
	progress    reports.Progress
	hasProgress bool
	engines     []reports.EngineStatus
	notices     []string
	// genTokens and promptTokens are what the engines counted, for `tokens: auto` plans.
	genTokens, promptTokens float64
	// scraped engine values, for metric stage checks: name -> value summed over engines.
	metrics map[string]float64
	// signals are the finish and drafter counters of each engine that answered (signals.go).
	signals map[string]reports.SignalSample

	// What committing this sample changes in the run state.
	logFile *probes.LogFile
	memos   map[string]engineMemo
}

// engineMemo is one server's counters folded into totals that only grow, across restarts, replicas
// behind one URL and counters that step back: estimate.Counter owns the rules, persisted per server.
type engineMemo = estimate.Counter

// engineCounts is a scrape's cumulative counters as the fold takes them (NaN where absent).
func engineCounts(e probes.Engine) estimate.Counts {
	c := estimate.Counts{Gen: e.GenerationTokens, Done: e.RequestsFinished, Prompt: e.PromptTokens,
		FinSum: math.NaN(), FinCount: math.NaN(), Capped: math.NaN()}
	if valid(e.FinishedLenSum) && valid(e.FinishedLenCount) {
		c.FinSum, c.FinCount = e.FinishedLenSum, e.FinishedLenCount
	}
	if v, ok := e.FinishedByReason["length"]; ok {
		c.Capped = v
	}
	return c
}

func valid(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

func ptr(v float64) *float64 { return &v }

// sampleProgress reads the run's log and engines concurrently and builds an observation. The
// engines are the run's `metrics:` endpoints, or, without them, what its Prometheus server holds
// (see prometheus.go for how the sources combine).
func (m *Monitor) sampleProgress(ctx context.Context, r *config.Run, pass *pass, now time.Time, problem func(string, error)) *sample {
	s := &sample{obs: reports.Observation{T: probes.UnixSeconds(now)}, metrics: map[string]float64{}}
	st := m.runState(r.Name)
	ps := m.promEngineSource(r)
	if ps != nil && m.logs[r.Name] == nil {
		m.promBackfill(ctx, r, ps, st, now, problem)
	}
	prevMemos := st.engineMemos()

	var (
		wg       sync.WaitGroup
		reading  probes.LogReading
		logErr   error
		engines  = make([]probes.Engine, len(r.Metrics))
		errs     = make([]error, len(r.Metrics))
		readings []engineReading
	)
	if lg := m.logs[r.Name]; lg != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
			defer cancel()
			reading, logErr = lg.Read(c)
		}()
	}
	for i, u := range r.Metrics {
		wg.Add(1)
		go func(i int, u string) {
			defer wg.Done()
			engines[i], errs[i] = m.scrape(ctx, pass, r.Name, u) // once per pass, however many runs list it
		}(i, u)
	}
	if ps != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			known := map[string]bool{}
			for k := range prevMemos {
				known[k] = true
			}
			var notices []string
			readings, notices = m.promEngines(ctx, ps, known, now, problem)
			s.notices = append(s.notices, notices...)
		}()
	}
	wg.Wait()
	for i, u := range r.Metrics {
		// The URL becomes a memo key, a shown address and a probe name: redacted, once.
		name := probes.RedactURL(u)
		readings = append(readings, engineReading{key: name, url: name, probe: "metrics " + name, engine: engines[i], err: errs[i]})
	}

	// The engines: accumulate counters across restarts, sum over servers.
	tot := s.foldEngines(readings, prevMemos, m.opts.ProbeTimeout, problem)
	s.signals = signalSamples(readings, s.obs.T)
	tot.apply(&s.obs)
	if r.MaxTokens > 0 {
		s.obs.MaxTokens = int64(r.MaxTokens)
	}
	if tot.haveTokens {
		s.genTokens, s.promptTokens = tot.tokens, tot.prompt
	}

	// The log says how far the job is; without one, the engines' finished requests do.
	if m.logs[r.Name] != nil {
		if logErr != nil {
			problem("log "+r.Log, describeLogErr(logErr, m.opts.ProbeTimeout))
		} else {
			p := reading.Progress
			s.hasProgress = true
			s.progress = reports.Progress{Done: p.Done, Total: p.Total, Errors: p.Errors, AvgTokens: p.AvgTokens, Source: "log"}
			if s.progress.Total == 0 {
				s.progress.Total = r.Total
			}
			s.obs.Done, s.obs.Total, s.obs.Errors = p.Done, s.progress.Total, p.Errors
			if p.AvgTokens > 0 {
				s.obs.AvgCompletion = ptr(p.AvgTokens)
			}
			if p.Elapsed > 0 {
				s.obs.Elapsed = ptr(p.Elapsed)
			}
			f := reading.File
			s.logFile = &f
			if prev := st.logFile(); prev != nil {
				switch {
				case prev.Inode != 0 && f.Inode != prev.Inode:
					s.notices = append(s.notices, fmt.Sprintf("log %s was rotated (new file)", r.Log))
				case f.Size < prev.Size:
					s.notices = append(s.notices, fmt.Sprintf("log %s was truncated (%d -> %d bytes)", r.Log, prev.Size, f.Size))
				}
			}
		}
	} else if len(r.Metrics) > 0 || ps != nil || r.Total > 0 {
		if p, ok := engineProgress(&s.obs, tot, r.Total); ok {
			p.Source = "metrics"
			if ps != nil {
				p.Source = "prometheus"
			}
			s.progress, s.hasProgress = p, true
		}
	}
	if s.obs.Total > 0 && s.obs.Done > s.obs.Total {
		s.obs.Total = s.obs.Done
	}
	return s
}

// engineReading is one inference server as read directly or through Prometheus.
type engineReading struct {
	key    string // memo key: the metrics URL, or "prometheus " + instance
	url    string // the address the status shows
	host   string // the instance, for servers read through Prometheus
	probe  string // names the reading in problems
	engine probes.Engine
	err    error
}

// engineTotals are the engines' counts summed over servers, counters carried across restarts.
type engineTotals struct {
	tokens, done, prompt, running, waiting         float64
	haveTokens, haveDone, haveRunning, haveWaiting bool
	oldestStart                                    float64 // unix seconds the oldest server started; 0 when unknown
	// The finished-length histogram and length-capped finishes count only when every server that
	// answered exports them: a partial sum would misstate tokens per item.
	finSum, finCount, capped float64
	noFin, noCapped          bool
	restarts                 int64
}

// add counts what a server that did not answer had counted.
func (t *engineTotals) add(c estimate.Counts, restarts int64) {
	t.tokens += c.Gen
	t.done += c.Done
	t.prompt += c.Prompt
	t.finSum += c.FinSum
	t.finCount += c.FinCount
	t.capped += c.Capped
	t.restarts += restarts
}

// apply puts the engines' counts into an observation.
func (t engineTotals) apply(o *reports.Observation) {
	if t.haveTokens {
		o.GenTokens = ptr(t.tokens)
	}
	if t.haveRunning {
		o.Running = ptr(t.running)
	}
	if t.haveWaiting {
		o.Waiting = ptr(t.waiting)
	}
	if t.haveTokens && !t.noFin && t.finCount > 0 {
		o.FinishedLenSum, o.FinishedLenCount = ptr(t.finSum), ptr(t.finCount)
	}
	if t.haveTokens && !t.noCapped {
		o.LengthCapped = ptr(t.capped)
	}
	o.Restarts = t.restarts
}

// engineProgress makes the engines' finished requests the progress of an observation.
func engineProgress(o *reports.Observation, t engineTotals, total int64) (reports.Progress, bool) {
	if !t.haveDone {
		return reports.Progress{}, false
	}
	o.Done, o.Total = int64(t.done), total
	if t.oldestStart > 0 {
		o.Elapsed = ptr(math.Max(0, o.T-t.oldestStart))
	}
	return reports.Progress{Done: int64(t.done), Total: total}, true
}

// foldEngines accumulates each reading into its memo and sums the servers. A server that does not
// answer adds nothing new but keeps what it counted. Memos of servers not read this time are kept.
func (s *sample) foldEngines(readings []engineReading, prev map[string]engineMemo, timeout time.Duration, problem func(string, error)) engineTotals {
	var t engineTotals
	s.memos = make(map[string]engineMemo, len(prev)+len(readings))
	for k, v := range prev {
		s.memos[k] = v
	}
	for _, rd := range readings {
		memo := prev[rd.key]
		es := reports.EngineStatus{URL: rd.url, Host: rd.host, OK: rd.err == nil}
		if rd.err != nil {
			es.Error = probes.NoAnswer(rd.err, timeout).Error()
			problem(rd.probe, errors.New(es.Error))
			if memo.Reads > 0 {
				t.add(memo.Total, memo.Restarts)
				t.haveTokens = t.haveTokens || memo.Total.Gen > 0
			}
			s.engines = append(s.engines, es)
			continue
		}
		e := rd.engine
		es.Kind, es.Engines, es.Missing = e.Kind, e.Engines, e.Missing
		if e.Kind == "" {
			es.Kind = "unknown"
		}
		if valid(e.Running) {
			es.Running = ptr(e.Running)
			t.running += e.Running
			t.haveRunning = true
		}
		if valid(e.Waiting) {
			es.Waiting = ptr(e.Waiting)
			t.waiting += e.Waiting
			t.haveWaiting = true
		}
		if valid(e.KVCacheUsage) {
			es.KVCacheUsage = ptr(e.KVCacheUsage)
		}
		if valid(e.GenerationTokens) {
			es.GenerationTokens = ptr(e.GenerationTokens)
		}
		nm, step := memo.Add(engineCounts(e), e.StartTime, s.obs.T)
		if step.Restart {
			name := rd.url
			if rd.host != "" {
				name = rd.host
			}
			s.notices = append(s.notices, fmt.Sprintf("%s restarted; its counters start over and the totals carry on.", name))
		}
		s.memos[rd.key] = nm
		tot := nm.Total
		if valid(e.GenerationTokens) {
			t.tokens += tot.Gen
			t.haveTokens = true
		}
		if valid(e.RequestsFinished) {
			t.done += tot.Done
			t.haveDone = true
		}
		t.prompt += tot.Prompt
		t.restarts += nm.Restarts
		if valid(e.FinishedLenSum) && valid(e.FinishedLenCount) {
			t.finSum += tot.FinSum
			t.finCount += tot.FinCount
		} else {
			t.noFin = true
		}
		if c, ok := e.FinishedByReason["length"]; ok && valid(c) {
			t.capped += tot.Capped
		} else {
			t.noCapped = true
		}
		if e.StartTime > 0 && (t.oldestStart == 0 || e.StartTime < t.oldestStart) {
			t.oldestStart = e.StartTime
		}
		s.addMetrics(e)
		s.engines = append(s.engines, es)
	}
	return t
}

// addMetrics records the scraped values stage checks may test.
func (s *sample) addMetrics(e probes.Engine) {
	add := func(name string, v float64) {
		if valid(v) {
			s.metrics[name] += v
		}
	}
	add("running", e.Running)
	add("waiting", e.Waiting)
	add("kv_cache_usage", e.KVCacheUsage)
	add("generation_tokens", e.GenerationTokens)
	add("prompt_tokens", e.PromptTokens)
	add("requests_finished", e.RequestsFinished)
	add("preemptions", e.Preemptions)
	add("gen_throughput", e.GenThroughput)
}

func describeLogErr(err error, timeout time.Duration) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("the log file does not exist (yet): %w", err)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("permission denied: run as the job's user: %w", err)
	}
	return probes.NoAnswer(err, timeout)
}
