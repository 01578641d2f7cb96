// Package slackapp is the one package that talks to Slack: the Web API client (posts, tagged posts and
// their look-up after a crash, permalinks, views, uploads, response_url), Socket Mode and HTTP mode (each
// request verified before its body is read, replays refused), events, slash commands with their shared
// evaluations and per-user rate limit, button presses, the App Home, the journals of what Slack delivered,
// the posting of warnings (Deliver, Find), which instance of the app answers (Duty), and the one classifier of Slack's failures (refusals.go). It
// turns what Slack sends into conversation.Requests and renders the Replies; what to answer is the
// conversation's, what to say unasked the posts'.
package slackapp

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/botmetrics"
	"runwatch/internal/flight"
	"runwatch/internal/redact"
	"runwatch/posts"
	"runwatch/reports"
	"runwatch/state"
)

// This file is runwatch's one caller of the Slack Web API (API) and the Slack conversation
// both transports share (App): slash commands answered inline or followed up, mentions and
// direct messages answered once, in the thread they came from.

// APIOptions configure an API.
type APIOptions struct {
	Token config.Secret // the bot token (xoxb-)
	// APIURL is the Web API base (SLACK_API_URL); empty means Slack's.
	APIURL string
	// HTTP is the client for every call; nil gets one with a 30 s timeout.
	HTTP     *http.Client
	Redactor *redact.Redactor
	Metrics  *botmetrics.Metrics
	Log      *slog.Logger
	// Sleep waits d between tries unless ctx ends first; nil sleeps. Tests record the waits instead.
	Sleep func(ctx context.Context, d time.Duration) error
}

// API posts, updates, sends ephemeral messages, uploads files and answers response URLs. Every
// call is retried in one place: a 429 waits for its Retry-After and tries again for as long as the
// caller's context allows (at most maxRateLimitWaits times), so a rate-limit storm delays a post
// instead of losing it; a 5xx or a network error backs off exponentially, bounded by MaxAttempts and
// the context. A post that may have reached Slack before its connection broke is not simply sent
// again (see PostTagged). Errors never carry a token.
type API struct {
	client  *slack.Client
	http    *http.Client
	apiURL  *url.URL
	redact  *redact.Redactor
	metrics *botmetrics.Metrics
	log     *slog.Logger

	// MaxAttempts bounds the tries of one call (default 4).
	MaxAttempts int
	// Backoff is the first wait after a 5xx or a network error; it doubles up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// sleep waits d unless ctx ends first; tests record the waits instead.
	sleep func(ctx context.Context, d time.Duration) error
	// gate holds back posts to channels that refused them (channels.go).
	gate *channelGate
	// OnChannelHeld is told, once per channel, that it refuses posts and what to do (serve prints it on
	// its terminal); the log says it too. Set before the first post.
	OnChannelHeld func(channel, advice string)
}

