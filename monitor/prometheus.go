package monitor

// The Prometheus source of a run (`prometheus:` in the run file): engines, history, storage on
// many hosts and promql stage checks, read from a Prometheus server instead of from this machine.
//
// How it combines with the direct sources, so that every question gets one answer:
//
//   - Engines. With `prometheus:` and no `metrics:`, the engines are what Prometheus holds for the
//     run's selector, one engine per `instance` label (summed over data-parallel `engine` labels,
//     with the same rules as a direct scrape), and each carries that instance as its host. When
//     `metrics:` is listed too, those direct scrapes stay the engine source (they are the ones the
//     run names, and they are live) and Prometheus adds storage and promql checks. The two are
//     never summed: the same servers would count twice.
//   - Progress. The job log when the run has one; else the engines' finished requests, named
//     "prometheus" as the source.
//   - History. When Prometheus is the engine source and the log is not the progress source, a
//     freshly started monitor fills the run's history from query_range (the last six hours), so
//     ETA and throughput are known at once. A log's past cannot be read back from Prometheus, so a
//     run with a log builds its history as it goes, as before.
//   - Storage. The local probes run as before (entries without a host); node_exporter adds one
//     entry per host and configured path, on the hosts where any of the run's targets runs.
//
// The queries and the translation of series into engines and filesystems are probes'
// (probes.PromEngines, probes.PromFilesystems, Prometheus.Check): they answer in the same terms as
// a direct scrape and the local storage probes. This file decides which source answers what and
// carries the engines' counters across restarts, as for direct scrapes.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"
)

// History backfill settings.
const (
	promBackfillSpan = 6 * time.Hour
	promRetryAfter   = time.Minute
)

// promSource is one run's Prometheus server and what reads from it.
type promSource struct {
	where   string // the server's URL without its password
	key     string // tells its server and credentials from others' (no secret in it)
	client  *probes.Prometheus
	engines *probes.PromEngines
	fs      *probes.PromFilesystems
	err     error // why there is no client (a credential variable that is not set)
	// exporters remembers the hosts whose exporters answered lately (promwriters.go).
	exporters exporterHosts
	// fsHosts remembers the hosts whose filesystems node_exporter reported lately: a storage query
	// that fails leaves them unseen, and the answers say so rather than drop them.
	fsHosts exporterHosts
	// local are the names a target on this machine has in the server's series (thisMachine): hosts
	// this machine's own scan speaks for.
	local map[string]bool

	mu         sync.Mutex
	backfilled bool
	lastTry    time.Time
}

// probe names the source in problems.
func (ps *promSource) probe() string { return "prometheus " + ps.where }

// newPromSources builds a source per run with `prometheus:`. Runs on the same server with the same
// credentials share one client, so its bound on queries in flight holds for the server.
func newPromSources(f *config.File, o Options) map[string]*promSource {
	out := map[string]*promSource{}
	clients := map[string]*probes.Prometheus{}
	for i := range f.Runs {
		r := &f.Runs[i]
		if r.Prometheus == nil {
			continue
		}
		pc := r.Prometheus
		ps := &promSource{where: probes.RedactURL(pc.URL), local: thisMachine(pc.URL)}
		out[r.Name] = ps
		get := func(key, name string) string {
			if name == "" || ps.err != nil {
				return ""
			}
			v, ok := o.LookupEnv(name)
			if !ok || v == "" {
				ps.err = fmt.Errorf("prometheus.%s names $%s, which is not set (set it in the environment or .env)", key, name)
			}
			return v
		}
		opts := probes.PrometheusOptions{
			URL: pc.URL, Client: o.HTTP,
			BearerToken: get("bearer_token_env", pc.BearerTokenEnv),
			Username:    get("username_env", pc.UsernameEnv),
			Password:    get("password_env", pc.PasswordEnv),
		}
		if ps.err != nil {
			continue
		}
		key := strings.Join([]string{opts.URL, opts.BearerToken, opts.Username, opts.Password}, "\x00")
		c := clients[key]
		if c == nil {
			var err error
			if c, err = probes.NewPrometheus(opts); err != nil {
				ps.err = err
				continue
			}
			clients[key] = c
		}
		ps.client, ps.key = c, fmt.Sprintf("%p", c)
		ps.engines = probes.NewPromEngines(c, pc.Selector)
		ps.fs = probes.NewPromFilesystems(c, pc.Selector)
	}
	return out
}

