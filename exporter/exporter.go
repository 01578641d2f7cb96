// Package exporter serves one node's writer facts as Prometheus metrics, so that a single bot
// with `prometheus:` can answer "are we writing to /shared?" for every host: which processes write
// files on which mounts, whether those are protected paths of the configured runs, how many
// processes could not be inspected, and where each configured path lands. It reads the node
// through the same monitor the bot uses (one /proc scan per scrape) and speaks for that node only:
// its source never asks Prometheus, so no other host's facts come back as this one's. It keeps no
// facts between scrapes (only which problems it has logged), and bounds every label: mounts and
// commands beyond a cap are summed under "other".
package exporter

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"runwatch/config"
	"runwatch/internal/problemlog"
	"runwatch/monitor"
	"runwatch/reports"
)

// NodeMonitor is the monitor an exporter reads its node through, over any run file: read-only,
// stateless (a scrape never waits for a second disk reading) and local only (a run's
// `prometheus:` is never asked, so what Prometheus holds about other hosts, this node's own past
// series included, never comes back as this node's facts); and its reports keep every writer they
// classified (Options.AllWriters), so that the counts are over all of them.
func NodeMonitor(f *config.File, procRoot string, probeTimeout time.Duration) (*monitor.Monitor, error) {
	m, _, err := monitor.New(f, monitor.Options{ProcRoot: procRoot, ProbeTimeout: probeTimeout, ReadOnly: true, RateWindow: -1, LocalOnly: true,
		AllWriters: true})
	return m, err
}

// Source is what the exporter reads the node through; *monitor.Monitor is one.
type Source interface {
	Status(ctx context.Context, need monitor.Need) reports.Status
}

// Options bound what one scrape may cost and how many series it may produce.
type Options struct {
	// Timeout bounds a scrape's probes (default 10 s; Prometheus's default scrape timeout).
	Timeout time.Duration
	// MaxMounts is how many mounts get their own series (default 32); the rest are summed as "other".
	MaxMounts int
	// MaxCommands is how many commands per protected path get their own series (default 8).
	MaxCommands int
	// MaxPaths bounds the configured-path info series (default 256).
	MaxPaths int
	// Log receives the problems runwatch_exporter_problems counts: each one when it starts and
	// when it ends (nil: not logged).
	Log *slog.Logger
}

// DefaultPort is the port `bot exporter` listens on when not told otherwise. It is not 9464, the
// default of OpenTelemetry's Prometheus exporter that a training job may already serve on the
// same node. Prometheus's allocation list (the "Default port allocations" page of its wiki) has no
// runwatch entry: 9100-9999 is fully allocated, and this port lies outside it.
const DefaultPort = 19464

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxMounts <= 0 {
		o.MaxMounts = 32
	}
	if o.MaxCommands <= 0 {
		o.MaxCommands = 8
	}
	if o.MaxPaths <= 0 {
		o.MaxPaths = 256
	}
	return o
}

// Other is the label value that sums what is beyond a cap.
const Other = "other"

// Exporter is a prometheus.Collector that probes the node on each scrape, as node_exporter does.
type Exporter struct {
	src  Source
	opts Options
	// One scrape at a time: two Prometheus servers scraping at once share the wait, not the cost.
	mu sync.Mutex
	// problems logs the problems of each scrape as they start and end.
	problems problemlog.Log

	writerProcs, writerFiles, protectedProcs, invisible, pathInfo *prometheus.Desc
	scanSeconds, scanSuccess, problemCount, capped                *prometheus.Desc
}

// New returns an exporter reading src.
func New(src Source, o Options) *Exporter {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	o = o.withDefaults()
	return &Exporter{
		src: src, opts: o, problems: problemlog.Log{Logger: o.Log, What: "exporter problem"},
		writerProcs: d("runwatch_writer_processes", "Processes with a file open for writing on the mount, by whether the file is under a protected path of a configured run.", "mount", "protected"),
		writerFiles: d("runwatch_writer_open_files", "Files open for writing on the mount, by whether they are under a protected path.", "mount", "protected"),
		protectedProcs: d("runwatch_protected_writer_processes", "Processes writing under a configured protected path, by the path, its mount and the command.",
			"path", "mount", "command"),
		invisible:   d("runwatch_invisible_processes", "Processes whose open files could not be read (permission); their writes are unknown."),
		pathInfo:    d("runwatch_run_path_info", "A configured path of a run and the mount it lands on (1).", "run", "role", "path", "mount", "protected"),
		scanSeconds: d("runwatch_exporter_scan_duration_seconds", "Time the scrape spent reading the node."),
		scanSuccess: d("runwatch_exporter_scan_success", "1 when the scrape's scan of open files in /proc ran whole; 0 when it failed or was cut short: "+
			"the writer series are then unknown, not none (the error is logged)."),
		problemCount: d("runwatch_exporter_problems", "Probes that failed during the scrape (each is logged when it starts and when it ends)."),
		capped:       d("runwatch_exporter_capped_label_values", "Label values summed under \"other\" because a cap was reached, by label.", "label"),
	}
}

