package monitor

import (
	"context"
	"fmt"
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
	err       string   // why the query failed: every other host is unseen
}

// coverage puts w's writers and what it saw and did not see into in.
func (w promWriters) coverage(in *reports.RemoteInput) {
	in.Writers, in.Invisible, in.Exporters, in.WritersErr = w.writers, w.invisible, w.hosts, w.err
}

// promObserveWriters asks Prometheus for the exporters' writer facts on the run's protected paths.
func (m *Monitor) promObserveWriters(ctx context.Context, r *config.Run, ps *promSource, now time.Time, problem func(string, error)) promWriters {
	if len(r.Protected) == 0 {
		return promWriters{}
	}
	if ps.err != nil {
		return promWriters{err: ps.err.Error()}
	}
	c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	rw, err := ps.client.Writers(c, r.Prometheus.Selector, r.Protected, now)
	cancel()
	if err != nil {
		err = probes.NoAnswer(err, m.opts.ProbeTimeout)
		problem(ps.probe(), fmt.Errorf("writers: %w", err))
		return promWriters{err: err.Error()}
	}
	out := promWriters{invisible: rw.Invisible, hosts: rw.Hosts}
	for _, w := range rw.Writers {
		out.writers = append(out.writers, reports.WriterInfo{
			Command: w.Command, File: w.Path, Mount: w.Mount,
			Protected: true, ProtectedPath: w.Path, Host: w.Host, Processes: w.Processes,
		})
	}
	return out
}
