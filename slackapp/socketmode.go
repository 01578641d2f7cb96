package slackapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"runwatch/config"
)

// SocketMode is the Socket Mode transport: apps.connections.open (on SLACK_API_URL's base) hands out
// a websocket URL, Slack pushes envelopes over it, and every envelope is acknowledged at once.
// The SDK reconnects by itself when Slack asks it to or the connection dies; the gate in front of
// apps.connections.open backs those reconnections off when connections keep dropping, and a token
// error Slack will never accept stops it.
type SocketMode struct {
	app    *App
	client *socketmode.Client
	gate   *reconnectGate
	log    *slog.Logger
}

// NewSocketMode is Socket Mode for app, connecting with the app-level token (apiURL: SLACK_API_URL, "" for Slack's).
func NewSocketMode(app *App, appToken, botToken config.Secret, apiURL string, hc *http.Client, log *slog.Logger) *SocketMode {
	if apiURL == "" {
		apiURL = slack.APIURL
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	gate := newReconnectGate(log)
	gated := *hc
	gated.Transport = &gatedTransport{next: hc.Transport, gate: gate}
	api := slack.New(botToken.Reveal(), slack.OptionAPIURL(apiURL), slack.OptionAppLevelToken(appToken.Reveal()),
		slack.OptionHTTPClient(&gated), slack.OptionLog(logLogger(log)))
	client := socketmode.New(api, socketmode.OptionLog(logLogger(log)), socketmode.OptionReadLimit(1<<20))
	return &SocketMode{app: app, client: client, gate: gate, log: log}
}

// errAppTokenRejected explains a rejected app-level token without showing it.
func errAppTokenRejected(code string) error {
	hint := "create an app-level token with the connections:write scope under Basic Information → App-Level Tokens, and enable Socket Mode"
	switch code {
	case "missing_scope":
		hint = "the app-level token lacks the connections:write scope: under Basic Information → App-Level Tokens, generate one with it"
	case "not_allowed_token_type":
		hint = "it is not an app-level token (xapp-…): generate one under Basic Information → App-Level Tokens with the connections:write scope"
	}
	return fmt.Errorf("SLACK_APP_TOKEN was rejected by Slack (%s): %s; runwatch stops rather than retry a token Slack will never accept", code, hint)
}

// socketTokenCodes are apps.connections.open's errors that no retry can change: the token or the app is
// wrong. The SDK stops on some of them by itself and retries the others (missing_scope,
// not_allowed_token_type) forever, printing that it serves.
var socketTokenCodes = map[string]bool{"invalid_auth": true, "not_authed": true, "account_inactive": true, "token_revoked": true,
	"token_expired": true, "not_allowed_token_type": true, "missing_scope": true, "no_permission": true, "invalid_token": true,
	"team_access_not_granted": true, "org_login_required": true, "ekm_access_denied": true}

// socketTokenRejected is the error code when err is one of socketTokenCodes.
func socketTokenRejected(err error) (string, bool) {
	if code, ok := TokenRejected(err); ok {
		return code, true
	}
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok && socketTokenCodes[se.Err] {
		return se.Err, true
	}
	if err != nil && socketTokenCodes[err.Error()] {
		return err.Error(), true
	}
	return "", false
}

// Run connects and answers until ctx ends (nil) or the connection fails for good (an error
// naming the variable to fix when the token is the problem).
func (sm *SocketMode) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- sm.client.RunContext(ctx) }()
	for {
		select {
		case <-ctx.Done():
			<-errc
			return nil
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			if code, ok := socketTokenRejected(err); ok {
				return errAppTokenRejected(code)
			}
			if c := classify(err); c.status == http.StatusNotFound {
				return errAppTokenRejected(fmt.Sprintf("%d %s", c.status, http.StatusText(c.status)))
			}
			return fmt.Errorf("socket mode: %w", err)
		case evt := <-sm.client.Events:
			// The loop is this goroutine's: a panic handling one envelope must not end the connection and the bot.
			var err error
			sm.app.survive(func() { err = sm.handle(ctx, evt) })
			if err != nil {
				return err
			}
		}
	}
}

