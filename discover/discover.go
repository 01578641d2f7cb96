// Package discover finds, with no configuration, what runwatch would otherwise be told: the inference
// engines serving on this host (listening TCP sockets that answer /metrics as a known engine does) and
// the job using them (the engines' clients, or failing that the processes writing growing files), with
// its log, its outputs and its total. It reads only /proc and sends nothing but one GET for /metrics to
// loopback or this host's own listening addresses, following no redirect. Processes it cannot inspect are
// counted, never guessed at. runs.go turns what it found into runs; runfile.go writes them as a run file.
package discover

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/procfs"

	"runwatch/probes"
)

// Options are a discovery's roots and budgets.
type Options struct {
	// ProcRoot is where /proc is read from (tests point it at a fixture tree); default /proc.
	ProcRoot string
	// ProbeTimeout bounds one /metrics probe, parsing included; default 200ms (an engine on this host
	// answers in a few). Probes run side by side, so the whole pass takes about one timeout however many
	// ports listen.
	ProbeTimeout time.Duration
	// PatientTimeout bounds the second probe of a listener that did not answer in ProbeTimeout but serves
	// clients or runs an engine by its command line (a loaded host's engine can be slow); default 2s
	// (RUNWATCH_PROBE_TIMEOUT in runwatch).
	PatientTimeout time.Duration
	// MaxInFlight bounds the probes running at once; default 256.
	MaxInFlight int
	// GrowWait is how long apart the two looks at file sizes are, when no engine's client is found and
	// the job is looked for among the processes writing growing files; default 1s.
	GrowWait time.Duration
	// Only, when not nil, limits discovery to these processes and their descendants: their listening
	// sockets, their connections, their files (RUNWATCH_DISCOVER=PID,...; tests find only their own).
	Only []int
	// Self is this process's pid, never taken for a job (default os.Getpid()); neither is a process
	// running the same executable (another runwatch scraping the engine).
	Self int
	// transport and patient, when set, replace the probes' transports (tests count what is sent).
	transport, patient http.RoundTripper
}

// Result is what one discovery found.
type Result struct {
	Engines []Engine
	Jobs    []Job
	// Listening is how many listening ports were in scope, Probed how many of them were sent a probe.
	Listening, Probed int
	// Invisible counts the processes whose open files could not be read (Hidden names the first few): a job
	// or an engine among them is missed, never guessed.
	Invisible int
	Hidden    []probes.HiddenProcess
	// AsRoot: discovery ran as root, so running as root is no advice for what it could not inspect.
	AsRoot bool
	// Stopped are the progress logs only a shell holds, which did not grow while discovery watched: the
	// logs of jobs that have stopped (the shell that started one keeps its stdout open). Never a job.
	Stopped []Stopped
	// Problems are the parts that failed (the TCP tables, the process table, the mount table).
	Problems []string
}

// Stopped is the log of a job that has stopped, its last progress line, and the shell holding it.
type Stopped struct {
	Log, Progress string
	PID           int
	Command       string
}

// Discoverer looks for engines and jobs on this host.
type Discoverer struct {
	o       Options
	writers *probes.Writers
	mounts  *probes.Mounts
	guard   *probes.Guard
	// betweenLooks, when set, runs between the two looks at file sizes (tests grow a file there), and
	// betweenClientLooks before each further look for an engine's clients (tests connect one there).
	betweenLooks       func()
	betweenClientLooks func(look int)
}

// New returns a discoverer over o.ProcRoot.
func New(o Options) *Discoverer {
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = 200 * time.Millisecond
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 256
	}
	if o.GrowWait <= 0 {
		o.GrowWait = time.Second
	}
	if o.Self == 0 {
		o.Self = os.Getpid()
	}
	if o.PatientTimeout < o.ProbeTimeout {
		o.PatientTimeout = max(o.ProbeTimeout, 2*time.Second)
	}
	if o.transport == nil {
		o.transport = newProbeTransport(o.ProbeTimeout)
	}
	if o.patient == nil {
		o.patient = newProbeTransport(o.PatientTimeout)
	}
	return &Discoverer{o: o, writers: probes.NewWriters(o.ProcRoot), mounts: probes.NewMounts(o.ProcRoot), guard: probes.NewGuard()}
}

