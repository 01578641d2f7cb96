package slackapp

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"runwatch/conversation"
	"runwatch/monitor"
	"runwatch/posts"
	"runwatch/reports"
)

// This file is the App Home: app_home_opened publishes (views.publish) every run the user may see,
// with progress, the ETA and its range, the storage verdict, the checklist, the open warnings and
// the same buttons as the channel posts. A Home tab holds at most 100 blocks: runs that do not fit
// whole are listed one line each, with a note saying so.

// Limits of the Home tab.
const (
	homeMaxBlocks   = 100
	homeMaxWarnings = 5 // per run; more are counted in one line
	homeSectionMax  = 3000
)

// publishHome builds the user's Home tab and publishes it. dm is the user's DM channel with the bot
// (from app_home_opened); it rides along as the view's metadata, so presses on the view are answered
// there and checked against the allow-lists as direct messages.
func (s *App) publishHome(ctx context.Context, user, dm string) error {
	sctx, cancel := context.WithTimeout(ctx, s.bot.Budget)
	st := s.bot.Monitor().Status(sctx, monitor.All)
	cancel()
	req := conversation.Request{Channel: dm, User: user, Source: "home"}
	var runs []reports.RunStatus
	for _, rs := range st.Runs {
		if r, ok := s.bot.Monitor().Config().RunByName(rs.Name); ok && s.bot.AllowedRequest(req, r) {
			runs = append(runs, rs)
		}
	}
	blocks := s.homeBlocks(runs, s.bot.Monitor().Now())
	return s.api.PublishHome(ctx, user, dm, blocks)
}

// home answers app_home_opened.
func (s *App) home(ctx context.Context, user, dm string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := s.publishHome(ctx, user, dm)
	s.metrics.Posted("home", err)
	if err != nil {
		s.log.Warn("App Home not published", "err", err)
	}
}

// homeRun is one run's part of the Home tab.
type homeRun struct {
	rs       reports.RunStatus
	warnings []posts.OpenWarning
}

// homeBlocks lays out the Home tab within Slack's 100 blocks: runs with open warnings first, each
// in full while it fits, the rest as one line each.
func (s *App) homeBlocks(runs []reports.RunStatus, now time.Time) []slack.Block {
	var hs []homeRun
	for _, rs := range runs {
		hs = append(hs, homeRun{rs: rs, warnings: s.Claims.Open(rs.Name)})
	}
	sort.SliceStable(hs, func(i, j int) bool {
		if (len(hs[i].warnings) > 0) != (len(hs[j].warnings) > 0) {
			return len(hs[i].warnings) > 0
		}
		return hs[i].rs.Name < hs[j].rs.Name
	})
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "runwatch", false, false)),
	}
	for _, h := range s.api.HeldChannels() {
		// A channel that refuses posts is what to fix first: its runs' warnings and statuses go nowhere.
		blocks = append(blocks, section(fmt.Sprintf(":warning: runwatch cannot post in %s (%s): %s. Its warnings and statuses are held until then.",
			channelRef(h.Channel), reports.Esc(h.Code), h.Advice(channelRef(h.Channel)))))
	}
	blocks = append(blocks,
		slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, fmt.Sprintf("%s you may see · as of %s · `%s status &lt;run&gt;` in a channel for the whole picture",
			reports.Plural(len(hs), "run", "runs"), reports.SlackTime(now, s.bot.Location()), s.bot.SlashName("/runwatch")), false, false)))
	if len(hs) == 0 {
		return append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType,
			"There is no run for you here: runwatch shows runs where it may answer you (its `allowed_channels`; direct messages and this tab for admins).", false, false), nil, nil))
	}
	full := 0
	for _, h := range hs {
		part := s.homeRunBlocks(h)
		// Keep room for the one-line list of the runs left (two blocks: a note and the list).
		reserve := 0
		if full+1 < len(hs) {
			reserve = 2 + (len(hs)-full-1)/25
		}
		if len(blocks)+len(part)+reserve > homeMaxBlocks {
			break
		}
		blocks = append(blocks, part...)
		full++
	}
	if rest := hs[full:]; len(rest) > 0 {
		blocks = append(blocks, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, fmt.Sprintf(
			"%s more in brief: a Home tab holds %d blocks. Ask `%s status &lt;run&gt;` for one of them.", reports.Plural(len(rest), "run", "runs"), homeMaxBlocks, s.bot.SlashName("/runwatch")), false, false)))
		var lines []string
		for _, h := range rest {
			lines = append(lines, homeLine(h))
		}
		// A message's own rendering splits the list into sections on line boundaries.
		for _, b := range (reports.Message{Sections: []string{strings.Join(lines, "\n")}}).Blocks() {
			if len(blocks) == homeMaxBlocks {
				break
			}
			blocks = append(blocks, b)
		}
	}
	return blocks
}

