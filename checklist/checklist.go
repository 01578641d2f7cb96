// Package checklist owns a run's checklist: each stage's state from its check (http, exists,
// progress, growing, metric, promql, manual) or from a mark an admin set by hand. It reads the
// world through probes and decides through the pure verdicts in reports.
package checklist

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"
)

// Checker sets each stage of a run's checklist from its check.
type Checker struct {
	HTTP  *http.Client
	Guard *probes.Guard
	// PromQL runs a promql check for a run; nil when no run has a Prometheus source.
	PromQL func(ctx context.Context, r *config.Run, query string) (bool, string, error)
	// Runwatch is the /runwatch command as the Slack app was installed ("": /runwatch), which a manual
	// stage's detail names.
	Runwatch string
}

// Mark is a stage state set by hand (from Slack or the console).
type Mark struct {
	State string    `json:"state"`
	By    string    `json:"by"`
	At    time.Time `json:"at"`
}

// Input is what a run's checks read besides the world.
type Input struct {
	Marks    map[string]Mark
	Progress *reports.Progress // nil when no progress is known
	// ProgressProblems are the progress sources' failures (reports.ProgressProblems), which say why Progress
	// is nil.
	ProgressProblems []reports.Problem
	Metrics          map[string]float64 // the sample's engine values by alias; nil without a sample
	// Growing is the last look at each growing stage's directory, by stage name.
	Growing map[string]reports.Growth
	Now     time.Time
	// Finished says every item of the run is done; FinishedAt is when, zero when runwatch did not see it.
	Finished   bool
	FinishedAt time.Time
}

// MetricNames lists the names a metric stage check may use.
func MetricNames() []string {
	return []string{"running", "waiting", "kv_cache_usage", "generation_tokens", "prompt_tokens",
		"requests_finished", "preemptions", "gen_throughput", "done", "total", "errors", "percent"}
}

// growthLooks collects the growing stages' new looks from checks that run at once.
type growthLooks struct {
	mu sync.Mutex
	m  map[string]reports.Growth
}

// Check evaluates every stage of r, the checks at once and each within timeout. It returns the
// stages' states and the growing stages' new looks, to keep for the next check. A mark sets its stage's
// state (a person decided), but a stage with an automatic check is still checked, and when the check
// disagrees with the mark the detail says so: "marked done by console at …; its check says: 1,296 /
// 25,000 (5%)".
func (c *Checker) Check(ctx context.Context, r *config.Run, in Input, timeout time.Duration) ([]reports.StageStatus, map[string]reports.Growth) {
	out := make([]reports.StageStatus, len(r.Stages))
	looks := &growthLooks{m: map[string]reports.Growth{}}
	var wg sync.WaitGroup
	for i := range r.Stages {
		s := &r.Stages[i]
		mk, marked := in.Marks[s.Name]
		if marked && s.Check == "manual" {
			out[i] = markedStage(s.Name, mk, in.Now)
			continue
		}
		wg.Add(1)
		go func(i int, s *config.Stage) {
			defer wg.Done()
			cc, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			checked := c.checkOne(cc, r, s, in, looks)
			if marked {
				out[i] = markedStage(s.Name, mk, in.Now)
				out[i].Detail += disagreement(mk, checked)
				return
			}
			out[i] = checked
			out[i].Name = s.Name
		}(i, s)
	}
	wg.Wait()
	return out, looks.m
}

// markedStage is a stage whose state a person set, its time said in the bot's zone (now's).
func markedStage(name string, mk Mark, now time.Time) reports.StageStatus {
	return reports.StageStatus{Name: name, State: mk.State, Manual: true, By: mk.By,
		Detail: fmt.Sprintf("marked %s by %s at %s", strings.ReplaceAll(mk.State, "_", " "), mk.By, mk.At.In(now.Location()).Format("Mon 2 Jan 15:04 MST"))}
}

// disagreement is "; its check says: …" when a stage's automatic check reaches another state than
// its mark, "" when they agree or the check could not run (it has no verdict to set against the mark).
func disagreement(mk Mark, checked reports.StageStatus) string {
	if checked.Unchecked || checked.State == mk.State {
		return ""
	}
	return "; its check says: " + checked.Detail
}

