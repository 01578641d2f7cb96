package discover

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"runwatch/probes"
)

// This file finds the jobs: the processes connected to a discovered engine (its clients), or failing
// that the processes writing growing files; and for each its log, its outputs and its total.

// Job is a process discovery takes for the job: a client of an engine, or a writer of growing files,
// with the processes it forked.
type Job struct {
	PID     int
	PIDs    []int // the job's processes: PID and the workers it forked that are clients or writers too
	Name    string
	Command string
	// How it was found: "client of :8000" or "writes growing files".
	How string
	// Ports are the engine ports it is connected to.
	Ports []int
	// Log is its log, LogFrom where it came from ("stdout", "stderr", "an open file"), Progress the newest
	// progress line there (nil when none yet).
	Log, LogFrom string
	Progress     *probes.Progress
	// Outputs are the files it holds open for writing, not its log.
	Outputs []Output
}

// Output is a file a job writes and the mount it lands on.
type Output struct {
	Path       string
	MountPoint string
	FSType     string
}

// scrapers are programs that connect to an engine to read its metrics, not to use it, and write only
// their own databases: never a job, as a client or as a writer of growing files.
var scrapers = []string{"prometheus", "vmagent", "grafana-agent", "alloy", "otelcol", "otelcol-contrib",
	"telegraf", "datadog-agent", "agent", "netdata", "node_exporter", "victoria-metrics", "curl", "wget"}

// notOutput are the directories a job's real outputs never live in: the kernel's, devices, and the logs
// and databases of system daemons (journald, a Prometheus's TSDB).
var notOutput = []string{"/proc/", "/sys/", "/dev/", "/run/", "/var/log/", "/var/lib/", "/var/cache/", "/memfd:"}

// dataExt are extensions of data files: a job's outputs, never its log, so their tails are not read
// looking for progress.
var dataExt = map[string]bool{".jsonl": true, ".json": true, ".parquet": true, ".arrow": true, ".csv": true, ".tsv": true,
	".safetensors": true, ".pt": true, ".bin": true, ".npy": true, ".npz": true, ".h5": true, ".hdf5": true, ".zarr": true,
	".tar": true, ".gz": true, ".zst": true, ".pkl": true, ".db": true, ".sqlite": true, ".tfrecord": true, ".mds": true}

// maxLogCandidates bounds the open files whose tails are read looking for progress, per job.
const maxLogCandidates = 16

// clientPids are the processes in scope connected to one of the engines' ports on this host, with the
// ports each uses; unseen counts, by port, such connections whose process could not be inspected.
func clientPids(socks []socket, t processTable, engines []Engine, in map[int]bool, self int) (map[int][]int, map[int]int) {
	ports := map[int]bool{}
	enginePids := map[int]bool{}
	for _, e := range engines {
		ports[e.Port] = true
		enginePids[e.PID] = true
	}
	own := localAddrs(socks)
	out := map[int][]int{}
	unseen := map[int]int{}
	for _, s := range socks {
		if s.state != tcpEstablished || !ports[s.remotePort] || !isLocal(s.remote, own) {
			continue
		}
		pid, ok := t.owner[s.inode]
		if !ok {
			if in == nil {
				unseen[s.remotePort]++
			}
			continue
		}
		if pid == self || enginePids[pid] || (in != nil && !in[pid]) {
			continue
		}
		if p := t.procs[pid]; p == nil || slices.Contains(scrapers, p.comm) {
			continue
		}
		if !slices.Contains(out[pid], s.remotePort) {
			out[pid] = append(out[pid], s.remotePort)
		}
	}
	return out, unseen
}

// group gathers processes into jobs: a process whose parent is in the set too, or runs the same command
// line (a worker the job forked), belongs to its parent's job. It returns each job's root and members.
func group(t processTable, pids []int) map[int][]int {
	set := map[int]bool{}
	for _, p := range pids {
		set[p] = true
	}
	roots := map[int][]int{}
	for _, pid := range pids {
		root := pid
		for seen := map[int]bool{}; !seen[root]; {
			seen[root] = true
			p := t.procs[root]
			if p == nil {
				break
			}
			parent := t.procs[p.ppid]
			if parent == nil || p.ppid <= 1 || !(set[p.ppid] || slices.Equal(parent.cmdline, p.cmdline)) {
				break
			}
			root = p.ppid
		}
		roots[root] = append(roots[root], pid)
	}
	for r := range roots {
		if !slices.Contains(roots[r], r) {
			roots[r] = append(roots[r], r)
		}
		sort.Ints(roots[r])
	}
	return roots
}

