package slackapp

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"runwatch/conversation"
	"runwatch/monitor"
	"runwatch/posts"
	"runwatch/reports"
)

// This file answers button presses (block_actions), which both transports hand over after their own
// checks: HTTP mode verifies the signature and refuses replays with the same code as events and
// commands; Socket Mode drops redelivered envelopes. A press is turned back into a command and
// asked through Bot.Ask, so allow-lists and the admins-only rule are the commands' own; then the
// message the button belongs to is edited in place to show the new state.

// stateBlockID marks the context block that says who did what on a warning.
const stateBlockID = "rw_state"

// intentCleared marks the answer to "I'm on it" on a warning that has cleared.
const intentCleared = "cleared"

// press is one button press, from either transport.
type press struct {
	action, arg string
	ref         conversation.ControlRef
	user        string
	// channel is where the message is; for the App Home it is the user's DM with the bot, which
	// the published view carries as its private_metadata.
	channel, channelName string
	messageTS, threadTS  string
	ephemeral, home      bool
	responseURL          string
	text                 string        // the message's fallback text
	blocks               []slack.Block // the message's blocks: a warning is rebuilt from them
}

// pressActions is the allow-list of what a press may do.
var pressActions = map[string]bool{conversation.ActSnooze: true, conversation.ActUnsnooze: true, conversation.ActTake: true, conversation.ActStage: true, conversation.ActLogs: true,
	conversation.ActDetails: true}

var slackUserID = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// interaction starts answering the presses of one interactivity payload and returns at once
// (Slack wants its acknowledgement within 3 s). Anything that is not a press on one of runwatch's
// own buttons is ignored. It reports false when a press was refused for want of room to remember it
// (admitFull): the transport answers so that Slack shows the presser it did not go through.
func (s *App) interaction(cb slack.InteractionCallback) bool {
	if cb.Type != slack.InteractionTypeBlockActions || !slackUserID.MatchString(cb.User.ID) {
		s.metrics.Event("ignored")
		return true
	}
	admitted := true
	home := cb.Container.Type == "view" || cb.View.Type == slack.VTHomeTab
	for _, a := range cb.ActionCallback.BlockActions {
		ref, ok := conversation.ParseRef(a.BlockID)
		if ok {
			ref, ok = s.bot.Resolve(ref, s.openKeys()) // a long run name or key travels as its digest
		}
		action, arg := a.ActionID, a.Value
		if a.ActionID == reports.MenuID {
			action, arg, _ = strings.Cut(a.SelectedOption.Value, ":")
		}
		if !ok || !pressActions[action] {
			s.log.Debug("Slack interaction ignored", "action_id", a.ActionID, "block_id", a.BlockID)
			s.metrics.Event("ignored")
			continue
		}
		// Slack may deliver a press twice (a retry after a slow acknowledgement, a second
		// envelope): the same user, action and time is one press.
		if a.ActionTs != "" {
			switch s.seen.admit("press:" + cb.User.ID + "\x00" + a.ActionTs + "\x00" + a.BlockID + "\x00" + a.ActionID) {
			case admitSeen:
				s.metrics.Event("duplicate")
				continue
			case admitFull:
				s.metrics.Event("busy")
				admitted = false
				continue
			}
		}
		p := press{action: action, arg: arg, ref: ref, user: cb.User.ID, channelName: cb.Channel.Name,
			messageTS: cb.Container.MessageTs, threadTS: cb.Container.ThreadTs, ephemeral: cb.Container.IsEphemeral,
			home: home, responseURL: cb.ResponseURL, text: cb.Message.Text, blocks: cb.Message.Blocks.BlockSet}
		switch {
		case home:
			p.channel = cb.View.PrivateMetadata
		case cb.Container.ChannelID != "":
			p.channel = cb.Container.ChannelID
		default:
			p.channel = cb.Channel.ID
		}
		if p.messageTS == "" {
			p.messageTS = cb.Message.Timestamp
		}
		// Presses count against the presser's rate limit as questions do: each is an evaluation and an
		// edit, and a flood of them would take every answer slot from the channel.
		if ok, wait, warned := s.limiter.allow(p.user); !ok {
			s.metrics.Event("rate_limited")
			// Told only where the press itself would be answered: a Home view's "channel" that is not a DM
			// would have the note posted for a whole channel.
			if !warned && pressRefusal(p) == "" {
				msg := rateLimitedTo("pressed several buttons", "Press", wait).Message
				s.detach(func(ctx context.Context) { s.tell(ctx, p, msg) })
			}
			continue
		}
		s.metrics.Event("pressed")
		s.background(func(ctx context.Context) { s.press(ctx, p) })
	}
	return admitted
}

// openKeys are the keys of the open warnings, which a press's key digest is matched against.
func (s *App) openKeys() []string {
	var keys []string
	for _, w := range s.Claims.Open("") {
		keys = append(keys, w.Key)
	}
	return keys
}

