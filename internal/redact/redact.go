// Package redact keeps credentials out of what runwatch logs and says. It is the one URL redactor: it
// removes the credentials a URL can carry from the URL and from text that holds URLs (probes names
// configured URLs with it, probes.RedactURL and RedactURLsIn, and flight redacts a panic's text with it
// before the panic is an error anyone sees); and the one secret redactor (Redactor): the configured
// secrets, Slack token shapes and webhook URLs, with the slog handler that passes every log record
// through it (Logger).
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// URL names a URL without its secrets. Credentials ride in URLs three ways: user:password@, query
// values (token=, api_key=, sig=, ...), for which no list of parameter names is complete, so the user
// info is dropped and every query value is replaced:
// http://admin:pw@host:9000/metrics?api_key=K&x=1 names itself http://host:9000/metrics?api_key=[redacted]&x=[redacted];
// and path segments (a Telegram bot's /bot<id>:<token>/, a Slack webhook's /services/T/B/<secret>, a
// hosted Prometheus's /api/prom/<key>/), each of which Segment judges: one that looks like a secret is
// replaced by [redacted] and the rest of the path stays readable.
// The fragment, never sent, is dropped too. A URL that does not parse names itself by its scheme
// alone, since the text around a parse error may be a secret, and so does one without "//" after its
// scheme (user:password@host parses so, as the scheme "user" and opaque text).
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.Index(raw, "://"); i > 0 && i < 10 {
			return raw[:i] + "://(unparseable URL)"
		}
		return "(unparseable URL)"
	}
	if u.Opaque != "" {
		// "admin:PASSWORD@proxy/api", a URL written without "//", parses as the scheme "admin" and
		// opaque text in which nothing is known to be safe to show.
		return u.Scheme + ":(opaque)"
	}
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	redactPath(u)
	if u.RawQuery == "" && !u.ForceQuery {
		return u.String()
	}
	var parts []string
	for _, kv := range strings.Split(u.RawQuery, "&") {
		if kv == "" {
			continue
		}
		k, _, _ := strings.Cut(kv, "=")
		if name, err := url.QueryUnescape(k); err == nil {
			k = url.QueryEscape(name)
		} else {
			k = "(name)"
		}
		parts = append(parts, k+"=[redacted]")
	}
	u.RawQuery, u.ForceQuery = "", false
	if len(parts) == 0 {
		return u.String()
	}
	return u.String() + "?" + strings.Join(parts, "&")
}

// urlInText finds URLs in free text: a scheme, "://", and everything up to a space, a quote or an
// angle bracket (trailing punctuation is trimmed by URLsIn).
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]{0,15}://[^\s<>"'\x60]+`)

// URLsIn returns text with every URL that carries a password, a query, a fragment or a path segment
// that looks like a secret named as URL names it; other URLs and the rest of the text stay as they are.
func URLsIn(text string) string {
	return urlInText.ReplaceAllStringFunc(text, func(u string) string {
		trimmed := strings.TrimRight(u, ".,;:!?)]}")
		tail := u[len(trimmed):]
		// A closing bracket that closes one inside the URL is the URL's own: a value already redacted
		// (?x=[redacted]) would otherwise be named again as [redacted]], and a key kept so would change.
		for tail != "" {
			open := map[byte]string{')': "(", ']': "[", '}': "{"}[tail[0]]
			if open == "" || strings.Count(trimmed, open) <= strings.Count(trimmed, tail[:1]) {
				break
			}
			trimmed, tail = u[:len(trimmed)+1], tail[1:]
		}
		if !strings.ContainsAny(trimmed, "@?#") && !secretInPath(trimmed) {
			return u
		}
		return URL(trimmed) + tail
	})
}