// promEngineSource returns the run's Prometheus source when it supplies the engines.
func (m *Monitor) promEngineSource(r *config.Run) *promSource {
	if len(r.Metrics) > 0 {
		return nil
	}
	return m.prom[r.Name]
}

// promEngines reads the run's engines from Prometheus now. lag is how much older than now their
// values are (the time since the servers' last scrape): after a gap in Prometheus's data, the
// values from before it.
func (m *Monitor) promEngines(ctx context.Context, p *pass, r *config.Run, ps *promSource, known map[string]bool, now time.Time, problem func(string, error)) (readings []probes.EngineReading, notices []string, lag time.Duration) {
	if ps.err != nil {
		problem(ps.probe(), ps.err)
		return nil, nil, 0
	}
	rd, err := m.promEngineReading(ctx, p, r, ps, now)
	if err != nil {
		problem(ps.probe(), probes.NoAnswer(err, m.opts.ProbeTimeout))
		return nil, nil, 0
	}
	if rd.At > 0 {
		lag = max(0, now.Sub(probes.UnixTime(rd.At)))
	}
	if lag > m.staleAfter() {
		// Figures a scrape interval old or more (a long scrape_interval, scrapes Prometheus missed) are
		// not now's: an answer built on them says how old they are.
		notices = append(notices, fmt.Sprintf("Prometheus's figures for the servers are %s old (their last scrape)",
			reports.Duration(math.Round(lag.Seconds()))))
	}
	readings, down := probes.PromReadings(rd.Instances, ps.where, known)
	for _, inst := range slices.Sorted(maps.Keys(rd.Restarts)) {
		notices = append(notices, fmt.Sprintf("%s restarted %s in the last hour (resets() of its token counter).",
			inst, reports.Plural(rd.Restarts[inst], "time", "times")))
	}
	for _, inst := range down {
		problem("prometheus target "+inst, probes.ErrUpZero)
	}
	if len(readings) == 0 {
		problem(ps.probe(), fmt.Errorf("no vLLM, SGLang, TGI, llama.cpp or TensorRT-LLM series match %s", ps.engines.Selector()))
	}
	return readings, notices, lag
}

// promBackfill fills the run's history from Prometheus once per monitor (retrying a failure after a
// minute): from the last point it has, or six hours back, to now.
func (m *Monitor) promBackfill(ctx context.Context, p *pass, r *config.Run, ps *promSource, st *runState, now time.Time, problem func(string, error)) {
	if ps.err != nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.backfilled || (!ps.lastTry.IsZero() && now.Sub(ps.lastTry) < promRetryAfter && now.After(ps.lastTry)) {
		return
	}
	ps.lastTry = now
	from := now.Add(-promBackfillSpan)
	// Prometheus's steps are wall-clock times; the history is on the run clock, this far behind.
	ahead := probes.UnixSeconds(now) - m.runClock(st)
	st.mu.Lock()
	if n := len(st.History); n > 0 {
		if last := probes.UnixTime(st.History[n-1].T + ahead); last.After(from) {
			from = last
		}
	}
	st.mu.Unlock()
	steps, err := m.promHistory(ctx, p, r, ps, from, now) // with the other runs of the pass on this server
	if err != nil {
		problem(ps.probe(), fmt.Errorf("history: %w", probes.NoAnswer(err, 2*m.opts.ProbeTimeout)))
		return
	}
	if len(steps) == 0 {
		ps.backfilled = true
		return
	}
	lastT := 0.0
	prev := st.engineMemos()
	st.mu.Lock()
	if n := len(st.History); n > 0 {
		lastT = st.History[n-1].T
	}
	st.mu.Unlock()
	obs, memos := reports.PromHistory(steps, ps.where, prev, r.Total, lastT+ahead)
	st.mu.Lock()
	for _, o := range obs {
		o.T -= ahead
		if n := len(st.History); n == 0 || o.T > st.History[n-1].T {
			st.History = append(st.History, o)
		}
	}
	if len(st.History) > m.opts.MaxHistory {
		st.History = reports.Compact(st.History, m.opts.MaxHistory*3/4)
	}
	if st.Engines == nil {
		st.Engines = map[string]engineMemo{}
	}
	for k, v := range memos {
		if strings.HasPrefix(k, probes.PromCounterPrefix) {
			st.Engines[k] = v
		}
	}
	st.mu.Unlock()
	ps.backfilled = true
}

