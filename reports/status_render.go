package reports

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// This file renders a run's status: in full (the console's `status`, `bot status`, the "Full status" a
// Slack status offers) and chat-sized (RenderStatusBrief: what a channel sees, about ten lines), with
// the checklist and who marked its stages.

// RenderStatus renders a run's full status: the console's `status`, `bot status`, and the "Full status" of a
// status in Slack.
func RenderStatus(r RunStatus, now time.Time, loc *time.Location) Message {
	m := statusTop(r, loc)
	for _, w := range r.Storage.Warnings {
		m.Sections = append(m.Sections, r.Storage.WarningSeverity(w)+" "+w.Message)
	}
	if len(r.Plans) > 0 {
		var lines []string
		said := map[string]bool{} // plans sharing a target: "nothing written yet" once, not per plan
		for _, p := range r.Plans {
			lines = append(lines, p.Sentence)
			if mp := MeasuredFor(r.Measured, p.Name); mp != nil && !said[mp.Sentence] {
				said[mp.Sentence] = true
				lines = append(lines, mp.Sentence)
			}
		}
		m.Sections = append(m.Sections, strings.Join(lines, "\n"))
	}
	if len(r.Stages) > 0 {
		m.Sections = append(m.Sections, "*Checklist*\n"+Checklist(r.Stages))
	}
	m.Context = statusContext(r, now, loc)
	return m
}

// RenderStatusBrief is a run's status sized for a channel (about ten lines, not seventeen): how far, how
// fast and when, the servers, the storage verdict (a protected write, a plan that does not fit, named) and
// the checklist, a line each, with what failed in the small print. The sums of each plan, each writer and
// each stage's line are the full status's (RenderStatus), one press away.
func RenderStatusBrief(r RunStatus, now time.Time, loc *time.Location) Message {
	m := statusTop(r, loc)
	if len(r.Stages) > 0 {
		m.Sections = append(m.Sections, ChecklistLine(r.Stages))
	}
	m.Context = statusContext(r, now, loc)
	return m
}

// statusTop is what the full and the chat-sized status both open with: how far, how fast and when, the
// servers, the signals and the storage verdict.
func statusTop(r RunStatus, loc *time.Location) Message {
	m := Message{Title: r.Name + " · status"}
	m.Sections = append(m.Sections, statusHead(r, loc))
	if l := EngineLineBeside(r, loc); l != "" {
		m.Sections = append(m.Sections, l)
	}
	if l := SignalLines(r); len(l) > 0 {
		m.Sections = append(m.Sections, strings.Join(l, "\n"))
	}
	m.Sections = append(m.Sections, StorageVerdict(r.Storage, r.Plans))
	return m
}

// ChecklistLine is a checklist in one line: how many stages are done (named, up to three), the failed ones,
// and the next one with its state.
func ChecklistLine(stages []StageStatus) string {
	var done, failed []string
	var next *StageStatus
	for i, s := range stages {
		switch s.State {
		case StageDone:
			done = append(done, StageEmoji(s.State)+" *"+Esc(s.Name)+"*")
		case StageFailed:
			failed = append(failed, "*"+Esc(s.Name)+"*")
		default:
			if next == nil {
				next = &stages[i]
			}
		}
	}
	line := fmt.Sprintf("*Checklist* %d of %d done", len(done), len(stages))
	if len(done) > 0 && len(done) <= 3 {
		line += ": " + strings.Join(done, " ")
	}
	if len(failed) > 0 {
		line += " · :x: " + strings.Join(failed, ", ") + " failed"
	}
	if next != nil {
		line += " · next: " + StageEmoji(next.State) + " *" + Esc(next.Name) + "*"
		if next.Detail != "" {
			line += " — " + StageDetail(*next)
		}
	}
	return line
}

// PlanMisfit is a plan that does not fit, in one line: what it needs, what its mount has, how much is
// missing. The sum behind it is the plan's Sentence (the fit answer's).
func PlanMisfit(p PlanResult) string {
	need := p.BytesNeeded
	if p.BytesHigh > 0 {
		need = p.BytesHigh
	}
	line := fmt.Sprintf(":red_circle: *%s* does not fit: it needs %s", Esc(p.Name), Bytes(need))
	if p.FreeBytes != nil {
		line += fmt.Sprintf(", %s has %s free (%s short)", Code(p.Mount)+onHost(p.Host), Bytes(float64(*p.FreeBytes)), Bytes(need-float64(*p.FreeBytes)))
	}
	return line + "."
}

// statusHead is a status's first lines: progress, throughput, the ETA and its last move (or the finish), or
// why there is no progress.
func statusHead(r RunStatus, loc *time.Location) string {
	var head []string
	if r.Progress != nil {
		head = append(head, ProgressLine(*r.Progress))
	}
	if r.Throughput != nil {
		head = append(head, ThroughputBeside(*r.Throughput, r.Finish))
	}
	if r.ETA != nil {
		head = append(head, ETALine(*r.ETA, loc))
	}
	if r.Finish != nil {
		head = append(head, FinishLine(*r.Finish, loc))
	} else if l := LastMoveLine(r.Moves, r.ETA, loc); l != "" {
		head = append(head, l)
	}
	if len(head) == 0 {
		head = append(head, noProgressLine(r.Problems))
	}
	return strings.Join(head, "\n")
}

// statusContext is a status's small print: notices, what failed, a snooze, and when it was drawn.
func statusContext(r RunStatus, now time.Time, loc *time.Location) []string {
	var ctx []string
	for _, n := range r.Notices {
		ctx = append(ctx, Esc(n))
	}
	ctx = append(ctx, ProblemContext(r.LiveProblems())...)
	if r.Snoozed != nil && r.Snoozed.After(now) {
		ctx = append(ctx, ":zzz: warnings snoozed until "+SlackTime(*r.Snoozed, loc))
	}
	if age := StorageAge(r.Storage, now); age != "" {
		ctx = append(ctx, age)
	}
	return append(ctx, "as of "+SlackTime(now, loc))
}

// StageDetail is a stage's detail as mrkdwn: escaped, with who marked it as a mention.
func StageDetail(s StageStatus) string {
	d := Esc(s.Detail)
	if s.By != "" {
		d = strings.Replace(d, " by "+Esc(s.By)+" ", " by "+Who(s.By)+" ", 1)
	}
	return d
}

// slackUser is a Slack user id.
var slackUser = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// Who names a person in mrkdwn: a Slack user id as a mention (<@U…>, which plain text shows as @U…),
// anything else (console, a button's source) as it is, escaped.
func Who(user string) string {
	if slackUser.MatchString(user) {
		return "<@" + user + ">"
	}
	return Esc(user)
}

// StageEmoji is the checklist mark for a stage state.
func StageEmoji(state string) string {
	switch state {
	case StageDone:
		return ":white_check_mark:"
	case StageInProgress:
		return ":hourglass_flowing_sand:"
	case StageFailed:
		return ":x:"
	}
	return ":white_large_square:"
}

// Checklist renders stages as a todo list.
func Checklist(stages []StageStatus) string {
	var b strings.Builder
	for _, s := range stages {
		fmt.Fprintf(&b, "%s *%s*", StageEmoji(s.State), Esc(s.Name))
		if s.Detail != "" {
			b.WriteString(" — " + StageDetail(s))
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
