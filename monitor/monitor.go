// Package monitor owns the live picture of each configured run: it runs the probes on a deadline,
// keeps each run's sample history (persisted in the state directory) and turns both into reports.
package monitor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"runwatch/checklist"
	"runwatch/config"
	"runwatch/internal/flight"
	"runwatch/probes"
	"runwatch/reports"
	"runwatch/state"
)

// Options are the monitor's process settings.
type Options struct {
	ProcRoot     string
	ProbeTimeout time.Duration
	// State persists history between restarts; nil keeps it in memory only.
	State *state.Dir
	// HTTP is used for metrics endpoints and stage checks; nil gets a client without global timeout
	// (every call carries a deadline).
	HTTP *http.Client
	// Now is the wall clock, for what a person reads; nil means time.Now.
	Now func() time.Time
	// Mono is the monotonic clock that samples, intervals and history are measured on: the time since an
	// arbitrary origin, never stepped (see clock.go); nil measures it from Now's monotonic reading.
	Mono func() time.Duration
	// ReadOnly stops the monitor from writing the state directory (one-shot commands read the history
	// a running `bot serve` keeps). A read-only monitor refuses snoozes and stage marks (ErrReadOnly):
	// kept only in its memory they would be lost, or contradict the process that writes the state.
	ReadOnly bool
	// ReadOnlyWhy says, for a person, why the monitor is read-only and where to make a change instead:
	// the text of the ErrReadOnly a refused change returns.
	ReadOnlyWhy string
	// MaxHistory bounds each run's persisted history in points (default 2000).
	MaxHistory int
	// MaxConcurrentRuns bounds how many runs are probed at once (default 16), so that a status of
	// a hundred runs does not open a hundred runs' worth of connections at the same moment.
	MaxConcurrentRuns int
	// LookupEnv reads the environment variables a run names for its Prometheus credentials; nil
	// means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// RateWindow, when positive, is how long to wait for a second disk-counter reading when
	// neither this monitor nor a running `bot serve` (through the state directory) has a recent
	// one to measure write rates against. Zero or negative: do not wait; the status says the
	// write rate needs a second sample.
	RateWindow time.Duration
	// Fresh is how old the latest evaluation of a run (a sample's, or an earlier answer's) may be
	// for an answer or a scheduled post to read it instead of probing again; 0 (the default)
	// probes for every answer.
	Fresh time.Duration
	// ScanEvery is how many samples one scan of open files in /proc serves (default 1: every
	// sample scans); samples in between reuse the last scan.
	ScanEvery int
	// ScanReuse is how old a scan of open files any status (an answer's or a sample's) reuses
	// instead of scanning again (default 3 s; negative: never). A scan in flight is always shared.
	ScanReuse time.Duration
	// LocalOnly reads this machine only: a run's `prometheus:` is never asked, so nothing another
	// host reports comes back as this one's (`bot exporter`, which speaks for its own node).
	LocalOnly bool
	// AllWriters keeps every writer a run's storage report classified in Storage.AllWriters, not only the
	// first 200 it lists: for `bot exporter`, whose per-mount and per-command counts are over them all.
	AllWriters bool
	// StatFS reads mount capacity; nil gets probes.NewStatFS(ProbeTimeout). Tests pass
	// probes.NewStatFSFunc to stand in for a mount whose statfs never returns.
	StatFS *probes.StatFS

	// newGuard builds the monitor's two path guards (guard and askGuard); nil means probes.NewGuard.
	// Tests in this package pass probes.NewGuardFunc to stand in for a mount whose paths never resolve.
	newGuard func() *probes.Guard
}

// Need says which parts of a status an answer needs, so "ETA?" does not wait for a /proc scan.
type Need struct {
	Storage  bool
	Progress bool
	Plans    bool
	Stages   bool
	// ETA: the answer gives the run's ETA (with Progress), which the channel is then told: the next shift
	// warning measures from it (see told). Not a part of the status: "how fast?" reads progress too, and
	// shows no ETA.
	ETA bool
}

// All is every part of a status, the ETA given.
var All = Need{Storage: true, Progress: true, Plans: true, Stages: true, ETA: true}

