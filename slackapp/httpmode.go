package slackapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"runwatch/config"
	"runwatch/internal/botmetrics"
	"runwatch/state"
)

// maxSlackBody caps a Slack request body; Slack's own payloads are far smaller.
const maxSlackBody = 1 << 20

// The bodies read at once are bounded. Headers that look signed (a current timestamp, a well-formed
// signature) are all a client needs to be read; only the body can prove it is Slack: 400 slow clients each
// announcing 1 MiB once held 966 MB. Slack's own payloads are a few KB and read in a moment: bodies
// announcing at most smallBody are read maxSmallBodies at once (32 MiB at most), larger ones (up to the cap)
// maxLargeBodies at once (16 MiB), so that slow large ones never hold up Slack's. A request that finds its
// pool full waits for room up to bodyWait (a flood of Slack's own is read in turn), then is turned away
// (503, Retry-After) before its body.
const (
	smallBody      = 64 << 10
	maxSmallBodies = 512
	maxLargeBodies = 16
	bodyWait       = 2 * time.Second
)

// HTTPMode is the HTTP transport: Slack's Events API, slash commands and interactivity endpoints,
// each signature-checked before anything else, plus /healthz and /metrics, which are not.
type HTTPMode struct {
	app     *App // nil serves only /healthz and /metrics
	secret  config.Secret
	metrics *botmetrics.Metrics
	// replays remembers verified signatures: the same signed request twice is a replay.
	replays *replayCache
	bodies  *bodyBudgets
	log     *slog.Logger
	// Standby, when set and saying something, is why this instance answers nothing: another instance of the
	// app is on duty (Duty). Slack's endpoints and /healthz then answer 503 with it, before reading a body, so
	// that a load balancer sends Slack's requests to the instance on duty. Set it before Handler.
	Standby func() string
}

// NewHTTPMode is HTTP mode for app with the signing secret; a nil app serves only /healthz and /metrics.
func NewHTTPMode(app *App, secret config.Secret, m *botmetrics.Metrics, log *slog.Logger) *HTTPMode {
	return &HTTPMode{app: app, secret: secret, metrics: m, replays: newReplayCache(nil), bodies: newBodyBudgets(), log: log}
}

// Handler routes /healthz, /metrics and, with an app and a secret, Slack's three endpoints.
func (h *HTTPMode) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", h.onDuty(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	}))
	mux.Handle("GET /metrics", h.metrics.Handler())
	if h.app != nil && h.secret.Set() {
		mux.HandleFunc("POST /slack/events", h.onDuty(h.verified(h.events)))
		mux.HandleFunc("POST /slack/commands", h.onDuty(h.verified(h.commands)))
		mux.HandleFunc("POST /slack/interactions", h.onDuty(h.verified(h.interactions)))
	}
	return mux
}

// onDuty answers 503 instead of next while this instance stands by (Standby).
func (h *HTTPMode) onDuty(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.Standby != nil {
			if why := h.Standby(); why != "" {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.Header().Set("Retry-After", "20")
				w.Header().Set("Connection", "close")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, "standby: "+why+"\n")
				return
			}
		}
		next(w, r)
	}
}

// Remember keeps the verified signatures in dir's journal, and restores those still in their window:
// a request replayed across a restart is refused.
func (h *HTTPMode) Remember(dir *state.Dir) error {
	return h.replays.persist(dir, func(err error) { h.log.Warn("seen Slack signature not saved", "err", err) })
}

// CloseJournal closes the journal Remember opened (logging a failure).
func (h *HTTPMode) CloseJournal() { h.replays.keys.closeOrLog(h.log) }

