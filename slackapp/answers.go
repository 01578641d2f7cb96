package slackapp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"runwatch/conversation"
	"runwatch/reports"
)

// userLimiter is a token bucket per Slack user: a burst of questions is answered, a flood is told
// politely to wait. Slack users are a bounded set; idle buckets are dropped when the map grows.
type userLimiter struct {
	mu      sync.Mutex
	burst   float64
	every   time.Duration // one more question allowed per this much time
	buckets map[string]*userBucket
	now     func() time.Time
}

type userBucket struct {
	tokens float64
	last   time.Time
	warned time.Time // last "slow down" told to this user (events tell it once per empty bucket)
}

// Default per-user limit: 10 questions at once, then one every 2 s.
const (
	defaultUserBurst = 10
	defaultUserEvery = 2 * time.Second
)

func newUserLimiter() *userLimiter {
	return &userLimiter{burst: defaultUserBurst, every: defaultUserEvery, buckets: map[string]*userBucket{}, now: time.Now}
}

// allow takes a token for user and reports whether there was one, how long until the next, and
// whether the user was already told to wait since the bucket ran dry.
func (l *userLimiter) allow(user string) (ok bool, wait time.Duration, warned bool) {
	if l == nil || user == "" {
		return true, 0, false
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[user]
	if b == nil {
		if len(l.buckets) > 10000 {
			for u, old := range l.buckets {
				if now.Sub(old.last) > time.Duration(l.burst)*l.every {
					delete(l.buckets, u)
				}
			}
		}
		b = &userBucket{tokens: l.burst, last: now}
		l.buckets[user] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()/l.every.Seconds())
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		b.warned = time.Time{}
		return true, 0, false
	}
	wait = time.Duration((1 - b.tokens) * float64(l.every))
	warned = !b.warned.IsZero()
	b.warned = now
	return false, wait, warned
}

// rateLimited is the polite answer to a user over the limit.
func rateLimited(wait time.Duration) conversation.Reply {
	return rateLimitedTo("asked several questions", "Ask", wait)
}

// rateLimitedTo is rateLimited for what the user did too often ("pressed several buttons") and what to do
// again ("Press").
func rateLimitedTo(did, again string, wait time.Duration) conversation.Reply {
	secs := max(1, int(wait.Round(time.Second)/time.Second))
	return conversation.Reply{Intent: "rate_limited", Refused: true, Ephemeral: true, Message: reports.Message{Sections: []string{fmt.Sprintf(
		":raised_hand: You've %s in a few seconds and I'm still on the earlier ones. %s again in %d s, please.", did, again, secs)}}}
}

// slash answers a slash command. The acknowledgement never waits for an answer slot: a user over
// the rate limit is told so at once; an answer that is evaluating (alone or shared with identical
// questions) comes back inline when ready within the inline budget; otherwise, or when every slot
// is busy, the acknowledgement says it is working on it and the answer follows through
// response_url. The reply is returned too when it was ready inline, so that a caller who cannot
// deliver the inline message can follow up with it rather than ask again.
func (s *App) slash(sc slashRequest) (*slack.WebhookMessage, *conversation.Reply) {
	start := time.Now()
	if ok, wait, _ := s.limiter.allow(sc.User); !ok {
		s.metrics.Event("rate_limited")
		rep := rateLimited(wait)
		return slashMessage(rep), &rep
	}
	s.learnSlashChannel(sc)
	f := s.answers.Begin(s.base, s.slashToRequest(sc))
	if sc.Received.IsZero() {
		sc.Received = start
	}
	if f.Started() {
		// The budget counts from when the request arrived: reading and checking it under a flood took some.
		// An answer already made (help, a refusal) goes in the acknowledgement while Slack still waits for
		// it, even past the budget, never held back for a timer that fired at the same moment; once Slack
		// stopped waiting, it follows through the response_url.
		elapsed := time.Since(sc.Received)
		wait, done := max(0, s.Inline-elapsed), f.Done()
		select {
		case <-done:
			if elapsed < slackAckTimeout {
				wait = time.Hour
			} else {
				done = nil
			}
		default:
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-done:
			rep, ok := f.Reply()
			if !ok {
				return &slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral, Text: "runwatch is shutting down; ask again in a minute."}, nil
			}
			s.metrics.Answered("slash", time.Since(start))
			if len(rep.Message.Charts) > 0 {
				// Whether Slack draws the charts is known only from a call's answer, so they go through
				// the response_url (PNG fallback included); the acknowledgement stays empty.
				s.detach(func(ctx context.Context) { s.followUp(ctx, sc, rep) })
				return nil, nil
			}
			if rep.Attachment != nil {
				s.background(func(ctx context.Context) { s.upload(ctx, sc.Channel, "", *rep.Attachment) })
			}
			return slashMessage(rep), &rep
		case <-t.C:
		}
	}
	// Waiting for the answer costs nothing: it must not hold a slot the answer itself may need.
	s.detach(func(ctx context.Context) {
		rep, ok := f.Wait(ctx)
		if !ok {
			return
		}
		s.metrics.Answered("slash", time.Since(start))
		s.followUp(ctx, sc, rep)
	})
	return &slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral,
		Text: ":hourglass_flowing_sand: Working on it: some probes are slow. The full answer follows here shortly."}, nil
}

