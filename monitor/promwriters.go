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

// promWriterQuery reads, per exporting host, the processes writing under the run's protected paths
// and the processes the exporter could not inspect. The exporters' own series carry no run label:
// a protected path means the same on every node.
func promWriterQuery(protected []string) string {
	return fmt.Sprintf(`runwatch_protected_writer_processes{path=~%s} or runwatch_invisible_processes`, promAlternation(protected))
}

// promObserveWriters asks Prometheus for the exporters' writer facts on the run's protected paths.
func (m *Monitor) promObserveWriters(ctx context.Context, r *config.Run, ps *promSource, now time.Time, problem func(string, error)) promWriters {
	if len(r.Protected) == 0 || ps.err != nil {
		return promWriters{}
	}
	c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	res, err := ps.client.Query(c, promWriterQuery(r.Protected), now)
	cancel()
	if err != nil {
		problem(ps.probe(), fmt.Errorf("writers: %w", describeErr(err, m.opts.ProbeTimeout)))
		return promWriters{}
	}
	return promWritersOf(res.Series)
}

// promWritersOf turns the exporters' series into writer entries, one per host, path and command.
func promWritersOf(series []probes.PromSeries) promWriters {
	var out promWriters
	hosts := map[string]bool{}
	for _, s := range series {
		if len(s.Samples) == 0 {
			continue
		}
		host := promHost(s.Labels["instance"])
		hosts[host] = true
		v := s.Samples[len(s.Samples)-1].V
		switch s.Labels["__name__"] {
		case "runwatch_invisible_processes":
			out.invisible += int(v)
		case "runwatch_protected_writer_processes":
			if v <= 0 {
				continue
			}
			out.writers = append(out.writers, reports.WriterInfo{
				Command: s.Labels["command"], File: s.Labels["path"], Mount: s.Labels["mount"],
				Protected: true, ProtectedPath: s.Labels["path"], Host: host, Processes: int(v),
			})
		}
	}
	sort.Slice(out.writers, func(i, j int) bool {
		a, b := out.writers[i], out.writers[j]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		if a.ProtectedPath != b.ProtectedPath {
			return a.ProtectedPath < b.ProtectedPath
		}
		return a.Command < b.Command
	})
	for h := range hosts {
		out.hosts = append(out.hosts, h)
	}
	sort.Strings(out.hosts)
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
