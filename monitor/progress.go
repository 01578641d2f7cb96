package monitor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
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

	// problems are those its sources met, which an evaluation built on this sample names again.
	problems []reports.Problem

	// What committing this sample changes in the run state.
	logFile *probes.LogFile
	memos   map[string]engineMemo
}

// engineMemo is one server's counters folded into totals that only grow, across restarts, replicas
// behind one URL and counters that step back: estimate.Counter owns the rules, persisted per server.
type engineMemo = estimate.Counter

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
		readings []probes.EngineReading
		promLag  time.Duration
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
			readings, notices, promLag = m.promEngines(ctx, ps, known, now, problem)
			s.notices = append(s.notices, notices...)
		}()
	}
	wg.Wait()
	if ps != nil && m.logs[r.Name] == nil {
		// Everything this sample holds is Prometheus's, as of the servers' last scrape: put it
		// there, so that a rate is taken over the time the data really spans (after a gap in
		// Prometheus's data, the values are from before the gap, not from now).
		s.obs.T -= promLag.Seconds()
	}
	names := metricsNames(r.Metrics)
	for i := range r.Metrics {
		readings = append(readings, probes.EngineReading{Key: names[i].key, URL: names[i].shown,
			Probe: "metrics " + names[i].shown, Engine: engines[i], Err: errs[i]})
	}

	// The engines: accumulate counters across restarts, sum over servers.
	tot := s.foldEngines(readings, prevMemos, m.opts.ProbeTimeout, problem)
	s.signals = signalSamples(readings, s.obs.T)
	tot.Apply(&s.obs)
	if r.MaxTokens > 0 {
		s.obs.MaxTokens = int64(r.MaxTokens)
	}
	if gen, prompt, ok := tot.Tokens(); ok {
		s.genTokens, s.promptTokens = gen, prompt
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
			} else if r.Total > 0 && r.Total != p.Total {
				// The log's own count wins; a run-file total that says otherwise is a mistake to name, not to hide.
				s.notices = append(s.notices, fmt.Sprintf("the log counts %s items in the job and the run file's total: says %s: answers use the log's (remove total: or correct it)",
					reports.Count(float64(p.Total)), reports.Count(float64(r.Total))))
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
			if !f.ModTime.IsZero() {
				s.obs.LogModified = ptr(float64(f.ModTime.UnixNano()) / 1e9)
			}
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
		if p, ok := tot.Progress(&s.obs, r.Total); ok {
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

// foldEngines folds the readings into the run's counters (reports.FoldEngines) and keeps what the
// sample needs of it: failures become problems worded for a person, the status lines, the restart
// notices, the counters to commit, and the scraped values stage checks may test.
func (s *sample) foldEngines(readings []probes.EngineReading, prev map[string]engineMemo, timeout time.Duration, problem func(string, error)) reports.EngineTotals {
	for i := range readings {
		if readings[i].Err != nil {
			readings[i].Err = probes.NoAnswer(readings[i].Err, timeout)
			problem(readings[i].Probe, readings[i].Err)
		}
	}
	f := reports.FoldEngines(readings, prev, s.obs.T)
	s.memos = f.Counters
	s.engines = append(s.engines, f.Engines...)
	s.notices = append(s.notices, f.Notices...)
	for _, rd := range readings {
		if rd.Err == nil {
			s.addMetrics(rd.Engine)
		}
	}
	return f.Totals
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
	var missing *probes.LogMissing
	switch {
	case errors.As(err, &missing) && missing.NoDir:
		return fmt.Errorf("the log file does not exist (yet), nor does its directory %s", filepath.Dir(missing.Path))
	case errors.As(err, &missing) && missing.Near != "":
		// A typo in log: reads like a job that has not started: say what is there.
		return fmt.Errorf("the log file does not exist, but %s is beside it: is log: mistyped?", missing.Near)
	case errors.As(err, &missing):
		return errors.New("the log file does not exist (yet)")
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("the log file does not exist (yet): %w", err)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("permission denied: run as the job's user: %w", err)
	}
	return probes.NoAnswer(err, timeout)
}

// metricsName is a metrics URL as runwatch keeps and shows it: redacted (a query's values, a password, a path token), once.
type metricsName struct{ key, shown string }

// metricsNames names a run's metrics URLs: each its redacted URL, which is also the key its counters are folded
// under (kept across restarts). Two URLs that differ only in what redaction hides (a gateway's ?model=a and
// ?model=b, or two tenants' keys in a path) would share that key, and their counters would fold as one server's, each scrape read as the other
// replica's: they are keyed apart by a digest of the whole URL and shown with their place in the run's list. The
// digest shows no secret, but a guessable one (a model's name, a short PIN) could be checked against it: it is
// a state key only, never shown.
func metricsNames(urls []string) []metricsName {
	out := make([]metricsName, len(urls))
	seen := map[string]int{}
	for i, u := range urls {
		n := probes.RedactURL(u)
		out[i] = metricsName{n, n}
		seen[n]++
	}
	for i, u := range urls {
		if n := out[i].shown; seen[n] > 1 {
			sum := sha256.Sum256([]byte(u))
			out[i] = metricsName{n + "#" + hex.EncodeToString(sum[:4]), fmt.Sprintf("%s (metrics entry %d)", n, i+1)}
		}
	}
	return out
}
