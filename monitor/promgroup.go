package monitor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"runwatch/config"
	"runwatch/internal/flight"
	"runwatch/probes"
)

// promBatch is one pass's questions to Prometheus servers: each kind (engines, storage, writers)
// is asked once per server for every run of the pass that reads that server, in one grouped query
// (probes' EngineReadings, Filesystems, WritersOf), and each run takes its part of the answer. So
// the queries of a sample grow with the distinct selectors asked, in one query each, not with the
// runs; and each query has its own time budget instead of waiting for its turn behind a run's.
type promBatch struct {
	history flight.Group[[]promHistoryAnswer]
	engines flight.Group[[]promEngineAnswer]
	storage flight.Group[[]promStorageAnswer]
	writers flight.Group[[]promWritersAnswer]
}

type promHistoryAnswer struct {
	selector string
	steps    []probes.PromStep
}

type promEngineAnswer struct {
	selector string
	reading  probes.PromEngineReading
}

type promStorageAnswer struct {
	req     probes.PromFSRequest
	storage probes.RemoteStorage
	errs    []error
}

type promWritersAnswer struct {
	req     probes.PromWritersRequest
	writers probes.RemoteWriters
}

// promRuns are the runs of pass p whose Prometheus source is ps's server (with ps's credentials),
// and that want (of the runs that read Prometheus at all).
func (m *Monitor) promRuns(p *pass, ps *promSource, want func(*config.Run, *promSource) bool) []*config.Run {
	var out []*config.Run
	for _, r := range p.runs {
		if o := m.prom[r.Name]; o != nil && o.err == nil && o.client == ps.client && want(r, o) {
			out = append(out, r)
		}
	}
	return out
}

// promKey is what tells one server (and credentials) from another in a pass's groups.
func promKey(ps *promSource) string { return ps.key }

// promEngineReading is the run's engines from its Prometheus server at now, read in one query with
// those of every other run of the pass on that server.
func (m *Monitor) promEngineReading(ctx context.Context, p *pass, r *config.Run, ps *promSource, now time.Time) (probes.PromEngineReading, error) {
	answers, err := p.prom.engines.Do(ctx, promKey(ps), func() ([]promEngineAnswer, error) {
		var sels []string
		for _, rr := range m.promRuns(p, ps, func(rr *config.Run, _ *promSource) bool { return m.promEngineSource(rr) != nil }) {
			if sel := selectorOf(rr); !slices.Contains(sels, sel) {
				sels = append(sels, sel)
			}
		}
		if !slices.Contains(sels, selectorOf(r)) {
			sels = append(sels, selectorOf(r))
		}
		c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
		defer cancel()
		rds, err := ps.client.EngineReadings(c, sels, now)
		if err != nil {
			return nil, err
		}
		out := make([]promEngineAnswer, len(sels))
		for i, sel := range sels {
			out[i] = promEngineAnswer{sel, rds[i]}
		}
		return out, nil
	})
	if err != nil {
		return probes.PromEngineReading{}, err
	}
	for _, a := range answers {
		if a.selector == selectorOf(r) {
			return a.reading, nil
		}
	}
	return probes.PromEngineReading{}, errNotInBatch
}

