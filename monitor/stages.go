package monitor

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"
)

// stageChecker sets each stage's state from its check.
type stageChecker struct {
	client *http.Client
	now    func() time.Time
	guard  *probes.Guard
	// promql runs promql checks; nil until a Prometheus source is wired in.
	promql func(ctx context.Context, r *config.Run, query string) (bool, string, error)
}

type growingMemo struct {
	Size    int64     `json:"size"`
	Files   int       `json:"files"`
	Changed time.Time `json:"changed"`
	Seen    time.Time `json:"seen"`
}

func newStageChecker(c *http.Client, now func() time.Time, g *probes.Guard) *stageChecker {
	return &stageChecker{client: c, now: now, guard: g}
}

// MetricNames lists the names a metric stage check may use.
func MetricNames() []string {
	return []string{"running", "waiting", "kv_cache_usage", "generation_tokens", "prompt_tokens",
		"requests_finished", "preemptions", "gen_throughput", "done", "total", "errors", "percent"}
}

func (sc *stageChecker) check(ctx context.Context, r *config.Run, st *runState, smp *sample, timeout time.Duration, problem func(string, error)) []reports.StageStatus {
	out := make([]reports.StageStatus, len(r.Stages))
	st.mu.Lock()
	marks := make(map[string]StageMark, len(st.Stages))
	for k, v := range st.Stages {
		marks[k] = v
	}
	st.mu.Unlock()
	var wg sync.WaitGroup
	for i := range r.Stages {
		s := &r.Stages[i]
		if mk, ok := marks[s.Name]; ok {
			out[i] = reports.StageStatus{Name: s.Name, State: mk.State, Manual: true,
				Detail: fmt.Sprintf("marked %s by %s at %s", strings.ReplaceAll(mk.State, "_", " "), mk.By, mk.At.Format("Jan 2 15:04 UTC"))}
			continue
		}
		wg.Add(1)
		go func(i int, s *config.Stage) {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			out[i] = sc.checkOne(c, r, s, st, smp)
			out[i].Name = s.Name
		}(i, s)
	}
	wg.Wait()
	return out
}

func (sc *stageChecker) checkOne(ctx context.Context, r *config.Run, s *config.Stage, st *runState, smp *sample) reports.StageStatus {
	switch s.Check {
	case "http":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
		if err != nil {
			return reports.StageStatus{State: reports.StageFailed, Detail: err.Error()}
		}
		start := time.Now()
		resp, err := sc.client.Do(req)
		if err != nil {
			return reports.StageStatus{State: reports.StagePending, Detail: "not answering yet: " + shortErr(err)}
		}
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			return reports.StageStatus{State: reports.StageDone, Detail: fmt.Sprintf("%s answers %d in %d ms", s.URL, resp.StatusCode, time.Since(start).Milliseconds())}
		}
		return reports.StageStatus{State: reports.StageFailed, Detail: fmt.Sprintf("%s answers %s", s.URL, resp.Status)}
	case "exists":
		ok, err := statWithin(ctx, sc.guard, s.Path)
		switch {
		case err != nil:
			return reports.StageStatus{State: reports.StagePending, Detail: shortErr(err)}
		case ok:
			return reports.StageStatus{State: reports.StageDone, Detail: s.Path + " is there"}
		}
		return reports.StageStatus{State: reports.StagePending, Detail: s.Path + " does not exist yet"}
	case "progress":
		if smp == nil || !smp.hasProgress {
			return reports.StageStatus{State: reports.StagePending, Detail: "no progress reported yet"}
		}
		p := smp.progress
		switch {
		case p.Total > 0 && p.Done >= p.Total:
			return reports.StageStatus{State: reports.StageDone, Detail: fmt.Sprintf("%s items done", reports.Count(float64(p.Done)))}
		case p.Done > 0 && p.Total > 0:
			return reports.StageStatus{State: reports.StageInProgress, Detail: fmt.Sprintf("%s / %s (%s)", reports.Count(float64(p.Done)), reports.Count(float64(p.Total)), reports.Percent(float64(p.Done)/float64(p.Total)))}
		case p.Done > 0:
			return reports.StageStatus{State: reports.StageInProgress, Detail: fmt.Sprintf("%s done", reports.Count(float64(p.Done)))}
		}
		return reports.StageStatus{State: reports.StagePending, Detail: "not started"}
	case "growing":
		return sc.growing(ctx, s, st)
	case "metric":
		if smp == nil {
			return reports.StageStatus{State: reports.StagePending, Detail: "no metrics yet"}
		}
		name := s.Metric
		if a, ok := probes.MetricAlias(name); ok {
			name = a
		}
		vals := map[string]float64{}
		for k, v := range smp.metrics {
			vals[k] = v
		}
		if smp.hasProgress {
			vals["done"], vals["total"], vals["errors"] = float64(smp.progress.Done), float64(smp.progress.Total), float64(smp.progress.Errors)
			if smp.progress.Total > 0 {
				vals["percent"] = 100 * float64(smp.progress.Done) / float64(smp.progress.Total)
			}
		}
		v, ok := vals[name]
		if !ok {
			return reports.StageStatus{State: reports.StagePending, Detail: fmt.Sprintf("metric %s not scraped (known: %s)", s.Metric, strings.Join(MetricNames(), ", "))}
		}
		if compare(v, s.Op, s.Value) {
			return reports.StageStatus{State: reports.StageDone, Detail: fmt.Sprintf("%s = %g %s %g", s.Metric, v, s.Op, s.Value)}
		}
		return reports.StageStatus{State: reports.StagePending, Detail: fmt.Sprintf("%s = %g, waiting for %s %g", s.Metric, v, s.Op, s.Value)}
	case "promql":
		if sc.promql == nil {
			return reports.StageStatus{State: reports.StagePending, Detail: "promql checks need prometheus: in the run"}
		}
		ok, detail, err := sc.promql(ctx, r, s.Query)
		if err != nil {
			return reports.StageStatus{State: reports.StagePending, Detail: "query failed: " + shortErr(err)}
		}
		if ok {
			return reports.StageStatus{State: reports.StageDone, Detail: detail}
		}
		return reports.StageStatus{State: reports.StagePending, Detail: detail}
	case "manual":
		name := s.Name
		if strings.ContainsAny(name, " \t") {
			name = `"` + name + `"`
		}
		return reports.StageStatus{State: reports.StagePending, Detail: "set it with /runwatch stage " + name + " done"}
	}
	return reports.StageStatus{State: reports.StagePending, Detail: "unknown check " + s.Check}
}