// Discover looks once. It returns what it found with the problems of the parts that failed; an error
// only when it could read nothing at all (no proc root).
func (d *Discoverer) Discover(ctx context.Context) (Result, error) {
	var res Result
	pfs, err := procfs.NewFS(d.o.ProcRoot)
	if err != nil {
		return res, fmt.Errorf("discover: %w", err)
	}
	table, err := readProcesses(ctx, pfs, d.o.ProcRoot)
	if err != nil {
		res.Problems = append(res.Problems, fmt.Sprintf("process table: %v", err))
	}
	in := table.within(d.o.Only)
	socks, err := readSockets(pfs)
	if err != nil {
		res.Problems = append(res.Problems, err.Error())
	}

	eps := endpoints(socks, table.owner, in)
	res.Listening = len(eps)
	eps = slices.DeleteFunc(eps, func(e endpoint) bool { return e.pid == d.o.Self })
	res.Probed = len(eps)
	var late []endpoint
	res.Engines, late = probeEngines(ctx, eps, d.o.ProbeTimeout, d.o.MaxInFlight, d.o.transport)
	if late = busy(late, socks, table.owner, table); len(late) > 0 {
		more, _ := probeEngines(ctx, late, d.o.PatientTimeout, d.o.MaxInFlight, d.o.patient)
		res.Engines = append(res.Engines, more...)
		sort.Slice(res.Engines, func(i, j int) bool { return res.Engines[i].Port < res.Engines[j].Port })
	}
	for i := range res.Engines {
		if p := table.procs[res.Engines[i].PID]; p != nil {
			res.Engines[i].Command = p.command()
		}
	}

	scan, err := d.writers.Scan(ctx)
	if err != nil {
		res.Problems = append(res.Problems, err.Error())
	}
	writes := writtenBy(scan)
	mounts, err := d.mounts.Read(ctx)
	if err != nil {
		res.Problems = append(res.Problems, err.Error())
	}

	clients, unseen := clientPids(socks, table, res.Engines, in, d.o.Self)
	d.dropSelf(table, clients)
	// A client that opens a connection per request (Python's urllib) may hold none at the moment of the
	// first look: look again a few times, the sockets and their owners, and keep every client a look saw,
	// before taking the job for a writer of files with no engine. All the looks, even once one client is
	// seen: a second job on the same engine, missed, would have its tokens counted as the first's.
	for look := 1; look < clientLooks && len(res.Engines) > 0; look++ {
		select {
		case <-ctx.Done():
		case <-time.After(d.o.GrowWait / clientLooks):
		}
		if ctx.Err() != nil {
			break
		}
		if d.betweenClientLooks != nil {
			d.betweenClientLooks(look)
		}
		socks, _ = readSockets(pfs)
		if t, err := readProcesses(ctx, pfs, d.o.ProcRoot); err == nil {
			table = t
		}
		more, moreUnseen := clientPids(socks, table, res.Engines, in, d.o.Self)
		d.dropSelf(table, more)
		for pid, ports := range more {
			for _, p := range ports {
				if !slices.Contains(clients[pid], p) {
					clients[pid] = append(clients[pid], p)
				}
			}
		}
		// A connection the look saw before or after its owner's fds were read (a per-request client's,
		// opened or closed in between) has no owner for that look only: the connections counted unseen
		// are those every look saw, a hidden process's that persist.
		for port := range unseen {
			unseen[port] = min(unseen[port], moreUnseen[port])
		}
	}
	for pid := range clients {
		if table.procs[pid] == nil {
			delete(clients, pid) // a client seen at an earlier look that has exited since
		}
	}
	for i := range res.Engines {
		res.Engines[i].Unseen = unseen[res.Engines[i].Port]
	}
	var pids []int
	for pid := range clients {
		pids = append(pids, pid)
	}
	how := func(root int, members []int) string {
		var ports []int
		for _, m := range members {
			for _, p := range clients[m] {
				if !slices.Contains(ports, p) {
					ports = append(ports, p)
				}
			}
		}
		sort.Ints(ports)
		s := "client of"
		for i, p := range ports {
			if i > 0 {
				s += ","
			}
			s += " :" + strconv.Itoa(p)
		}
		return s
	}
	if len(pids) == 0 {
		pids, res.Stopped = d.writersOfGrowingFiles(ctx, table, writes, in, res.Engines)
		how = func(int, []int) string { return "writes growing files" }
	}
	for root, members := range group(table, pids) {
		p := table.procs[root]
		if p == nil {
			continue
		}
		j := Job{PID: root, PIDs: members, Name: p.name(), Command: p.command(), How: how(root, members)}
		for _, m := range members {
			for _, port := range clients[m] {
				if !slices.Contains(j.Ports, port) {
					j.Ports = append(j.Ports, port)
				}
			}
		}
		sort.Ints(j.Ports)
		describeJob(ctx, &j, table, writes, mounts, d.guard)
		res.Jobs = append(res.Jobs, j)
	}
	sort.Slice(res.Jobs, func(a, b int) bool { return res.Jobs[a].PID < res.Jobs[b].PID })

	res.Invisible, res.Hidden, res.AsRoot = max(table.invisible, scan.Invisible), table.hiddenProcs, scan.AsRoot
	if len(res.Hidden) == 0 {
		res.Hidden = scan.Hidden
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		res.Problems = append(res.Problems, fmt.Sprintf("discovery ran out of time: %v", err))
	}
	return res, nil
}

