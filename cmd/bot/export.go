package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"runwatch/config"
	"runwatch/sim"
)

// runExport is `bot export`: a run's sampled history from the state directory, written as a trace
// (JSONL, one observation per line) that `bot replay` reads.
func runExport(ctx context.Context, a *app, args []string) error {
	fs := a.flags()
	run := fs.String("run", "", "the run (default: the only run)")
	out := fs.String("out", "-", "the trace file to write; - for standard output")
	if err := parseNoArgs(fs, args, "export takes no arguments"); err != nil {
		return err
	}
	if err := a.setup(ctx, false); err != nil {
		return err
	}
	name := *run
	if name == "" {
		if len(a.file.Runs) != 1 {
			return usageError{fmt.Sprintf("name the run with --run (runs: %s)", strings.Join(runNames(a.file), ", "))}
		}
		name = a.file.Runs[0].Name
	}
	if _, ok := a.file.RunByName(name); !ok {
		return fmt.Errorf("no run named %q (runs: %s)", name, strings.Join(runNames(a.file), ", "))
	}
	m, err := a.monitor(ctx, false)
	if err != nil {
		return err
	}
	hist := m.History(name)
	if len(hist) == 0 {
		return fmt.Errorf("run %s has no sampled history in %s yet: `bot serve` or `bot console` records it", name, a.env.StateDir)
	}
	// A trace counts seconds from the first observation, to the millisecond: a sampler's wall-clock jitter
	// (t=1.0001025199890137) is noise that replay's text would otherwise print in full.
	t0 := hist[0].T
	for i := range hist {
		hist[i].T = math.Round((hist[i].T-t0)*1000) / 1000
	}
	var w io.Writer = a.stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return fmt.Errorf("create trace: %w", err)
		}
		defer f.Close()
		w = f
	}
	if err := sim.WriteTrace(w, hist); err != nil {
		return err
	}
	if *out != "-" {
		fmt.Fprintf(a.stderr, "wrote %d observations of run %s to %s\n", len(hist), name, *out)
	}
	return nil
}

func runNames(f *config.File) []string {
	var names []string
	for _, r := range f.Runs {
		names = append(names, r.Name)
	}
	return names
}
