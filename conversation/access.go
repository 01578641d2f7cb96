package conversation

// This file is who may ask where, where a run may post, and who may change a run: the channel and
// admin allow-lists of the run file and the environment.

import (
	"fmt"
	"slices"
	"strings"

	"runwatch/config"
	"runwatch/reports"
)

// channelSet is a list of channels from the configuration: ids (C0123ABCD) and names (#synth-25k).
// Ids and names are kept apart so that a channel named like an allowed id is not let in.
type channelSet struct {
	ids, names map[string]bool
}

func newChannelSet() channelSet { return channelSet{ids: map[string]bool{}, names: map[string]bool{}} }

func (s channelSet) add(cs ...string) {
	for _, c := range cs {
		c = strings.TrimSpace(c)
		if name, ok := strings.CutPrefix(c, "#"); ok {
			s.names[strings.ToLower(name)] = true
		} else if c != "" {
			s.ids[strings.ToUpper(c)] = true
		}
	}
}

func (s channelSet) empty() bool { return len(s.ids) == 0 && len(s.names) == 0 }

// has reports whether channel ("#name" or an id) is in s, directly or through the id learned for
// a listed name. The caller holds channelMu for reading.
func (b *Bot) has(s channelSet, channel string) bool {
	if name, ok := strings.CutPrefix(channel, "#"); ok {
		return s.names[strings.ToLower(name)]
	}
	if channel == "" {
		return false
	}
	if s.ids[strings.ToUpper(channel)] {
		return true
	}
	for name, id := range b.channelIDs {
		if id == channel && s.names[name] {
			return true
		}
	}
	return false
}

// Allowed reports whether the bot may answer in channel (an id, or a name written "#name"): true
// when no allowed_channels list is configured anywhere, else when a list names it (by id, by name,
// or by a name whose id the bot has learned).
func (b *Bot) Allowed(channel string) bool {
	if b.allowed.empty() {
		return true
	}
	b.channelMu.RLock()
	defer b.channelMu.RUnlock()
	return b.has(b.allowed, channel)
}

// AllowedRequest applies the allow-lists to a request from a chat transport: the channel must be
// allowed, and a run with its own allowed_channels answers only there (or in the global lists'
// channels). A direct message counts as allowed for the run's admins (before the run is known,
// for anyone who administers some run).
func (b *Bot) AllowedRequest(req Request, run *config.Run) bool {
	dm := req.Source == "dm" || req.Source == "home" || strings.HasPrefix(req.Channel, "D")
	if dm && (run != nil && b.IsAdmin(req.User, run) || run == nil && b.adminScope(req.User) != "") {
		return true
	}
	name := ""
	if req.ChannelName != "" {
		name = "#" + strings.TrimPrefix(req.ChannelName, "#")
	}
	if !b.Allowed(req.Channel) && (name == "" || !b.Allowed(name)) {
		return false
	}
	if run == nil || len(run.AllowedChannels) == 0 {
		return true
	}
	own := newChannelSet()
	own.add(run.AllowedChannels...)
	b.channelMu.RLock()
	defer b.channelMu.RUnlock()
	for _, c := range []string{req.Channel, name} {
		if c != "" && (b.has(own, c) || b.has(b.global, c)) {
			return true
		}
	}
	return false
}

// PostAllowed reports whether run's scheduled status and warnings may go to channel (the run's
// channel as the run file writes it, "#name" or an id): the allow-lists bind what runwatch says
// unasked as they bind its answers, so a run whose channel they do not admit posts nowhere. A name
// matches a listed name, or a listed id once Slack has reported the name's id.
func (b *Bot) PostAllowed(run *config.Run, channel string) bool {
	if channel == "" {
		return false
	}
	req := Request{Channel: b.ChannelID(channel), Source: "post"}
	if strings.HasPrefix(channel, "#") {
		req.ChannelName = channel
	}
	return b.AllowedRequest(req, run)
}

// AdminOnly is the polite refusal of a change to someone who is not an admin.
func AdminOnly(intent, verb string) Reply {
	return Reply{Intent: intent, Refused: true, Ephemeral: true, Message: reports.Message{Sections: []string{
		fmt.Sprintf("Sorry, only runwatch admins can %s. Ask one of them, or have your user id added to `admins:`.", verb)}}}
}

// NotAllowed is the polite refusal of a question from a channel the allow-lists do not admit.
func NotAllowed() Reply {
	return Reply{Intent: "not_allowed", Refused: true, Ephemeral: true, Message: reports.Message{Sections: []string{
		"Sorry, I only answer in the channels listed in `allowed_channels`. Ask me there, or ask an admin to add this channel."}}}
}

func normChannel(c string) string {
	return strings.ToLower(strings.TrimPrefix(strings.TrimSpace(c), "#"))
}

// LearnChannel records the id Slack reported for a channel the run file names, so questions asked
// there pick the channel's run and allow-lists written with names match ids.
func (b *Bot) LearnChannel(name, id string) {
	if name == "" || id == "" || name == id {
		return
	}
	b.channelMu.Lock()
	defer b.channelMu.Unlock()
	b.channelIDs[normChannel(name)] = id
}

// LearnChannelName records id for the runs' channels the run file writes as "#name": a slash command
// tells both the id and the name of the channel it was asked in.
func (b *Bot) LearnChannelName(name, id string) {
	if id == "" || name == "" {
		return
	}
	for _, r := range b.cfg.Runs {
		if strings.HasPrefix(r.Channel, "#") && normChannel(r.Channel) == normChannel(name) {
			b.LearnChannel(r.Channel, id)
		}
	}
}

// ChannelID returns the id learned for a channel name, or the name itself when none is known.
func (b *Bot) ChannelID(name string) string {
	b.channelMu.RLock()
	defer b.channelMu.RUnlock()
	if id, ok := b.channelIDs[normChannel(name)]; ok {
		return id
	}
	return name
}

// IsAdmin reports whether user may change run: an admin of every run (the environment's and the
// run file's top-level admins) or one of the run's own admins. A nil run asks about every run.
func (b *Bot) IsAdmin(user string, run *config.Run) bool {
	if user == "" {
		return false
	}
	return b.admins[user] || run != nil && slices.Contains(run.Admins, user)
}

// adminScope says what user administers: "*" for every run, the user id for some runs' own
// admins, "" for nobody's. Answers are shared only between requests with the same scope.
func (b *Bot) adminScope(user string) string {
	if user == "" {
		return ""
	}
	if b.admins[user] {
		return "*"
	}
	for _, r := range b.cfg.Runs {
		if slices.Contains(r.Admins, user) {
			return user
		}
	}
	return ""
}