// pressRefusal says why a press has nowhere to be answered ("" when it has): no channel to check the
// allow-lists against (an App Home view published without one), or an App Home view whose metadata is
// not the user's DM with the bot. That is not a view runwatch published, and answering it (log lines
// meant for the presser, a note to wait) would post for a whole channel, under the DM's allow-list rule.
func pressRefusal(p press) string {
	if !strings.HasPrefix(p.channel, "C") && !strings.HasPrefix(p.channel, "G") && !strings.HasPrefix(p.channel, "D") {
		return "no channel to check"
	}
	if p.home && !strings.HasPrefix(p.channel, "D") {
		return "an App Home view whose metadata is not a DM"
	}
	return ""
}

// press answers one press: the command it stands for, then the message edited in place.
func (s *App) press(ctx context.Context, p press) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if why := pressRefusal(p); why != "" {
		s.log.Info("button press refused: "+why, "action", p.action)
		return
	}
	req := conversation.Request{Run: p.ref.Run, Channel: p.channel, ChannelName: p.channelName, User: p.user, Source: "button"}
	if p.home {
		req.Source = "home"
	}
	var rep conversation.Reply
	switch p.action {
	case conversation.ActDetails:
		s.details(ctx, req, p)
		return
	case conversation.ActTake:
		rep = s.take(req, p.ref)
	case conversation.ActSnooze:
		req.Command, req.Args = "snooze", []string{p.arg}
	case conversation.ActUnsnooze:
		req.Command, req.Args = "unsnooze", []string{}
	case conversation.ActStage:
		req.Command, req.Args = "stage", []string{p.arg, "done"}
	case conversation.ActLogs:
		req.Command, req.Args = "logs", []string{}
	}
	if req.Command != "" {
		rep = s.bot.Ask(ctx, req)
	}
	if rep.Refused || rep.Ephemeral {
		if rep.Refused {
			s.metrics.Event("refused")
		}
		s.tell(ctx, p, rep.Message)
		if rep.Intent == intentCleared && !p.home && !p.ephemeral {
			// A button on a warning that has cleared is never left to be pressed again.
			if err := s.api.UpdateBlocks(ctx, p.channel, p.messageTS, p.text, clearedBlocks(p.blocks)); err != nil {
				s.log.Warn("cleared warning not updated after a press", "run", p.ref.Run, "err", err)
			}
		}
		return
	}
	if err := s.refresh(ctx, p); err != nil {
		// The change holds; say so to the presser, since the message cannot show it.
		s.log.Warn("message not updated after a button press", "action", p.action, "run", p.ref.Run, "err", err)
		rep.Message.Sections = append(rep.Message.Sections, "_The message could not be updated to show it; the change holds all the same._")
		s.tell(ctx, p, rep.Message)
		return
	}
	if strings.Contains(rep.Message.Mrkdwn(), "not saved yet") {
		s.tell(ctx, p, rep.Message)
	}
}

// details answers "Full status" under a chat-sized status: the run's status in full, in the thread of the
// message pressed (so the channel keeps its ten lines), for whoever may ask about the run there.
func (s *App) details(ctx context.Context, req conversation.Request, p press) {
	run, ok := s.bot.Config().RunByName(p.ref.Run)
	if !ok || !s.bot.AllowedRequest(req, run) {
		s.tell(ctx, p, conversation.NotAllowed().Message)
		return
	}
	sctx, cancel := context.WithTimeout(ctx, s.bot.Budget)
	rs, err := s.bot.Monitor().RunStatus(sctx, run.Name, monitor.All)
	cancel()
	if err != nil {
		s.tell(ctx, p, conversation.ErrorReply("get the status", err).Message)
		return
	}
	msg := s.bot.FullStatus(rs)
	if p.ephemeral {
		s.tell(ctx, p, msg)
		return
	}
	thread := p.threadTS
	if thread == "" && !p.home {
		thread = p.messageTS
	}
	_, _, err = s.api.Post(ctx, p.channel, thread, msg)
	s.metrics.Posted("details", err)
	if err != nil {
		s.log.Warn("full status not posted", "run", run.Name, "err", err)
	}
}

// take is "I'm on it": for admins, like every change, and only on a warning that is still open.
func (s *App) take(req conversation.Request, ref conversation.ControlRef) conversation.Reply {
	run, ok := s.bot.Monitor().Config().RunByName(ref.Run)
	if !ok || !s.bot.AllowedRequest(req, run) {
		return conversation.NotAllowed()
	}
	if !s.bot.IsAdmin(req.User, run) {
		return conversation.AdminOnly("take", "take warnings")
	}
	// A serve that only answers while a console holds the state directory keeps no claims.
	if err := s.bot.Monitor().ReadOnly(); err != nil {
		return conversation.ErrorReply("take it", err)
	}
	// The block_id names both the run and the warning: the warning must be that run's, or an admin
	// of one run could take another's by naming their own run beside its key.
	w, open := s.Claims.Warning(ref.Key)
	if !open || w.Run != run.Name {
		return conversation.Reply{Intent: intentCleared, Ephemeral: true, Message: reports.Message{Sections: []string{"That warning has cleared already (or runwatch no longer tracks it): there is nothing to take."}}}
	}
	cl, err := s.Claims.Take(ref.Key, req.User, s.bot.Monitor().Now(), posts.DefaultAlertPolicy().Cooldown[w.Kind])
	rep := conversation.Reply{Message: reports.Message{Sections: []string{fmt.Sprintf("<@%s> is on %s.", cl.User, reports.Esc(w.Summary))}}}
	if err != nil {
		rep.Message.Sections = conversation.NotSaved(rep.Message.Sections, err)
	}
	return rep
}

