package discover

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"runwatch/config"
	"runwatch/probes"
)

// This file writes what discovery found as a run file, commented, for `bot init`: the first run file is
// an edit, not a blank page.

// RunFile renders f's runs (as File made them) as a commented run file that config.Load reads back to the
// same runs. now dates it; a result with no runs gives a file with one run to fill in.
func RunFile(f *config.File, res Result, now time.Time) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# runwatch run file, written by `bot init` from what it found on this host on %s.", now.UTC().Format("2006-01-02 15:04 MST"))
	w("# Edit it, save it as runwatch.yaml where you run `bot` (or point --config or $RUNWATCH_CONFIG at it).")
	w("# Every key is described in runwatch.example.yaml and docs/discovery.md; unknown keys are refused with their line.")
	if res.Invisible > 0 {
		w("# %s could not be inspected: %s.", plural(res.Invisible, "process", "processes"), invisibleAdvice(res.AsRoot))
	}
	if f == nil || len(f.Runs) == 0 {
		w("# Nothing was found: no listening socket answered /metrics as an inference engine does, and no process")
		w("# was writing growing files. Fill in the run below.")
		w("runs:")
		w("  - name: my-run")
		w("    # log: /path/to/the/job.log         # the job's log, where it prints Progress: N/M or a tqdm bar")
		w("    # metrics:                           # the engines' /metrics")
		w("    #   - http://127.0.0.1:8000/metrics")
		w("    # outputs: [/data/out]              # where the job writes")
		writeUnguessed(w)
		return b.String()
	}
	w("runs:")
	for i, r := range f.Runs {
		if i > 0 {
			w("")
		}
		fd := r.Found
		w("  - name: %s", scalar(r.Name))
		if fd != nil && fd.Job != nil {
			j := fd.Job
			w("    # the job: %s (pid %d), %s", oneLine(j.Command), j.PID, j.How)
		}
		if r.Log != "" {
			say := "its log"
			if fd != nil && fd.Job != nil {
				say = logFromWords(fd.Job.LogFrom)
				if fd.Job.Progress != "" {
					say += fmt.Sprintf(", which last said: %s", oneLine(fd.Job.Progress))
				} else {
					say += " (no progress line in it yet)"
				}
			}
			w("    # %s", say)
			w("    log: %s", scalar(r.Log))
		} else if fd != nil && fd.Job != nil {
			w("    # no log was found: give the job's log (where it prints Progress: N/M or a tqdm bar) for ETAs")
			w("    # log: /path/to/the/job.log")
		}
		if len(r.Metrics) > 0 {
			var names []string
			if fd != nil {
				for _, e := range fd.Engines {
					names = append(names, engineWords(e))
				}
			}
			w("    # the engines: %s", strings.Join(names, "; "))
			if fd != nil && len(fd.Shared) > 0 {
				// Left out, so that the file loaded reads as the run did: discovery fills it again and says
				// the engine is shared (Fill), instead of pricing this job with both jobs' counts.
				who := fmt.Sprintf("job %s (pid %d)", oneLine(fd.Shared[0].Command), fd.Shared[0].PID)
				if n := fd.Shared[0].Unseen; n > 0 {
					who = plural(n, "connection", "connections") + " from processes discovery could not inspect"
				}
				w("    # left out: it also serves %s, so its token and request counts are not this job's alone", who)
				w("    # metrics:")
				for _, u := range r.Metrics {
					w("    #   - %s", scalar(u))
				}
			} else {
				w("    metrics:")
				for _, u := range r.Metrics {
					w("      - %s", scalar(u))
				}
			}
		}
		if fd != nil && fd.Job != nil && fd.Job.Total > 0 {
			w("    # the items in the job, as its progress lines count them (needed only if the log stops saying)")
			w("    total: %d", fd.Job.Total)
		}
		if len(r.Outputs) > 0 {
			w("    # where the job writes: %s", outputWords(fd))
			w("    outputs:")
			for _, o := range r.Outputs {
				w("      - %s", scalar(o))
			}
		}
		writeUnguessed(w)
	}
	return b.String()
}

// writeUnguessed writes, commented out, the keys discovery never guesses.
func writeUnguessed(w func(string, ...any)) {
	w("    # Discovery never guesses these. Where must the job never write? Name the mounts:")
	w("    # protected: [/shared]")
	w("    # Which Slack channel hears about this run (scheduled status, warnings)?")
	w("    # channel: \"C0123456789\"")
}

// invisibleAdvice is what to do about processes discovery could not inspect.
func invisibleAdvice(asRoot bool) string {
	if asRoot {
		return "even as root (a sandbox's or container's init, or a security policy, hides them): a job among them would be missed"
	}
	return "run `bot init` as the job's user, or as root, to see a job among them"
}

func logFromWords(from string) string {
	switch from {
	case "stdout", "stderr":
		return "its " + from + " is redirected to this file"
	}
	return "a file it holds open for writing"
}

func engineWords(e config.FoundEngine) string {
	s := fmt.Sprintf("%s on :%d", probes.KindName(e.Kind), e.Port)
	if e.PID > 0 {
		s += fmt.Sprintf(" (pid %d, %s)", e.PID, oneLine(e.Command))
	}
	return s
}

// outputWords names the files behind a run's outputs and their mounts: "samples.jsonl on / (ext4)".
func outputWords(fd *config.Found) string {
	if fd == nil || fd.Job == nil || len(fd.Job.Outputs) == 0 {
		return "the directories of the files it holds open for writing"
	}
	var parts []string
	for i, o := range fd.Job.Outputs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(fd.Job.Outputs)-3))
			break
		}
		s := o.Path
		if o.MountPoint != "" {
			s += fmt.Sprintf(" on %s (%s)", o.MountPoint, o.FSType)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// scalar is s as a YAML scalar, quoted where YAML would read it otherwise.
func scalar(s string) string {
	out, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Sprintf("%q", s)
	}
	return strings.TrimSuffix(string(out), "\n")
}

// oneLine keeps a comment on its line: a newline in a command line would end it and start YAML.
func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(printable(s))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
