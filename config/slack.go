package config

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file is the run file's Slack settings: whom a critical warning pages (page:), the names of the
// installed app's slash commands (commands:), and how a run's status is posted (post_mode: the default).

// DefaultPostMode is a run's post_mode when the run file sets none: one living status message per run,
// edited in place, rather than a fresh message every hour.
const DefaultPostMode = "update"

// Page says whom a run's critical warnings mention: for every critical warning (Critical), or for one kind
// (its own list replaces Critical for that kind). Nothing else pages: not routine statuses, not other
// warnings, not follow-ups.
type Page struct {
	Critical       []Mention `yaml:"critical"`        // every critical warning
	ProtectedWrite []Mention `yaml:"protected_write"` // something writes to a protected mount
	DiskFull       []Mention `yaml:"disk_full"`       // a disk fills before the job ends
	Stall          []Mention `yaml:"stall"`           // the job makes no progress
	ProbeDown      []Mention `yaml:"probe_down"`      // an engine's metrics, the log or Prometheus is down
}

// Empty reports whether p names nobody.
func (p *Page) Empty() bool {
	return p == nil || len(p.Critical)+len(p.ProtectedWrite)+len(p.DiskFull)+len(p.Stall)+len(p.ProbeDown) == 0
}

// For is whom a warning of kind mentions under p: its kind's own list, else the critical list; nil for a
// kind that is not critical.
func (p *Page) For(kind string) []Mention {
	if p == nil {
		return nil
	}
	var own []Mention
	switch kind {
	case "protected_write":
		own = p.ProtectedWrite
	case "disk_full":
		own = p.DiskFull
	case "stall":
		own = p.Stall
	case "probe_down":
		own = p.ProbeDown
	default:
		return nil
	}
	if len(own) > 0 {
		return own
	}
	return p.Critical
}

// Paging is whom run's warnings of kind mention: the run's own page: when it names anyone, else the
// top-level one.
func (f *File) Paging(r *Run, kind string) []Mention {
	if r != nil && !r.Page.Empty() {
		return r.Page.For(kind)
	}
	return f.Page.For(kind)
}

// Mention is someone a warning pages: a user (U0123ABCD or W0123ABCD, as <@…> too), a user group
// (S0123ABCD, as <!subteam^…> too), or @here / @channel. Slack mentions people by id, not by name.
type Mention string

var (
	userID      = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)
	groupID     = regexp.MustCompile(`^S[A-Z0-9]{2,20}$`)
	userMention = regexp.MustCompile(`^<@([UW][A-Z0-9]{2,20})(\|[^>]*)?>$`)
	groupRef    = regexp.MustCompile(`^<!subteam\^(S[A-Z0-9]{2,20})(\|[^>]*)?>$`)
)

// UnmarshalYAML accepts the forms Mention lists, and keeps them as an id or @here / @channel.
func (m *Mention) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: must be a single value: a user id (U0123ABCD), a user group id (S0123ABCD) or @here", n.Line)
	}
	v := strings.TrimSpace(n.Value)
	switch {
	case userID.MatchString(v), groupID.MatchString(v):
		*m = Mention(v)
	case userMention.MatchString(v):
		*m = Mention(userMention.FindStringSubmatch(v)[1])
	case groupRef.MatchString(v):
		*m = Mention(groupRef.FindStringSubmatch(v)[1])
	case v == "@here" || v == "here" || v == "<!here>":
		*m = "@here"
	case v == "@channel" || v == "channel" || v == "<!channel>":
		*m = "@channel"
	case strings.HasPrefix(v, "@") || strings.HasPrefix(v, "#"):
		return fmt.Errorf("line %d: %q is a name: Slack pages people by id: a user id (U0123ABCD: the profile's ⋯ menu, Copy member ID), "+
			"a user group id (S0123ABCD: the group's page, ⋯ menu, Copy group ID), or @here", n.Line, v)
	default:
		return fmt.Errorf("line %d: %q is not a user id (U0123ABCD), a user group id (S0123ABCD) or @here", n.Line, v)
	}
	return nil
}

// Commands are the names of the installed app's slash commands, when they are not runwatch's own (/eta,
// /storage, /runwatch): two runwatch apps in one workspace need names of their own, such as /eta-b200. A
// Suffix (or a Prefix) names all three at once; a command's own name wins over both.
type Commands struct {
	Prefix   string `yaml:"prefix"`   // "b200-": /b200-eta, /b200-storage, /b200-runwatch
	Suffix   string `yaml:"suffix"`   // "-b200": /eta-b200, /storage-b200, /runwatch-b200
	ETA      string `yaml:"eta"`      // the /eta command as installed
	Storage  string `yaml:"storage"`  // the /storage command as installed
	Runwatch string `yaml:"runwatch"` // the /runwatch command as installed
}

// commandAffix is what a prefix or a suffix may hold: Slack's command names are lower case letters,
// digits, - and _.
var commandAffix = regexp.MustCompile(`^[a-z0-9_-]{1,20}$`)

// commandName is a whole slash command's name.
var commandName = regexp.MustCompile(`^/[a-z0-9_-]{1,31}$`)

// Name is the installed name of runwatch's slash command base ("/eta", "/storage", "/runwatch").
func (c Commands) Name(base string) string {
	own := map[string]string{"/eta": c.ETA, "/storage": c.Storage, "/runwatch": c.Runwatch}[base]
	if own != "" {
		return own
	}
	return "/" + c.Prefix + strings.TrimPrefix(base, "/") + c.Suffix
}

// validate checks the names; where names the key's place and line.
func (c Commands) validate(at func(key string) string) error {
	for _, a := range []struct{ key, v string }{{"prefix", c.Prefix}, {"suffix", c.Suffix}} {
		if a.v != "" && !commandAffix.MatchString(a.v) {
			return fmt.Errorf("%s %q: use lower case letters, digits, - and _ (Slack's command names), at most 20", at(a.key), a.v)
		}
	}
	seen := map[string]string{}
	for _, n := range []struct{ key, base string }{{"eta", "/eta"}, {"storage", "/storage"}, {"runwatch", "/runwatch"}} {
		name := c.Name(n.base)
		if !commandName.MatchString(name) {
			return fmt.Errorf("%s %q is not a slash command name: a / then lower case letters, digits, - and _ (at most 32 in all)", at(n.key), name)
		}
		if prev, dup := seen[name]; dup {
			return fmt.Errorf("%s %q is the %s command's name too: each needs its own", at(n.key), name, prev)
		}
		seen[name] = n.key
	}
	return nil
}
