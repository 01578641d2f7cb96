package posts

import (
	"fmt"
	"strings"
	"time"

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
//
// cont, when set, says where a burst of a group's warnings was posted a moment ago ("" when none was): the
// group's warnings this evaluation are the same burst going on (a node pool failing over two samples), one
// reply in its thread listing them, however few.
func coalesce(posts []Post, cont func(group string) string) []Post {
	groups := map[string][]Post{}
	var order []string // group keys in the order of their first post
	for i, p := range posts {
		k := burstGroup(p)
		if len(p.Covers) > 0 || p.Channel == "" || p.Kind == lostKind || p.Edit != "" {
			k = fmt.Sprint("\x00", i) // stands for others already, goes nowhere, or edits a message: alone
		}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], p)
	}
	out := make([]Post, 0, len(order))
	for _, k := range order {
		g := groups[k]
		// Only a burst of warnings goes on: follow-ups already go to their warning's thread.
		top := g[0].ThreadRef == "" && !followUp(g[0].Kind) && !strings.HasPrefix(k, "\x00")
		ref := ""
		if top && cont != nil {
			ref = cont(k)
		}
		switch {
		case ref != "":
			p := burstPost(g)
			p.ThreadRef, p.Burst = ref, k
			p.Message.Title = ""
			p.Message.Sections[0] = fmt.Sprintf("%d more since the post above:", len(g))
			out = append(out, p)
		case len(g) <= burstMax:
			out = append(out, g...)
		default:
			p := burstPost(g)
			if top {
				p.Burst = k
			}
			out = append(out, p)
		}
	}
	return out
}

// Coalesce is coalesce without a burst going on: each burst of posts in one post.
func Coalesce(ps []Post) []Post { return coalesce(ps, nil) }

// burstGroup is the group a post coalesces with: one run and kind to one channel and thread.
func burstGroup(p Post) string {
	return strings.Join([]string{p.Channel, p.ThreadRef, p.Run, p.Kind}, "\x00")
}

// BurstRecord is a burst of warnings posted at the top level, kept for the evaluation after it: Ref is its
// message ("" until delivered), At when it was posted or last went on.
type BurstRecord struct {
	Ref string    `json:"ref,omitempty"`
	At  time.Time `json:"at"`
}

// burstWindow is how long after a burst (or its last addition) more warnings of its group go on in its thread:
// the next sample, with room for a late one. It is tied to the sampling interval, the pace warnings come at.
func burstWindow(interval time.Duration) time.Duration { return interval * 3 / 2 }

// coalesceBursts is coalesce, a burst posted within window before now going on in its thread. The bursts are
// recorded in the alert state with the intents (so a restarted bot goes on in the same thread) and their
// messages when Delivered; the records past their window are dropped.
func (a *Alerter) coalesceBursts(posts []Post, now time.Time, window time.Duration) []Post {
	for k, b := range a.State.Bursts {
		if now.Sub(b.At) > window {
			delete(a.State.Bursts, k)
		}
	}
	out := coalesce(posts, func(group string) string { return a.State.Bursts[group].Ref })
	for _, p := range out {
		if p.Burst == "" {
			continue
		}
		if a.State.Bursts == nil {
			a.State.Bursts = map[string]BurstRecord{}
		}
		b := a.State.Bursts[p.Burst]
		if p.ThreadRef == "" {
			b.Ref = "" // a new burst: its message is known once delivered
		}
		b.At = now
		a.State.Bursts[p.Burst] = b
	}
	return out
}

// burstPost is one post standing for ps, all of one run and kind to one place.
func burstPost(ps []Post) Post {
	first := ps[0]
	p := Post{Run: first.Run, Channel: first.Channel, Kind: first.Kind, ThreadRef: first.ThreadRef}
	paged := map[string]bool{}
	for _, q := range ps {
		p.Covers = append(p.Covers, q.Key)
		for _, m := range q.Mentions {
			if !paged[m] {
				paged[m] = true
				p.Mentions = append(p.Mentions, m) // paged once for the burst
			}
		}
	}
	// One line per post, the same line once with a count (twenty resolutions say the same).
	var texts []string
	count := map[string]int{}
	for _, q := range ps {
		t := reports.TruncateRunes(strings.Join(strings.Fields(strings.Join(q.Message.Sections, " ")), " "), 300)
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