// NewAPI builds the Web API client.
func NewAPI(o APIOptions) *API {
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if o.APIURL == "" {
		o.APIURL = slack.APIURL
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	u, _ := url.Parse(o.APIURL)
	opts := []slack.Option{
		slack.OptionAPIURL(o.APIURL),
		slack.OptionHTTPClient(o.HTTP),
		slack.OptionLog(logLogger(log)),
	}
	sleep := o.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	a := &API{
		client: slack.New(o.Token.Reveal(), opts...), http: o.HTTP, apiURL: u, redact: o.Redactor,
		metrics: o.Metrics, log: log, MaxAttempts: 4, Backoff: 500 * time.Millisecond, MaxBackoff: 30 * time.Second,
		sleep: sleep,
	}
	a.gate = &channelGate{bot: "runwatch", now: time.Now,
		onHeld: func(channel, code, advice string) {
			log.Warn("runwatch cannot post in "+channel+": "+advice+"; its posts are held back and tried again after 5 s, 10 s, 20 s… up to 10 min",
				"channel", channel, "code", code)
			if a.OnChannelHeld != nil {
				a.OnChannelHeld(channel, advice)
			}
		},
		onBack: func(channel string) { log.Info("runwatch posts in "+channel+" again", "channel", channel) },
	}
	return a
}

// HeldChannels are the channels whose posts are held back, and what to do about each.
func (a *API) HeldChannels() []HeldChannel { return a.gate.heldChannels() }

func logLogger(l *slog.Logger) *log.Logger { return log.New(slogWriter{l}, "", 0) }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Error is a failed Web API call after its retries. Its text is redacted; Unwrap gives the
// SDK's error (errors.As with slack.SlackErrorResponse) and what classify made of it (errors.Is with
// ErrGone, ErrRefused, ErrChartsRefused).
type Error struct {
	Method string
	msg    string
	err    error
	kinds  []error
}

// Error returns the redacted message.
func (e *Error) Error() string { return "slack " + e.Method + ": " + e.msg }

// Unwrap returns the SDK's error and its kinds.
func (e *Error) Unwrap() []error { return append([]error{e.err}, e.kinds...) }

// maxRateLimitWaits bounds how many 429s one call waits out; Slack's Retry-After is usually a
// few seconds, and the caller's deadline usually ends the wait first.
const maxRateLimitWaits = 16

// call runs f until it succeeds, fails for good, runs out of attempts or ctx ends. A 429 does not
// use up an attempt: Slack said when to come back.
func (a *API) call(ctx context.Context, method string, f func(ctx context.Context) error) error {
	backoff := a.Backoff
	attempts := max(a.MaxAttempts, 1)
	var err error
	for failed, limited := 0, 0; ; {
		err = f(ctx)
		if err == nil {
			return nil
		}
		f := classify(err)
		retry, wait, reason := f.retry, f.wait, f.reason
		if reason == "rate_limited" {
			limited++
		} else {
			failed++
		}
		if !retry || failed >= attempts || limited > maxRateLimitWaits || ctx.Err() != nil {
			break
		}
		if wait == 0 {
			wait = backoff
			backoff = min(2*backoff, a.MaxBackoff)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			err = fmt.Errorf("%w (the next try, in %s, would be past the deadline)", err, wait.Round(time.Millisecond))
			break
		}
		a.metrics.SlackRetry(method, reason)
		a.log.Debug("slack call failed; retrying", "method", method, "attempt", failed+limited, "wait", wait, "err", a.redact.Redact(err.Error()))
		if serr := a.sleep(ctx, wait); serr != nil {
			break
		}
	}
	return &Error{Method: method, msg: a.redact.Redact(err.Error()), err: err, kinds: classify(err).kinds()}
}

func msgOptions(m reports.Message) []slack.MsgOption {
	return []slack.MsgOption{
		slack.MsgOptionText(m.Fallback(), false),
		slack.MsgOptionBlocks(m.Blocks()...),
		slack.MsgOptionDisableLinkUnfurl(),
		slack.MsgOptionDisableMediaUnfurl(),
	}
}

// Identity is who the bot token belongs to.
type Identity struct {
	UserID, BotID, User, Team string
}

// AuthTest checks the bot token and says whose it is.
func (a *API) AuthTest(ctx context.Context) (Identity, error) {
	var id Identity
	err := a.call(ctx, "auth.test", func(ctx context.Context) error {
		r, err := a.client.AuthTestContext(ctx)
		if err != nil {
			return err
		}
		id = Identity{UserID: r.UserID, BotID: r.BotID, User: r.User, Team: r.Team}
		if r.User != "" {
			a.gate.mu.Lock()
			a.gate.bot = r.User // "invite @runwatch-b200"
			a.gate.mu.Unlock()
		}
		return nil
	})
	return id, err
}

// Post sends a message to a channel (a reply when threadTS is set) and returns the channel id and
// the message ts.
func (a *API) Post(ctx context.Context, channel, threadTS string, m reports.Message) (string, string, error) {
	return a.PostTagged(ctx, channel, threadTS, "", m)
}

// Update edits a message in place.
func (a *API) Update(ctx context.Context, channel, ts string, m reports.Message) error {
	if err := a.gate.check(channel); err != nil {
		return err
	}
	err := a.call(ctx, "chat.update", func(ctx context.Context) error {
		_, _, _, err := a.client.UpdateMessageContext(ctx, channel, ts, msgOptions(m)...)
		return err
	})
	a.gate.result(channel, err)
	return err
}

// Ephemeral shows a message to one user in a channel (in a thread when threadTS is set).
func (a *API) Ephemeral(ctx context.Context, channel, user, threadTS string, m reports.Message) error {
	opts := msgOptions(m)
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	return a.call(ctx, "chat.postEphemeral", func(ctx context.Context) error {
		_, err := a.client.PostEphemeralContext(ctx, channel, user, opts...)
		if err != nil && classify(err).landed {
			return noRetry{err} // shown to the user already, perhaps: not twice
		}
		return err
	})
}

// Upload shares a file in a channel (in a thread when threadTS is set) through Slack's external
// upload flow: files.getUploadURLExternal, the upload, files.completeUploadExternal.
func (a *API) Upload(ctx context.Context, channel, threadTS string, f conversation.Attachment) error {
	if len(f.Data) == 0 {
		return errors.New("upload: the file is empty")
	}
	return a.call(ctx, "files.upload", func(ctx context.Context) error {
		_, err := a.client.UploadFileContext(ctx, slack.UploadFileParameters{
			Content: string(f.Data), FileSize: len(f.Data), Filename: f.Name, Title: f.Title,
			AltTxt: f.AltText, Channel: channel, ThreadTimestamp: threadTS,
		})
		return err
	})
}

// ResponseURLAllowed reports whether u may receive a slash command's answer: an https Slack URL,
// or a URL on the configured API host (proxies, tests). Anything else would let a forged payload
// make the bot post to an arbitrary host.
func (a *API) ResponseURLAllowed(u string) bool {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return false
	}
	host := strings.ToLower(p.Hostname())
	if p.Scheme == "https" && (host == "slack.com" || strings.HasSuffix(host, ".slack.com")) {
		return true
	}
	return a.apiURL != nil && p.Scheme == a.apiURL.Scheme && strings.EqualFold(p.Host, a.apiURL.Host)
}