// tell shows msg to the presser only: an ephemeral message in the channel (in the thread when the
// message is a reply), or for the App Home a message in the user's DM with the bot.
func (s *App) tell(ctx context.Context, p press, msg reports.Message) {
	var err error
	if p.home {
		_, _, err = s.api.Post(ctx, p.channel, "", msg)
	} else {
		err = s.api.Ephemeral(ctx, p.channel, p.user, p.threadTS, msg)
	}
	s.metrics.Posted("ephemeral", err)
	if err != nil {
		s.log.Warn("answer to a button press not delivered", "action", p.action, "err", err)
	}
}

// refresh edits the pressed message to show the new state: a status is rendered afresh, a warning
// keeps its text and gets new buttons and a line saying who is on it, the App Home is published
// again.
func (s *App) refresh(ctx context.Context, p press) error {
	if p.home {
		return s.publishHome(ctx, p.user, p.channel)
	}
	var text string
	var blocks []slack.Block
	if !p.ref.Warning {
		sctx, cancel := context.WithTimeout(ctx, s.bot.Budget)
		rs, err := s.bot.Monitor().RunStatus(sctx, p.ref.Run, monitor.All)
		cancel()
		if err != nil {
			return err
		}
		msg := s.bot.StatusMessage(rs, hasChart(p.blocks))
		text, blocks = msg.Fallback(), msg.Blocks()
	} else {
		text, blocks = p.text, s.warningBlocks(p.blocks, p.ref)
	}
	if p.ephemeral {
		return s.api.ReplaceOriginal(ctx, p.responseURL, text, blocks)
	}
	err := s.api.UpdateBlocks(ctx, p.channel, p.messageTS, text, blocks)
	if err != nil && p.responseURL != "" {
		// A message chat.update cannot reach (posted through a response_url): Slack's own way.
		s.log.Debug("chat.update failed; replacing through the response_url", "err", err)
		return s.api.ReplaceOriginal(ctx, p.responseURL, text, blocks)
	}
	return err
}

// clearedBlocks is a warning's message without its buttons or state line, saying it has cleared.
func clearedBlocks(blocks []slack.Block) []slack.Block {
	var out []slack.Block
	for _, b := range blocks {
		if b.ID() == stateBlockID || b.BlockType() == slack.MBTAction && strings.HasPrefix(b.ID(), conversation.RefPrefix) {
			continue
		}
		out = append(out, b)
	}
	return append(out, slack.NewContextBlock(stateBlockID, slack.NewTextBlockObject(slack.MarkdownType,
		":large_green_circle: This warning has cleared: nothing to act on here any more.", false, false)))
}

func hasChart(blocks []slack.Block) bool {
	for _, b := range blocks {
		if b.BlockType() == slack.MBTDataVisualization {
			return true
		}
	}
	return false
}

// warningBlocks is a warning's message with its buttons and state line made current: its own text
// stays as posted.
func (s *App) warningBlocks(blocks []slack.Block, ref conversation.ControlRef) []slack.Block {
	var out []slack.Block
	for _, b := range blocks {
		if b.ID() == stateBlockID || b.BlockType() == slack.MBTAction && strings.HasPrefix(b.ID(), conversation.RefPrefix) {
			continue
		}
		out = append(out, b)
	}
	cl, claimed := s.Claims.Get(ref.Key)
	var state []slack.MixedElement
	if claimed {
		state = append(state, slack.NewTextBlockObject(slack.MarkdownType,
			fmt.Sprintf(":eyes: <@%s> is on it since %s", cl.User, reports.SlackTime(cl.At, s.bot.Location())), false, false))
	}
	if until, ok := s.bot.Monitor().SnoozedUntil(ref.Run); ok {
		line := fmt.Sprintf(":zzz: %s's warnings snoozed until %s", reports.Esc(ref.Run), reports.SlackTime(until, s.bot.Location()))
		if who := s.bot.SnoozedBy(ref.Run); who != "" {
			line += " by " + who
		}
		state = append(state, slack.NewTextBlockObject(slack.MarkdownType, line, false, false))
	}
	if len(state) > 0 {
		out = append(out, slack.NewContextBlock(stateBlockID, state...))
	}
	if b := s.bot.WarningControls(ref.Run, ref.Key, cl.User).Block(); b != nil {
		out = append(out, b)
	}
	return out
}
