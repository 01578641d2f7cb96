package reports

import (
	"fmt"
	"path/filepath"
	"strings"

	"runwatch/config"
	"runwatch/probes"
)

// FoundLine says, once, what discovery found for a run and how, so a person can tell what runwatch found
// from what they configured: "found: vLLM on :8000 (pid 1234), job python3 generate.py (pid 4242) → log
// /data/gen.log (its stdout), writes /data/synth/samples.jsonl". For a run-file run it names the keys it
// filled. Mrkdwn; "" when discovery played no part, or found nothing (NothingFound says that).
func FoundLine(f *config.Found) string {
	if f == nil || (len(f.Engines) == 0 && f.Job == nil && len(f.Unlinked) == 0) {
		return ""
	}
	engines := engineWords(f.Engines)
	if f.Filled != nil {
		return filledLine(f, engines)
	}
	var b strings.Builder
	b.WriteString("found: ")
	b.WriteString(strings.Join(engines, ", "))
	if j := f.Job; j != nil {
		if len(engines) > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "job %s (pid %d", Code(j.Command), j.PID)
		if strings.HasPrefix(j.How, "writes") {
			b.WriteString(", by the files it writes")
		}
		b.WriteString(")")
		if j.Log != "" {
			fmt.Fprintf(&b, " → log %s (%s)", Code(j.Log), logFrom(j.LogFrom))
		} else {
			b.WriteString(" → no log found (no progress line in a file it writes)")
		}
		if n := len(j.Outputs); n > 0 {
			fmt.Fprintf(&b, ", writes %s", Code(j.Outputs[0].Path))
			if n > 1 {
				fmt.Fprintf(&b, " and %s", Plural(n-1, "other file", "other files"))
			}
		}
	} else {
		b.WriteString(": no job found connected to it")
	}
	b.WriteString(". No run file: `bot init` prints one to edit")
	b.WriteString(foundUnseen(f))
	b.WriteString(stoppedWords(f))
	b.WriteString(".")
	return b.String()
}

// engineWords names engines: "vLLM on :8000 (pid 1234)".
func engineWords(es []config.FoundEngine) []string {
	var out []string
	for _, e := range es {
		s := fmt.Sprintf("%s on :%d", probes.KindName(e.Kind), e.Port)
		if e.PID > 0 {
			s += fmt.Sprintf(" (pid %d)", e.PID)
		} else {
			s += " (its process could not be inspected)"
		}
		out = append(out, s)
	}
	return out
}

// filledLine says which keys of a run-file run discovery filled, and from what.
func filledLine(f *config.Found, engines []string) string {
	var parts []string
	for _, k := range f.Filled {
		switch k {
		case "metrics":
			parts = append(parts, "`metrics:` "+strings.Join(engines, ", "))
		case "log":
			parts = append(parts, fmt.Sprintf("`log:` %s (the job's %s)", Code(f.Job.Log), logFrom(f.Job.LogFrom)))
		case "total":
			parts = append(parts, fmt.Sprintf("`total:` %s (its progress lines)", Count(float64(f.Job.Total))))
		case "outputs":
			var paths []string
			for _, o := range f.Job.Outputs {
				paths = append(paths, o.Path)
			}
			parts = append(parts, fmt.Sprintf("`outputs:` where %s writes (%s)", Code(f.Job.Command), Code(strings.Join(paths, ", "))))
		}
	}
	unlinked := ""
	if n := len(f.Unlinked); n > 0 {
		// An engine on the host is no evidence about a run its job is not known to use.
		client, it := "its client", "it is"
		if n > 1 {
			client, it = "their client", "they are"
		}
		why := ""
		if f.Job == nil {
			why = " (no process here writes its log or outputs)"
		}
		unlinked = fmt.Sprintf("`metrics:` left out: found %s on this host, but no process of this run's job is %s%s, so %s not read for it; add `metrics:` to the run file if one serves this job",
			listSome(engineWords(f.Unlinked), 3), client, why, it)
	}
	if len(parts) == 0 && unlinked == "" {
		return ""
	}
	if len(parts) == 0 {
		return unlinked + foundUnseen(f) + "."
	}
	job := ""
	if f.Job != nil {
		job = fmt.Sprintf(" for job %s (pid %d)", Code(f.Job.Command), f.Job.PID)
	}
	s := "found on this host" + job + ", for what the run file leaves out: " + strings.Join(parts, "; ")
	if unlinked != "" {
		s += "; " + unlinked
	}
	return s + foundUnseen(f) + "."
}

func logFrom(from string) string {
	switch from {
	case "stdout", "stderr":
		return "its " + from
	}
	return "a file it writes"
}

// foundUnseen names what discovery could not see: processes, and connections to the run's engines.
func foundUnseen(f *config.Found) string {
	s := ""
	if f.Invisible > 0 {
		s += "; " + Plural(f.Invisible, "process", "processes") + " could not be inspected"
	}
	if f.Unseen > 0 {
		s += fmt.Sprintf("; %s to the engine from processes I can't inspect", Plural(f.Unseen, "connection", "connections"))
	}
	return s
}

