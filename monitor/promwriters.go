package monitor

import (
	"context"
	"fmt"
	"time"

	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"
)

// promWriters is what the nodes' `bot exporter`s say about writers on the run's protected paths.
type promWriters struct {
	writers   []reports.WriterInfo
	invisible int
	hosts     []string // hosts that export writer facts at all
}

// promObserveWriters asks Prometheus for the exporters' writer facts on the run's protected paths.
func (m *Monitor) promObserveWriters(ctx context.Context, r *config.Run, ps *promSource, now time.Time, problem func(string, error)) promWriters {
	if len(r.Protected) == 0 || ps.err != nil {
		return promWriters{}
	}
	c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	rw, err := ps.client.Writers(c, r.Protected, now)
	cancel()
	if err != nil {
		problem(ps.probe(), fmt.Errorf("writers: %w", probes.NoAnswer(err, m.opts.ProbeTimeout)))
		return promWriters{}
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
