// Package posts is what runwatch says unasked: the Sampler probes every run on an interval, the Alerter
// turns its evaluations into warnings and their lifecycle (confirmed, repeated after a cooldown, threaded,
// flapping, resolved, bursts coalesced, a lost memory listed once), Claims keep "I'm on it" and the open
// warnings, and the Scheduler posts each run's status on its cron schedule. Every post is recorded as an
// intent before it is sent, so that a crash does not post it twice. It declares what it needs of a chat
// service (Poster, Sampler.Deliver and Find) and the errors that tell it what became of a post; the Slack
// transport provides them.
package posts

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"runwatch/conversation"
	"runwatch/internal/flight"
	"runwatch/monitor"
	"runwatch/reports"
	"runwatch/state"
)

// Sampler probes every run on an interval, records the history and hands warnings to Notify.
type Sampler struct {
	bot      *conversation.Bot
	interval time.Duration
	log      *slog.Logger
	Alerter  *Alerter
	// Notify delivers a post; it returns the transport's reference of the message (for threads) and
	// an error when it could not deliver (the post is then retried on the next evaluation).
	Deliver func(ctx context.Context, p Post) (string, error)
	// Notify is a simpler Deliver for transports without threads (the console).
	Notify func(msg reports.Message)
	// State persists the alerter's memory; nil keeps it in memory.
	State *state.Dir
	// OnSample runs after each tick (scheduled posts hook in here).
	OnSample func(ctx context.Context)
	// OnEvaluate sees every tick's evaluations (the bot's own metrics count probe failures).
	OnEvaluate func(evs []monitor.Evaluation)
	// Find asks the transport whether a post whose delivery a crash interrupted landed, and
	// returns its reference ("" when it did not). Nil: such posts are delivered again.
	Find func(ctx context.Context, p PendingPost) (string, error)
	// Claims, when set, holds "I'm on it" and the open warnings the App Home shows.
	Claims *Claims
	// PostTimeout is how long Deliver may take with one post (RUNWATCH_POST_TIMEOUT); zero: DeliverTimeout.
	PostTimeout time.Duration

	lost *lostAlerts // set when alerts.json could not be restored
}

const alertStateFile = "alerts.json"

func (s *Sampler) postTimeout() time.Duration {
	if s.PostTimeout > 0 {
		return s.PostTimeout
	}
	return DeliverTimeout
}

// NewSampler builds a sampler for the bot's runs.
func NewSampler(b *conversation.Bot, interval time.Duration, log *slog.Logger) *Sampler {
	cfg := b.Monitor().Config()
	channel := func(run string) string {
		if r, ok := cfg.RunByName(run); ok {
			return r.Channel
		}
		return ""
	}
	a := NewAlerter(b.Location(), channel)
	a.Broadcast = func(run string) bool {
		r, ok := cfg.RunByName(run)
		return ok && r.BroadcastResolved
	}
	a.Page = func(run, kind string) []string {
		r, _ := cfg.RunByName(run)
		var out []string
		for _, m := range cfg.Paging(r, kind) {
			out = append(out, string(m))
		}
		return out
	}
	return &Sampler{bot: b, interval: interval, log: log, Alerter: a}
}

// LoadState restores the alerter's memory from the state directory. A memory that cannot be
// restored (the file corrupt or unreadable) is logged, and the warnings open in the first
// evaluations are listed in one note per channel (see lostAlerts) rather than posted again.
func (s *Sampler) LoadState() {
	if s.State == nil {
		return
	}
	var st AlertState
	if err := s.State.Load(alertStateFile, &st); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("alert state not restored: which warnings were posted is lost; the warnings open now are listed in one note per channel, not posted again one by one", "err", err)
			s.lost = newLostAlerts(s.Alerter.Policy)
		}
		return
	}
	if st.Active != nil {
		// A null entry (a hand edit) says nothing about a warning, and would be dereferenced.
		for k, al := range st.Active {
			if al == nil {
				delete(st.Active, k)
				s.log.Warn("alert state: an empty entry was dropped", "key", k)
			}
		}
		s.Alerter.State = st
		for name, id := range st.Channels {
			s.bot.LearnChannel(name, id)
		}
	}
}

// Run samples until ctx ends. The first sample is taken at once.
func (s *Sampler) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		s.survivingTick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// survivingTick is Tick, a panic in it logged (with its stack, through the bot's redacting logger) instead of
// stopping the bot and every run it watches; the next tick tries again. Before, a panic on a state file or a
// sample nobody foresaw stopped `bot serve`, and again on every restart.
func (s *Sampler) survivingTick(ctx context.Context) {
	_, err := flight.Safe(func() (struct{}, error) { s.Tick(ctx); return struct{}{}, nil })
	if pe, ok := errors.AsType[*flight.PanicError](err); ok {
		s.log.Error("a sample failed with a panic; sampling goes on", "panic", pe.Error(), "stack", string(pe.Stack))
	}
}

