package reports

import (
	"fmt"
	"strings"
	"time"
)

// The answers about a run's progress: when it will finish (AnswerETA), how fast it goes
// (AnswerThroughput) and whether it still moves (AnswerStuck). Each is a pure function of the run's
// status, as AnswerWhy is: the wording of an answer changes here, in one place. noProgress is why
// nothing is known of the run's progress, which only the caller can say (it depends on the run file):
// "no progress reported yet.", "no progress reading: `log /var/log/gen.log` failed (below).", or what to
// add to the run file.

// AnswerETA is the answer to "ETA?": the ETA with its range, the progress and the throughput, how the
// estimate got here (the finish of a finished run, else its last move), the engines, and the finish
// shares and drafter lines when they matter.
func AnswerETA(rs RunStatus, loc *time.Location, noProgress string) Message {
	lead := ""
	if rs.ETA == nil {
		lead = "ETA: unknown — " + noProgress
	}
	m := Message{Title: rs.Name + " · ETA", Sections: ETASections(rs, loc, lead)}
	// Every ETA answer says how it got here: the finish of a finished run, else the last move.
	if rs.Finish != nil {
		m.Sections = append(m.Sections, FinishLine(*rs.Finish, loc))
	} else if l := LastMoveLine(rs.Moves, rs.ETA, loc); l != "" {
		m.Sections = append(m.Sections, l)
	}
	if l := EngineLineBeside(rs, loc); l != "" {
		m.Sections = append(m.Sections, l)
	}
	if l := etaSignalLines(rs); l != "" {
		m.Sections = append(m.Sections, l)
	}
	m.Context = AnswerContext(rs)
	return m
}

// AnswerThroughput is the answer to "how fast are we going?": tokens and items per second, recent and
// over the run (the run's own figures once it finished), the finish, and the engines.
func AnswerThroughput(rs RunStatus, loc *time.Location, noProgress string) Message {
	m := Message{Title: rs.Name + " · throughput"}
	if rs.Throughput != nil {
		m.Sections = append(m.Sections, ThroughputBeside(*rs.Throughput, rs.Finish))
	} else {
		m.Sections = append(m.Sections, "Throughput: unknown — "+noProgress)
	}
	if rs.Finish != nil {
		m.Sections = append(m.Sections, FinishLine(*rs.Finish, loc))
	}
	if l := EngineLineBeside(rs, loc); l != "" {
		m.Sections = append(m.Sections, l)
	}
	m.Context = AnswerContext(rs)
	return m
}

// AnswerStuck is the answer to "is it stuck?" and, with asksIfMoving, to "is it still running?": the
// same facts, the opposite Yes and No. A run with no ETA is "can't tell" (with why), never "moving".
func AnswerStuck(rs RunStatus, loc *time.Location, asksIfMoving bool, noProgress string) Message {
	m := Message{Title: rs.Name + " · progress"}
	stuckYes, movingYes, doneLead := "Yes, it looks stuck.", "No, it's moving.", "Not stuck"
	if asksIfMoving {
		stuckYes, movingYes, doneLead = "No, it looks stuck.", "Yes, it's moving.", "No, it finished"
	}
	switch e := rs.ETA; {
	case e == nil:
		m.Sections = append(m.Sections, ":large_yellow_circle: *Can't tell* — "+noProgress)
	case e.State == StateStalled:
		// One alarm: the ETA line's own ":rotating_light:" read "(!!) Yes, it looks stuck. (!!) Stalled since …".
		m.Sections = append(m.Sections, ":rotating_light: *"+stuckYes+"* "+strings.TrimPrefix(ETALine(*e, loc), ":rotating_light: "))
	case e.State == StateDone:
		line := ":white_check_mark: *" + doneLead + ": it finished.*"
		if asksIfMoving {
			line = ":white_check_mark: *No, it finished.*"
		}
		if e.Reason != "" {
			line = ":white_check_mark: *" + doneLead + ":* " + Esc(e.Reason) + "."
		}
		if rs.Finish != nil {
			line += "\n" + FinishLine(*rs.Finish, loc)
		}
		m.Sections = append(m.Sections, line)
	case (e.State == StateRunning || e.State == StateUnknown && !e.Rough && e.StalledSince == nil && moving(rs.Throughput)) && serversSilent(rs.Engines):
		// Every server of the run is silent: the pace so far is no evidence the job moves now (it cannot
		// without them), and it is not stuck as far as anything seen says. The stall verdict waits for
		// several samples without progress; until then, say what went quiet.
		line := ":grey_question: *Can't tell* — the run's server does not answer (below)"
		if n := len(rs.Engines); n > 1 {
			line = fmt.Sprintf(":grey_question: *Can't tell* — none of the run's %d servers answers (below)", n)
		}
		if rs.Throughput != nil {
			line += "; before: " + ThroughputLine(*rs.Throughput)
		}
		m.Sections = append(m.Sections, line+".")
	case e.State == StateRunning && sinceStartOnly(rs.Throughput) && !serversBusy(rs.Engines) && !logFresh(rs.Throughput):
		// One look: the rate is the job's average since it started, which a job killed a second ago keeps. Only
		// a request running on its servers or a log that just changed says it moves now; without them, a
		// second look must tell.
		line := ":grey_question: *Can't tell yet* — one look so far"
		if rs.Throughput != nil {
			line += ": " + ThroughputLine(*rs.Throughput) + " is the average since the job started"
			if a := rs.Throughput.LogAgeS; a != nil {
				line += "; the log last changed " + Duration(*a) + " before this look"
			}
		}
		if serversIdle(rs.Engines) {
			line += "; its servers have no request running or waiting, so the job may have stopped"
		}
		m.Sections = append(m.Sections, line+". Ask again in a minute: a second look says whether it still moves.")
	case e.State == StateRunning:
		line := ":large_green_circle: *" + movingYes + "*"
		if rs.Throughput != nil {
			line += " " + ThroughputLine(*rs.Throughput) + "."
		}
		m.Sections = append(m.Sections, line)
	case e.State == StateUnknown && !e.Rough && e.StalledSince == nil && moving(rs.Throughput):
		// No ETA (no total, say) but the history is long enough to have been checked for a stall, and items or
		// tokens moved in its window: whether it is stuck does not wait for a total.
		m.Sections = append(m.Sections, ":large_green_circle: *"+movingYes+"* "+ThroughputLine(*rs.Throughput)+".", ETALine(*e, loc))
	default:
		m.Sections = append(m.Sections, ":large_yellow_circle: *Can't tell yet* — "+Esc(e.Reason))
	}
	if rs.Progress != nil {
		m.Sections = append(m.Sections, ProgressLine(*rs.Progress))
	}
	if l := EngineLineBeside(rs, loc); l != "" {
		m.Sections = append(m.Sections, l)
	}
	m.Context = AnswerContext(rs)
	return m
}