// Respond answers a slash command through its response_url.
func (a *API) Respond(ctx context.Context, responseURL string, m reports.Message, ephemeral bool) error {
	blocks := slack.Blocks{BlockSet: m.Blocks()}
	msg := &slack.WebhookMessage{Text: m.Fallback(), Blocks: &blocks, ResponseType: slack.ResponseTypeInChannel}
	if ephemeral {
		msg.ResponseType = slack.ResponseTypeEphemeral
	}
	return a.postResponseURL(ctx, responseURL, msg)
}

// postResponseURL posts msg to a response_url Slack gave (only to Slack's own host), not twice when the
// first try may have landed. The URL itself is a credential of sorts (anyone holding it can post in the
// channel for half an hour): no error returned names it.
func (a *API) postResponseURL(ctx context.Context, responseURL string, msg *slack.WebhookMessage) error {
	if !a.ResponseURLAllowed(responseURL) {
		return &Error{Method: "response_url", msg: "refusing to post to a response_url that is not a Slack URL"}
	}
	err := a.call(ctx, "response_url", func(ctx context.Context) error {
		err := slack.PostWebhookCustomHTTPContext(ctx, responseURL, a.http, msg)
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = fmt.Errorf("post: %w", ue.Err)
		}
		if err != nil && classify(err).landed {
			return noRetry{err} // in the channel already, perhaps: not twice
		}
		return err
	})
	if se, ok := errors.AsType[*Error](err); ok {
		se.msg = strings.ReplaceAll(se.msg, responseURL, "[response_url]")
	}
	if err != nil && strings.Contains(err.Error(), responseURL) {
		err = errors.New(strings.ReplaceAll(err.Error(), responseURL, "[response_url]"))
	}
	return err
}

