package probes

import (
	"context"
	"errors"
	"fmt"
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
	// Silent are the exporters of the run's hosts that answered within PromExporterMemory and do not now.
	Silent []SilentExporter
	// Unexported are the run's hosts (those of its targets, the series selector's) where no exporter
	// answered within PromExporterMemory: no process there was inspected. Sorted.
	Unexported []string
}

// unexported are the hosts of runHosts that neither answered nor are silent in w.
func unexported(w RemoteWriters, runHosts map[string]bool) []string {
	var out []string
	for _, h := range slices.Sorted(maps.Keys(runHosts)) {
		if h != "" && !slices.Contains(w.Hosts, h) && !slices.ContainsFunc(w.Silent, func(s SilentExporter) bool { return s.Host == h }) {
			out = append(out, h)
		}
	}
	return out
}

// SilentExporter is an exporter that should have answered and did not, and why.
type SilentExporter struct {
	Host, Instance string
	Err            error
}

// Why an exporter is silent.
var (
	ErrExporterDown    = errors.New("its exporter did not answer Prometheus's last scrape (up = 0)")
	ErrExporterNoFacts = errors.New("its exporter answered Prometheus's last scrape without writer facts")
	ErrExporterGone    = fmt.Errorf("its exporter answered within the last %s and Prometheus no longer scrapes it", promSpan(PromExporterMemory))
	// ErrExporterScanFailed: the exporter answered, but its scan of open files failed (its
	// runwatch_exporter_scan_success is 0): its writer facts are unknown, not none. Why is in its log.
	ErrExporterScanFailed = errors.New("its exporter could not scan its processes (its log says why)")
)

// RemoteWriter is the processes of one command writing under one protected path on one host.
type RemoteWriter struct {
	Host, Command, Path, Mount string
	Processes                  int
}

// Writers asks the server for the writer facts on the protected paths at at that the exporters on
// the hosts of the run's targets (the series selector's) report.
func (p *Prometheus) Writers(ctx context.Context, selector string, protected []string, at time.Time) (RemoteWriters, error) {
	out, err := p.WritersOf(ctx, []PromWritersRequest{{Selector: selector, Protected: protected}}, at)
	if err != nil {
		return RemoteWriters{}, err
	}
	return out[0], nil
}

// promWritersOf turns the exporters' series into writers, one per host, path and command.
func promWritersOf(series []PromSeries) RemoteWriters {
	out := RemoteWriters{Invisible: map[string]int{}}
	hosts := map[string]bool{}
	seen, up := map[string]bool{}, map[string]float64{} // by instance
	failed := map[string]string{}                       // host -> the instance whose scan failed
	for _, s := range series {
		if len(s.Samples) == 0 {
			continue
		}
		inst := s.Labels["instance"]
		v := s.Samples[len(s.Samples)-1].V
		switch s.Labels["runwatch"] {
		case "seen":
			seen[inst] = true
			continue
		case "up":
			up[inst] = max(up[inst], v)
			continue
		case "scan":
			// An exporter from before the gauge has none: its scan is taken as whole, as it was.
			if v == 0 {
				failed[promHost(inst)] = inst
			}
			continue
		}
		host := promHost(inst)
		if s.Labels["__name__"] == "runwatch_invisible_processes" {
			hosts[host] = true
		}
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
	// A host whose exporter could not scan answered without evidence: silent, whatever it counted.
	for _, h := range slices.Sorted(maps.Keys(failed)) {
		delete(hosts, h)
		delete(out.Invisible, h)
		out.Silent = append(out.Silent, SilentExporter{Host: h, Instance: failed[h], Err: ErrExporterScanFailed})
	}
	out.Hosts = slices.Sorted(maps.Keys(hosts))
	for _, inst := range slices.Sorted(maps.Keys(seen)) {
		if h := promHost(inst); hosts[h] || failed[h] != "" {
			continue // answered (or another exporter on the host did), or said its scan failed
		}
		v, scraped := up[inst]
		err := ErrExporterGone
		switch {
		case scraped && v == 0:
			err = ErrExporterDown
		case scraped:
			err = ErrExporterNoFacts
		}
		out.Silent = append(out.Silent, SilentExporter{Host: promHost(inst), Instance: inst, Err: err})
	}
	sort.SliceStable(out.Silent, func(i, j int) bool { return out.Silent[i].Host < out.Silent[j].Host })
	return out
}