// growing compares a directory's top-level size and file count with the last look.
func (sc *stageChecker) growing(ctx context.Context, s *config.Stage, st *runState) reports.StageStatus {
	type res struct {
		size  int64
		files int
		err   error
	}
	ch := make(chan res, 1)
	go func() {
		ents, err := os.ReadDir(s.Path)
		if err != nil {
			ch <- res{err: err}
			return
		}
		var r res
		for i, e := range ents {
			if i >= 100000 {
				break
			}
			if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
				r.size += info.Size()
				r.files++
			}
		}
		ch <- r
	}()
	var r res
	select {
	case r = <-ch:
	case <-ctx.Done():
		return reports.StageStatus{State: reports.StagePending, Detail: s.Path + " did not answer in time"}
	}
	if r.err != nil {
		if os.IsNotExist(r.err) {
			return reports.StageStatus{State: reports.StagePending, Detail: s.Path + " does not exist yet"}
		}
		return reports.StageStatus{State: reports.StagePending, Detail: shortErr(r.err)}
	}
	now := sc.now().UTC()
	st.mu.Lock()
	if st.Growing == nil {
		st.Growing = map[string]growingMemo{}
	}
	prev, seen := st.Growing[s.Name]
	cur := growingMemo{Size: r.size, Files: r.files, Seen: now, Changed: prev.Changed}
	if !seen || r.size != prev.Size || r.files != prev.Files {
		cur.Changed = now
	}
	st.Growing[s.Name] = cur
	st.mu.Unlock()
	summary := fmt.Sprintf("%s in %s", reports.Bytes(float64(r.size)), reports.Plural(r.files, "file", "files"))
	switch {
	case r.files == 0:
		return reports.StageStatus{State: reports.StagePending, Detail: s.Path + " is empty"}
	case seen && r.size > prev.Size:
		return reports.StageStatus{State: reports.StageInProgress, Detail: fmt.Sprintf("%s, +%s since %s", summary, reports.Bytes(float64(r.size-prev.Size)), prev.Seen.Format("15:04 UTC"))}
	case !seen || now.Sub(cur.Changed) < 10*time.Minute:
		return reports.StageStatus{State: reports.StageInProgress, Detail: summary}
	}
	return reports.StageStatus{State: reports.StageDone, Detail: fmt.Sprintf("%s, unchanged since %s", summary, cur.Changed.Format("Jan 2 15:04 UTC"))}
}

func statWithin(ctx context.Context, g *probes.Guard, path string) (bool, error) {
	_, err := g.Stat(ctx, path)
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil:
		return false, fmt.Errorf("%s did not answer in time", path)
	case os.IsNotExist(err):
		return false, nil
	}
	return false, err
}

func compare(v float64, op string, x float64) bool {
	switch op {
	case ">":
		return v > x
	case ">=":
		return v >= x
	case "<":
		return v < x
	case "<=":
		return v <= x
	case "==":
		return v == x
	case "!=":
		return v != x
	}
	return false
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
