package slackapp

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"runwatch/posts"
)

// This file holds back posts to a channel Slack will not take them in: a channel the bot was never invited
// to (not_in_channel), one that does not exist (channel_not_found) or is archived (is_archived). Before, a
// run whose channel never invited the bot tried every sample, forever (2.4 failed posts a minute per run),
// and the log said "not_in_channel" and nothing else. Now the first refusal is said once, with what to do
// (log, the terminal of bot serve, the App Home), and the channel is tried again after 5 s, 10 s, 20 s… up
// to 10 min; a post that lands there ends it.

// Backoff of a channel that refuses posts.
const (
	heldFirstWait = 5 * time.Second
	heldMaxWait   = 10 * time.Minute
)

// heldCodes are Slack's errors that say a channel will not take posts until someone acts, with what to do.
var heldCodes = map[string]string{
	"not_in_channel":    "invite @%[2]s to %[1]s (/invite @%[2]s there)",
	"channel_not_found": "check the channel in the run file: %[1]s does not exist, or @%[2]s cannot see it (a private channel needs /invite @%[2]s)",
	"is_archived":       "%[1]s is archived: unarchive it, or give the run another channel",
}

// channelGate holds back posts to channels that refused them.
type channelGate struct {
	mu   sync.Mutex
	held map[string]*heldChannel
	bot  string // the bot's user name, for "invite @runwatch"
	now  func() time.Time
	// onHeld is told once per channel when it starts refusing, with what to do; onBack when it takes posts
	// again.
	onHeld func(channel, code, advice string)
	onBack func(channel string)
}

type heldChannel struct {
	code  string
	tries int
	next  time.Time
}

// HeldChannel is a channel whose posts are held back: why (Slack's code), and the bot's name.
type HeldChannel struct {
	Channel, Code, Bot string
}

// Advice is what to do, the channel written as channel (a name, or mrkdwn's link).
func (h HeldChannel) Advice(channel string) string {
	return fmt.Sprintf(heldCodes[h.Code], channel, h.Bot)
}

// errHeld is a post not sent: its channel refused the last one and its wait has not passed.
type errHeld struct {
	channel, code string
	until         time.Time
}

func (e errHeld) Error() string {
	return fmt.Sprintf("%s refused posts (%s); held back until %s", e.channel, e.code, e.until.Format("15:04:05"))
}

// Is makes a held post posts.ErrHeldBack (not tried) and posts.ErrRefused (Slack's own refusal stands).
func (e errHeld) Is(target error) bool {
	return target == posts.ErrHeldBack || target == posts.ErrRefused
}

// check returns errHeld for a channel within its wait.
func (g *channelGate) check(channel string) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.held[channel]
	if h == nil || !g.now().Before(h.next) {
		return nil
	}
	return errHeld{channel: channel, code: h.code, until: h.next}
}

// result records what became of a post to channel: a refusal in heldCodes holds it back (said the first
// time), a post that landed ends the hold.
func (g *channelGate) result(channel string, err error) {
	if g == nil || channel == "" {
		return
	}
	code := ""
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok && heldCodes[se.Err] != "" {
		code = se.Err
	}
	g.mu.Lock()
	h := g.held[channel]
	switch {
	case err == nil && h != nil:
		delete(g.held, channel)
		g.mu.Unlock()
		if g.onBack != nil {
			g.onBack(channel)
		}
		return
	case code == "":
		g.mu.Unlock()
		return
	}
	first := h == nil
	if first {
		if g.held == nil {
			g.held = map[string]*heldChannel{}
		}
		h = &heldChannel{code: code}
		g.held[channel] = h
	}
	h.tries++
	h.next = g.now().Add(min(heldFirstWait<<min(h.tries-1, 20), heldMaxWait))
	advice := HeldChannel{Channel: channel, Code: code, Bot: g.bot}.Advice(channel)
	g.mu.Unlock()
	if first && g.onHeld != nil {
		g.onHeld(channel, code, advice)
	}
}

// heldChannels lists the channels whose posts are held back, by name.
func (g *channelGate) heldChannels() []HeldChannel {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []HeldChannel
	for ch, h := range g.held {
		out = append(out, HeldChannel{Channel: ch, Code: h.code, Bot: g.bot})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Channel < out[j].Channel })
	return out
}

// channelRef is a channel as mrkdwn names it: a link for an id, the name as written otherwise.
func channelRef(ch string) string {
	if strings.HasPrefix(ch, "C") || strings.HasPrefix(ch, "G") {
		return "<#" + ch + ">"
	}
	return ch
}