// Monitor probes runs and remembers what it saw.
type Monitor struct {
	file *config.File
	opts Options

	mounts *probes.Mounts
	statfs *probes.StatFS
	// guard runs the path calls that can hang on a dead mount (resolve, stat, model configs).
	guard *probes.Guard
	// askGuard runs the resolves of paths a question names that are none of a run's own (nor near one),
	// with a bound of its own on calls left hanging: asking about path after path under a dead mount
	// must not use up the bound the sampler's own probes live under.
	askGuard *probes.Guard
	writers  *probes.Writers
	diskio   *probes.DiskIO
	metrics  *probes.Metrics
	// runMetrics holds the scrapers of runs with their own metrics_max_body.
	runMetrics map[string]*probes.Metrics
	logs       map[string]*probes.Log
	// fallbackLogs are the logs discovery found for runs whose own log: is not there (progress.go).
	fallbackLogs map[string]*probes.Log
	// prom holds the Prometheus source of each run that has one; see prometheus.go.
	prom map[string]*promSource
	// stages checks the runs' checklists; see stages.go.
	stages *checklist.Checker
	// runSlots bounds the runs probed at once.
	runSlots chan struct{}
	// signals keeps the engines' finish and drafter counters; see signals.go.
	signals signalBook

	// wall0 is the wall time (unix seconds) the monotonic clock's origin stands for: the run clock's anchor.
	wall0 float64

	mu   sync.Mutex
	runs map[string]*runState
	disk *diskSample // last disk counters, for write rates; see shared.go
	// diskBefore is the latest reading at least a second older than disk: what an answer a moment
	// after the last one measures against.
	diskBefore *diskSample
	// devices keeps disk readings over the last minutes, for what the protected paths' devices wrote.
	devices deviceWindow
	// foreignNamed remembers the log bars that are not the job's already named, by run and description.
	foreignNamed sync.Map
	// heldFinish holds, by run, when a reading that said every item is done was first held for a later
	// sample to confirm (progress.go).
	heldFinish sync.Map
	// lastScan is the last scan of open files (or the one in flight), which samples reuse for
	// ScanEvery samples and every status for ScanReuse (shared.go).
	lastScan *writerScan
	// scanJoined, when set (tests), is told each time a status joins a scan in flight.
	scanJoined func()
	// latest is each run's latest evaluation; inflight shares evaluations in progress (latest.go).
	latest   map[string]latestEval
	inflight flight.Group[reports.RunStatus]
}

// New builds a monitor for the runs in f and loads their persisted history.
func New(f *config.File, o Options) (*Monitor, []reports.Problem, error) {
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = 2 * time.Second
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			ResponseHeaderTimeout: 30 * time.Second,
		}}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Mono == nil {
		o.Mono = defaultMono(o.Now)
	}
	if o.MaxHistory <= 0 {
		o.MaxHistory = 2000
	}
	if o.ScanEvery <= 0 {
		o.ScanEvery = 1
	}
	if o.ScanReuse == 0 {
		o.ScanReuse = defaultScanReuse
	}
	if o.MaxConcurrentRuns <= 0 {
		o.MaxConcurrentRuns = 16
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.StatFS == nil {
		o.StatFS = probes.NewStatFS(o.ProbeTimeout)
	}
	if o.newGuard == nil {
		o.newGuard = probes.NewGuard
	}
	m := &Monitor{
		file:     f,
		opts:     o,
		mounts:   probes.NewMounts(o.ProcRoot),
		statfs:   o.StatFS,
		guard:    o.newGuard(),
		askGuard: o.newGuard(),
		writers:  probes.NewWriters(o.ProcRoot),
		diskio:   probes.NewDiskIO(o.ProcRoot),
		metrics:  probes.NewMetrics(o.HTTP, 0),
		logs:     map[string]*probes.Log{},
		runs:     map[string]*runState{},
		latest:   map[string]latestEval{},

		runSlots: make(chan struct{}, o.MaxConcurrentRuns),
	}
	m.wall0 = probes.UnixSeconds(o.Now()) - o.Mono().Seconds()
	m.prom = map[string]*promSource{}
	if !o.LocalOnly {
		m.prom = newPromSources(f, o)
	}
	m.stages = &checklist.Checker{HTTP: o.HTTP, Guard: m.guard, PromQL: m.promQLCheck, Runwatch: f.Commands.Name("/runwatch")}
	var problems []reports.Problem
	for i := range f.Runs {
		r := &f.Runs[i]
		if r.MetricsMaxBody > 0 {
			if m.runMetrics == nil {
				m.runMetrics = map[string]*probes.Metrics{}
			}
			m.runMetrics[r.Name] = probes.NewMetrics(o.HTTP, int64(r.MetricsMaxBody))
		}
		if r.Log != "" {
			var pat *regexp.Regexp
			if r.LogPattern != "" {
				p, err := config.CompileProgressPattern(r.LogPattern)
				if err != nil {
					return nil, nil, fmt.Errorf("run %s: log_pattern: %w", r.Name, err)
				}
				pat = p
			}
			m.logs[r.Name] = probes.NewLog(r.Log, pat)
			if r.Found != nil && r.Found.FallbackLog != "" {
				if m.fallbackLogs == nil {
					m.fallbackLogs = map[string]*probes.Log{}
				}
				m.fallbackLogs[r.Name] = probes.NewLog(r.Found.FallbackLog, pat)
			}
		}
		rs, err := m.loadRun(r.Name)
		if err != nil {
			problems = append(problems, reports.Problem{Probe: "state " + r.Name, Error: err.Error()})
		}
		m.runs[r.Name] = rs
	}
	return m, problems, nil
}