// writtenBy is each process's files open for writing that may be a job's, from a writer scan.
func writtenBy(scan probes.WriterScan) map[int][]probes.Writer {
	out := map[int][]probes.Writer{}
	for _, w := range scan.Writers {
		if strings.HasSuffix(w.File, " (deleted)") || !strings.HasPrefix(w.File, "/") {
			continue
		}
		if slices.ContainsFunc(notOutput, func(d string) bool { return strings.HasPrefix(w.File, d) }) {
			continue
		}
		out[w.PID] = append(out[w.PID], w)
	}
	return out
}

// growing returns the candidates (pid -> files) whose files grew during wait: sizes are read twice, wait
// apart, at most maxGrowingFiles of them.
func growing(ctx context.Context, cands map[int][]probes.Writer, wait time.Duration, guard *probes.Guard, between func()) []int {
	size := func(path string) int64 {
		fi, err := guard.Stat(ctx, path)
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	before := map[string]int64{}
	for _, ws := range cands {
		for _, w := range ws {
			if len(before) < maxGrowingFiles {
				before[w.File] = size(w.File)
			}
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil
	}
	if between != nil {
		between()
	}
	var out []int
	for pid, ws := range cands {
		if slices.ContainsFunc(ws, func(w probes.Writer) bool {
			b, ok := before[w.File]
			return ok && b >= 0 && size(w.File) > b
		}) {
			out = append(out, pid)
		}
	}
	sort.Ints(out)
	return out
}

// describeJob finds a job's log, its progress and its outputs among what its processes hold open.
func describeJob(ctx context.Context, j *Job, t processTable, writes map[int][]probes.Writer, mounts *probes.MountTable, guard *probes.Guard) {
	type cand struct{ path, from string }
	var cands []cand
	seen := map[string]bool{}
	add := func(path, from string) {
		if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "/dev/") || strings.HasSuffix(path, " (deleted)") || seen[path] {
			return
		}
		seen[path] = true
		cands = append(cands, cand{path, from})
	}
	redirected := map[string]bool{}
	for _, pid := range j.PIDs {
		if p := t.procs[pid]; p != nil {
			add(p.stdout, "stdout")
			add(p.stderr, "stderr")
			redirected[p.stdout], redirected[p.stderr] = true, true
		}
	}
	var written []probes.Writer
	for _, pid := range j.PIDs {
		written = append(written, writes[pid]...)
	}
	for _, w := range written {
		if !dataExt[strings.ToLower(filepath.Ext(w.File))] && len(cands) < maxLogCandidates {
			add(w.File, "an open file")
		}
	}
	for _, c := range cands {
		if p, ok := tailProgress(ctx, guard, c.path); ok {
			j.Log, j.LogFrom, j.Progress = c.path, c.from, &p
			break
		}
	}
	if j.Log == "" {
		// No progress yet: a redirected stdout or stderr is still the job's log.
		for _, c := range cands {
			if c.from != "an open file" {
				j.Log, j.LogFrom = c.path, c.from
				break
			}
		}
	}
	for _, w := range written {
		if w.File == j.Log || redirected[w.File] || slices.ContainsFunc(j.Outputs, func(o Output) bool { return o.Path == w.File }) {
			continue
		}
		o := Output{Path: w.File}
		if mounts != nil {
			m, ok := mounts.ByID(w.MountID)
			if !ok {
				m, ok = mounts.Lookup(w.File)
			}
			if ok {
				o.MountPoint, o.FSType = m.MountPoint, m.FSType
			}
		}
		j.Outputs = append(j.Outputs, o)
	}
	sort.Slice(j.Outputs, func(a, b int) bool { return j.Outputs[a].Path < j.Outputs[b].Path })
}

// tailLines is how many of a file's last lines are looked through for a progress line.
const tailLines = 64

// tailProgress is the newest progress line among the last lines of path that the built-in parsers read.
func tailProgress(ctx context.Context, guard *probes.Guard, path string) (probes.Progress, bool) {
	if fi, err := guard.Stat(ctx, path); err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return probes.Progress{}, false
	}
	lines, err := guard.LastLines(ctx, path, tailLines, 0)
	if err != nil {
		return probes.Progress{}, false
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if p, ok := probes.ParseProgress([]byte(lines[i]), nil); ok {
			return p, true
		}
	}
	return probes.Progress{}, false
}

// OutputDirs are the directories a job's outputs are in, each once, sorted.
func (j Job) OutputDirs() []string {
	var out []string
	for _, o := range j.Outputs {
		d := filepath.Dir(o.Path)
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}
