package reports

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// NoProgressLeft is what's left of a run with no progress source; the conversation puts why in its place for the
// built-in default run, as for NoProgressConfigured.
const NoProgressLeft = "I can't count the items left: the run has no progress source (add `log:`, `metrics:` or `prometheus:` to the run file)."

// AnswerLeft answers "what's left?": the items still to do, the checklist stages not done yet, and what
// blocks each (a stall, a server down, an earlier stage, a plan that does not fit, output on a protected mount).
func AnswerLeft(r RunStatus, loc *time.Location) Message {
	m := Message{Title: r.Name + " · what's left"}
	var items []string
	switch {
	case r.Progress == nil:
		if failed := failedProgressSources(r.Problems); len(failed) > 0 {
			items = append(items, fmt.Sprintf(":red_circle: I can't count the items left: %s failed (details below).", strings.Join(failed, ", ")))
		} else {
			items = append(items, NoProgressLeft)
		}
	case r.ETA != nil && r.ETA.State == StateDone:
		s := fmt.Sprintf(":white_check_mark: *No items left*: all %s are done", Count(float64(r.Progress.Done)))
		if r.Progress.ServerCount() {
			// The servers' counter reaching the total is all the finish there is to go on: say whose count it is.
			s += ", " + serverCountNote
		}
		s += "."
		if r.Finish != nil {
			s += " " + FinishLine(*r.Finish, loc)
		}
		items = append(items, s)
	case r.Progress.Total <= 0:
		s := fmt.Sprintf("%s items done; the total is not known, so I can't say how many are left (set `total:` in the run file).",
			Count(float64(r.Progress.Done)))
		if r.Progress.ServerCount() {
			s += " " + serverCountSentence
		}
		items = append(items, s)
	default:
		left := r.Progress.Total - r.Progress.Done
		s := fmt.Sprintf("*%s of %s items left* (%s)", Count(float64(left)), Count(float64(r.Progress.Total)),
			Percent(float64(left)/float64(r.Progress.Total)))
		if r.ETA != nil && r.ETA.TokensPerItem > 0 {
			s += fmt.Sprintf(", about %s tokens at ~%s tokens each", Tokens(float64(left)*r.ETA.TokensPerItem), Count(r.ETA.TokensPerItem))
		}
		s += "."
		if r.Progress.ServerCount() {
			s += " " + serverCountSentence
		}
		items = append(items, s)
		if r.ETA != nil {
			items = append(items, ETALine(*r.ETA, loc))
		}
	}
	if r.ETA != nil && r.ETA.State == StateStalled {
		items = append(items, ":rotating_light: Blocked: no progress (see above); nothing finishes until it moves again.")
	}
	down := 0
	for _, e := range r.Engines {
		if !e.OK {
			down++
		}
	}
	if down > 0 && r.End() != EndDone { // nothing is left to slow down: servers are stopped at the finish
		items = append(items, fmt.Sprintf(":red_circle: Slowed: %d of %d engines are down.", down, len(r.Engines)))
	}
	m.Sections = append(m.Sections, strings.Join(items, "\n"))

	switch {
	case len(r.Stages) == 0:
		m.Sections = append(m.Sections, "No checklist is configured (add `stages:` to the run file to track the steps after generation).")
	default:
		var lines []string
		blocker := ""
		for _, s := range r.Stages {
			if s.State == StageDone {
				continue
			}
			line := fmt.Sprintf("%s *%s*", StageEmoji(s.State), Esc(s.Name))
			switch s.State {
			case StageFailed:
				line += " — failed"
			case StageInProgress:
				line += " — in progress"
			case StagePending:
				if s.Unchecked {
					line += " — its check failed"
					break
				}
				fallthrough
			default:
				if blocker != "" {
					line += " — waits on " + Code(blocker)
				} else {
					line += " — not started"
				}
			}
			if s.Detail != "" {
				line += ": " + StageDetail(s)
			}
			lines = append(lines, line)
			if blocker == "" {
				blocker = s.Name
			}
		}
		if len(lines) == 0 {
			m.Sections = append(m.Sections, fmt.Sprintf(":white_check_mark: Every stage of the checklist is done (%d).", len(r.Stages)))
		} else {
			m.Sections = append(m.Sections, fmt.Sprintf("*Stages left* (%d of %d)\n", len(lines), len(r.Stages))+strings.Join(lines, "\n"))
		}
	}

	var risks []string
	misfits := 0
	for _, p := range r.Plans {
		if p.Fits != nil && !*p.Fits {
			risks = append(risks, PlanMisfit(p)) // a line each: the sums are the fit answer's
			misfits++
		}
	}
	if misfits > 0 {
		risks[len(risks)-1] += " Ask “will it fit?” for the sums and what would fit."
	}
	for _, w := range r.Storage.Warnings {
		risks = append(risks, r.Storage.WarningSeverity(w)+" "+w.Message)
	}
	if len(risks) > 0 {
		m.Sections = append(m.Sections, "*In the way*\n"+strings.Join(risks, "\n"))
	}
	return m
}