// retryLater keeps a follow-up that was not delivered for the next evaluation, with when it was first tried.
func (s *Sampler) retryLater(p Post, now time.Time) {
	for _, r := range s.Alerter.State.Retry {
		if r.Post.ID == p.ID {
			return
		}
	}
	s.Alerter.State.Retry = append(s.Alerter.State.Retry, PendingPost{Post: p, At: now})
}

// retries takes the follow-ups kept for another try: those still true (a resolution whose warning did not
// come back meanwhile) and tried for less than pendingGiveUp.
func (s *Sampler) retries(now time.Time) []Post {
	var out []Post
	for _, r := range s.Alerter.State.Retry {
		switch {
		case !s.Alerter.stillTrue(r.Post):
			s.log.Info("a follow-up that was not delivered is out of date; not sent", "run", r.Post.Run, "kind", r.Post.Kind)
		case now.Sub(r.At) >= pendingGiveUp:
			s.log.Warn("a follow-up could not be delivered for 10 minutes; given up", "run", r.Post.Run, "kind", r.Post.Kind)
		default:
			if al := s.Alerter.State.Active[r.Post.Key]; al != nil && r.Post.ThreadRef == "" {
				r.Post.ThreadRef = al.Ref // its warning's post was settled meanwhile
			}
			out = append(out, r.Post)
		}
	}
	s.Alerter.State.Retry = nil
	return out
}

// unsettled reports whether a post about key is still pending: a crash interrupted it, and Slack was not
// asked yet whether it landed.
func (s *Sampler) unsettled(key string) bool {
	for _, pp := range s.Alerter.State.Pending {
		if pp.Post.Key == key && !pp.Post.followsUp() {
			return true
		}
	}
	return false
}

// Tick takes one sample of every run and delivers what it warrants.
func (s *Sampler) Tick(ctx context.Context) {
	c, cancel := context.WithTimeout(ctx, max(s.interval, 10*time.Second))
	defer cancel()
	evs := s.bot.Monitor().Sample(c)
	if ctx.Err() != nil {
		return // shutting down: a half-finished sample proves nothing
	}
	now := s.bot.Monitor().Now()
	if s.OnEvaluate != nil {
		s.OnEvaluate(evs)
	}
	redo := s.recoverPending(ctx, now)
	snoozed := func(run string) bool {
		_, snoozed := s.bot.Monitor().SnoozedUntil(run)
		return snoozed
	}
	posts := s.Alerter.Process(evs, now, snoozed)
	if s.Claims != nil {
		posts = s.Claims.Apply(s.Alerter, posts, now, snoozed)
	}
	if s.lost != nil && s.Deliver != nil {
		posts = s.lost.gather(s.Alerter, posts)
		if s.lost.ticks <= 0 {
			defer func() { s.lost = nil }()
		}
	}
	redo = append(redo, s.retries(now)...)
	posts = append(redo, s.Alerter.coalesceBursts(posts, now, burstWindow(s.interval))...)
	if s.Deliver != nil && len(posts) > 0 {
		s.recordIntents(posts, now)
	}
	for _, p := range posts {
		if s.Deliver != nil && followUp(p.Kind) && p.Edit == "" && p.ThreadRef == "" && s.unsettled(p.Key) {
			// Its warning's post is not settled yet (a crash interrupted it): where it landed is known later.
			delete(s.Alerter.State.Pending, p.ID)
			s.retryLater(p, now)
			continue
		}
		switch {
		case s.Deliver != nil:
			ref, err := s.Deliver(ctx, p)
			delete(s.Alerter.State.Pending, p.ID)
			if err != nil {
				if errors.Is(err, ErrHeldBack) {
					s.log.Debug("warning held back: its channel refused the last post", "run", p.Run, "kind", p.Kind, "err", err)
				} else {
					s.log.Warn("warning not delivered; will retry", "run", p.Run, "kind", p.Kind, "err", err)
				}
				switch {
				case strings.HasSuffix(p.Kind, "_reminder"):
					s.Claims.undelivered(p, now)
				case strings.HasSuffix(p.Kind, correctedSuffix):
					s.Alerter.Undelivered(p) // the next evaluation corrects it again, with what it sees then
				case p.followsUp():
					s.retryLater(p, now)
				default:
					s.Alerter.Undelivered(p)
				}
				continue
			}
			s.Alerter.Delivered(p, ref)
			if id := s.bot.ChannelID(p.Channel); id != p.Channel {
				if s.Alerter.State.Channels == nil {
					s.Alerter.State.Channels = map[string]string{}
				}
				s.Alerter.State.Channels[p.Channel] = id
			}
		case s.Notify != nil:
			s.Notify(p.Message)
		}
	}
	if s.State != nil {
		if err := s.State.Save(alertStateFile, s.Alerter.State); err != nil {
			s.log.Warn("alert state not saved", "err", err)
		}
	}
	if s.OnSample != nil {
		s.OnSample(ctx)
	}
}
