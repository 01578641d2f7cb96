package redact

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
)

// Redactor removes credentials from text bound for a log line or an error string: the configured
// secrets themselves, anything shaped like a Slack token, Slack webhook and file upload URLs, and the
// password, query and fragment of any other URL.
type Redactor struct {
	secrets []string
}

var (
	slackToken   = regexp.MustCompile(`\b(xox[a-z]|xapp)-[A-Za-z0-9-]+`)
	slackWebhook = regexp.MustCompile(`https?://hooks\.slack\.com/[^\s"'<>]+`)
	// An external upload's URL (files.getUploadURLExternal) is a capability in its path.
	slackUpload = regexp.MustCompile(`https?://files\.slack\.com/upload/[^\s"'<>]+`)
)

// New returns a redactor for the given secrets' values (unset ones are ignored).
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, v := range secrets {
		// Very short values would redact ordinary words; no real credential is that short.
		if len(v) >= 8 {
			r.secrets = append(r.secrets, v)
		}
	}
	return r
}

// SlackTokens returns s with anything shaped like a Slack token (xoxb-…, xapp-…) redacted, its kind kept:
// "xoxb-[redacted]".
func SlackTokens(s string) string { return slackToken.ReplaceAllString(s, "$1-[redacted]") }

// Redact returns s with every credential replaced by [redacted].
func (r *Redactor) Redact(s string) string {
	// Token shapes first, so a redacted token still says which kind it was.
	s = SlackTokens(s)
	if r != nil {
		for _, v := range r.secrets {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	s = slackWebhook.ReplaceAllString(s, "https://hooks.slack.com/[redacted]")
	s = slackUpload.ReplaceAllString(s, "https://files.slack.com/upload/[redacted]")
	// Probes name their URLs redacted already; this catches any other (an SDK's, a dependency's).
	return URLsIn(s)
}

// Logger wraps a logger so that every message and attribute passes through r.
func Logger(l *slog.Logger, r *Redactor) *slog.Logger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return slog.New(handler{h: l.Handler(), r: r})
}

type handler struct {
	h slog.Handler
	r *Redactor
}

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.Redact(v.String()))
	case slog.KindAny:
		return slog.String(a.Key, h.r.Redact(fmt.Sprint(v.Any())))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, x := range g {
			out[i] = h.attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return handler{h: h.h.WithAttrs(out), r: h.r}
}

func (h handler) WithGroup(name string) slog.Handler {
	return handler{h: h.h.WithGroup(name), r: h.r}
}
