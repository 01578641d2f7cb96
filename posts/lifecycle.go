package posts

import (
	"runwatch/reports"
)

// This file is a warning's own message over its life: posted with its buttons, then edited in place when it
// resolves (when, after how long, by whom if someone was on it: buttons gone), expires (an ETA move that is
// no longer news: buttons gone), flaps (it says so, buttons kept: it is not over) or comes back (open again,
// buttons back). A reply in its thread still says each change to whoever follows it; the message itself is
// what the channel sees, so it never shows a button on something that has cleared.

// edit adds to posts (through post) the edit of al's own message to a new state: the state line first, then
// the warning as it was posted. A warning with no message of its own (not delivered yet, or posted inside a
// burst or a note) is left as it is. kind says what the edit is: a warning's kind (open again: its buttons
// come back), or a follow-up's (_resolved, _expired: none).
func (a *Alerter) edit(al *ActiveAlert, key, kind string, post func(*ActiveAlert, Post), state string) {
	if al.Ref == "" || al.Shared {
		return
	}
	m := al.Message
	m.Controls, m.Charts = nil, nil
	m.Sections = append([]string{state}, m.Sections...)
	switch kind {
	case al.Kind + "_flapping":
		m.Title = withSuffix(m.Title, " (flapping)")
	case al.Kind + "_resolved":
		m.Title = withSuffix(m.Title, " (resolved)")
	case al.Kind + "_expired":
		m.Title = withSuffix(m.Title, " (expired)")
	}
	post(al, Post{Run: al.Run, Kind: kind, Key: key, Edit: al.Ref, Message: m})
}

func withSuffix(title, suffix string) string {
	if title == "" {
		return ""
	}
	return reports.TruncateRunes(title, 150-len(suffix)) + suffix
}
