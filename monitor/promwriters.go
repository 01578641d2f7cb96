package monitor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"
)

// promWriters is what the nodes' `bot exporter`s say about writers on the run's protected paths, and
// what that leaves unseen.
type promWriters struct {
	writers   []reports.WriterInfo
	invisible map[string]int
	hosts     []string // hosts whose exporters answered
	silent    []reports.SilentHost
	err       string   // why the query failed: every other host is unseen
	known     []string // the hosts whose exporters answered lately, which a failed query leaves unseen
	// unexported are the run's hosts no exporter speaks for, this machine left out.
	unexported []string
}

// coverage puts w's writers and what it saw and did not see into in.
func (w promWriters) coverage(in *reports.RemoteInput) {
	in.Writers, in.Invisible, in.Exporters, in.Silent = w.writers, w.invisible, w.hosts, w.silent
	in.WritersErr, in.KnownHosts, in.Unexported = w.err, w.known, w.unexported
}

// exporterHosts remembers when each host's exporter last answered for a run, so that a query that
// fails can say how many hosts it leaves unseen, and a host missing from an answer is silent, not gone.
type exporterHosts struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// note records that hosts answered at now.
func (e *exporterHosts) note(now time.Time, hosts ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = map[string]time.Time{}
	}
	for _, h := range hosts {
		e.seen[h] = now
	}
}

// recent is the hosts that answered within probes.PromExporterMemory of now, sorted.
func (e *exporterHosts) recent(now time.Time) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, h := range slices.Sorted(maps.Keys(e.seen)) {
		if now.Sub(e.seen[h]) <= probes.PromExporterMemory {
			out = append(out, h)
		}
	}
	return out
}

// promObserveWriters asks Prometheus for the exporters' writer facts on the run's protected paths. A
// silent exporter (down, or missing from the answer after answering lately) is a problem of its own,
// named once per target, besides a gap in the verdicts.
func (m *Monitor) promObserveWriters(ctx context.Context, p *pass, r *config.Run, ps *promSource, now time.Time, problem func(string, error)) promWriters {
	if len(r.Protected) == 0 {
		return promWriters{}
	}
	if ps.err != nil {
		return promWriters{err: ps.err.Error(), known: ps.exporters.recent(now)}
	}
	rw, err := m.promWritersOf(ctx, p, r, ps, now) // with the other runs of the pass on this server
	if err != nil {
		err = probes.NoAnswer(err, m.opts.ProbeTimeout)
		problem(ps.probe(), fmt.Errorf("writers: %w", err))
		return promWriters{err: err.Error(), known: ps.exporters.recent(now)}
	}
	out := promWriters{invisible: rw.Invisible, hosts: rw.Hosts}
	for _, h := range rw.Unexported {
		// This machine's own scan speaks for it: a target on it needs no exporter.
		if !ps.local[h] {
			out.unexported = append(out.unexported, h)
		}
	}
	for _, w := range rw.Writers {
		out.writers = append(out.writers, reports.WriterInfo{
			Command: w.Command, File: w.Path, Mount: w.Mount,
			Protected: true, ProtectedPath: w.Path, Host: w.Host, Processes: w.Processes,
		})
	}
	silent := map[string]bool{}
	for _, s := range rw.Silent {
		silent[s.Host] = true
		out.silent = append(out.silent, reports.SilentHost{Host: s.Host, Why: s.Err.Error()})
		perr := s.Err
		if errors.Is(perr, probes.ErrExporterDown) {
			perr = probes.ErrUpZero // the words the engines' targets use: one problem when both say it
		}
		problem("prometheus target "+s.Instance, perr)
	}
	// A host this monitor heard from lately that is in neither list vanished from Prometheus's answer.
	for _, h := range ps.exporters.recent(now) {
		if !silent[h] && !slices.Contains(rw.Hosts, h) {
			out.silent = append(out.silent, reports.SilentHost{Host: h, Why: errExporterVanished.Error()})
			problem("prometheus exporter host "+h, errExporterVanished)
		}
	}
	ps.exporters.note(now, rw.Hosts...)
	return out
}

// thisMachine is the names a target on this machine may have in Prometheus's series: its host name
// and addresses; and, when the Prometheus server at promURL runs here too, the loopback names its
// targets on this machine are scraped by (localhost:8000).
func thisMachine(promURL string) map[string]bool {
	out := map[string]bool{}
	if h, err := os.Hostname(); err == nil && h != "" {
		out[h] = true
		if short, _, ok := strings.Cut(h, "."); ok {
			out[short] = true
		}
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() {
				out[ipn.IP.String()] = true
			}
		}
	}
	loopback := []string{"localhost", "127.0.0.1", "::1"}
	if u, err := url.Parse(promURL); err == nil {
		if h := u.Hostname(); out[h] || slices.Contains(loopback, h) {
			for _, l := range loopback {
				out[l] = true
			}
		}
	}
	return out
}

// errExporterVanished: a host whose exporter answered this monitor lately is missing from the answer.
var errExporterVanished = fmt.Errorf("its exporter answered within the last %s and is missing from Prometheus's answer now", probes.PromExporterMemory)
