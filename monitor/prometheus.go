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
//   - Rates are never taken from rate() or increase(): over a window longer than a series has
//     existed they divide by the whole window and under-report a job that just started. Counters
//     are read as values (instant queries and query_range) and the estimator measures rates from
//     their differences; write rates come from raw samples over the time they really span.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"
)

// History backfill and window settings.
const (
	promBackfillSpan   = 6 * time.Hour
	promBackfillPoints = 360
	promMinStep        = time.Second
	promRetryAfter     = time.Minute
	promFillWindow     = 30 * time.Minute // free-space trend, as for local disks
	promWriteWindow    = 5 * time.Minute  // disk write rate
	promMemoPrefix     = "prometheus "
	promResetsName     = "runwatch_resets_1h"
)

// promRestartCounters are the counters whose reset means the server restarted.
var promRestartCounters = []string{"vllm:generation_tokens_total", "sglang:generation_tokens_total", "tgi_request_generated_tokens_count"}

// promSource is one run's Prometheus server and selector.
type promSource struct {
	where  string // the server's URL without its password
	client *probes.Prometheus
	sel    string // the run's label matchers without braces, e.g. job="vllm",run="x"
	err    error  // why there is no client (a credential variable that is not set)

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
		ps := &promSource{sel: promInner(pc.Selector), where: probes.RedactURL(pc.URL)}
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
		if c := clients[key]; c != nil {
			ps.client = c
			continue
		}
		c, err := probes.NewPrometheus(opts)
		if err != nil {
			ps.err = err
			continue
		}
		clients[key] = c
		ps.client = c
	}
	return out
}

// promInner strips the braces of a selector: `{job="vllm"}` -> `job="vllm"`.
func promInner(sel string) string {
	sel = strings.TrimSpace(sel)
	sel = strings.TrimPrefix(sel, "{")
	sel = strings.TrimSuffix(sel, "}")
	return strings.TrimSpace(sel)
}