// promObserveStorage reads the run's paths on every host from node_exporter: capacity now, the
// free-space trend over the last 30 minutes, and disk writes over the last five.
func (m *Monitor) promObserveStorage(ctx context.Context, p *pass, r *config.Run, ps *promSource, now time.Time, problem func(string, error)) reports.RemoteInput {
	var specs []reports.PathObservation
	var paths []string
	for _, sp := range runPaths(r) {
		if sp.role != "plan" {
			specs = append(specs, reports.PathObservation{Path: sp.path, Role: sp.role})
			paths = append(paths, sp.path)
		}
	}
	if len(specs) == 0 {
		return reports.RemoteInput{}
	}
	if ps.err != nil {
		problem(ps.probe(), ps.err)
		return unreadStorage(specs, ps.fsHosts.recent(now), ps.err)
	}
	rem, errs := m.promStorage(ctx, p, r, ps, paths, now)
	for _, err := range errs {
		problem(ps.probe(), err)
	}
	if len(rem.Hosts) == 0 && len(rem.Vanished) == 0 && len(errs) > 0 {
		// The query failed (or found nothing): the hosts it answered for lately are not gone, their
		// free space is unknown, and why.
		return unreadStorage(specs, ps.fsHosts.recent(now), errs[0])
	}
	for _, h := range rem.Hosts {
		ps.fsHosts.note(now, h.Name)
	}
	hosts := rem.Hosts
	for _, h := range rem.Vanished {
		// Its paths are there, their free space unknown and why: not left out as though the host never
		// held them. The source is a problem of its own, warned about once.
		hosts = append(hosts, probes.RemoteHost{Name: h, Err: probes.ErrFSVanished})
		problem("node_exporter "+h, probes.ErrFSVanished)
	}
	if len(hosts) == 0 {
		return reports.RemoteInput{}
	}
	return reports.RemoteInput{
		Paths:      reports.PlaceOnHosts(specs, hosts),
		WriteRates: rem.WriteRates,
		FillRates:  reports.FillRatesByHost(rem.Free, probes.UnixSeconds(now), probes.PromFreeWindow.Seconds()),
		Devices:    remoteDevices(rem),
	}
}

// unreadStorage is the run's paths on the hosts whose filesystems the storage query could not read,
// because of err; with none known (a fresh monitor), the other hosts' free space unknown, and why.
func unreadStorage(specs []reports.PathObservation, hosts []string, err error) reports.RemoteInput {
	// The probe's "storage: " prefix says again what errFSUnread says.
	why := fmt.Errorf("%w: %s", errFSUnread, strings.TrimPrefix(err.Error(), "storage: "))
	if len(hosts) == 0 {
		if errors.Is(err, probes.ErrNoNodeExporter) {
			return reports.RemoteInput{} // Prometheus answered: a setup without node_exporter, named as a problem
		}
		return reports.RemoteInput{StorageErr: why.Error()}
	}
	var out []probes.RemoteHost
	for _, h := range hosts {
		out = append(out, probes.RemoteHost{Name: h, Err: why})
	}
	return reports.RemoteInput{Paths: reports.PlaceOnHosts(specs, out)}
}

// errFSUnread says a host's filesystems, read through Prometheus lately, could not be read now.
var errFSUnread = errors.New("the storage query to Prometheus failed")

// promQLCheck runs a promql stage check: done when the query returns a non-zero value.
func (m *Monitor) promQLCheck(ctx context.Context, r *config.Run, query string) (bool, string, error) {
	ps := m.prom[r.Name]
	if ps == nil {
		return false, "promql checks need prometheus: in the run", nil
	}
	if ps.err != nil {
		return false, "", ps.err
	}
	done, detail, err := ps.client.Check(ctx, query, m.opts.Now())
	if err != nil {
		return false, "", probes.NoAnswer(err, m.opts.ProbeTimeout)
	}
	return done, detail, nil
}