// AnswerSafe answers "is /shared safe?": the protected mounts' verdict, leading with the risk — a process
// writing there now, or an output that will land there once the job writes it.
func AnswerSafe(run string, st Storage, t Target) Message {
	m := Message{Title: run + " · protected mounts"}
	var mounts []PathInfo
	for _, pm := range st.ProtectedMounts {
		if t.Path == "" || pm.Path == t.Path || pm.Path == t.Resolved || Under(t.Path, pm.Path) || Under(t.Resolved, pm.Path) || Under(pm.Path, t.Path) {
			mounts = append(mounts, pm)
		}
	}
	if len(st.ProtectedMounts) == 0 || len(mounts) == 0 {
		w := AnswerWrites(run, st, t)
		if t.Path != "" && len(st.ProtectedMounts) > 0 {
			// The writes answer's own "Yes —" or "No —" answers "is anything writing?", not "is it safe?": after
			// "is /data safe?", "Yes — 1 process is writing to /data" read as both. The count says it alone.
			v := w.Sections[0]
			for _, lead := range []string{":large_green_circle: *No* — ", "*Yes* — "} {
				if rest, ok := strings.CutPrefix(v, lead); ok && rest != "" {
					v = strings.ToUpper(rest[:1]) + rest[1:]
				}
			}
			w.Sections[0] = fmt.Sprintf("%s is not one of run %s's protected mounts, so no write there breaks the run file's rules; here is what writes to it. ", Code(t.Path), Esc(run)) + v
		}
		w.Title = m.Title
		return w
	}
	in := func(p string) bool {
		for _, pm := range mounts {
			if p == pm.Path {
				return true
			}
		}
		return false
	}
	var names []string
	for _, pm := range mounts {
		names = append(names, Code(pm.Path))
	}
	subject := strings.Join(names, ", ")
	var writers []WriterInfo
	for _, w := range st.Writers {
		if w.Protected && in(w.ProtectedPath) {
			writers = append(writers, w)
		}
	}
	var landing []PathInfo
	for _, p := range st.OutputsInProtected() {
		if in(p.ProtectedPath) {
			landing = append(landing, p)
		}
	}
	gaps := st.subjectGaps(t)
	unseen := hostGaps(gaps)
	var verdict string
	switch {
	case len(writers) > 0:
		verdict = fmt.Sprintf("%s *No* — %s writing to %s now.", ProtectedSeverity(true, len(landing)), Plural(st.writingCount(writers, protectedPaths(mounts)...), "process is", "processes are"), subject)
	case len(landing) > 0 && st.ScanError == "":
		var outs []string
		for _, p := range landing {
			outs = append(outs, Code(filepath.Base(p.Path)))
		}
		// One "but": "nothing writes there now, but 1 output resolves inside it" after "Not yet, but" read as a
		// second turn, and "nothing writes" said more than a scan with a process it cannot see knows.
		verdict = fmt.Sprintf("%s *Not yet, but* %s will land in %s: %s inside it; no writes seen there yet.",
			ProtectedSeverity(false, len(landing)), strings.Join(outs, " and "), Code(filepath.Base(landing[0].ProtectedPath)), Plural(len(landing), "output resolves", "outputs resolve"))
		if len(unseen) > 0 {
			verdict += " *" + cantTell(unseen) + "."
		}
	case scanFailed(gaps):
		verdict = fmt.Sprintf(":warning: *Can't tell* — I could not scan open files: %s.", Esc(st.ScanError))
		if len(landing) > 0 {
			verdict += fmt.Sprintf(" And %s inside %s.", Plural(len(landing), "output resolves", "outputs resolve"), subject)
		}
	case len(unseen) > 0:
		// Silence from a host is not safety: what could not be seen leads, what was seen follows.
		verdict = ":grey_question: *" + cantTell(unseen) + ". " + st.seenHere(subject, gaps) + "; no output resolves inside it."
	case len(processGaps(gaps)) > 0:
		verdict = fmt.Sprintf(":large_yellow_circle: *Probably* — no writes seen to %s and no output resolves inside it, but %s.",
			subject, st.processClause(processGaps(gaps)))
	case (st.Invisible > 0 || st.ScanError != "") && len(st.quietFor(t)) > 0:
		verdict = ":large_green_circle: *Yes* — " + quietClause(st.quietFor(t)) + st.unseenNeedNot() + ", and no output resolves inside it."
	default:
		verdict = fmt.Sprintf(":large_green_circle: *Yes* — nothing writes to %s and no output resolves inside it.", subject)
	}
	m.Sections = append(m.Sections, verdict)
	if len(writers) > 0 {
		m.Sections = append(m.Sections, writerLines(writers, st.WritersOmitted))
	}
	if len(landing) > 0 {
		var lines []string
		for _, p := range landing {
			lines = append(lines, "• "+st.pathLine(p))
		}
		advice := "Move the output (or its symlink) off the protected mount before the job writes it."
		if len(writers) > 0 {
			advice = "Move the output (or its symlink) off the protected mount, and what is already written there."
		}
		m.Sections = append(m.Sections, "*Outputs inside protected mounts*\n"+strings.Join(lines, "\n")+"\n"+advice)
	}
	if pg := processGaps(gaps); len(pg) > 0 && (len(writers) > 0 || len(landing) > 0) {
		m.Context = append(m.Context, upperFirst(st.processClause(pg)))
	}
	if scanFailed(gaps) && len(writers) > 0 {
		m.Context = append(m.Context, fmt.Sprintf(":warning: On this host I could not scan open files: %s.", Esc(st.ScanError)))
	}
	if len(unseen) > 0 && len(writers) > 0 {
		m.Context = append(m.Context, ":grey_question: *"+cantTell(unseen)+".")
	}
	return m
}