// promSelector is a series selector for any of names (none: any name) with the run's matchers and
// extra ones.
func promSelector(names []string, sel string, extra ...string) string {
	var parts []string
	if len(names) > 0 {
		alt := make([]string, len(names))
		for i, n := range names {
			alt[i] = regexp.QuoteMeta(n)
		}
		parts = append(parts, "__name__=~"+strconv.Quote(strings.Join(alt, "|")))
	}
	parts = append(parts, extra...)
	if sel != "" {
		parts = append(parts, sel)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// promAlternation is a regex matcher value for exactly the given strings.
func promAlternation(values []string) string {
	alt := make([]string, len(values))
	for i, v := range values {
		alt[i] = regexp.QuoteMeta(v)
	}
	return strconv.Quote(strings.Join(alt, "|"))
}

// promEngineQuery reads every engine series of the run at once, the targets' up, and how often
// each server's token counter was reset in the last hour.
func promEngineQuery(sel string) string {
	names := append([]string{"up"}, probes.PromEngineNames()...)
	// `or` matches series on their labels without the name: a label of its own keeps the right side.
	return promSelector(names, sel) + ` or label_replace(label_replace(max by (instance) (resets(` +
		promSelector(promRestartCounters, sel) + `[1h])), "__name__", "` + promResetsName + `", "", ""), "runwatch", "resets", "", "")`
}

// promHistoryQuery reads the series the history is built from, summed per instance (the history
// needs neither the data-parallel engines apart nor why requests ended), which makes the answer a
// few series per server. Start times are the latest per instance, not a sum.
func promHistoryQuery(sel string) string {
	var sums, starts []string
	for _, n := range append([]string{"up"}, probes.PromProgressNames()...) {
		if n == "process_start_time_seconds" || strings.HasSuffix(n, "_created") {
			starts = append(starts, n)
		} else {
			sums = append(sums, n)
		}
	}
	// `or` matches series on their labels without the name: a label of its own keeps the right side.
	return `sum by (__name__, instance) (` + promSelector(sums, sel) + `) or label_replace(max by (__name__, instance) (` +
		promSelector(starts, sel) + `), "runwatch", "start", "", "")`
}

// promEngineSource returns the run's Prometheus source when it supplies the engines.
func (m *Monitor) promEngineSource(r *config.Run) *promSource {
	if len(r.Metrics) > 0 {
		return nil
	}
	return m.prom[r.Name]
}

// promInstance is what one evaluation says about one instance.
type promInstance struct {
	name   string
	up     float64 // the most of its targets' up
	hasUp  bool
	engine probes.Engine // Kind "" when none of its series names a known engine
}

// promReadings turns the series of one instant query into engine readings (see promReadingsOf)
// and the resets of the last hour per instance.
func promReadings(series []probes.PromSeries, where string, known map[string]bool) (readings []engineReading, restarts map[string]int, down []string) {
	restarts = map[string]int{}
	byName := map[string]*promInstance{}
	get := func(name string) *promInstance {
		if byName[name] == nil {
			byName[name] = &promInstance{name: name}
		}
		return byName[name]
	}
	var engineSeries []probes.PromSeries
	for _, s := range series {
		if len(s.Samples) == 0 {
			continue
		}
		v := s.Samples[len(s.Samples)-1].V
		inst := s.Labels["instance"]
		switch s.Labels["__name__"] {
		case "up":
			pi := get(inst)
			pi.up, pi.hasUp = math.Max(pi.up, v), true
		case promResetsName:
			if v > 0 {
				restarts[inst] = int(v)
			}
		default:
			engineSeries = append(engineSeries, s)
		}
	}
	for inst, e := range probes.PromEngines(engineSeries) {
		get(inst).engine = e
	}
	insts := make([]promInstance, 0, len(byName))
	for _, name := range promSortedKeys(byName) {
		insts = append(insts, *byName[name])
	}
	readings, down = promReadingsOf(insts, where, known)
	return readings, restarts, down
}

// promReadingsOf makes one reading per instance that serves as an engine, sorted. An engine
// Prometheus cannot scrape (up = 0) that was one before (known) is a reading with an error, and so
// is one that vanished altogether, so that what it counted still counts. Instances that are down
// and were never engines are returned in down: a problem, not an engine.
func promReadingsOf(insts []promInstance, where string, known map[string]bool) (readings []engineReading, down []string) {
	seen := map[string]bool{}
	for _, pi := range insts {
		key := promMemoPrefix + pi.name
		isDown := pi.hasUp && pi.up == 0
		switch {
		case pi.engine.Kind != "":
			rd := engineReading{key: key, url: where, host: pi.name, probe: "prometheus target " + pi.name, engine: pi.engine}
			if isDown {
				rd.err = errors.New("Prometheus cannot scrape it (up = 0)")
			}
			readings = append(readings, rd)
		case isDown && known[key]:
			readings = append(readings, engineReading{key: key, url: where, host: pi.name, probe: "prometheus target " + pi.name,
				err: errors.New("Prometheus cannot scrape it (up = 0)")})
		case isDown:
			down = append(down, pi.name)
		default:
			continue
		}
		seen[pi.name] = true
	}
	for key := range known {
		inst, ok := strings.CutPrefix(key, promMemoPrefix)
		if !ok || seen[inst] {
			continue
		}
		readings = append(readings, engineReading{key: key, url: where, host: inst, probe: "prometheus target " + inst,
			err: errors.New("no series in Prometheus any more (target removed or relabelled); its counts are kept")})
	}
	sort.Slice(readings, func(i, j int) bool { return readings[i].host < readings[j].host })
	sort.Strings(down)
	return readings, down
}

// promEngines reads the run's engines from Prometheus now.
func (m *Monitor) promEngines(ctx context.Context, ps *promSource, known map[string]bool, now time.Time, problem func(string, error)) ([]engineReading, []string) {
	if ps.err != nil {
		problem(ps.probe(), ps.err)
		return nil, nil
	}
	c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	defer cancel()
	res, err := ps.client.Query(c, promEngineQuery(ps.sel), now)
	if err != nil {
		problem(ps.probe(), describeErr(err, m.opts.ProbeTimeout))
		return nil, nil
	}
	if res.Truncated != "" {
		// A cut answer would undercount the totals; refuse it rather than count part of the run.
		problem(ps.probe(), fmt.Errorf("engine series not used: %s", res.Truncated))
		return nil, nil
	}
	readings, restarts, down := promReadings(res.Series, ps.where, known)
	var notices []string
	for _, inst := range promSortedKeys(restarts) {
		notices = append(notices, fmt.Sprintf("%s restarted %s in the last hour (resets() of its token counter).",
			inst, reports.Plural(restarts[inst], "time", "times")))
	}
	for _, inst := range down {
		problem("prometheus target "+inst, errors.New("Prometheus cannot scrape it (up = 0)"))
	}
	if len(readings) == 0 {
		problem(ps.probe(), fmt.Errorf("no vLLM, SGLang or TGI series match %s", promSelector(nil, ps.sel)))
	}
	return readings, notices
}

func promSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// promStep is the query_range step that covers span in about promBackfillPoints points.
func promStep(span time.Duration) time.Duration {
	step := (span / promBackfillPoints).Truncate(time.Second)
	return max(step, promMinStep)
}

// promBackfill fills the run's history from Prometheus once per monitor (retrying a failure after a
// minute): from the last point it has, or six hours back, to now. A run younger than a few dozen
// steps is asked again with a step fitted to its age, so that its first minutes are measured too.
func (m *Monitor) promBackfill(ctx context.Context, r *config.Run, ps *promSource, st *runState, now time.Time, problem func(string, error)) {
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
	st.mu.Lock()
	if n := len(st.History); n > 0 {
		if last := promUnix(st.History[n-1].T); last.After(from) {
			from = last
		}
	}
	st.mu.Unlock()
	if now.Sub(from) < 2*promMinStep {
		ps.backfilled = true
		return
	}
	c, cancel := context.WithTimeout(ctx, 2*m.opts.ProbeTimeout)
	defer cancel()
	q := promHistoryQuery(ps.sel)
	// Steps end at now, so the newest point is as fresh as the data.
	query := func(span time.Duration) (probes.PromResult, time.Duration, error) {
		step := promStep(span)
		n := span / step
		res, err := ps.client.QueryRange(c, q, now.Add(-n*step), now, step)
		return res, step, err
	}
	res, step, err := query(now.Sub(from))
	if err == nil && res.Truncated == "" {
		if first := promFirstT(res.Series); first > 0 {
			age := now.Sub(promUnix(first)) + step
			if age < 60*step && promStep(age) < step {
				if fine, _, err := query(age); err == nil && fine.Truncated == "" {
					res = fine
				}
			}
		}
	}
	if err != nil {
		problem(ps.probe(), fmt.Errorf("history: %w", describeErr(err, 2*m.opts.ProbeTimeout)))
		return
	}
	if res.Truncated != "" {
		problem(ps.probe(), fmt.Errorf("history not used: %s", res.Truncated))
		return
	}
	lastT := 0.0
	prev := st.engineMemos()
	st.mu.Lock()
	if n := len(st.History); n > 0 {
		lastT = st.History[n-1].T
	}
	st.mu.Unlock()
	obs, memos := promHistory(res.Series, ps.where, prev, r.Total, lastT)
	st.mu.Lock()
	for _, o := range obs {
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
		if strings.HasPrefix(k, promMemoPrefix) {
			st.Engines[k] = v
		}
	}
	st.mu.Unlock()
	ps.backfilled = true
}

func promUnix(t float64) time.Time {
	sec, frac := math.Modf(t)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// promFirstT is the time of the earliest sample in series (0 when there is none).
func promFirstT(series []probes.PromSeries) float64 {
	first := 0.0
	for _, s := range series {
		if len(s.Samples) > 0 && (first == 0 || s.Samples[0].T < first) {
			first = s.Samples[0].T
		}
	}
	return first
}

// promHistory replays a query_range answer step by step, as if the monitor had sampled the engines
// at every step: counters are carried across server restarts by the same memos, and each step
// where the engines say how many requests finished becomes an observation. Steps at or before
// after are skipped.
func promHistory(series []probes.PromSeries, where string, prev map[string]engineMemo, total int64, after float64) ([]reports.Observation, map[string]engineMemo) {
	type instData struct {
		name          string
		ups           [][]probes.PromSample
		eng           []probes.PromSeries
		replay        *probes.PromEngineReplay
		upCur, engCur []int
		values        []float64
	}
	byName := map[string]*instData{}
	tset := map[float64]bool{}
	for _, s := range series {
		inst := s.Labels["instance"]
		d := byName[inst]
		if d == nil {
			d = &instData{name: inst}
			byName[inst] = d
		}
		if s.Labels["__name__"] == "up" {
			d.ups = append(d.ups, s.Samples)
		} else {
			d.eng = append(d.eng, s)
		}
		for _, smp := range s.Samples {
			tset[smp.T] = true
		}
	}
	list := make([]*instData, 0, len(byName))
	for _, name := range promSortedKeys(byName) {
		d := byName[name]
		d.replay = probes.NewPromEngineReplay(d.eng)
		d.upCur, d.engCur, d.values = make([]int, len(d.ups)), make([]int, len(d.eng)), make([]float64, len(d.eng))
		list = append(list, d)
	}
	ts := make([]float64, 0, len(tset))
	for t := range tset {
		ts = append(ts, t)
	}
	sort.Float64s(ts)
	// at reads a series at t: steps are the same instants in every series of the answer.
	at := func(samples []probes.PromSample, cur *int, t float64) (float64, bool) {
		for *cur < len(samples) && samples[*cur].T < t {
			*cur++
		}
		if *cur < len(samples) && samples[*cur].T == t {
			return samples[*cur].V, true
		}
		return 0, false
	}

	memos := prev
	known := map[string]bool{}
	for k := range memos {
		known[k] = true
	}
	var out []reports.Observation
	var insts []promInstance
	nop := func(string, error) {}
	for _, t := range ts {
		insts = insts[:0]
		for _, d := range list {
			pi := promInstance{name: d.name}
			for k, ups := range d.ups {
				if v, ok := at(ups, &d.upCur[k], t); ok {
					pi.up, pi.hasUp = math.Max(pi.up, v), true
				}
			}
			present := false
			for j, es := range d.eng {
				v, ok := at(es.Samples, &d.engCur[j], t)
				if !ok {
					v = math.NaN()
				}
				d.values[j], present = v, present || ok
			}
			if present {
				pi.engine = d.replay.At(d.values)
			}
			if present || pi.hasUp {
				insts = append(insts, pi)
			}
		}
		readings, _ := promReadingsOf(insts, where, known)
		s := &sample{obs: reports.Observation{T: t}, metrics: map[string]float64{}}
		tot := s.foldEngines(readings, memos, 0, nop)
		memos = s.memos
		for k := range memos {
			known[k] = true
		}
		if t <= after {
			continue
		}
		tot.apply(&s.obs)
		if _, ok := engineProgress(&s.obs, tot, total); ok {
			out = append(out, s.obs)
		}
	}
	return out, memos
}

// promFS is one filesystem node_exporter reports on a host.
type promFS struct {
	host, instance, mountpoint, device, fstype string
	avail, size, free                          float64
	haveAvail, haveSize, haveFree, deviceError bool
}

// promAncestors lists every directory a path's mount point can be: the path and its parents.
func promAncestors(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		p = filepath.Clean(p)
		for {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			parent := filepath.Dir(p)
			if parent == p {
				break
			}
			p = parent
		}
	}
	sort.Strings(out)
	return out
}

// promHostLabel adds a `host` label: the instance without its port, so that node_exporter on
// gpu-node-3:9100 and vLLM on gpu-node-3:8000 meet on gpu-node-3.
func promHostLabel(expr string) string {
	return `label_replace(label_replace(` + expr + `, "host", "$1", "instance", "(.*)"), "host", "$1", "instance", "(.+):[0-9]+")`
}

// promFSQuery reads node_exporter's filesystems at the mount points that can hold the paths, on the
// hosts of the run's targets (any `up` or engine series the selector matches).
func promFSQuery(sel string, mountpoints []string) string {
	fs := promSelector([]string{"node_filesystem_avail_bytes", "node_filesystem_size_bytes", "node_filesystem_free_bytes", "node_filesystem_device_error"},
		"", "mountpoint=~"+promAlternation(mountpoints))
	hosts := `group by (instance) (` + promSelector([]string{"up", "vllm:num_requests_running", "sglang:num_running_reqs", "tgi_batch_current_size"}, sel) + `)`
	return promHostLabel(fs) + " and on(host) " + promHostLabel(hosts)
}

// promFilesystems groups node_exporter series by host and mount point.
func promFilesystems(series []probes.PromSeries) map[string][]promFS {
	type key struct{ host, mp string }
	byKey := map[key]*promFS{}
	var order []key
	for _, s := range series {
		if len(s.Samples) == 0 {
			continue
		}
		l := s.Labels
		host := promHost(l["instance"])
		k := key{host, l["mountpoint"]}
		f := byKey[k]
		if f == nil {
			f = &promFS{host: host, instance: l["instance"], mountpoint: l["mountpoint"], device: l["device"], fstype: l["fstype"]}
			byKey[k] = f
			order = append(order, k)
		}
		v := s.Samples[len(s.Samples)-1].V
		switch l["__name__"] {
		case "node_filesystem_avail_bytes":
			f.avail, f.haveAvail = v, true
		case "node_filesystem_size_bytes":
			f.size, f.haveSize = v, true
		case "node_filesystem_free_bytes":
			f.free, f.haveFree = v, true
		case "node_filesystem_device_error":
			f.deviceError = v != 0
		}
	}
	out := map[string][]promFS{}
	for _, k := range order {
		out[k.host] = append(out[k.host], *byKey[k])
	}
	for _, fss := range out {
		sort.Slice(fss, func(i, j int) bool { return fss[i].mountpoint < fss[j].mountpoint })
	}
	return out
}

// promHost is an instance without its port.
func promHost(instance string) string {
	if h, _, err := net.SplitHostPort(instance); err == nil {
		return h
	}
	return instance
}

// promPathObservations places each configured path on the filesystem of each host that holds it:
// the longest mount point above it. node_exporter cannot say whether the path itself exists, only
// where it lands, so Exists is left true (an answer should not claim "not created yet" on that) and
// Resolved is the path as configured (symlinks on the host cannot be followed from here).
func promPathObservations(specs []pathSpec, fss map[string][]promFS) []reports.PathObservation {
	var out []reports.PathObservation
	id := 0
	for _, host := range promSortedKeys(fss) {
		ids := map[string]int{}
		devs := map[string]int{}
		for _, sp := range specs {
			path := filepath.Clean(sp.path)
			o := reports.PathObservation{Path: sp.path, Role: sp.role, Resolved: path, Exists: true, Host: host}
			var best *promFS
			for i := range fss[host] {
				f := &fss[host][i]
				if reports.Under(path, f.mountpoint) && (best == nil || len(f.mountpoint) > len(best.mountpoint)) {
					best = f
				}
			}
			if best == nil {
				o.UsageErr = errors.New("node_exporter reports no filesystem that holds it")
				out = append(out, o)
				continue
			}
			if ids[best.mountpoint] == 0 {
				id++
				ids[best.mountpoint] = id
			}
			// One filesystem mounted twice (a bind mount, the same export) shares its device; other
			// sources (tmpfs, overlay) are one filesystem per mount.
			dev := best.mountpoint
			if strings.HasPrefix(best.device, "/dev/") || strings.Contains(best.device, ":/") {
				dev = best.device
			}
			if devs[dev] == 0 {
				devs[dev] = len(devs) + 1
			}
			o.HasMount = true
			o.Mount = probes.Mount{ID: ids[best.mountpoint], Major: devs[dev], MountPoint: best.mountpoint, FSType: best.fstype, Source: best.device}
			switch {
			case best.deviceError:
				o.UsageErr = fmt.Errorf("node_exporter on %s could not stat %s (node_filesystem_device_error = 1)", best.instance, best.mountpoint)
			case !best.haveAvail || !best.haveSize:
				o.UsageErr = fmt.Errorf("node_exporter on %s gives no size or free space for %s", best.instance, best.mountpoint)
			default:
				u := probes.Usage{Total: uint64(best.size), Free: uint64(best.avail)}
				freeBlocks := best.avail
				if best.haveFree {
					freeBlocks = best.free
				}
				u.Used = uint64(math.Max(0, best.size-freeBlocks))
				o.Usage = &u
			}
			out = append(out, o)
		}
	}
	return out
}

// promDiskNames lists the node_disk device names a filesystem's device may be counted under: its
// own name, and the whole disk for a partition (node_exporter leaves partitions out by default).
var promPartition = regexp.MustCompile(`^((?:nvme\d+n\d+|mmcblk\d+)p|(?:s|v|xv|h)d[a-z]+)\d+$`)

func promDiskNames(device string) []string {
	name, ok := strings.CutPrefix(device, "/dev/")
	if !ok || name == "" {
		return nil
	}
	out := []string{name}
	if m := promPartition.FindStringSubmatch(name); m != nil {
		out = append(out, strings.TrimSuffix(m[1], "p"))
	}
	return out
}

// promStorage is what node_exporter says about the run's paths, by host.
type promStorage struct {
	obs        []reports.PathObservation
	writeRates map[string]map[string]float64 // host -> mount point -> bytes/s
	fillRates  map[string]map[string]float64 // host -> mount point -> bytes/s of shrinking free space
}

// promObserveStorage reads the run's paths on every host from node_exporter: capacity now, the
// free-space trend over the last 30 minutes, and disk writes over the last five.
func (m *Monitor) promObserveStorage(ctx context.Context, r *config.Run, ps *promSource, now time.Time, problem func(string, error)) promStorage {
	var specs []pathSpec
	var paths []string
	for _, sp := range runPaths(r) {
		if sp.role != "plan" {
			specs = append(specs, sp)
			paths = append(paths, sp.path)
		}
	}
	if len(specs) == 0 {
		return promStorage{}
	}
	if ps.err != nil {
		problem(ps.probe(), ps.err)
		return promStorage{}
	}
	c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	res, err := ps.client.Query(c, promFSQuery(ps.sel, promAncestors(paths)), now)
	cancel()
	if err != nil {
		problem(ps.probe(), fmt.Errorf("storage: %w", describeErr(err, m.opts.ProbeTimeout)))
		return promStorage{}
	}
	if res.Truncated != "" {
		problem(ps.probe(), fmt.Errorf("storage: %s", res.Truncated))
	}
	fss := promFilesystems(res.Series)
	if len(fss) == 0 {
		problem(ps.probe(), fmt.Errorf("storage: no node_exporter filesystem series on the hosts of %s", promSelector(nil, ps.sel)))
		return promStorage{}
	}
	out := promStorage{obs: promPathObservations(specs, fss)}

	// The trend and the write rates, from raw samples, for the instances and mounts found.
	var instances, mounts, disks []string
	seen := map[string]bool{}
	add := func(list *[]string, kind, v string) {
		if v != "" && !seen[kind+v] {
			seen[kind+v] = true
			*list = append(*list, v)
		}
	}
	diskOf := map[string]map[string][]promDiskMount{} // instance -> disk -> mount points
	for _, o := range out.obs {
		if !o.HasMount || seen["used"+o.Host+"\x00"+o.Mount.MountPoint] {
			continue
		}
		seen["used"+o.Host+"\x00"+o.Mount.MountPoint] = true
		for _, f := range fss[o.Host] {
			if f.mountpoint != o.Mount.MountPoint {
				continue
			}
			add(&instances, "instance", f.instance)
			add(&mounts, "mount", f.mountpoint)
			for i, d := range promDiskNames(f.device) {
				add(&disks, "disk", d)
				if diskOf[f.instance] == nil {
					diskOf[f.instance] = map[string][]promDiskMount{}
				}
				diskOf[f.instance][d] = append(diskOf[f.instance][d], promDiskMount{f.mountpoint, i == 0})
			}
		}
	}
	if len(instances) == 0 {
		return out
	}
	var wg sync.WaitGroup
	var fill, disk probes.PromResult
	var fillErr, diskErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
		defer cancel()
		q := fmt.Sprintf(`node_filesystem_avail_bytes{instance=~%s,mountpoint=~%s}[%ds]`,
			promAlternation(instances), promAlternation(mounts), int(promFillWindow.Seconds()))
		fill, fillErr = ps.client.Query(c, q, now)
	}()
	if len(disks) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
			defer cancel()
			q := fmt.Sprintf(`node_disk_written_bytes_total{instance=~%s,device=~%s}[%ds]`,
				promAlternation(instances), promAlternation(disks), int(promWriteWindow.Seconds()))
			disk, diskErr = ps.client.Query(c, q, now)
		}()
	}
	wg.Wait()
	if fillErr != nil {
		problem(ps.probe(), fmt.Errorf("free-space trend: %w", describeErr(fillErr, m.opts.ProbeTimeout)))
	} else {
		out.fillRates = promFillRates(fill.Series, float64(now.UnixNano())/1e9)
	}
	if diskErr != nil {
		problem(ps.probe(), fmt.Errorf("disk writes: %w", describeErr(diskErr, m.opts.ProbeTimeout)))
	} else {
		out.writeRates = promWriteRates(disk.Series, diskOf)
	}
	return out
}

