package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Hidden is what stands in a redacted URL for each part it does not show.
const Hidden = "[redacted]"

// tokenPrefixes are the issued tokens that announce themselves (Slack, OpenAI and Anthropic, Stripe,
// GitHub, GitLab, Grafana Cloud, Hugging Face, npm, PyPI, AWS access keys), followed by enough of a
// token that a word (/sk-learn/) is not one, and a Telegram bot's bot<id>:<token>, whose colon after
// the digits nothing ordinary has.
var tokenPrefixes = regexp.MustCompile(`^(?:(?:xox[abposre]-|xapp-|sk-|sk_(?:live|test)_|[rp]k_(?:live|test)_|` +
	`gh[pousr]_|github_pat_|glpat-|glc_|glsa_|hf_|npm_|pypi-)[A-Za-z0-9_=+/-]{8,}|(?:AKIA|ASIA)[A-Z0-9]{16}|bot[0-9]+:.+)$`)

// podPort is a name and a port (a Kubernetes API proxy's /pods/bot1:8000/proxy/metrics), which the Telegram
// rule's bot<id>:<token> would take for a token: a token is not digits alone.
var podPort = regexp.MustCompile(`^bot[0-9]+:[0-9]+$`)

// hexish is a segment of hex digits and dashes: with 32 digits or more, a key, a digest or a UUID.
var hexish = regexp.MustCompile(`^[0-9A-Fa-f-]+$`)

// tokenChars are the characters of base64, base64url and the tokens built from them.
var tokenChars = regexp.MustCompile(`^[A-Za-z0-9_=+/.~-]+$`)

// Segment reports whether one path segment (percent-decoded) looks like a secret:
//   - a known token's prefix and body (xoxb-…, sk-…, ghp_…, glpat-…, hf_…, AKIA…, Telegram's bot<id>:<token>);
//   - 32 hex digits or more, dashes aside: an API key, a digest, and a UUID too, since a UUID in a path is
//     as often a capability (a ping URL, a Teams webhook) as a run's id, and an id hidden costs only
//     readability, a capability shown costs the capability;
//   - 20 characters or more of base64 or base64url that mix letters and digits in pieces of 10 or more on
//     average (pieces split at - _ . ~ + =): a random token has few separators, a name (Meta-Llama-3.1-70B-
//     Instruct, kube-prometheus-stack-1700000000) has many.
//
// Ordinary segments stay: /metrics, /api/v1/query, /v1/models, /federate, /node-3, dates and numbers
// (digits alone are an id, not a secret).
func Segment(s string) bool {
	if tokenPrefixes.MatchString(s) && !podPort.MatchString(s) {
		return true
	}
	if hexish.MatchString(s) && len(strings.ReplaceAll(s, "-", "")) >= 32 {
		return true
	}
	if len(s) < 20 || !tokenChars.MatchString(s) || !strings.ContainsAny(s, "0123456789") ||
		strings.IndexFunc(s, isLetter) < 0 {
		return false
	}
	pieces := len(strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune("-_.~+=", r) }))
	return pieces > 0 && len(s) >= 10*pieces
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// slackHooks holds webhooks whose secret is the path after its first three segments
// (/services/T…/B…/<secret>, /triggers/T…/<id>/<secret>), whatever it looks like.
const slackHooks = "hooks.slack.com"

// hiddenSegments returns u's raw path segments with those that look like secrets replaced by Hidden,
// and whether any was; the segments as written go to secrets, decoded and not, when it is non-nil.
func hiddenSegments(u *url.URL, secrets *[]string) ([]string, bool) {
	raw := u.EscapedPath()
	if raw == "" || raw == "/" {
		return nil, false
	}
	segs := strings.Split(raw, "/")
	slack := strings.EqualFold(u.Hostname(), slackHooks)
	hid := false
	for i, seg := range segs {
		if seg == "" {
			continue
		}
		dec, err := url.PathUnescape(seg)
		if err != nil {
			dec = seg
		}
		if Segment(dec) || (slack && i > 3) {
			if secrets != nil {
				*secrets = append(*secrets, seg, dec)
			}
			segs[i] = Hidden
			hid = true
		}
	}
	return segs, hid
}

// redactPath replaces u's secret-looking path segments with Hidden.
func redactPath(u *url.URL) {
	segs, hid := hiddenSegments(u, nil)
	if !hid {
		return
	}
	raw := strings.Join(segs, "/")
	u.RawPath = raw
	u.Path, _ = url.PathUnescape(raw)
}

// secretInPath reports whether raw parses as a URL with a path segment Segment hides.
func secretInPath(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return false
	}
	_, hid := hiddenSegments(u, nil)
	return hid
}

// PathSecrets returns the path segments of raw that URL hides, as written and decoded: what a server
// that echoes the request path (a 404 naming the route) would print back.
func PathSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return nil
	}
	var out []string
	hiddenSegments(u, &out)
	return out
}