func (c *Checker) checkOne(ctx context.Context, r *config.Run, s *config.Stage, in Input, looks *growthLooks) reports.StageStatus {
	switch s.Check {
	case "http":
		a, err := probes.CheckHTTP(ctx, c.HTTP, s.URL)
		switch {
		case errors.Is(err, probes.ErrBadRequest):
			return reports.StageStatus{State: reports.StageFailed, Detail: err.Error()}
		case errors.Is(err, probes.ErrRedirectRefused): // it answers, like a 3xx to the same host would
			return reports.StageStatus{State: reports.StageFailed, Detail: shortErr(err)}
		case err != nil && in.Finished && onServer(r, s.URL):
			// The job's own inference server, stopped to free its GPUs once every item is done: its stage did its
			// part, and "not answering yet" would wait for a server nobody will start again.
			// A detail is escaped where it is shown, so its time is plain, in the bot's zone (in.Now's): no Slack date.
			when := reports.FinishedWhen(in.FinishedAt, func(t time.Time) string { return t.In(in.Now.Location()).Format("15:04 MST") })
			return reports.StageStatus{State: reports.StageDone, Detail: "no longer answers (" + when + ")"}
		case err != nil:
			return reports.StageStatus{State: reports.StagePending, Detail: "not answering yet: " + shortErr(err)}
		case a.Code/100 == 2:
			return reports.StageStatus{State: reports.StageDone, Detail: fmt.Sprintf("%s answers %d in %d ms", probes.RedactURL(s.URL), a.Code, a.Took.Milliseconds())}
		}
		return reports.StageStatus{State: reports.StageFailed, Detail: fmt.Sprintf("%s answers %s", probes.RedactURL(s.URL), a.Status)}
	case "exists":
		ok, err := statWithin(ctx, c.Guard, s.Path)
		switch {
		case err != nil:
			return reports.StageStatus{State: reports.StagePending, Detail: shortErr(err), Unchecked: true}
		case ok:
			return reports.StageStatus{State: reports.StageDone, Detail: s.Path + " is there"}
		}
		return reports.StageStatus{State: reports.StagePending, Detail: s.Path + " does not exist yet"}
	case "progress":
		return reports.StageFromProgress(in.Progress, in.ProgressProblems)
	case "growing":
		return c.growing(ctx, s, in, looks)
	case "metric":
		if in.Metrics == nil {
			return reports.StageStatus{State: reports.StagePending, Detail: "no metrics yet"}
		}
		name := s.Metric
		if a, ok := probes.MetricAlias(name); ok {
			name = a
		}
		vals := map[string]float64{}
		for k, v := range in.Metrics {
			vals[k] = v
		}
		if p := in.Progress; p != nil {
			vals["done"], vals["total"], vals["errors"] = float64(p.Done), float64(p.Total), float64(p.Errors)
			if p.Total > 0 {
				vals["percent"] = 100 * float64(p.Done) / float64(p.Total)
			}
		}
		return reports.StageFromMetric(s.Metric, name, s.Op, s.Value, vals, MetricNames())
	case "promql":
		if c.PromQL == nil {
			return reports.StageStatus{State: reports.StagePending, Detail: "promql checks need prometheus: in the run"}
		}
		ok, detail, err := c.PromQL(ctx, r, s.Query)
		if err != nil {
			return reports.StageStatus{State: reports.StagePending, Detail: "query failed: " + shortErr(err), Unchecked: true}
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
		cmd := c.Runwatch
		if cmd == "" {
			cmd = "/runwatch"
		}
		return reports.StageStatus{State: reports.StagePending, Detail: "set it with " + cmd + " stage " + name + " done"}
	}
	return reports.StageStatus{State: reports.StagePending, Detail: "unknown check " + s.Check}
}

// growing compares a directory's top-level size and file count with the last look.
func (c *Checker) growing(ctx context.Context, s *config.Stage, in Input, looks *growthLooks) reports.StageStatus {
	size, files, err := c.Guard.DirSize(ctx, s.Path)
	switch {
	case err != nil && ctx.Err() != nil:
		return reports.StageStatus{State: reports.StagePending, Detail: s.Path + " did not answer in time"}
	case os.IsNotExist(err):
		return reports.StageStatus{State: reports.StagePending, Detail: s.Path + " does not exist yet"}
	case err != nil:
		return reports.StageStatus{State: reports.StagePending, Detail: shortErr(err), Unchecked: true}
	}
	now := in.Now.UTC()
	prev, seen := in.Growing[s.Name]
	cur := reports.Growth{Size: size, Files: files, Seen: now, Changed: prev.Changed}
	if !seen || size != prev.Size || files != prev.Files {
		cur.Changed = now
	}
	looks.mu.Lock()
	looks.m[s.Name] = cur
	looks.mu.Unlock()
	return reports.StageFromGrowth(s.Path, prev, seen, cur, in.Now) // in.Now: its times said in the bot's zone
}

// onServer reports whether rawURL is on one of r's inference servers: the host and port of one of its
// metrics URLs (a vLLM server's /health beside its /metrics).
func onServer(r *config.Run, rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return false
	}
	for _, m := range r.Metrics {
		if mu, err := url.Parse(m); err == nil && strings.EqualFold(mu.Host, u.Host) {
			return true
		}
	}
	return false
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

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