// serversSilent says whether the run has servers and none of them answers (a refusal, a deadline, a
// target Prometheus cannot scrape); one that answers without metrics is up.
func serversSilent(es []EngineStatus) bool {
	for _, e := range es {
		if e.OK || e.Answers {
			return false
		}
	}
	return len(es) > 0
}

// sinceStartOnly says whether the throughput is one sample's average since the job started: no evidence the
// job moves now.
func sinceStartOnly(t *Throughput) bool {
	return t == nil || t.SinceStart
}

// freshLogS is how recently a job log must have changed for one look to count it as work now: a job writing
// its progress every few items at a fraction of an item a second changes it within a minute.
const freshLogS = 60

// logFresh says whether one sample's job log changed within freshLogS of the look.
func logFresh(t *Throughput) bool {
	return t != nil && t.LogAgeS != nil && *t.LogAgeS <= freshLogS
}

// serversBusy says whether a server of the run that answered has a request running: work now.
func serversBusy(es []EngineStatus) bool {
	for _, e := range es {
		if e.OK && e.Running != nil && *e.Running > 0 {
			return true
		}
	}
	return false
}

// serversIdle says whether the run has servers, every one answered, and none has a request running or
// waiting.
func serversIdle(es []EngineStatus) bool {
	for _, e := range es {
		if !e.OK || e.Running == nil || *e.Running > 0 || e.Waiting != nil && *e.Waiting > 0 {
			return false
		}
	}
	return len(es) > 0
}

// moving says whether a throughput measured between samples saw items finish or tokens generated.
func moving(t *Throughput) bool {
	return t != nil && !t.UntilFinish && t.WindowS > 0 && (t.TokensPerS > 0 || t.ItemsPerS > 0)
}

// ETASections are the lines an ETA answer and an ETA warning share: a lead (the warning's reason,
// or why no ETA is known; "" for none), the ETA, the progress and the throughput, in one section.
func ETASections(rs RunStatus, loc *time.Location, lead string) []string {
	var lines []string
	if lead != "" {
		lines = append(lines, lead)
	}
	if rs.ETA != nil {
		lines = append(lines, ETALine(*rs.ETA, loc))
	}
	if rs.Progress != nil {
		lines = append(lines, ProgressLine(*rs.Progress))
	}
	if rs.Throughput != nil {
		lines = append(lines, ThroughputBeside(*rs.Throughput, rs.Finish))
	}
	return []string{strings.Join(lines, "\n")}
}

// etaSignalLines are the finish shares and drafter lines an ETA answer carries when they matter: many
// truncated or lost samples, a jump, a drafter that got worse (which slows the job too).
func etaSignalLines(rs RunStatus) string {
	var lines []string
	if rs.Quality.Matters() {
		lines = append(lines, QualityLine(*rs.Quality))
	}
	if rs.Drafter != nil && rs.Drafter.Drop != nil {
		lines = append(lines, DrafterLine(*rs.Drafter))
	}
	return strings.Join(lines, "\n")
}

// AnswerContext are the context lines an answer about a run ends with: its problems still live (a
// source down, a probe that timed out) and its notices (a log rotated).
func AnswerContext(rs RunStatus) []string {
	ctx := append([]string{}, ProblemContext(rs.LiveProblems())...)
	for _, n := range rs.Notices {
		ctx = append(ctx, Esc(n))
	}
	return ctx
}
