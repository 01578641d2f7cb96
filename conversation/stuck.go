package conversation

import (
	"context"
	"strings"

	"runwatch/monitor"
	"runwatch/reports"
)

func handleStuck(ctx context.Context, b *Bot, q Query) Reply {
	rs, err := b.mon.RunStatus(ctx, q.Run.Name, monitor.Need{Progress: true})
	if err != nil {
		return ErrorReply("check progress", err)
	}
	m := reports.Message{Title: rs.Name + " · progress"}
	// "is it stuck?" and "is it still running?" want opposite answers to the same facts.
	stuckYes, movingYes, doneLead := "Yes, it looks stuck.", "No, it's moving.", "Not stuck"
	if asksIfMoving(q.Req.Text) {
		stuckYes, movingYes, doneLead = "No, it looks stuck.", "Yes, it's moving.", "No, it finished"
	}
	switch {
	case rs.ETA == nil:
		m.Sections = append(m.Sections, ":large_yellow_circle: *Can't tell* — "+noProgressReason(q, rs))
	case rs.ETA.State == "stalled":
		// One alarm: the ETA line's own ":rotating_light:" read "(!!) Yes, it looks stuck. (!!) Stalled since …".
		m.Sections = append(m.Sections, ":rotating_light: *"+stuckYes+"* "+strings.TrimPrefix(reports.ETALine(*rs.ETA, b.loc), ":rotating_light: "))
	case rs.ETA.State == "done":
		line := ":white_check_mark: *" + doneLead + ": it finished.*"
		if doneLead == "No, it finished" {
			line = ":white_check_mark: *No, it finished.*"
		}
		if rs.ETA.Reason != "" {
			line = ":white_check_mark: *" + doneLead + ":* " + reports.Esc(rs.ETA.Reason) + "."
		}
		if rs.Finish != nil {
			line += "\n" + reports.FinishLine(*rs.Finish, b.loc)
		}
		m.Sections = append(m.Sections, line)
	case rs.ETA.State == "running":
		line := ":large_green_circle: *" + movingYes + "*"
		if rs.Throughput != nil {
			line += " " + reports.ThroughputLine(*rs.Throughput) + "."
		}
		m.Sections = append(m.Sections, line)
	case rs.ETA.State == "unknown" && !rs.ETA.Rough && rs.ETA.StalledSince == nil && moving(rs.Throughput):
		// No ETA (no total, say) but the history is long enough to have been checked for a stall, and items or
		// tokens moved in its window: whether it is stuck does not wait for a total.
		m.Sections = append(m.Sections, ":large_green_circle: *"+movingYes+"* "+reports.ThroughputLine(*rs.Throughput)+".",
			reports.ETALine(*rs.ETA, b.loc))
	default:
		m.Sections = append(m.Sections, ":large_yellow_circle: *Can't tell yet* — "+reports.Esc(rs.ETA.Reason))
	}
	if rs.Progress != nil {
		m.Sections = append(m.Sections, reports.ProgressLine(*rs.Progress))
	}
	if l := reports.EngineLineBeside(rs, b.loc); l != "" {
		m.Sections = append(m.Sections, l)
	}
	m.Context = context1(rs)
	return Reply{Message: m, Data: map[string]any{"progress": rs.Progress, "eta": rs.ETA, "engines": rs.Engines, "problems": problemsData(rs.Problems)}}
}

// asksIfMoving reports whether a progress question asks after the good state ("is it still running?", "is
// it alive?", "still moving?"), whose answer is Yes when it moves, rather than the bad one ("is it stuck?").
func asksIfMoving(text string) bool {
	lower := strings.ToLower(text)
	return !anyPhrase(lower, []string{"stuck", "stall", "stalled", "hung", "hanging", "frozen", "dead"}) &&
		anyPhrase(lower, []string{"moving", "progressing", "alive", "running", "going"})
}

// moving says whether a throughput measured between samples saw items finish or tokens generated.
func moving(t *reports.Throughput) bool {
	return t != nil && !t.UntilFinish && t.WindowS > 0 && (t.TokensPerS > 0 || t.ItemsPerS > 0)
}
