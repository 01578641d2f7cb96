package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"runwatch/config"
	"runwatch/probes"
)

// This file keeps credentials out of what runwatch logs and says: the Redactor, and the slog
// handler that passes every record through it.

// Redactor removes credentials from text bound for a log line or an error string: the configured
// secrets themselves, anything shaped like a Slack token, Slack webhook and file upload URLs, and the
// password, query and fragment of any other URL.
type Redactor struct {
	secrets []string
}

var (
	redactToken   = regexp.MustCompile(`\b(xox[a-z]|xapp)-[A-Za-z0-9-]+`)
	redactWebhook = regexp.MustCompile(`https?://hooks\.slack\.com/[^\s"'<>]+`)
	// An external upload's URL (files.getUploadURLExternal) is a capability in its path.
	redactUpload = regexp.MustCompile(`https?://files\.slack\.com/upload/[^\s"'<>]+`)
)

// NewRedactor returns a redactor for the given secrets (unset ones are ignored).
func NewRedactor(secrets ...config.Secret) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		// Very short values would redact ordinary words; no real credential is that short.
		if v := s.Reveal(); len(v) >= 8 {
			r.secrets = append(r.secrets, v)
		}
	}
	return r
}

// Redact returns s with every credential replaced by [redacted].
func (r *Redactor) Redact(s string) string {
	// Token shapes first, so a redacted token still says which kind it was.
	s = redactToken.ReplaceAllString(s, "$1-[redacted]")
	if r != nil {
		for _, v := range r.secrets {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	s = redactWebhook.ReplaceAllString(s, "https://hooks.slack.com/[redacted]")
	s = redactUpload.ReplaceAllString(s, "https://files.slack.com/upload/[redacted]")
	// Probes name their URLs redacted already; this catches any other (an SDK's, a dependency's).
	return probes.RedactURLsIn(s)
}

// RedactLogger wraps a logger so that every message and attribute passes through r.
func RedactLogger(l *slog.Logger, r *Redactor) *slog.Logger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return slog.New(redactHandler{h: l.Handler(), r: r})
}

type redactHandler struct {
	h slog.Handler
	r *Redactor
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
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

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return redactHandler{h: h.h.WithAttrs(out), r: h.r}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h: h.h.WithGroup(name), r: h.r}
}

// slogWriter turns a library's log.Logger output into debug lines of a (redacting) slog logger.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug(strings.TrimSpace(string(p)))
	return len(p), nil
}