// promFillRates fits free space against time per host and mount point, as for local disks.
func promFillRates(series []probes.PromSeries, now float64) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, s := range series {
		pts := make([]freePoint, 0, len(s.Samples))
		for _, smp := range s.Samples {
			if smp.V >= 0 && !math.IsNaN(smp.V) {
				pts = append(pts, freePoint{T: smp.T, Free: uint64(smp.V)})
			}
		}
		rate, ok := shrinkRate(pts, now-promFillWindow.Seconds())
		if !ok {
			continue
		}
		host := promHost(s.Labels["instance"])
		if out[host] == nil {
			out[host] = map[string]float64{}
		}
		out[host][s.Labels["mountpoint"]] = rate
	}
	return out
}

// promWriteRates turns raw disk counters into write rates per host and mount point; diskOf maps an
// instance's disk names to the mount points on them. A partition's own counter wins over its whole
// disk's when node_exporter reports both.
func promWriteRates(series []probes.PromSeries, diskOf map[string]map[string][]promDiskMount) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	exact := map[string]bool{}
	for _, s := range series {
		inst := s.Labels["instance"]
		rate, ok := probes.PromRate(s.Samples)
		if !ok {
			continue
		}
		host := promHost(inst)
		for _, dm := range diskOf[inst][s.Labels["device"]] {
			if out[host] == nil {
				out[host] = map[string]float64{}
			}
			key := host + "\x00" + dm.mountpoint
			if dm.exact || !exact[key] {
				out[host][dm.mountpoint] = rate
				exact[key] = exact[key] || dm.exact
			}
		}
	}
	return out
}

