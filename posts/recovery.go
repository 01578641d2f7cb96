package posts

import (
	"strings"

	"runwatch/monitor"
	"runwatch/reports"
)

// This file is how a warning ends: whether an evaluation had the evidence to clear it (silence is none),
// what its resolution says, and the correction of a finish post that the job's progress contradicts.

// canClear reports whether ev had the evidence to show the condition of al (key k) is gone. Silence is
// none: a protected write clears only when every source that speaks for its mount answered (reports'
// Storage.Answered), not when Prometheus, the host's exporter or the scan of open files went quiet.
func canClear(al *ActiveAlert, k string, ev monitor.Evaluation) bool {
	kind := al.Kind
	failed := func(prefixes ...string) bool {
		for _, p := range ev.Run.Problems {
			for _, pre := range prefixes {
				if strings.HasPrefix(p.Probe, pre) {
					return true
				}
			}
		}
		return false
	}
	switch kind {
	case AlertProtected:
		return !failed("writers", "mounts") && ev.Run.Storage.Answered(warnedMount(al, k))
	case AlertOutput:
		return !failed("path ", "mounts")
	case AlertDiskFull:
		return !failed("statfs ", "mounts", "path ") && ev.Run.ETA != nil && ev.Run.ETA.State != reports.StateUnknown
	case AlertStall:
		return ev.Run.ETA != nil && (ev.Run.ETA.State == reports.StateRunning || ev.Run.ETA.State == reports.StateDone)
	case AlertFinishShare:
		// The last batch and the finish drop the jump (reports.Quality.At) without showing the share went
		// back: a warning raised before them stays open rather than resolve when nothing changed.
		return ev.Run.End() == reports.EndBusy
	}
	return true
}

// The summaries of a source's warning end with what is wrong with it, which its recovery replaces.
const (
	summaryUnreachable = " unreachable"
	summaryNotMetrics  = " answers, but not with metrics"
)

func recoveredText(al *ActiveAlert) string {
	switch al.Kind {
	case AlertStall:
		return al.Run + " is making progress again"
	case AlertProbe:
		if al.Summary == stateNotSaved {
			return "the state directory takes writes again"
		}
		if src, ok := strings.CutSuffix(al.Summary, summaryNotMetrics); ok {
			return src + " serves metrics again"
		}
		return strings.TrimSuffix(al.Summary, summaryUnreachable) + " answers again"
	case AlertProtected:
		return "nothing writes to the protected mount any more"
	case AlertDiskFull:
		return "the disk now outlasts the job"
	}
	// The summary of a warning recorded before summaries left out their glyph may still start with one.
	return reports.Unglyphed(al.Summary) + " no longer holds"
}

// correctedSuffix ends the kind of a post that corrects an earlier one in place.
const correctedSuffix = "_corrected"

// finishContradicted reports whether ev's progress says the run is not finished after all: items left,
// and an estimate that is not done.
func finishContradicted(ev monitor.Evaluation) bool {
	p := ev.Run.Progress
	return p != nil && p.Total > 0 && p.Done < p.Total && (ev.Run.ETA == nil || ev.Run.ETA.State != reports.StateDone)
}

// finishCorrection is what a contradicted finish post becomes: "synth-25k is not finished: 311 / 25,000 done".
func finishCorrection(rs reports.RunStatus) reports.Message {
	line := ":warning: *" + reports.Esc(rs.Name) + " is not finished* (corrected): " + reports.ProgressLine(*rs.Progress) +
		". An earlier reading said every item was done; the job's progress since says otherwise. A real finish is announced when it comes."
	return reports.Message{Title: rs.Name + " · not finished", Sections: []string{line}}
}

// warnedMount is the mount a storage warning is about: its key's last part, a protected path or
// "host:path" for another host's.
func warnedMount(al *ActiveAlert, k string) string {
	return strings.TrimPrefix(k, al.Run+"/"+al.Kind+"/")
}

// protectedRecovered says a protected write is over, naming the mount and what the evidence still could
// not see: "nothing writes to /shared on host gpu-2 any more". "Nothing writes to the protected mount"
// over processes it could not inspect said more than it knew.
func protectedRecovered(mount string, st reports.Storage) string {
	where := mount
	if h, p, ok := strings.Cut(mount, ":"); ok && !strings.HasPrefix(mount, "/") {
		where = p + " on host " + h
	}
	if unseen := st.Unseen(mount); unseen != "" {
		return "nothing I can see writes to " + where + " any more (" + unseen + ")"
	}
	return "nothing writes to " + where + " any more"
}
