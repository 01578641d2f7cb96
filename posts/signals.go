package posts

import (
	"runwatch/reports"
)

// Warning kinds for the engines' signals.
const (
	AlertFinishShare = "finish_share" // a finish reason's share jumped (truncated, aborted, failed)
	AlertDrafterDrop = "drafter_drop" // the drafter's acceptance fell
)

// signalConditions are the warnings the engines' signals raise.
func signalConditions(rs reports.RunStatus) []condition {
	var out []condition
	if q := rs.Quality; q != nil && q.Jump != nil {
		out = append(out, condition{kind: AlertFinishShare, key: rs.Name + "/" + AlertFinishShare + "/" + q.Jump.Reason,
			summary: reports.Unglyphed(reports.PlainText(reports.JumpLine(*q.Jump, q.MaxTokens))),
			msg: reports.Message{Title: rs.Name + " · finishes changed", Sections: []string{
				reports.JumpLine(*q.Jump, q.MaxTokens), reports.QualityLine(reports.Quality{Finished: q.Finished, Shares: q.Shares, MaxTokens: q.MaxTokens}) +
					"\nThe samples finished since then may need filtering or a rerun; check `max_tokens` and the client's timeouts."}}})
	}
	if d := rs.Drafter; d != nil && d.Drop != nil {
		out = append(out, condition{kind: AlertDrafterDrop, key: rs.Name + "/" + AlertDrafterDrop,
			summary: reports.Unglyphed(reports.PlainText(reports.DropLine(*d.Drop))),
			msg: reports.Message{Title: rs.Name + " · drafter acceptance fell", Sections: []string{
				reports.DropLine(*d.Drop), reports.DrafterLine(reports.Drafter{AcceptRate: d.AcceptRate, TokensPerStep: d.TokensPerStep, PerPos: d.PerPos, DraftTokens: d.DraftTokens}) +
					"\nFewer accepted tokens per step means slower generation; the prompts may have moved away from what the drafter was trained on."}}})
	}
	return out
}
