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
	"strings"
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

	// estimate is the estimator's own ETA from this sample, before its range is held for showing: the shift
	// detector judges how sure an estimate is by the estimator's range, not the wider one shown.
	estimate *reports.ETA

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
	st := m.runState(r.Name)
	s := &sample{obs: reports.Observation{T: m.runClock(st)}, metrics: map[string]float64{}}
	ps := m.promEngineSource(r)
	if ps != nil && m.logs[r.Name] == nil {
		m.promBackfill(ctx, pass, r, ps, st, now, problem)
	}
	prevMemos := st.engineMemos()

	var (
		wg       sync.WaitGroup
		reading  probes.LogReading
		logErr   error
		engines  = make([]probes.Engine, len(r.Metrics))
		errs     = make([]error, len(r.Metrics))
		readings []probes.EngineReading
		missing  error // the run's own log's error, when discovery's log was read in its place
		promLag  time.Duration
	)
	last, hasLast := st.lastProgress()
	if lg := m.logs[r.Name]; lg != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
			defer cancel()
			// A line whose total contradicts the run file's total:, or a bar whose total is not the one
			// the job's lines gave so far, is not the job's progress.
			want := probes.LogWant{Total: r.Total, Seen: last.Total}
			reading, logErr = lg.Read(c, want)
			if fb := m.fallbackLogs[r.Name]; fb != nil && errors.As(logErr, new(*probes.LogMissing)) {
				// log: names no file, and discovery found where the job logs: read that, and say both.
				if fr, err := fb.Read(c, want); err == nil {
					missing, reading, logErr = logErr, fr, nil
				}
			}
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
			readings, notices, promLag = m.promEngines(ctx, pass, r, ps, known, now, problem)
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
	tot := s.foldEngines(readings, prevMemos, now, m.opts.ProbeTimeout, problem)
	shared := sharedNotice(r)
	if shared == "" {
		s.signals = signalSamples(readings, s.obs.T)
		tot.Apply(&s.obs)
		if gen, prompt, ok := tot.Tokens(); ok {
			s.genTokens, s.promptTokens = gen, prompt
		}
	} else {
		// The engines serve another job too: their tokens, requests and finish counts are both jobs', so
		// none of them is this run's. The servers are still listed; the run is priced from its log alone.
		s.notices = append(s.notices, shared)
	}
	if r.MaxTokens > 0 {
		s.obs.MaxTokens = int64(r.MaxTokens)
	}

	// The log says how far the job is; without one, or while it cannot be read, the engines' finished
	// requests do.
	if missing != nil {
		problem("log "+r.Log, describeLogErr(missing, m.opts.ProbeTimeout))
		s.notices = append(s.notices, fmt.Sprintf("reading %s instead: the job's log, as found on this host (fix log: in the run file)", reading.File.Path))
	}
	if m.logs[r.Name] != nil {
		s.notices = append(s.notices, m.nameForeignBars(r.Name, reading.Foreign)...)
	}
	if m.logs[r.Name] != nil && logErr != nil {
		problem("log "+r.Log, describeLogErr(logErr, m.opts.ProbeTimeout))
	}
	if m.logs[r.Name] != nil && logErr == nil {
		p := reading.Progress
		s.hasProgress = true
		s.progress = reports.Progress{Done: p.Done, Total: p.Total, Errors: p.Errors, AvgTokens: p.AvgTokens, Source: "log"}
		if s.progress.Total == 0 {
			s.progress.Total = r.Total
		}
		// A reading held a while ago that still says so now is the second look that confirms it.
		heldAt, held := m.heldFinish.Load(r.Name)
		confirmed := held && now.Sub(heldAt.(time.Time)) >= finishConfirmGap
		if hold, why := holdFinish(s.progress, reading.File, last, hasLast || held, confirmed, s.engines, now); hold {
			// One line saying every item is done is not yet a finish: the previous reading stands, and
			// this one is remembered for a later sample to confirm.
			if !held {
				m.heldFinish.Store(r.Name, now)
			}
			s.notices = append(s.notices, why)
			p.Done, p.Errors = last.Done, last.Errors
			s.progress.Done, s.progress.Errors = last.Done, last.Errors
		} else {
			m.heldFinish.Delete(r.Name)
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
			// A file's time is the wall clock's: on the run clock it is as long before this sample.
			s.obs.LogModified = ptr(s.obs.T - (probes.UnixSeconds(now) - probes.UnixSeconds(f.ModTime)))
		}
		if prev := st.logFile(); prev != nil && prev.Path == f.Path {
			switch {
			case prev.Inode != 0 && f.Inode != prev.Inode:
				s.notices = append(s.notices, fmt.Sprintf("log %s was rotated (new file)", f.Path))
			case f.Size < prev.Size:
				s.notices = append(s.notices, fmt.Sprintf("log %s was truncated (%d -> %d bytes)", f.Path, prev.Size, f.Size))
			}
		}
	} else if shared == "" && (m.logs[r.Name] == nil || neverRead(logErr, st)) {
		// Also a log: that names no file this run ever read (mistyped): "ETA: unknown" while the engines count
		// the job's requests helped nobody, and the log's problem still says what is wrong. A log that was read
		// and fails now does not fall back: the engines' count would land in a history of the log's.
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

// sharedNotice says, for a run whose engines discovery found serving other jobs too (config.Found.Shared),
// that their counts are not the run's own: "vLLM on :8000 is shared with job python3 judge.py (pid 4243,
// run judge): its token and request counts are both jobs', so this run's ETA and rates are its own log's
// items". "" for any other run.
func sharedNotice(r *config.Run) string {
	if r.Found == nil || len(r.Found.Shared) == 0 {
		return ""
	}
	var jobs []string
	port := r.Found.Shared[0].Port
	for _, j := range r.Found.Shared {
		if j.Unseen > 0 {
			jobs = append(jobs, reports.Plural(j.Unseen, "connection", "connections")+" from processes I can't inspect")
			continue
		}
		s := fmt.Sprintf("job %s (pid %d", j.Command, j.PID)
		if j.Run != "" {
			s += ", run " + j.Run
		}
		jobs = append(jobs, s+")")
	}
	server := fmt.Sprintf("the server on :%d", port)
	for _, e := range r.Found.Engines {
		if e.Port == port {
			server = fmt.Sprintf("%s on :%d", probes.KindName(e.Kind), port)
		}
	}
	whose := "both jobs'"
	switch {
	case len(jobs) > 1:
		whose = "every job's"
	case r.Found.Shared[0].Unseen > 0:
		whose = "theirs too"
	}
	return fmt.Sprintf("%s is shared with %s: its token and request counts are %s, so this run's ETA and rates are its own log's items",
		server, strings.Join(jobs, " and "), whose)
}

// neverRead says whether err is a log that does not exist and the run's state has never read one: a log:
// with a typo, or a job not started yet.
func neverRead(err error, st *runState) bool {
	return errors.As(err, new(*probes.LogMissing)) && st.logFile() == nil
}

// foldEngines folds the readings into the run's counters (reports.FoldEngines) and keeps what the
// sample needs of it: failures become problems worded for a person, the status lines, the restart
// notices, the counters to commit, and the scraped values stage checks may test.
func (s *sample) foldEngines(readings []probes.EngineReading, prev map[string]engineMemo, now time.Time, timeout time.Duration, problem func(string, error)) reports.EngineTotals {
	for i := range readings {
		if readings[i].Err != nil {
			readings[i].Err = probes.NoAnswer(readings[i].Err, timeout)
			problem(readings[i].Probe, readings[i].Err)
		}
	}
	// The counters are matched to server start times, which are wall-clock times.
	f := reports.FoldEngines(readings, prev, probes.UnixSeconds(now))
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

// finishConfirmAge is how long the log must have stood still on its "every item done" line for that
// line alone to confirm the finish; finishConfirmGap how much later a second look must come to confirm
// it (an answer a second after the sample is not a second sample).
const (
	finishConfirmAge = 30 * time.Second
	finishConfirmGap = 10 * time.Second
)

// holdFinish reports whether a reading that says every item is done must wait for confirmation, and the
// notice that says so. "Finished" needs done == total seen by a second sample (the previous one at the
// total already, or held at it: confirmed), the engines drained (every one answering with nothing
// running or waiting), or the log unchanged for finishConfirmAge: a line that says 25,000/25,000
// followed a moment later by 311/25,000 never becomes a finish. A run first seen finished (no earlier
// reading) is not held: there is no moment of arrival to doubt, and one-shot commands would never
// confirm it.
func holdFinish(p reports.Progress, f probes.LogFile, last reports.Observation, hasLast, confirmed bool, engines []reports.EngineStatus, now time.Time) (bool, string) {
	if !hasLast || confirmed || p.Total <= 0 || p.Done < p.Total || (last.Total > 0 && last.Done >= last.Total) {
		return false, ""
	}
	drained := len(engines) > 0
	for _, e := range engines {
		drained = drained && e.OK && e.Running != nil && *e.Running == 0 && e.Waiting != nil && *e.Waiting == 0
	}
	if drained || (!f.ModTime.IsZero() && now.Sub(f.ModTime) >= finishConfirmAge) {
		return false, ""
	}
	return true, fmt.Sprintf("the log says all %s items are done; the finish counts once the next sample (or the engines, drained) confirms it",
		reports.Count(float64(p.Total)))
}

// nameForeignBars words the log's progress bars that are not the job's, each once per run for the
// monitor's life: "the log also shows `Processed prompts` (200/200), not the job's progress: ...".
func (m *Monitor) nameForeignBars(run string, bars []probes.ForeignBar) []string {
	var out []string
	for _, b := range bars {
		if _, said := m.foreignNamed.LoadOrStore(run+"\x00"+b.Desc, true); said {
			continue
		}
		out = append(out, fmt.Sprintf("the log also shows %q (%s/%s), which is not the job's progress: %s",
			b.Desc, reports.Count(float64(b.Done)), reports.Count(float64(b.Total)), b.Why))
	}
	return out
}

// lastProgress is the run's latest observation with progress, if any.
func (st *runState) lastProgress() (reports.Observation, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for i := len(st.History) - 1; i >= 0; i-- {
		if st.History[i].Total > 0 || st.History[i].Done > 0 {
			return st.History[i], true
		}
	}
	return reports.Observation{}, false
}