// App is the Slack conversation both transports share.
type App struct {
	bot     *conversation.Bot
	api     *API
	log     *slog.Logger
	metrics *botmetrics.Metrics
	self    Identity
	seen    *keyJournal
	// Inline is how long a slash command may take before it is acknowledged with "working on it"
	// and answered through its response_url; Slack allows 3 s.
	Inline time.Duration
	// base outlives the request that started an answer: follow-ups continue after the ack.
	base  context.Context
	slots chan struct{} // bounds concurrent answers on a small shared machine
	wg    sync.WaitGroup
	// answers evaluates questions, sharing identical ones in flight; limiter is the per-user rate limit;
	// posts bounds concurrent answer posts (see answers.go).
	answers *conversation.Answers
	limiter *userLimiter
	posts   chan struct{}
	// Claims is "I'm on it" and the open warnings (nil: no sampler, nothing to take).
	Claims *posts.Claims
	// guessed holds the slash commands read by guessSlash, each logged once.
	guessed sync.Map
}

const defaultInlineBudget = 2 * time.Second

// NewApp is the Slack conversation over bot b: base outlives each request (answers and follow-ups go on
// after the acknowledgement, until base ends).
func NewApp(base context.Context, b *conversation.Bot, api *API, self Identity, m *botmetrics.Metrics, log *slog.Logger) *App {
	s := &App{bot: b, api: api, log: log, metrics: m, self: self, seen: newSlackSeen(seenMax),
		Inline: defaultInlineBudget, base: base, slots: make(chan struct{}, 8), limiter: newUserLimiter(), posts: make(chan struct{}, 16)}
	s.answers = conversation.NewAnswers(b, s.slots)
	return s
}

// spawn runs f in a goroutine the app waits for on shutdown; detach and background recover its
// panics (survive).
func (s *App) spawn(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// Remember keeps the delivered Slack requests in dir's journal, and restores those of the last hour:
// a request Slack redelivers across a restart is not answered twice.
func (s *App) Remember(dir *state.Dir) error {
	return s.seen.persist(dir, func(err error) { s.log.Warn("delivered Slack request not saved", "err", err) })
}

// CloseJournal closes the journal Remember opened (logging a failure), once the transports and the
// answers in progress have stopped.
func (s *App) CloseJournal() { s.seen.closeOrLog(s.log) }

// Wait waits for answers in flight and what the app does with them (posts, follow-ups), at most d.
func (s *App) Wait(d time.Duration) {
	deadline := time.Now().Add(d)
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
	s.answers.Wait(max(time.Until(deadline), 0))
}

func (s *App) upload(ctx context.Context, channel, thread string, f conversation.Attachment) {
	err := s.api.Upload(ctx, channel, thread, f)
	s.metrics.Posted("upload", err)
	if err != nil {
		s.log.Warn("file upload failed", "file", f.Name, "err", err)
	}
}

// detach runs f in a goroutine the app waits for on shutdown.
func (s *App) detach(f func(ctx context.Context)) {
	s.spawn(func() { s.survive(func() { f(s.base) }) })
}

// survive runs f, the body of one of the app's goroutines, so that a panic in it does not stop the bot and
// every run it watches: the panic is logged with its stack through the app's logger (which redacts
// credentials; Go's own crash report went to stderr as it was) and counted, and the other answers go on. A
// panic while answering is the conversation's (a reply saying the answer failed); this is for the rest
// (posting it, the App Home, a press's edit).
func (s *App) survive(f func()) {
	_, err := flight.Safe(func() (struct{}, error) { f(); return struct{}{}, nil })
	if pe, ok := errors.AsType[*flight.PanicError](err); ok {
		s.metrics.Event("panicked")
		s.log.Error("an answer failed with a panic; the bot goes on", "panic", pe.Error(), "stack", string(pe.Stack))
	}
}

// background runs f in a goroutine the app waits for on shutdown, bounded by the answer slots.
func (s *App) background(f func(ctx context.Context)) {
	s.spawn(func() {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		case <-s.base.Done():
			return
		}
		s.survive(func() { f(s.base) })
	})
}

// chatRequest is a mention or a direct message to answer.
type chatRequest struct {
	req    conversation.Request
	thread string
}

