package posts

import (
	"fmt"
	"sort"
	"strings"

	"runwatch/reports"
)

// lostKind is the note a sampler posts, once per channel, after its alert memory was lost.
const lostKind = "alerts_lost"

// lostNoteMax is how many open warnings one note lists before "and N more".
const lostNoteMax = 20

// lostAlerts is what a sampler knows after alerts.json could not be restored (corrupt, truncated,
// unreadable: the state package set it aside): which warnings it had posted is unknown, so the
// warnings open in its first evaluations may be ones it posted before. For as many evaluations as
// the slowest warning takes to be confirmed, new warnings are listed in one note per channel
// instead of posted one by one; the note is then their thread, so their follow-ups go under it.
// The note's Covers name them, so that they are delivered (or not) with it, after a crash too.
type lostAlerts struct {
	ticks int // evaluations left to gather in
}

func newLostAlerts(policy AlertPolicy) *lostAlerts {
	ticks := 1
	for _, n := range policy.Confirm {
		ticks = max(ticks, n)
	}
	return &lostAlerts{ticks: ticks}
}

// gather takes the new top-level warnings out of posts and puts in their place one note per
// channel listing them.
func (l *lostAlerts) gather(a *Alerter, posts []Post) []Post {
	l.ticks--
	byChannel := map[string][]Post{}
	var out []Post
	for _, p := range posts {
		if p.ThreadRef != "" || p.followsUp() || p.Channel == "" {
			out = append(out, p)
			continue
		}
		byChannel[p.Channel] = append(byChannel[p.Channel], p)
	}
	channels := make([]string, 0, len(byChannel))
	for ch := range byChannel {
		channels = append(channels, ch)
	}
	sort.Strings(channels)
	for _, ch := range channels {
		held := byChannel[ch]
		var lines []string
		var covers []string
		for _, p := range held {
			covers = append(covers, p.Key)
		}
		for i, p := range held {
			if i == lostNoteMax {
				lines = append(lines, fmt.Sprintf("…and %d more.", len(held)-i))
				break
			}
			what := p.Message.Title
			if al := a.State.Active[p.Key]; al != nil && al.Summary != "" {
				what += ": " + al.Summary
			}
			lines = append(lines, "• "+reports.Esc(reports.TruncateRunes(what, 200)))
		}
		out = append(out, Post{Run: held[0].Run, Channel: ch, Kind: lostKind, Covers: covers, Message: reports.Message{
			Title: "runwatch lost its record of its warnings",
			Sections: []string{":information_source: runwatch lost its record of the warnings it had posted: its alerts.json could not be read when it started, and was set aside in the state directory. " +
				"So that warnings already posted are not posted again as new, the ones open now are listed here once; what becomes of them follows in this thread.",
				strings.Join(lines, "\n")}}})
	}
	return out
}