// promDiskMount is a mount point on a disk, counted under the partition itself (exact) or its disk.
type promDiskMount struct {
	mountpoint string
	exact      bool
}

// promMergeStorage adds the hosts' entries to the local storage report: each host's paths are
// built like local ones (capacity, time to full, warnings), then appended with their host. A
// host's protected paths are used to flag outputs that land on them but are not listed as
// protected mounts: the answer "no writes to /shared" speaks for this machine's processes only.
func promMergeStorage(local reports.Storage, ps promStorage, ttf func(string) (float64, bool)) reports.Storage {
	byHost := map[string][]reports.PathObservation{}
	for _, o := range ps.obs {
		byHost[o.Host] = append(byHost[o.Host], o)
	}
	for _, host := range promSortedKeys(byHost) {
		st := reports.BuildStorage(reports.StorageInput{Paths: byHost[host], WriteRates: ps.writeRates[host], FillRates: ps.fillRates[host]}, ttf)
		local.Paths = append(local.Paths, st.Paths...)
		for _, w := range st.WriteRates {
			w.Host, w.FromSource = host, "node_exporter"
			local.WriteRates = append(local.WriteRates, w)
		}
		local.Warnings = append(local.Warnings, st.Warnings...)
	}
	return local
}

// promQLCheck runs a promql stage check: done when the query returns a non-zero value.
func (m *Monitor) promQLCheck(ctx context.Context, r *config.Run, query string) (bool, string, error) {
	ps := m.prom[r.Name]
	if ps == nil {
		return false, "promql checks need prometheus: in the run", nil
	}
	if ps.err != nil {
		return false, "", ps.err
	}
	res, err := ps.client.Query(ctx, query, m.opts.Now())
	if err != nil {
		return false, "", describeErr(err, m.opts.ProbeTimeout)
	}
	return promQLVerdict(res)
}

// promQLVerdict reads a promql check's answer: true when any value is non-zero.
func promQLVerdict(res probes.PromResult) (bool, string, error) {
	if len(res.Series) == 0 {
		return false, "the query returns no series", nil
	}
	var hits []string
	for _, s := range res.Series {
		if len(s.Samples) == 0 {
			continue
		}
		v := s.Samples[len(s.Samples)-1].V
		if v != 0 && !math.IsNaN(v) {
			hits = append(hits, fmt.Sprintf("%s = %s", promLabelString(s.Labels), strconv.FormatFloat(v, 'g', 6, 64)))
		}
	}
	if len(hits) == 0 {
		return false, fmt.Sprintf("the query returns %s, all 0", reports.Plural(len(res.Series), "series", "series")), nil
	}
	detail := hits[0]
	if len(hits) > 1 {
		detail += fmt.Sprintf(" (and %d more)", len(hits)-1)
	}
	return true, detail, nil
}

func promLabelString(l map[string]string) string {
	var parts []string
	for _, k := range promSortedKeys(l) {
		if k != "__name__" {
			parts = append(parts, k+"="+strconv.Quote(l[k]))
		}
	}
	return l["__name__"] + "{" + strings.Join(parts, ",") + "}"
}