// homeRunBlocks is one run in full: its status, checklist, open warnings (each with its own
// "I'm on it" while nobody took it) and the status buttons.
func (s *App) homeRunBlocks(h homeRun) []slack.Block {
	rs := h.rs
	var head []string
	head = append(head, "*"+reports.Esc(rs.Name)+"*")
	if rs.Progress != nil {
		head = append(head, reports.ProgressLine(*rs.Progress))
	}
	if rs.Throughput != nil {
		head = append(head, reports.ThroughputLine(*rs.Throughput))
	}
	if rs.ETA != nil {
		head = append(head, reports.ETALine(*rs.ETA, s.bot.Location()))
	}
	head = append(head, reports.StorageVerdict(rs.Storage, rs.Plans))
	out := []slack.Block{section(strings.Join(head, "\n"))}
	if len(rs.Stages) > 0 {
		out = append(out, section("*Checklist*\n"+reports.Checklist(rs.Stages)))
	}
	for i, w := range h.warnings {
		if i == homeMaxWarnings {
			out = append(out, section(fmt.Sprintf("…and %d more open warnings; they are in %s.", len(h.warnings)-i, reports.Esc(w.Channel))))
			break
		}
		text := fmt.Sprintf(":warning: %s — since %s", reports.Esc(w.Summary), reports.SlackTime(w.Since, s.bot.Location()))
		var acc *slack.Accessory
		if cl, ok := s.Claims.Get(w.Key); ok {
			text += fmt.Sprintf(" · :eyes: <@%s> is on it", cl.User)
		} else {
			acc = slack.NewAccessory(slack.NewButtonBlockElement(conversation.ActTake, "", slack.NewTextBlockObject(slack.PlainTextType, "I'm on it", false, false)))
		}
		ref := conversation.ControlRef{Run: rs.Name, Key: w.Key}.Encode() // within 255: a long key travels as its digest
		out = append(out, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, reports.TruncateRunes(text, homeSectionMax), false, false), nil, acc,
			slack.SectionBlockOptionBlockID(ref)))
	}
	if b := s.bot.StatusControls(rs).Block(); b != nil {
		out = append(out, b)
	}
	return append(out, slack.NewDividerBlock())
}

func section(text string) slack.Block {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, reports.TruncateRunes(text, homeSectionMax-1), false, false), nil, nil)
}

// homeLine is a run in one line: its ETA and how many warnings are open.
func homeLine(h homeRun) string {
	line := "• *" + reports.Esc(h.rs.Name) + "*"
	switch e := h.rs.ETA; {
	case e == nil:
		line += " — no progress yet"
	case e.State == reports.StateRunning && e.Seconds != nil:
		line += " — ETA " + reports.Duration(*e.Seconds)
		if e.LowS != nil && e.HighS != nil {
			line += reports.Range(*e.Seconds, *e.LowS, *e.HighS)
		}
	default:
		line += " — " + reports.Esc(e.State)
	}
	if h.rs.Progress != nil && h.rs.Progress.Total > 0 {
		line += " · " + reports.Percent(float64(h.rs.Progress.Done)/float64(h.rs.Progress.Total)) + " done"
	}
	if n := len(h.warnings); n > 0 {
		line += " · :warning: " + reports.Plural(n, "open warning", "open warnings")
	}
	return line
}