// NothingFound says what discovery looked for and did not find, for a run made without a run file and
// without anything found (the built-in default's Found, empty); "" for any other run.
func NothingFound(f *config.Found) string {
	if f == nil || len(f.Engines) > 0 || f.Job != nil || f.Filled != nil {
		return ""
	}
	s := "and nothing was found on this host: no listening socket answered `/metrics` as an inference engine does, and no process was writing a log with progress or growing files"
	if f.Invisible > 0 {
		s += fmt.Sprintf(" (%s could not be inspected: run as the job's user, or root, to see them)", Plural(f.Invisible, "process", "processes"))
	}
	return s + stoppedWords(f)
}

// StoppedLine says, for a host where discovery found no job but the logs of jobs that have stopped, that
// no job runs and whose logs those are; "" when it found none.
func StoppedLine(f *config.Found) string {
	if f == nil || len(f.Stopped) == 0 {
		return ""
	}
	return "No job is running on this host that I can see" + stoppedWords(f) + "."
}

// stoppedWords names the logs of jobs that have stopped: "; the log `/data/gen.log` (last: `Progress:
// 838/3000`) is held by `bash` (pid 3570), which does not write it: the log of a job that has stopped".
func stoppedWords(f *config.Found) string {
	s := ""
	for i, st := range f.Stopped {
		if i == 2 {
			s += fmt.Sprintf("; and %s", Plural(len(f.Stopped)-2, "other such log", "other such logs"))
			break
		}
		s += fmt.Sprintf("; the log %s (last: %s) is held by %s (pid %d), which does not write it: the log of a job that has stopped",
			Code(st.Log), Code(truncate(st.Progress, 80)), Code(st.Command), st.PID)
	}
	return s
}

// AnswerUnwatched is the answer to "are we writing to /shared?" about a run discovery made (no run file),
// for a path the run has no key for: whether a file the job writes is under the path, where it does write,
// what the scan could not see, and how to have the path guarded. Only the job's own files are checked, by
// their paths: it never says that no process writes there, which only a protected path's verdict does.
func AnswerUnwatched(run string, st Storage, f *config.Found, path string) Message {
	path = filepath.Clean(path)
	type file struct{ path, mount, fstype string }
	var files []file
	seen := map[string]bool{}
	for _, w := range st.Writers {
		if !w.Output || w.Protected || w.Host != "" {
			continue // the job's outputs, on this host
		}
		if p := strings.TrimSuffix(w.File, " (deleted)"); !seen[p] {
			seen[p] = true
			files = append(files, file{p, w.Mount, ""})
		}
	}
	if f != nil && f.Job != nil && st.ScanError == "" {
		// What discovery saw the job hold open, for a file the scan's classification left out.
		for _, o := range f.Job.Outputs {
			if !seen[o.Path] {
				seen[o.Path] = true
				files = append(files, file{o.Path, o.MountPoint, o.FSType})
			}
		}
	}
	var hits []string
	for _, fl := range files {
		if Under(fl.path, path) {
			hits = append(hits, Code(fl.path))
		}
	}
	subject := Code(path)
	gaps := st.subjectGaps(Target{Path: path})
	var verdict string
	switch {
	case len(hits) > 0:
		verdict = fmt.Sprintf(":large_yellow_circle: *Yes* — run %s's job writes under %s: %s.", Esc(run), subject, listSome(hits, 3))
	case scanFailed(gaps):
		verdict = fmt.Sprintf(":warning: *Unknown* — I could not scan open files: %s.", Esc(st.ScanError))
	case len(files) == 0:
		verdict = fmt.Sprintf(":grey_question: *Can't tell* — I see no file run %s's job is writing right now, under %s or anywhere else.", Esc(run), subject)
	case len(processGaps(gaps)) > 0:
		verdict = fmt.Sprintf(":large_yellow_circle: *Not that I can see* — none of the files run %s's job writes is under %s, but %s.", Esc(run), subject, st.processClause(processGaps(gaps)))
	default:
		verdict = fmt.Sprintf(":large_green_circle: *No* — none of the files run %s's job writes is under %s.", Esc(run), subject)
	}
	if len(files) > 0 && len(hits) == 0 && !scanFailed(gaps) {
		var where []string
		for _, fl := range files {
			s := Code(fl.path)
			if fl.mount != "" {
				s += " on " + Code(fl.mount)
				if fl.fstype != "" {
					s += " (" + Esc(fl.fstype) + ")"
				}
			}
			where = append(where, s)
		}
		only := "only "
		if len(files) > 3 {
			only = ""
		}
		verdict += " It writes " + only + listSome(where, 3) + "."
	}
	return Message{Title: run + " · writes", Sections: []string{verdict,
		fmt.Sprintf("That is the job's own files, by their paths, not %s itself: another process writing there, or a link or mount into it, is not in this answer. "+
			"To have %s guarded (every process's writes answered, a warning when output lands there), save a run file with `bot init --write` and add `protected: [%s]` to the run.",
			subject, subject, Esc(path))}}
}

// listSome is the first n of items and how many more: "`a`, `b` and 3 more".
func listSome(items []string, n int) string {
	if len(items) <= n {
		if len(items) > 1 {
			return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
		}
		return strings.Join(items, "")
	}
	return strings.Join(items[:n], ", ") + " and " + Plural(len(items)-n, "more", "more")
}
