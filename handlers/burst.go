package handlers

import (
	"fmt"
	"strings"

	"runwatch/reports"
)

// burstMax is how many posts of one kind one evaluation may send to one place (a channel, or a thread)
// before they go as one: twenty training nodes writing checkpoints to a protected /shared are twenty
// protected-write warnings, and twenty posts in a row bury the channel.
const burstMax = 3

// burstList is how many of a burst's warnings its one post lists before "and N more".
const burstList = 10

// coalesce puts each burst of posts (more than burstMax of one run and kind to one channel and thread in one
// evaluation) in one post listing them. A burst covers their keys: a burst of warnings is delivered, or not,
// with them (so their follow-ups thread under it); a burst of follow-ups in one thread (twenty resolutions at
// once) is one reply, and a burst of reminders that fails re-arms every one of them.
func coalesce(posts []Post) []Post {
	groups := map[string][]Post{}
	var order []string // group keys in the order of their first post
	for i, p := range posts {
		k := strings.Join([]string{p.Channel, p.ThreadRef, p.Run, p.Kind}, "\x00")
		if len(p.Covers) > 0 || p.Channel == "" || p.Kind == lostKind {
			k = fmt.Sprint("\x00", i) // stands for others already, or goes nowhere: alone
		}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], p)
	}
	out := make([]Post, 0, len(order))
	for _, k := range order {
		if g := groups[k]; len(g) <= burstMax {
			out = append(out, g...)
		} else {
			out = append(out, burstPost(g))
		}
	}
	return out
}

// burstPost is one post standing for ps, all of one run and kind to one place.
func burstPost(ps []Post) Post {
	first := ps[0]
	p := Post{Run: first.Run, Channel: first.Channel, Kind: first.Kind, ThreadRef: first.ThreadRef}
	for _, q := range ps {
		p.Covers = append(p.Covers, q.Key)
	}
	// One line per post, the same line once with a count (twenty resolutions say the same).
	var texts []string
	count := map[string]int{}
	for _, q := range ps {
		t := truncateRunes(strings.Join(strings.Fields(strings.Join(q.Message.Sections, " ")), " "), 300)
		if count[t] == 0 {
			texts = append(texts, t)
		}
		count[t]++
	}
	var lines []string
	for i, t := range texts {
		if i == burstList {
			// The warnings left out, not their distinct lines: ten listed of twenty is "and 10 more" even when
			// the ten left out all say the same.
			rest := 0
			for _, t := range texts[i:] {
				rest += count[t]
			}
			lines = append(lines, fmt.Sprintf("…and %d more.", rest))
			break
		}
		if n := count[t]; n > 1 {
			t += fmt.Sprintf(" (×%d)", n)
		}
		lines = append(lines, "• "+t)
	}
	// A burst has no "I'm on it" (which of them would it take?); Snooze silences the run's warnings.
	lead := fmt.Sprintf("%d at once, in one post:", len(ps))
	if followUp(first.Kind) {
		lead = fmt.Sprintf("%d of them at once:", len(ps))
	}
	title := first.Message.Title
	if title != "" {
		title += fmt.Sprintf(" (%d)", len(ps))
	}
	p.Message = reports.Message{Title: title, Sections: []string{lead, strings.Join(lines, "\n")}}
	return p
}
