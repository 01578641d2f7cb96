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
	// "is it stuck?" and "is it still running?" want opposite answers to the same facts.
	m := reports.AnswerStuck(rs, b.loc, asksIfMoving(q.Req.Text), noProgressReason(q, rs))
	return Reply{Message: m, Data: map[string]any{"progress": rs.Progress, "eta": rs.ETA, "engines": rs.Engines, "problems": problemsData(rs.Problems)}}
}

// asksIfMoving reports whether a progress question asks after the good state ("is it still running?", "is
// it alive?", "still moving?"), whose answer is Yes when it moves, rather than the bad one ("is it stuck?").
func asksIfMoving(text string) bool {
	lower := strings.ToLower(text)
	return !anyPhrase(lower, []string{"stuck", "stall", "stalled", "hung", "hanging", "frozen", "dead"}) &&
		anyPhrase(lower, []string{"moving", "progressing", "alive", "running", "going"})
}
