package probes

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"runwatch/internal/redact"
)

// RedactURL is the one place a configured URL becomes a name: the form probe names, metric
// labels, state keys, warnings, status output and stage details carry. The user info, every query
// value, the fragment and every path segment that looks like a secret are dropped (redact.URL):
// http://admin:pw@host:9000/metrics?api_key=K&x=1 names itself http://host:9000/metrics?api_key=[redacted]&x=[redacted].
func RedactURL(raw string) string { return redact.URL(raw) }

// RedactURLsIn returns text (a job's log line) with every URL that carries a password, a query, a
// fragment or a secret-looking path segment named as RedactURL names it; other URLs and the rest of the text stay as they are.
func RedactURLsIn(text string) string { return redact.URLsIn(text) }

// withoutSecrets returns err with every one of secrets in its text replaced by [redacted] (errors.Is
// and As still reach its causes), or err itself when its text holds none.
func withoutSecrets(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := secretsRedacted(err.Error(), secrets)
	if msg == err.Error() {
		return err
	}
	return redactedError{msg: msg, err: err}
}

// secretsRedacted returns text with every one of secrets replaced by [redacted]. Values shorter
// than 6 bytes are left alone: they would redact ordinary words ("?format=json").
func secretsRedacted(text string, secrets []string) string {
	for _, s := range secrets {
		if len(s) >= 6 {
			text = strings.ReplaceAll(text, s, "[redacted]")
		}
	}
	return text
}

// clipLine is outside text an error quotes (a query, a server's status reason, content type or error
// message) on one line of at most 200 bytes: a hostile endpoint's 300 KB reason phrase must not be the
// whole of every status post. Secrets are redacted before the cut, which could leave half of one.
func clipLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if c := ClipText(s, 200); len(c) < len(s) {
		return c + "…"
	}
	return s
}

// urlSecrets are what RedactURL hides of a URL that a server may echo back (in a status line, an
// error body): its password, decoded and as written, its user info as the Authorization header
// carries it (a token given as the user alone, https://TOKEN@host, is sent so too), its query
// values, decoded and as written, and the path segments it hides (a server's 404 may name the route).
func urlSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	out := redact.PathSecrets(raw)
	pw, ok := u.User.Password()
	if ok {
		out = append(out, pw, url.QueryEscape(pw))
	}
	if ok || u.User.Username() != "" {
		out = append(out, basicAuthSecret(u.User.Username(), pw))
	}
	for _, kv := range strings.Split(u.RawQuery, "&") {
		_, v, _ := strings.Cut(kv, "=")
		out = append(out, v)
		if dec, err := url.QueryUnescape(v); err == nil {
			out = append(out, dec)
		}
	}
	return out
}

// basicAuthSecret is user and password as an Authorization: Basic header carries them (base64 of
// "user:password"): a server that echoes the header it was sent names the password in a form that
// decodes with one command.
func basicAuthSecret(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// redactedError is an error whose text had secrets removed.
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

// ErrRedirectRefused marks a probe request that was redirected to another host.
var ErrRedirectRefused = errors.New("redirect to another host refused")

// SameHostRedirects is the CheckRedirect of every probe client: a redirect within the configured
// host and port (or from http to https on the default ports) is followed, at most 5 times; one to
// another host or port, or from https down to http, is refused and the error names where it pointed, redacted. Following it
// would send the request, and whatever the other host answers (a cloud metadata service, a login
// page), into Slack.
func SameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return fmt.Errorf("stopped after %d redirects", len(via))
	}
	if !sameOrigin(via[0].URL, req.URL) {
		why := ""
		if strings.EqualFold(via[0].URL.Hostname(), req.URL.Hostname()) && strings.EqualFold(via[0].URL.Scheme, "https") &&
			strings.EqualFold(req.URL.Scheme, "http") {
			why = " (a downgrade from https to http)"
		}
		// Where it pointed is the server's to choose, as long as it likes: redacted, then cut to a line.
		return fmt.Errorf("%w: %s redirected to %s%s", ErrRedirectRefused, clipLine(RedactURL(via[len(via)-1].URL.String())), clipLine(RedactURL(req.URL.String())), why)
	}
	return nil
}

// sameOrigin reports whether b is on a's host and port with a's scheme, or is its upgrade to https;
// the default ports of http and https count as one, so an upgrade to https is followed. A downgrade
// from https to http is not: it would send the request, and the credentials a probe adds to every
// request to its host (a Prometheus bearer token), in clear text.
func sameOrigin(a, b *url.URL) bool {
	if !strings.EqualFold(a.Hostname(), b.Hostname()) {
		return false
	}
	if !strings.EqualFold(a.Scheme, b.Scheme) && !(strings.EqualFold(a.Scheme, "http") && strings.EqualFold(b.Scheme, "https")) {
		return false
	}
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		return "default"
	}
	pa, pb := port(a), port(b)
	norm := func(u *url.URL, p string) string {
		if (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
			return "default"
		}
		return p
	}
	return norm(a, pa) == norm(b, pb)
}

// WithProbeRedirects returns a copy of c (http.DefaultClient when nil) that follows redirects only
// within one host (SameHostRedirects). Every probe that fetches a configured URL uses one.
func WithProbeRedirects(c *http.Client) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	cp := *c
	cp.CheckRedirect = SameHostRedirects
	return &cp
}