// event handles one Events API callback: it decides at once whether to answer (never twice for
// one event id, never to a bot or to itself, never to edits or joins) and answers in the background.
// It reports false only when the event was refused for want of room to remember it (admitFull): the
// transport then asks Slack to deliver it again.
func (s *App) event(eventID string, ev slackevents.EventsAPIEvent) bool {
	switch s.seen.admit(eventKey(eventID, ev)) {
	case admitSeen:
		s.metrics.Event("duplicate")
		return true
	case admitFull:
		s.metrics.Event("busy")
		return false
	}
	var cr chatRequest
	switch in := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		if in.BotID != "" || in.User == "" || in.User == s.self.UserID || in.Edited != nil {
			s.metrics.Event("ignored")
			return true
		}
		thread := in.ThreadTimeStamp
		if thread == "" {
			thread = in.TimeStamp
		}
		cr = chatRequest{req: conversation.Request{Text: in.Text, Channel: in.Channel, User: in.User, Source: "mention"}, thread: thread}
	case *slackevents.MessageEvent:
		if in.ChannelType != "im" || in.SubType != "" || in.BotID != "" || in.User == "" || in.User == s.self.UserID {
			s.metrics.Event("ignored")
			return true
		}
		cr = chatRequest{req: conversation.Request{Text: in.Text, Channel: in.Channel, User: in.User, Source: "dm"}, thread: in.ThreadTimeStamp}
	case *slackevents.AppHomeOpenedEvent:
		if in.Tab != "home" || !slackUserID.MatchString(in.User) {
			s.metrics.Event("ignored")
			return true
		}
		// Each opening publishes a fresh view: a flood of them counts against the user's limit, unanswered
		// past it (the tab keeps the view published last).
		if ok, _, _ := s.limiter.allow(in.User); !ok {
			s.metrics.Event("rate_limited")
			return true
		}
		s.metrics.Event("answered")
		s.background(func(ctx context.Context) { s.home(ctx, in.User, in.Channel) })
		return true
	default:
		s.metrics.Event("ignored")
		return true
	}
	ok, wait, warned := s.limiter.allow(cr.req.User)
	if !ok {
		s.metrics.Event("rate_limited")
		if !warned {
			// Told once per empty bucket; the flood itself gets no answers.
			s.detach(func(ctx context.Context) { s.post(ctx, cr, rateLimited(wait)) })
		}
		return true
	}
	s.metrics.Event("answered")
	f := s.answers.Begin(s.base, cr.req)
	s.detach(func(ctx context.Context) { s.answer(ctx, cr, f) })
	return true
}

// answer waits for the (possibly shared) evaluation and posts the reply where the question was
// asked.
func (s *App) answer(ctx context.Context, cr chatRequest, f *conversation.Answering) {
	start := time.Now()
	rep, ok := f.Wait(ctx)
	if !ok {
		return
	}
	s.metrics.Answered(cr.req.Source, time.Since(start))
	s.post(ctx, cr, rep)
}

// post delivers a reply to a mention or DM, at most cap(s.posts) at a time.
func (s *App) post(ctx context.Context, cr chatRequest, rep conversation.Reply) {
	select {
	case s.posts <- struct{}{}:
		defer func() { <-s.posts }()
	case <-ctx.Done():
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var err error
	kind := "answer"
	if rep.Ephemeral && cr.req.Source == "mention" {
		kind = "ephemeral"
		err = s.api.Ephemeral(ctx, cr.req.Channel, cr.req.User, cr.thread, rep.Message)
	} else {
		err = s.charted(ctx, rep, cr.req.Channel, cr.thread, func(m reports.Message) error {
			_, _, err := s.api.Post(ctx, cr.req.Channel, cr.thread, m)
			return err
		})
	}
	s.metrics.Posted(kind, err)
	if err != nil {
		s.log.Warn("answer not delivered", "channel", cr.req.Channel, "intent", rep.Intent, "err", err)
		return
	}
	if rep.Attachment != nil {
		s.upload(ctx, cr.req.Channel, cr.thread, *rep.Attachment)
	}
}

// slogWriter turns a library's log.Logger output into debug lines of a (redacting) slog logger.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug(strings.TrimSpace(string(p)))
	return len(p), nil
}