// handle answers one event of the SDK's; an error stops Socket Mode (a token Slack will never accept).
func (sm *SocketMode) handle(ctx context.Context, evt socketmode.Event) error {
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		sm.log.Debug("connecting to Slack (Socket Mode)")
	case socketmode.EventTypeConnected:
		sm.log.Info("connected to Slack (Socket Mode)")
	case socketmode.EventTypeConnectionError:
		if e, ok := evt.Data.(*slack.ConnectionErrorEvent); ok {
			if code, ok := socketTokenRejected(e.ErrorObj); ok {
				return errAppTokenRejected(code)
			}
			sm.log.Warn("Socket Mode connection failed; retrying", "attempt", e.Attempt, "backoff", e.Backoff, "err", e.ErrorObj)
		}
	case socketmode.EventTypeErrorBadMessage:
		// An envelope the SDK could not parse (an event type it does not know, a payload of another
		// shape): acknowledged all the same, as HTTP mode acknowledges such an event, or Slack would
		// deliver it again and again. Its text is not logged: it is whatever someone wrote.
		bad, _ := evt.Data.(*socketmode.ErrorBadMessage)
		if bad == nil {
			return nil
		}
		var env struct {
			EnvelopeID string `json:"envelope_id"`
		}
		json.Unmarshal(bad.Message, &env)
		sm.log.Warn("Socket Mode envelope not understood; acknowledged", "envelope", env.EnvelopeID, "err", bad.Cause)
		if env.EnvelopeID != "" {
			sm.ack(ctx, env.EnvelopeID, nil)
		}
	case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
		sm.log.Warn("Socket Mode message error", "type", string(evt.Type), "data", fmt.Sprint(evt.Data))
	case socketmode.EventTypeEventsAPI:
		req := evt.Request
		if req == nil {
			return nil
		}
		// Decide (and start answering) before acknowledging: both take microseconds, and once Slack
		// has the acknowledgement the decision has been made.
		// An envelope there is no room to remember (every key inside Slack's redelivery time) is left
		// unacknowledged, for Slack to deliver again, rather than an old key forgotten.
		ev, ok := evt.Data.(slackevents.EventsAPIEvent)
		envelope := "envelope:" + req.EnvelopeID
		switch sm.app.seen.admit(envelope) {
		case admitSeen:
			sm.app.metrics.Event("duplicate")
		case admitFull:
			sm.app.metrics.Event("busy")
			return nil
		default:
			if ok {
				id := req.EnvelopeID
				if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok && cb.EventID != "" {
					id = cb.EventID
				}
				if !sm.app.event(id, ev) {
					sm.app.seen.forget(envelope)
					return nil
				}
			}
		}
		sm.ack(ctx, req.EnvelopeID, nil)
	case socketmode.EventTypeSlashCommand:
		req := evt.Request
		cmd, ok := evt.Data.(slack.SlashCommand)
		if req == nil || !ok {
			return nil
		}
		switch sm.app.seen.admit("envelope:" + req.EnvelopeID) {
		case admitSeen:
			sm.ack(ctx, req.EnvelopeID, nil)
			return nil
		case admitFull:
			// Acknowledged with a word of why, not left for Slack's bare "failed": a command is not delivered
			// again, and nothing was done for it.
			sm.app.metrics.Event("busy")
			sm.ack(ctx, req.EnvelopeID, busyCommand())
			return nil
		}
		// The answer may take the whole inline budget: do not hold up other envelopes meanwhile.
		received := time.Now()
		sm.app.detach(func(bctx context.Context) {
			sc := slashRequest{Received: received, Command: cmd.Command, Text: cmd.Text, Channel: cmd.ChannelID, ChannelName: cmd.ChannelName,
				User: cmd.UserID, ResponseURL: cmd.ResponseURL}
			msg, rep := sm.app.slash(sc)
			if msg == nil {
				sm.ack(ctx, req.EnvelopeID, nil) // the answer follows through the response_url
				return
			}
			if err := sm.client.AckCtx(ctx, req.EnvelopeID, msg); err != nil {
				// Too big for an acknowledgement (20 KB): acknowledge, then deliver the same answer
				// through response_url (a slow answer already follows up by itself).
				sm.log.Debug("slash answer does not fit the acknowledgement; following up", "err", err)
				sm.ack(ctx, req.EnvelopeID, nil)
				if rep != nil {
					sm.app.followUp(bctx, sc, *rep)
				}
			}
		})
	case socketmode.EventTypeInteractive:
		req := evt.Request
		if req == nil {
			return nil
		}
		envelope := "envelope:" + req.EnvelopeID
		switch sm.app.seen.admit(envelope) {
		case admitFull:
			sm.app.metrics.Event("busy")
			return nil // unacknowledged: Slack shows the presser it failed (a press is not delivered again)
		case admitNew:
			if cb, ok := evt.Data.(slack.InteractionCallback); ok && !sm.app.interaction(cb) {
				sm.app.seen.forget(envelope)
				return nil
			}
		}
		sm.ack(ctx, req.EnvelopeID, nil)
	case socketmode.EventTypeHello, socketmode.EventTypeDisconnect:
		sm.log.Debug("Socket Mode", "type", string(evt.Type))
	}
	return nil
}

