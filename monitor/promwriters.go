package monitor

import (
	"context"
	"fmt"
	"sort"
	"strings"
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

// promMergeWriters adds other hosts' protected writers to the storage report, with a warning per
// host and path, so "are we writing to /shared?" answers for every node that exports.
func promMergeWriters(st reports.Storage, pw promWriters) reports.Storage {
	st.Invisible += pw.invisible
	warned := map[string]int{}
	for _, w := range pw.writers {
		st.Writers = append(st.Writers, w)
		st.ProtectedWrites = true
		warned[w.Host+"\x00"+w.ProtectedPath] += w.Processes
	}
	keys := make([]string, 0, len(warned))
	for k := range warned {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		host, path, _ := strings.Cut(k, "\x00")
		st.Warnings = append(st.Warnings, reports.StorageWarning{
			Kind: "protected_write", Mount: host + ":" + path,
			Message: fmt.Sprintf("On host %s, %s writing to protected %s.", reports.Code(host), reports.Plural(warned[k], "process is", "processes are"), reports.Code(path)),
		})
	}
	return st
}