// Config is the run file the monitor watches.
func (m *Monitor) Config() *config.File { return m.file }

// Now is the monitor's clock.
func (m *Monitor) Now() time.Time { return m.opts.Now() }

// Status probes every run and reports on them.
func (m *Monitor) Status(ctx context.Context, need Need) reports.Status {
	now := m.opts.Now()
	st := reports.Status{GeneratedAt: now.UTC()}
	// The shared probes start only if some run is not answered from its latest evaluation.
	var pass *pass
	var passOnce sync.Once
	out := make([]reports.RunStatus, len(m.file.Runs))
	var wg sync.WaitGroup
	for i := range m.file.Runs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := &m.file.Runs[i]
			out[i] = m.evaluate(ctx, r.Name, need, func(base *latestEval) (reports.RunStatus, *sample) {
				passOnce.Do(func() { pass = m.newPass(ctx, need, false) })
				return m.runStatusFrom(ctx, r, need, pass, now, base)
			})
		}(i)
	}
	wg.Wait()
	st.Runs = out
	return st
}

// acquireRun waits for one of the MaxConcurrentRuns slots; false when ctx ends first.
func (m *Monitor) acquireRun(ctx context.Context) bool {
	select {
	case m.runSlots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (m *Monitor) releaseRun() { <-m.runSlots }

// notProbed is the status of a run whose turn did not come before the deadline.
func notProbed(name string, err error) reports.RunStatus {
	return reports.RunStatus{
		Name: name, Plans: []reports.PlanResult{},
		Storage:  reports.Storage{Paths: []reports.PathInfo{}, ProtectedMounts: []reports.PathInfo{}, Writers: []reports.WriterInfo{}, WriteRates: []reports.WriteRate{}},
		Problems: []reports.Problem{{Probe: "monitor", Error: fmt.Sprintf("not probed: too many runs at once for the deadline (%v)", err)}},
	}
}

// RunStatus probes one run.
func (m *Monitor) RunStatus(ctx context.Context, name string, need Need) (reports.RunStatus, error) {
	r, ok := m.file.RunByName(name)
	if !ok {
		return reports.RunStatus{}, fmt.Errorf("no run named %q (runs: %s)", name, strings.Join(m.RunNames(), ", "))
	}
	rs := m.evaluate(ctx, name, need, func(base *latestEval) (reports.RunStatus, *sample) {
		p := m.newPass(ctx, need, false)
		p.runs = []*config.Run{r} // one run's question asks Prometheus for that run alone
		return m.runStatusFrom(ctx, r, need, p, m.opts.Now(), base)
	})
	return rs, nil
}

// RunNames lists the configured runs.
func (m *Monitor) RunNames() []string {
	names := make([]string, len(m.file.Runs))
	for i, r := range m.file.Runs {
		names[i] = r.Name
	}
	return names
}

// runStatus probes one run. Its own sources (log, engines) start at once; the parts that need the
// shared probes wait for them.
func (m *Monitor) runStatus(ctx context.Context, r *config.Run, need Need, pass *pass, now time.Time) (reports.RunStatus, *sample) {
	return m.runStatusFrom(ctx, r, need, pass, now, nil)
}

// runStatusFrom is runStatus, with the progress of base (a fresh evaluation of the run) instead of
// a new progress sample when base is not nil: the ETA, throughput, engines and signals it quotes
// are base's, and plans and stages are built on base's sample.
func (m *Monitor) runStatusFrom(ctx context.Context, r *config.Run, need Need, pass *pass, now time.Time, base *latestEval) (reports.RunStatus, *sample) {
	if !m.acquireRun(ctx) {
		return notProbed(r.Name, ctx.Err()), nil
	}
	defer m.releaseRun()
	rs := reports.RunStatus{Name: r.Name, Plans: []reports.PlanResult{}, Problems: []reports.Problem{}}
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		smp     *sample
		pathObs []reports.PathObservation
		remote  reports.RemoteInput
		writers promWriters
	)
	problemOf := func(probe string, err error) reports.Problem {
		return reports.Problem{Probe: probe, Error: err.Error(), Answers: errors.Is(err, probes.ErrNotMetrics)}
	}
	addProblem := func(probe string, err error) {
		mu.Lock()
		rs.Problems = append(rs.Problems, problemOf(probe, err))
		mu.Unlock()
	}
	if base != nil {
		smp = base.smp
	} else if need.Progress || need.Stages || need.Plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var problems []reports.Problem
			progressProblem := func(probe string, err error) {
				p := problemOf(probe, err)
				mu.Lock()
				rs.Problems = append(rs.Problems, p)
				problems = append(problems, p)
				mu.Unlock()
			}
			defer survive("progress", progressProblem)
			smp = m.sampleProgress(ctx, r, pass, now, progressProblem)
			if smp != nil {
				mu.Lock()
				smp.problems = problems
				mu.Unlock()
			}
		}()
	}
	if need.Storage || need.Plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer survive("storage", addProblem)
			pathObs = m.observePaths(ctx, r, pass, !need.Storage, addProblem)
		}()
	}
	if ps := m.prom[r.Name]; ps != nil && need.Storage {
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer survive("prometheus storage", addProblem)
			remote = m.promObserveStorage(ctx, pass, r, ps, now, addProblem)
		}()
		go func() {
			defer wg.Done()
			defer survive("prometheus writers", addProblem)
			writers = m.promObserveWriters(ctx, pass, r, ps, now, addProblem)
		}()
	}
	wg.Wait()
	shared := pass.wait()

	st := m.runState(r.Name)
	var eta *reports.ETA
	if base != nil {
		rs = withProgress(rs, *base)
		if rs.Progress != nil {
			eta = rs.ETA
		}
	} else if smp != nil {
		hist := st.historyWith(smp.obs)
		cfg := estimateConfig(r)
		cfg.Memo = &st.memo
		e, tp := reports.Estimate(hist, cfg)
		// The range as shown: held to the one the last sample showed (the sampler keeps it, see record), so
		// that consecutive answers do not contradict each other.
		own := e
		smp.estimate = &own
		e = st.rangeHold().Apply(e)
		// The estimate is on the run clock; the times an answer shows are the wall clock's.
		e = reports.OnWall(e, probes.UnixSeconds(now)-smp.obs.T)
		if smp.hasProgress {
			eta, rs.ETA, rs.Throughput = &e, &e, &tp
			p := smp.progress
			rs.Progress = &p
			rs.Moves = st.moveLog(eta, smp.obs.T)
			if e.State == reports.StateDone {
				rs.Finish = st.finishSummary(hist, estimateConfig(r), rs.Moves.First)
				if rs.Finish != nil {
					ft := rs.Finish.Throughput(tp)
					rs.Throughput = &ft
				}
			}
		}
		rs.Engines = smp.engines
		rs.Quality, rs.Drafter = m.assessSignals(r, smp)
		rs.Quality = rs.Quality.At(rs.End())
		rs.Notices = append(rs.Notices, smp.notices...)
	}
	if need.Storage {
		in := reports.StorageInput{Scan: shared.scan, ScanErr: shared.scanErr, Table: shared.table, WriteRates: shared.rates,
			Devices: deviceWrites(shared.devicesFrom, shared.devicesNow, pathObs)}
		for _, p := range pathObs {
			if p.Role != "plan" {
				in.Paths = append(in.Paths, p)
			}
		}
		if shared.scan != nil {
			in.Writers = shared.writers.classify(r.Name, in.Paths, shared.table, m.opts.AllWriters)
		}
		// The time to full is the free-space trend's alone: a write rate is one interval's writes (a burst of
		// them made "fills in 6 h" of 5 s), and bytes written are not bytes of free space gone.
		in.FillRates = st.fillRates(pathObs, m.runClock(st))
		ttf := func(string) (float64, bool) {
			if eta != nil && eta.Seconds != nil {
				return *eta.Seconds, true
			}
			return 0, false
		}
		rs.Storage = reports.BuildStorage(in, ttf)
		writers.coverage(&remote)
		rs.Storage = reports.MergeRemote(rs.Storage, remote, ttf)
		if shared.tableErr != nil {
			rs.Problems = append(rs.Problems, reports.Problem{Probe: "mounts", Error: shared.tableErr.Error()})
		}
		if shared.scanErr != nil {
			rs.Problems = append(rs.Problems, reports.Problem{Probe: "writers", Error: shared.scanErr.Error()})
		}
		if shared.rateErr != nil {
			rs.Problems = append(rs.Problems, reports.Problem{Probe: "disk activity", Error: shared.rateErr.Error()})
		}
		rs.Storage.RateNote = shared.rateNote
		rs.Storage.AsOf = m.opts.Now()
		if ws := shared.writers; ws != nil && ws.readAt.Before(rs.Storage.AsOf) {
			// A scan another pass started (a sample's, or an answer's a moment ago) is as old as it is.
			rs.Storage.AsOf = ws.readAt
		}
	} else {
		rs.Storage = reports.Storage{Paths: []reports.PathInfo{}, ProtectedMounts: []reports.PathInfo{}, Writers: []reports.WriterInfo{}, WriteRates: []reports.WriteRate{}}
	}
	if need.Plans && len(r.Plans) > 0 {
		rs.Plans = m.evaluatePlans(ctx, r, pathObs, smp, eta)
		rs.Measured = m.measurePlans(ctx, r, rs.Plans, rs.Progress, addProblem)
	}
	if need.Stages && len(r.Stages) > 0 {
		rs.Stages = m.checkStages(ctx, r, st, smp, rs)
	}
	if until := st.snoozedUntil(); until != nil && until.After(now) {
		rs.Snoozed = until
	}
	if err := st.stateProblem(); err != nil {
		rs.Problems = append(rs.Problems, reports.Problem{Probe: "state", Error: err.Error()})
	}
	sort.SliceStable(rs.Problems, func(i, j int) bool { return rs.Problems[i].Probe < rs.Problems[j].Probe })
	rs.Problems = slices.Compact(rs.Problems) // a source that fails for several parts is named once
	return rs, smp
}

// EstimateConfig is the estimator's configuration for a run (its window and stall threshold), for
// callers that re-run the estimator over the history, such as charts.
func (m *Monitor) EstimateConfig(name string) reports.EstimateConfig {
	if r, ok := m.file.RunByName(name); ok {
		return estimateConfig(r)
	}
	return estimateConfig(&config.Run{})
}

func estimateConfig(r *config.Run) reports.EstimateConfig {
	// The window and the stall threshold follow the job's own pace; a run's stall_after sets the latter.
	var c reports.EstimateConfig
	if r.StallAfter.Duration > 0 {
		c.StallAfter = r.StallAfter.Seconds()
	}
	return c
}

// survive turns a panic in one of a run's probes into a problem named for it, so that the answer is partial,
// as for a probe that fails, instead of the bot gone with every run it watches. The probes are bounded and
// fuzzed; this is for the input nobody foresaw. Deferred in the probe's own goroutine.
func survive(probe string, addProblem func(string, error)) {
	if r := recover(); r != nil {
		addProblem(probe, &flight.PanicError{Value: r})
	}
}
