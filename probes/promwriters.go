package probes

import (
	"context"
	"maps"
	"slices"
	"sort"
	"time"
)

// RemoteWriters is what other nodes' `bot exporter`s say about processes writing under protected
// paths: the same facts a local writer scan gives, counted per host, path and command.
type RemoteWriters struct {
	Writers   []RemoteWriter // sorted by host, path, command
	Invisible map[string]int // processes each host's exporter could not inspect, by host
	Hosts     []string       // hosts whose exporters answered, sorted
}

// RemoteWriter is the processes of one command writing under one protected path on one host.
type RemoteWriter struct {
	Host, Command, Path, Mount string
	Processes                  int
}

// Writers asks the server for the writer facts on the protected paths at at that the exporters on
// the hosts of the run's targets (the series selector's) report.
func (p *Prometheus) Writers(ctx context.Context, selector string, protected []string, at time.Time) (RemoteWriters, error) {
	res, err := p.Query(ctx, promWriterQuery(promInner(selector), protected), at)
	if err != nil {
		return RemoteWriters{}, err
	}
	return promWritersOf(res.Series), nil
}

// promWritersOf turns the exporters' series into writers, one per host, path and command.
func promWritersOf(series []PromSeries) RemoteWriters {
	out := RemoteWriters{Invisible: map[string]int{}}
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
			out.Invisible[host] += int(v)
		case "runwatch_protected_writer_processes":
			if v <= 0 {
				continue
			}
			out.Writers = append(out.Writers, RemoteWriter{Host: host, Command: s.Labels["command"], Path: s.Labels["path"], Mount: s.Labels["mount"], Processes: int(v)})
		}
	}
	sort.Slice(out.Writers, func(i, j int) bool {
		a, b := out.Writers[i], out.Writers[j]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Command < b.Command
	})
	out.Hosts = slices.Sorted(maps.Keys(hosts))
	return out
}