// Describe sends the descriptors of every metric the exporter may produce.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{e.writerProcs, e.writerFiles, e.protectedProcs, e.invisible, e.pathInfo, e.scanSeconds, e.scanSuccess, e.problemCount, e.capped} {
		ch <- d
	}
}

// Collect probes the node and sends its writer facts.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.Timeout)
	st := e.src.Status(ctx, monitor.Need{Storage: true})
	cancel()
	e.logProblems(st)
	f := Summarize(st, e.opts)
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, m := range f.Mounts {
		for _, prot := range []bool{false, true} {
			g(e.writerProcs, float64(m.Processes[prot]), m.Mount, strconv.FormatBool(prot))
			g(e.writerFiles, float64(m.Files[prot]), m.Mount, strconv.FormatBool(prot))
		}
	}
	for _, p := range f.Protected {
		g(e.protectedProcs, float64(p.Processes), p.Path, p.Mount, p.Command)
	}
	g(e.invisible, float64(f.Invisible))
	ok := 0.0
	if f.ScanOK {
		ok = 1
	}
	g(e.scanSuccess, ok)
	for _, p := range f.Paths {
		g(e.pathInfo, 1, p.Run, p.Role, p.Path, p.Mount, strconv.FormatBool(p.Protected))
	}
	g(e.problemCount, float64(f.Problems))
	for _, label := range []string{"mount", "command", "path"} {
		g(e.capped, float64(f.Capped[label]), label)
	}
	g(e.scanSeconds, time.Since(start).Seconds())
}

// logProblems logs what the problems metric counts, by the problems' full names.
func (e *Exporter) logProblems(st reports.Status) {
	byRun := map[string][]reports.Problem{}
	for _, rs := range st.Runs {
		byRun[rs.Name] = append(byRun[rs.Name], rs.Problems...)
	}
	e.problems.Observe(byRun)
}

// Handler serves the exporter's metrics (and nothing else: no Go runtime series, so the series
// count is what the node's facts make it).
func (e *Exporter) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 2})
}

// Facts are one scrape's figures, capped and aggregated.
type Facts struct {
	Mounts    []MountFacts
	Protected []ProtectedFacts
	Invisible int
	// ScanOK says the scan of open files ran whole: without it the writer counts are what a failed
	// scan left, and a central bot must not read them as "nobody writes".
	ScanOK   bool
	Paths    []PathFacts
	Problems int
	Capped   map[string]int // label -> values summed under "other"
}

// MountFacts counts writers on one mount, apart for protected and other files.
type MountFacts struct {
	Mount     string
	Processes map[bool]int
	Files     map[bool]int
}

// ProtectedFacts counts the processes of one command writing under one protected path.
type ProtectedFacts struct {
	Path, Mount, Command string
	Processes            int
}

// PathFacts is a configured path and where it lands.
type PathFacts struct {
	Run, Role, Path, Mount string
	Protected              bool
}