func (sm *SocketMode) ack(ctx context.Context, envelope string, payload any) {
	if err := sm.client.AckCtx(ctx, envelope, payload); err != nil && ctx.Err() == nil {
		sm.log.Warn("Socket Mode acknowledgement failed", "envelope", envelope, "err", err)
	}
}

// Reconnection backoff: a connection that lived less than stableConnection before the next
// apps.connections.open counts as dropped. The first reconnection after a drop is at once (Slack asks for
// reconnections now and then); each further one in a row waits twice as long as the last, from
// firstReconnectWait up to maxReconnectWait. An endpoint that dropped every connection after its hello had
// the SDK reconnect 5,707 times in 5 s, logging 11,150 lines.
const (
	stableConnection   = 30 * time.Second
	firstReconnectWait = time.Second
	maxReconnectWait   = 2 * time.Minute
)

// reconnectGate spaces the calls of apps.connections.open, the start of every (re)connection.
type reconnectGate struct {
	mu    sync.Mutex
	last  time.Time     // the last open
	wait  time.Duration // the wait before the last open (0: it was at once)
	drops int           // connections in a row that did not last
	// history is the waits before the last opens, newest last (at most 64), for tests and figures.
	history []time.Duration
	log     *slog.Logger
	// now and sleep are the clock; tests step a fake one.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

func newReconnectGate(log *slog.Logger) *reconnectGate {
	return &reconnectGate{log: log, now: time.Now, sleep: sleepCtx}
}

// before waits, before an apps.connections.open, for as long as the connections before it ask.
func (g *reconnectGate) before(ctx context.Context) error {
	g.mu.Lock()
	now := g.now()
	var wait time.Duration
	switch {
	case g.last.IsZero() || now.Sub(g.last) >= stableConnection:
		g.drops = 0
	case g.drops == 0:
		g.drops = 1 // dropped once: reconnect at once
	default:
		g.drops++
		wait = min(max(2*g.wait, firstReconnectWait), maxReconnectWait)
	}
	g.wait = wait
	if len(g.history) == 64 {
		g.history = g.history[1:]
	}
	g.history = append(g.history, wait)
	drops := g.drops
	g.mu.Unlock()
	if wait > 0 {
		if drops == 2 || wait == maxReconnectWait {
			g.log.Warn("Socket Mode connections keep dropping; reconnecting with a growing wait", "dropped", drops, "wait", wait)
		}
		if err := g.sleep(ctx, wait); err != nil {
			return err
		}
	}
	g.mu.Lock()
	g.last = g.now()
	g.mu.Unlock()
	return nil
}

// waits is the waits before the last opens, oldest first.
func (g *reconnectGate) waits() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]time.Duration(nil), g.history...)
}

// gatedTransport passes each apps.connections.open through the gate first.
type gatedTransport struct {
	next http.RoundTripper
	gate *reconnectGate
}

func (t *gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "apps.connections.open") {
		if err := t.gate.before(r.Context()); err != nil {
			return nil, err
		}
	}
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}