// NewHTTPServer sets the timeouts a server facing the internet needs.
func NewHTTPServer(addr string, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// verified checks Slack's v0 headers (a timestamp within five minutes, a well-formed signature) before it
// reads a byte of the body, then reads the (capped) body within the budget of bodies read at once, checks the
// signature over it and that it was not seen before; only then does next run. A request refused before its
// body is read closes its connection: the body is never drained.
func (h *HTTPMode) verified(next func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithValue(r.Context(), receivedKey{}, time.Now()))
		sv, err := slack.NewSecretsVerifier(r.Header, h.secret.Reveal())
		if err != nil {
			w.Header().Set("Connection", "close")
			h.rejectSignature(w, r, err)
			return
		}
		if r.ContentLength > maxSlackBody {
			w.Header().Set("Connection", "close")
			h.metrics.Reject("too_large")
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		size := r.ContentLength
		if size < 0 {
			size = maxSlackBody // chunked: it may take the whole cap
		}
		if !h.bodies.take(r.Context(), size) {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			h.metrics.Reject("bodies_busy")
			http.Error(w, "too many requests being read; retry later", http.StatusServiceUnavailable)
			return
		}
		body, err := readBody(w, r, size)
		h.bodies.give(size)
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				h.metrics.Reject("too_large")
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			h.metrics.Reject("unreadable")
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		sv.Write(body)
		if err := sv.Ensure(); err != nil {
			h.rejectSignature(w, r, err)
			return
		}
		ts, sig := r.Header.Get("X-Slack-Request-Timestamp"), r.Header.Get("X-Slack-Signature")
		switch h.replays.admit(ts, sig) {
		case admitSeen:
			h.metrics.Reject("replayed")
			h.log.Info("Slack request rejected", "path", r.URL.Path, "reason", "replayed")
			http.Error(w, "request already received", http.StatusUnauthorized)
			return
		case admitFull:
			busy(w, h.metrics, h.log, r.URL.Path)
			return
		}
		rw := &refusal{ResponseWriter: w}
		next(rw, r, body)
		if rw.refused {
			// Not acted on: Slack's retry (with its own signature) or a redelivery of this one may be.
			h.replays.forget(ts, sig)
		}
	}
}

// receivedKey is the request context's key for when its handler began, before its body was read: a slash
// command's inline budget counts from then.
type receivedKey struct{}

// rejectSignature refuses a request whose headers or signature are not Slack's, counting why.
func (h *HTTPMode) rejectSignature(w http.ResponseWriter, r *http.Request, err error) {
	reason := "bad_signature"
	switch {
	case errors.Is(err, slack.ErrExpiredTimestamp):
		reason = "stale"
	case errors.Is(err, slack.ErrMissingHeaders):
		reason = "unsigned"
	}
	h.metrics.Reject(reason)
	h.log.Info("Slack request rejected", "path", r.URL.Path, "reason", reason)
	http.Error(w, "invalid request signature", http.StatusUnauthorized)
}

