package main

import (
	"context"
	"fmt"
	"time"

	"runwatch/config"
	"runwatch/discover"
)

// discoverBudget bounds one discovery at startup: the probes take about one quick probe timeout side by
// side (and one RUNWATCH_PROBE_TIMEOUT for a busy engine that missed it), the look for growing files one
// GrowWait; the rest is reading /proc.
const discoverBudget = 10 * time.Second

// discover looks for the engines and the job on this host (package discover), within discoverBudget.
func (a *app) discover(ctx context.Context) discover.Result {
	ctx, cancel := context.WithTimeout(ctx, discoverBudget)
	defer cancel()
	res, err := discover.New(discover.Options{ProcRoot: a.env.ProcRoot, Only: a.env.DiscoverOnly, PatientTimeout: a.env.ProbeTimeout}).Discover(ctx)
	if err != nil {
		a.log.Warn("discovery failed", "err", err)
	}
	for _, p := range res.Problems {
		a.log.Debug("discovery", "problem", p)
	}
	return res
}

// withoutRunFile is the configuration when no run file is found: the runs discovery makes of what it
// finds, else the built-in default run, whose Found (empty) says discovery looked and found nothing.
func (a *app) withoutRunFile(ctx context.Context, workdir string) *config.File {
	f := config.Default(workdir)
	if a.env.DiscoverOff {
		return f
	}
	res := a.discover(ctx)
	if d := discover.File(res); d != nil {
		return d
	}
	f.Runs[0].Found = &config.Found{Invisible: res.Invisible, Stopped: discover.StoppedLogs(res)}
	return f
}

// fillRunFile completes the runs of a run file that leave out a log, or both metrics and Prometheus,
// with what discovery finds (discover.Fill), unless the file or RUNWATCH_DISCOVER turns it off.
func (a *app) fillRunFile(ctx context.Context, f *config.File) {
	if a.env.DiscoverOff || !discover.Wanted(f) {
		return
	}
	discover.Fill(f, a.discover(ctx))
}

// discoverOffWhy says why `bot init` cannot look: discovery is turned off.
func discoverOffWhy() error {
	return fmt.Errorf("discovery is off (RUNWATCH_DISCOVER=off): unset it, or set it to on, for `bot init` to look")
}