// promHistory is the run's history from Prometheus (its engines step by step, from from to now),
// read in one query_range with those of every other run of the pass on that server whose engines
// and progress come from it; they are read six hours back (promBackfillSpan), from from when the
// run is the only one.
func (m *Monitor) promHistory(ctx context.Context, p *pass, r *config.Run, ps *promSource, from, now time.Time) ([]probes.PromStep, error) {
	answers, err := p.prom.history.Do(ctx, promKey(ps), func() ([]promHistoryAnswer, error) {
		sels := []string{selectorOf(r)}
		for _, rr := range m.promRuns(p, ps, func(rr *config.Run, _ *promSource) bool {
			return m.promEngineSource(rr) != nil && m.logs[rr.Name] == nil
		}) {
			if sel := selectorOf(rr); !slices.Contains(sels, sel) {
				sels = append(sels, sel)
			}
		}
		if len(sels) > 1 {
			from = now.Add(-promBackfillSpan)
		}
		c, cancel := context.WithTimeout(ctx, 2*m.opts.ProbeTimeout)
		defer cancel()
		hs, err := ps.client.Histories(c, sels, from, now)
		if err != nil {
			return nil, err
		}
		out := make([]promHistoryAnswer, len(sels))
		for i, sel := range sels {
			out[i].selector = sel
			if hs != nil {
				out[i].steps = hs[i]
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	for _, a := range answers {
		if a.selector == selectorOf(r) {
			return a.steps, nil
		}
	}
	return nil, errNotInBatch
}

// promStorage is the run's paths on the hosts of its targets, read with every other run's of the
// pass on its server: one query each for the filesystems, the free-space trends and the disk writes.
func (m *Monitor) promStorage(ctx context.Context, p *pass, r *config.Run, ps *promSource, paths []string, now time.Time) (probes.RemoteStorage, []error) {
	req := probes.PromFSRequest{Selector: selectorOf(r), Paths: paths}
	answers, err := p.prom.storage.Do(ctx, promKey(ps), func() ([]promStorageAnswer, error) {
		reqs := []probes.PromFSRequest{req}
		for _, rr := range m.promRuns(p, ps, func(*config.Run, *promSource) bool { return true }) {
			if q := (probes.PromFSRequest{Selector: selectorOf(rr), Paths: storagePaths(rr)}); len(q.Paths) > 0 && !slices.ContainsFunc(reqs, func(v probes.PromFSRequest) bool { return sameFS(v, q) }) {
				reqs = append(reqs, q)
			}
		}
		out, errs := ps.client.Filesystems(ctx, reqs, now, m.opts.ProbeTimeout)
		answers := make([]promStorageAnswer, len(reqs))
		for i := range reqs {
			answers[i] = promStorageAnswer{reqs[i], out[i], errs[i]}
		}
		return answers, nil
	})
	if err != nil {
		return probes.RemoteStorage{}, []error{err}
	}
	for _, a := range answers {
		if sameFS(a.req, req) {
			return a.storage, a.errs
		}
	}
	return probes.RemoteStorage{}, []error{errNotInBatch}
}

// promWriters is the exporters' writer facts on the run's protected paths, asked with every other
// run's of the pass on its server in one query.
func (m *Monitor) promWritersOf(ctx context.Context, p *pass, r *config.Run, ps *promSource, now time.Time) (probes.RemoteWriters, error) {
	req := probes.PromWritersRequest{Selector: selectorOf(r), Protected: r.Protected}
	answers, err := p.prom.writers.Do(ctx, promKey(ps), func() ([]promWritersAnswer, error) {
		reqs := []probes.PromWritersRequest{req}
		for _, rr := range m.promRuns(p, ps, func(rr *config.Run, _ *promSource) bool { return len(rr.Protected) > 0 }) {
			if q := (probes.PromWritersRequest{Selector: selectorOf(rr), Protected: rr.Protected}); !slices.ContainsFunc(reqs, func(v probes.PromWritersRequest) bool { return sameWriters(v, q) }) {
				reqs = append(reqs, q)
			}
		}
		c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
		defer cancel()
		out, err := ps.client.WritersOf(c, reqs, now)
		if err != nil {
			return nil, err
		}
		answers := make([]promWritersAnswer, len(reqs))
		for i := range reqs {
			answers[i] = promWritersAnswer{reqs[i], out[i]}
		}
		return answers, nil
	})
	if err != nil {
		return probes.RemoteWriters{}, err
	}
	for _, a := range answers {
		if sameWriters(a.req, req) {
			return a.writers, nil
		}
	}
	return probes.RemoteWriters{}, errNotInBatch
}

// errNotInBatch would mean a run asked a pass's group that left it out: a bug, said as one.
var errNotInBatch = errors.New("internal error: the run is not in its pass's Prometheus query")

// selectorOf is the run's series selector as the grouped queries compare it.
func selectorOf(r *config.Run) string { return strings.TrimSpace(r.Prometheus.Selector) }

// storagePaths are the run's paths that remote storage is read for: all but the plans' targets.
func storagePaths(r *config.Run) []string {
	var out []string
	for _, sp := range runPaths(r) {
		if sp.role != "plan" {
			out = append(out, sp.path)
		}
	}
	return out
}

func sameFS(a, b probes.PromFSRequest) bool {
	return a.Selector == b.Selector && slices.Equal(a.Paths, b.Paths)
}

func sameWriters(a, b probes.PromWritersRequest) bool {
	return a.Selector == b.Selector && slices.Equal(a.Protected, b.Protected)
}