// Summarize turns the runs' storage reports into the node's facts. Every run sees the same /proc
// scan; a writer is counted once however many runs list it, and is protected when any run says so.
// The counts are over every writer the scan classified (Storage.AllWriters, which NodeMonitor's
// reports keep), not the first 200 a report lists.
func Summarize(st reports.Status, o Options) Facts {
	o = o.withDefaults()
	f := Facts{Capped: map[string]int{}, ScanOK: len(st.Runs) > 0}
	type fileKey struct {
		pid  int
		file string
	}
	files := map[fileKey]reports.WriterInfo{}
	for _, rs := range st.Runs {
		f.Problems += len(rs.Problems)
		// This machine is among the hosts a report covers only when its scan ran whole (reports.Coverage).
		f.ScanOK = f.ScanOK && slices.Contains(rs.Storage.Coverage.Hosts, "")
		f.Invisible = max(f.Invisible, rs.Storage.Invisible)
		ws := rs.Storage.AllWriters
		if ws == nil {
			ws = rs.Storage.Writers
		}
		for _, w := range ws {
			k := fileKey{w.PID, w.File}
			if old, ok := files[k]; ok && old.Protected {
				continue
			}
			files[k] = w
		}
		for _, p := range append(append([]reports.PathInfo{}, rs.Storage.ProtectedMounts...), rs.Storage.Paths...) {
			if p.Host != "" {
				continue
			}
			if len(f.Paths) >= o.MaxPaths {
				f.Capped["path"]++
				continue
			}
			f.Paths = append(f.Paths, PathFacts{Run: rs.Name, Role: p.Role, Path: p.Path, Mount: p.Mount, Protected: p.Protected})
		}
	}

	// Mounts, the busiest first, capped.
	type agg struct {
		procs [2]map[int]bool
		files [2]int
	}
	byMount := map[string]*agg{}
	type protKey struct{ path, mount, command string }
	prot := map[protKey]map[int]bool{}
	for _, w := range files {
		a := byMount[w.Mount]
		if a == nil {
			a = &agg{procs: [2]map[int]bool{{}, {}}}
			byMount[w.Mount] = a
		}
		i := 0
		if w.Protected {
			i = 1
			k := protKey{w.ProtectedPath, w.Mount, w.Command}
			if prot[k] == nil {
				prot[k] = map[int]bool{}
			}
			prot[k][w.PID] = true
		}
		a.procs[i][w.PID] = true
		a.files[i]++
	}
	// The configured paths' mounts are there with zeros too: "nobody writes to /shared" is a fact.
	for _, p := range f.Paths {
		if p.Mount != "" && byMount[p.Mount] == nil {
			byMount[p.Mount] = &agg{procs: [2]map[int]bool{{}, {}}}
		}
	}
	mounts := make([]string, 0, len(byMount))
	for m := range byMount {
		mounts = append(mounts, m)
	}
	weight := func(m string) int { return byMount[m].files[0] + byMount[m].files[1] }
	sort.Slice(mounts, func(i, j int) bool {
		// Protected mounts first: they must never be the ones summed away.
		pi, pj := byMount[mounts[i]].files[1] > 0, byMount[mounts[j]].files[1] > 0
		if pi != pj {
			return pi
		}
		if weight(mounts[i]) != weight(mounts[j]) {
			return weight(mounts[i]) > weight(mounts[j])
		}
		return mounts[i] < mounts[j]
	})
	var other *MountFacts
	for i, m := range mounts {
		a := byMount[m]
		mf := MountFacts{Mount: m, Processes: map[bool]int{false: len(a.procs[0]), true: len(a.procs[1])}, Files: map[bool]int{false: a.files[0], true: a.files[1]}}
		if i < o.MaxMounts {
			f.Mounts = append(f.Mounts, mf)
			continue
		}
		f.Capped["mount"]++
		if other == nil {
			other = &MountFacts{Mount: Other, Processes: map[bool]int{}, Files: map[bool]int{}}
		}
		for _, b := range []bool{false, true} {
			other.Processes[b] += mf.Processes[b] // a process on two summed mounts counts twice: an upper bound
			other.Files[b] += mf.Files[b]
		}
	}
	if other != nil {
		f.Mounts = append(f.Mounts, *other)
	}

	// Protected writers by path and command, the most processes first, capped per path.
	keys := make([]protKey, 0, len(prot))
	for k := range prot {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].path != keys[j].path {
			return keys[i].path < keys[j].path
		}
		if len(prot[keys[i]]) != len(prot[keys[j]]) {
			return len(prot[keys[i]]) > len(prot[keys[j]])
		}
		return keys[i].command < keys[j].command
	})
	perPath := map[string]int{}
	others := map[[2]string]int{}
	for _, k := range keys {
		perPath[k.path]++
		if perPath[k.path] <= o.MaxCommands {
			f.Protected = append(f.Protected, ProtectedFacts{Path: k.path, Mount: k.mount, Command: k.command, Processes: len(prot[k])})
			continue
		}
		f.Capped["command"]++
		others[[2]string{k.path, k.mount}] += len(prot[k])
	}
	for k, n := range others {
		f.Protected = append(f.Protected, ProtectedFacts{Path: k[0], Mount: k[1], Command: Other, Processes: n})
	}
	sort.SliceStable(f.Protected, func(i, j int) bool { return f.Protected[i].Path < f.Protected[j].Path })
	return f
}