// clientLooks is how many times discovery looks for an engine's clients, GrowWait/clientLooks apart,
// when the first look finds none.
const clientLooks = 5

// dropSelf removes from clients any process running this one's executable: another runwatch scraping
// the engine is no job.
func (d *Discoverer) dropSelf(t processTable, clients map[int][]int) {
	self, err := os.Readlink(filepath.Join(d.o.ProcRoot, strconv.Itoa(d.o.Self), "exe"))
	if err != nil || self == "" {
		return
	}
	for pid := range clients {
		if e, err := os.Readlink(filepath.Join(d.o.ProcRoot, strconv.Itoa(pid), "exe")); err == nil && e == self {
			delete(clients, pid)
		}
	}
}

// writersOfGrowingFiles are the processes in scope, other than this one, the engines and the metrics
// scrapers (a Prometheus's TSDB grows wherever it is kept), whose files hold progress lines or grew while
// discovery watched them.
//
// A shell (or a launcher: sleep, nohup, timeout, ...) holding a file is not its writer: the shell that
// started a job keeps the job's log as its stdout after the job is gone. A shell is taken only when no
// other candidate holds its files and they grow; a progress log only shells hold that does not grow is
// returned as Stopped.
func (d *Discoverer) writersOfGrowingFiles(ctx context.Context, t processTable, writes map[int][]probes.Writer, in map[int]bool, engines []Engine) ([]int, []Stopped) {
	cands := map[int][]probes.Writer{}
	for pid, ws := range writes {
		p := t.procs[pid]
		if pid == d.o.Self || pid <= 1 || p == nil || len(p.cmdline) == 0 || (in != nil && !in[pid]) ||
			slices.Contains(scrapers, p.comm) || slices.ContainsFunc(engines, func(e Engine) bool { return e.PID == pid }) {
			continue
		}
		cands[pid] = ws
	}
	if len(cands) == 0 {
		return nil, nil
	}
	heldByOther := map[string]bool{} // files a process other than a shell holds
	for pid, ws := range cands {
		if !t.procs[pid].holder() {
			for _, w := range ws {
				heldByOther[w.File] = true
			}
		}
	}
	var out []int
	shellLogs := map[int][]string{} // a shell's progress logs no other candidate holds, with their last line
	files := 0
	for pid, ws := range cands {
		sh := t.procs[pid].holder()
		if sh {
			ws = slices.DeleteFunc(slices.Clone(ws), func(w probes.Writer) bool { return heldByOther[w.File] })
			if len(ws) == 0 {
				delete(cands, pid)
				continue
			}
			cands[pid] = ws
		}
		for _, w := range ws {
			if files++; files > maxGrowingFiles || dataExt[filepath.Ext(w.File)] {
				continue
			}
			p, ok := tailProgress(ctx, d.guard, w.File)
			if ok && sh && !slices.Contains(shellLogs[pid], w.File) {
				shellLogs[pid] = append(shellLogs[pid], w.File, p.Line)
			}
			if ok && !sh {
				out = append(out, pid)
				delete(cands, pid)
				break
			}
		}
	}
	if len(out) > 0 {
		// A log with progress in it is the job; the others' growing files are not worth a wait.
		sort.Ints(out)
		return out, nil
	}
	sizes := map[string]int64{}
	for pid := range shellLogs {
		for i := 0; i < len(shellLogs[pid]); i += 2 {
			if fi, err := d.guard.Stat(ctx, shellLogs[pid][i]); err == nil {
				sizes[shellLogs[pid][i]] = fi.Size()
			}
		}
	}
	out = growing(ctx, cands, d.o.GrowWait, d.guard, d.betweenLooks)
	var stopped []Stopped
	for pid, logs := range shellLogs {
		if slices.Contains(out, pid) {
			continue
		}
		for i := 0; i < len(logs); i += 2 {
			if fi, err := d.guard.Stat(ctx, logs[i]); err == nil && fi.Size() == sizes[logs[i]] {
				stopped = append(stopped, Stopped{Log: logs[i], Progress: logs[i+1], PID: pid, Command: t.procs[pid].command()})
			}
		}
	}
	// One entry a log: its shell (the job's parent) rather than what the shell ran beside it.
	sort.Slice(stopped, func(a, b int) bool {
		sa, sb := t.procs[stopped[a].PID].shell(), t.procs[stopped[b].PID].shell()
		switch {
		case stopped[a].Log != stopped[b].Log:
			return stopped[a].Log < stopped[b].Log
		case sa != sb:
			return sa
		}
		return stopped[a].PID < stopped[b].PID
	})
	stopped = slices.CompactFunc(stopped, func(a, b Stopped) bool { return a.Log == b.Log })
	return out, stopped
}

// maxGrowingFiles bounds the files whose tails are read looking for a job's progress when no engine's
// client is found: a busy host's daemons hold thousands open.
const maxGrowingFiles = 256