// slackAckTimeout is how long Slack waits for a slash command's acknowledgement; what comes later is lost, and
// an answer goes through the response_url instead.
const slackAckTimeout = 3 * time.Second

// slashRequest is a slash command as both transports deliver it; Received is when the transport got it
// (zero: now), which the inline budget counts from.
type slashRequest struct {
	Command, Text, Channel, ChannelName, User, ResponseURL string
	Received                                               time.Time
}

// learnSlashChannel records the id of a channel a run names by "#name", from a slash command asked there
// (Slack signs both its channel_id and its channel_name): with allowed_channels listing ids, a run written
// as "#synth" posts its statuses and warnings only once that id is known, and without the channels:read
// scope a command from the channel is where it comes from (a post the bot made there is the other).
func (s *App) learnSlashChannel(sc slashRequest) {
	s.bot.LearnChannelName(sc.ChannelName, sc.Channel)
}

func (s *App) slashToRequest(sc slashRequest) conversation.Request {
	req := conversation.Request{Text: sc.Text, Channel: sc.Channel, ChannelName: sc.ChannelName, User: sc.User, Source: "slash"}
	name := s.bot.SlashCommand(sc.Command)
	if name == "" {
		name = s.guessSlash(sc.Command)
	}
	switch name {
	case "runwatch":
		if strings.TrimSpace(sc.Text) == "" {
			req.Command = "help"
		}
	case "":
	default:
		req.Command = name
	}
	return req
}

// guessSlash reads a slash command the run file's commands: does not name by the command it most likely is:
// one of /eta, /storage and /runwatch as a word of its name (/eta-b200, /b200_storage, /runwatch2 is not),
// so that an app installed under its own names answers before commands: is set. Said once in the log.
func (s *App) guessSlash(installed string) string {
	words := strings.FieldsFunc(strings.TrimPrefix(installed, "/"), func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	for _, base := range []string{"runwatch", "storage", "eta"} {
		if slices.Contains(words, base) {
			if _, said := s.guessed.LoadOrStore(installed, true); !said {
				s.log.Info("a slash command the run file's commands: does not name is read as runwatch's own; set commands: so that help and the manifest name it too",
					"command", installed, "as", "/"+base)
			}
			return base
		}
	}
	return ""
}

func slashMessage(rep conversation.Reply) *slack.WebhookMessage {
	blocks := slack.Blocks{BlockSet: rep.Message.Blocks()}
	msg := &slack.WebhookMessage{Text: rep.Message.Fallback(), Blocks: &blocks, ResponseType: slack.ResponseTypeInChannel}
	if rep.Ephemeral {
		msg.ResponseType = slack.ResponseTypeEphemeral
	}
	return msg
}

// followUp delivers a slash command's answer after the acknowledgement: through response_url, or
// as a message when that fails.
func (s *App) followUp(ctx context.Context, sc slashRequest, rep conversation.Reply) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := errors.New("no response_url")
	if sc.ResponseURL != "" {
		err = s.charted(ctx, rep, sc.Channel, "", func(m reports.Message) error { return s.api.Respond(ctx, sc.ResponseURL, m, rep.Ephemeral) })
		s.metrics.Posted("response", err)
	}
	if err != nil {
		s.log.Warn("slash command follow-up via response_url failed; posting instead", "err", err)
		if rep.Ephemeral {
			err = s.api.Ephemeral(ctx, sc.Channel, sc.User, "", rep.Message)
			s.metrics.Posted("ephemeral", err)
		} else {
			err = s.charted(ctx, rep, sc.Channel, "", func(m reports.Message) error { _, _, err := s.api.Post(ctx, sc.Channel, "", m); return err })
			s.metrics.Posted("answer", err)
		}
		if err != nil {
			s.log.Warn("slash command answer lost", "command", sc.Command, "err", err)
		}
	}
	if rep.Attachment != nil {
		s.upload(ctx, sc.Channel, "", *rep.Attachment)
	}
}
