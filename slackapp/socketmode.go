package slackapp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"runwatch/config"
)

// SocketMode is the Socket Mode transport: apps.connections.open (on SLACK_API_URL's base) hands out
// a websocket URL, Slack pushes envelopes over it, and every envelope is acknowledged at once.
// The SDK reconnects by itself when Slack asks it to or the connection dies.
type SocketMode struct {
	app    *App
	client *socketmode.Client
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
	api := slack.New(botToken.Reveal(), slack.OptionAPIURL(apiURL), slack.OptionAppLevelToken(appToken.Reveal()),
		slack.OptionHTTPClient(hc), slack.OptionLog(logLogger(log)))
	client := socketmode.New(api, socketmode.OptionLog(logLogger(log)), socketmode.OptionReadLimit(1<<20))
	return &SocketMode{app: app, client: client, log: log}
}

// errAppTokenRejected explains a rejected app-level token without showing it.
func errAppTokenRejected(code string) error {
	return fmt.Errorf("SLACK_APP_TOKEN was rejected by Slack (%s): create an app-level token with the connections:write scope under Basic Information → App-Level Tokens, and enable Socket Mode", code)
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
			if code, ok := TokenRejected(err); ok {
				return errAppTokenRejected(code)
			}
			if c := classify(err); c.status == http.StatusNotFound {
				return errAppTokenRejected(fmt.Sprintf("%d %s", c.status, http.StatusText(c.status)))
			}
			return fmt.Errorf("socket mode: %w", err)
		case evt := <-sm.client.Events:
			sm.handle(ctx, evt)
		}
	}
}

func (sm *SocketMode) handle(ctx context.Context, evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		sm.log.Debug("connecting to Slack (Socket Mode)")
	case socketmode.EventTypeConnected:
		sm.log.Info("connected to Slack (Socket Mode)")
	case socketmode.EventTypeConnectionError:
		if e, ok := evt.Data.(*slack.ConnectionErrorEvent); ok {
			sm.log.Warn("Socket Mode connection failed; retrying", "attempt", e.Attempt, "backoff", e.Backoff, "err", e.ErrorObj)
		}
	case socketmode.EventTypeErrorBadMessage:
		// An envelope the SDK could not parse (an event type it does not know, a payload of another
		// shape): acknowledged all the same, as HTTP mode acknowledges such an event, or Slack would
		// deliver it again and again. Its text is not logged: it is whatever someone wrote.
		bad, _ := evt.Data.(*socketmode.ErrorBadMessage)
		if bad == nil {
			return
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
			return
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
			return
		default:
			if ok {
				id := req.EnvelopeID
				if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok && cb.EventID != "" {
					id = cb.EventID
				}
				if !sm.app.event(id, ev) {
					sm.app.seen.forget(envelope)
					return
				}
			}
		}
		sm.ack(ctx, req.EnvelopeID, nil)
	case socketmode.EventTypeSlashCommand:
		req := evt.Request
		cmd, ok := evt.Data.(slack.SlashCommand)
		if req == nil || !ok {
			return
		}
		switch sm.app.seen.admit("envelope:" + req.EnvelopeID) {
		case admitSeen:
			sm.ack(ctx, req.EnvelopeID, nil)
			return
		case admitFull:
			// Acknowledged with a word of why, not left for Slack's bare "failed": a command is not delivered
			// again, and nothing was done for it.
			sm.app.metrics.Event("busy")
			sm.ack(ctx, req.EnvelopeID, busyCommand())
			return
		}
		// The answer may take the whole inline budget: do not hold up other envelopes meanwhile.
		sm.app.detach(func(bctx context.Context) {
			sc := slashRequest{Command: cmd.Command, Text: cmd.Text, Channel: cmd.ChannelID, ChannelName: cmd.ChannelName,
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
			return
		}
		envelope := "envelope:" + req.EnvelopeID
		switch sm.app.seen.admit(envelope) {
		case admitFull:
			sm.app.metrics.Event("busy")
			return // unacknowledged: Slack shows the presser it failed (a press is not delivered again)
		case admitNew:
			if cb, ok := evt.Data.(slack.InteractionCallback); ok && !sm.app.interaction(cb) {
				sm.app.seen.forget(envelope)
				return
			}
		}
		sm.ack(ctx, req.EnvelopeID, nil)
	case socketmode.EventTypeHello, socketmode.EventTypeDisconnect:
		sm.log.Debug("Socket Mode", "type", string(evt.Type))
	}
}

func (sm *SocketMode) ack(ctx context.Context, envelope string, payload any) {
	if err := sm.client.AckCtx(ctx, envelope, payload); err != nil && ctx.Err() == nil {
		sm.log.Warn("Socket Mode acknowledgement failed", "envelope", envelope, "err", err)
	}
}