// readBody reads a body of the announced size (capped; a chunked one up to the cap) into one buffer of
// that size, so that a body read does not hold twice its size while a growing buffer doubles.
func readBody(w http.ResponseWriter, r *http.Request, size int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, maxSlackBody)
	if r.ContentLength < 0 {
		return io.ReadAll(rd)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(rd, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// bodyBudgets bounds the request bodies read at once: small ones and large ones, each in a pool of its own.
type bodyBudgets struct {
	small, large chan struct{}
}

func newBodyBudgets() *bodyBudgets {
	return &bodyBudgets{small: make(chan struct{}, maxSmallBodies), large: make(chan struct{}, maxLargeBodies)}
}

func (b *bodyBudgets) pool(size int64) chan struct{} {
	if size <= smallBody {
		return b.small
	}
	return b.large
}

// take reserves room for a body of size bytes, waiting up to bodyWait for it; false when none came.
func (b *bodyBudgets) take(ctx context.Context, size int64) bool {
	p := b.pool(size)
	select {
	case p <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(bodyWait)
	defer t.Stop()
	select {
	case p <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (b *bodyBudgets) give(size int64) { <-b.pool(size) }

// inFlight is how many bodies are being read.
func (b *bodyBudgets) inFlight() int { return len(b.small) + len(b.large) }

// events handles the Events API: the URL check, and callbacks acknowledged at once and answered
// in the background. A redelivery (X-Slack-Retry-Num) of an event already received is only
// acknowledged.
func (h *HTTPMode) events(w http.ResponseWriter, r *http.Request, body []byte) {
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		// An event type the SDK does not know: acknowledge so Slack does not retry it.
		h.log.Debug("Slack event not understood", "err", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	switch ev.Type {
	case slackevents.URLVerification:
		c, ok := ev.Data.(*slackevents.EventsAPIURLVerificationEvent)
		if !ok {
			http.Error(w, "bad url_verification", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, c.Challenge)
	case slackevents.CallbackEvent:
		cb, _ := ev.Data.(*slackevents.EventsAPICallbackEvent)
		id := ""
		if cb != nil {
			id = cb.EventID
		}
		if retry := r.Header.Get("X-Slack-Retry-Num"); retry != "" {
			h.log.Debug("Slack event redelivered", "event_id", id, "retry", retry, "reason", r.Header.Get("X-Slack-Retry-Reason"))
		}
		if !h.app.event(id, ev) {
			busy(w, h.metrics, h.log, r.URL.Path)
			return
		}
		w.WriteHeader(http.StatusOK)
	case slackevents.AppRateLimited:
		h.log.Warn("Slack is rate limiting this app's events")
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// commands answers a slash command, inline when it is quick enough.
func (h *HTTPMode) commands(w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	sc, err := slack.SlashCommandParse(r)
	if err != nil {
		http.Error(w, "bad slash command", http.StatusBadRequest)
		return
	}
	received, _ := r.Context().Value(receivedKey{}).(time.Time)
	msg, _ := h.app.slash(slashRequest{Received: received, Command: sc.Command, Text: sc.Text, Channel: sc.ChannelID, ChannelName: sc.ChannelName,
		User: sc.UserID, ResponseURL: sc.ResponseURL})
	if msg == nil {
		w.WriteHeader(http.StatusOK) // acknowledged; the answer follows through the response_url
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(msg); err != nil {
		h.log.Warn("slash command answer not written", "err", err)
	}
}

// interactions hands a verified interactivity payload (a button press) to the app and
// acknowledges at once; the app answers in the background.
func (h *HTTPMode) interactions(w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	cb, err := slack.InteractionCallbackParse(r)
	if err != nil {
		http.Error(w, "bad interaction payload", http.StatusBadRequest)
		return
	}
	if !h.app.interaction(cb) {
		busy(w, h.metrics, h.log, r.URL.Path)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// busy answers a request the delivered-request memory has no room for (every key in it is inside Slack's
// redelivery time): 503 with Retry-After, rather than forgetting a key and answering some redelivery twice.
// Slack retries an event so refused; a press it shows its presser as failed, and does not send again. A
// slash command gets an answer that says why (busyCommand): it is not sent again either.
func busy(w http.ResponseWriter, m *botmetrics.Metrics, log *slog.Logger, path string) {
	if rw, ok := w.(*refusal); ok {
		rw.refused = true
	}
	m.Reject("busy")
	log.Warn("Slack request refused: too many requests inside the redelivery window", "path", path)
	if path == "/slack/commands" {
		// A command is not delivered again, and a 503 shows its user only that it failed: say why.
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(busyCommand())
		return
	}
	w.Header().Set("Retry-After", "60")
	http.Error(w, "too many requests to remember; retry later", http.StatusServiceUnavailable)
}

// busyCommand is the answer to a slash command refused for want of room to remember it: shown to its user
// alone, nothing done.
func busyCommand() *slack.WebhookMessage {
	return &slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral,
		Text: "runwatch is taking more requests than it can keep track of right now, so it did nothing with this one. Ask again in a minute."}
}

// refusal is the ResponseWriter a verified request is answered through, marked when busy refused it.
type refusal struct {
	http.ResponseWriter
	refused bool
}
