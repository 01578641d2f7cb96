package conversation

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"

	"runwatch/config"
	"runwatch/reports"
)

// This file decides which buttons a status post or a warning carries. Every button is a command
// (snooze, unsnooze, stage, logs) or "take" (I'm on it); interactions.go turns a press back into one.

// Action ids of runwatch's buttons: the allow-list of what a press may ask for.
const (
	ActSnooze   = "snooze"
	ActUnsnooze = "unsnooze"
	ActTake     = "take"
	ActStage    = "stage_done"
	ActLogs     = "logs"
	ActDetails  = "details" // the full status, under a chat-sized one
)

// RefPrefix marks an actions block as runwatch's; a press whose block_id lacks it is ignored.
const RefPrefix = "rw:"

// snoozeChoices are the menu's snooze durations; the button snoozes for an hour.
var snoozeChoices = []struct{ text, dur string }{{"Snooze 30 min", "30m"}, {"Snooze 4 h", "4h"}, {"Snooze 1 day", "1d"}}

// controlView is what the buttons of one message depend on.
type controlView struct {
	Run     string
	Key     string // the warning's key; "" for a status, a burst of warnings or a key too long to carry
	Warning bool   // the buttons are a warning's (a press keeps its text), even without a key
	Snoozed bool
	Owner   string // who said "I'm on it" (warnings)
	Stage   string // the first manual stage still pending (status)
	HasLog  bool
	Details bool // a chat-sized status: its full status is a press away
}

// ControlRef is what comes back with a press: the run, and the warning when it is one. Warning marks
// a warning without a key of its own (a burst of them), so that a press edits its buttons rather than
// rendering the run's status over its text. A run or a key too long for a block_id travels as its digest
// (RunDigest, KeyDigest, with Run or Key empty): Resolve gives the run back, and a key is matched against
// the open warnings (DigestOf).
type ControlRef struct {
	Run, Key             string
	Warning              bool
	RunDigest, KeyDigest string
}

// DigestOf is the digest a run name or a warning key too long for a block_id travels as.
func DigestOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:12])
}

// Encode is the block_id that carries r: at most reports.MaxBlockID long, a long key (a deep mount path, a
// long metrics URL) and then a long run name replaced by their digests, so that no warning loses its buttons.
func (r ControlRef) Encode() string {
	enc := func(run, key string, runDigest, keyDigest bool) string {
		v := url.Values{}
		if runDigest {
			v.Set("rd", DigestOf(run))
		} else {
			v.Set("r", run)
		}
		switch {
		case key != "" && keyDigest:
			v.Set("kd", DigestOf(key))
		case key != "":
			v.Set("k", key)
		case r.Warning:
			v.Set("w", "1")
		}
		return RefPrefix + v.Encode()
	}
	id := enc(r.Run, r.Key, false, false)
	if len(id) > reports.MaxBlockID {
		id = enc(r.Run, r.Key, false, true)
	}
	if len(id) > reports.MaxBlockID {
		id = enc(r.Run, r.Key, true, true)
	}
	return id
}

// ParseRef reads a block_id Encode made; ok is false for one that is not runwatch's.
func ParseRef(blockID string) (ControlRef, bool) {
	rest, ok := strings.CutPrefix(blockID, RefPrefix)
	if !ok {
		return ControlRef{}, false
	}
	v, err := url.ParseQuery(rest)
	if err != nil || (v.Get("r") == "" && v.Get("rd") == "") {
		return ControlRef{}, false
	}
	return ControlRef{Run: v.Get("r"), Key: v.Get("k"), RunDigest: v.Get("rd"), KeyDigest: v.Get("kd"),
		Warning: v.Get("k") != "" || v.Get("kd") != "" || v.Get("w") == "1"}, true
}

// Resolve gives back the run of a ref that carried its digest (one of the run file's runs, or none: ok
// false), and the key of an open warning among keys when the ref carried the key's digest.
func (b *Bot) Resolve(ref ControlRef, keys []string) (ControlRef, bool) {
	if ref.RunDigest != "" {
		for _, r := range b.mon.Config().Runs {
			if DigestOf(r.Name) == ref.RunDigest {
				ref.Run, ref.RunDigest = r.Name, ""
			}
		}
		if ref.RunDigest != "" {
			return ref, false
		}
	}
	if ref.KeyDigest != "" {
		for _, k := range keys {
			if DigestOf(k) == ref.KeyDigest {
				ref.Key, ref.KeyDigest = k, ""
			}
		}
	}
	return ref, true
}

// controls returns the buttons for v: at most two buttons and the menu, in order of use — I'm on
// it (an open warning nobody took), Snooze 1 h or Unsnooze, Mark <stage> done (a status with a
// manual stage pending), Last log lines; what does not fit goes in the menu.
func controls(v controlView) *reports.Controls {
	c := &reports.Controls{Ref: ControlRef{Run: v.Run, Key: v.Key, Warning: v.Warning}.Encode()}
	if v.Key != "" && v.Owner == "" {
		c.Buttons = append(c.Buttons, reports.Button{ID: ActTake, Text: "I'm on it", Style: "primary"})
	}
	if v.Snoozed {
		c.Buttons = append(c.Buttons, reports.Button{ID: ActUnsnooze, Text: "Unsnooze"})
	} else {
		c.Buttons = append(c.Buttons, reports.Button{ID: ActSnooze, Text: "Snooze 1 h", Value: "1h"})
	}
	if v.Key == "" && v.Stage != "" {
		c.Buttons = append(c.Buttons, reports.Button{ID: ActStage, Text: "Mark “" + v.Stage + "” done", Value: v.Stage, Style: "primary"})
	}
	if v.Details {
		c.Buttons = append(c.Buttons, reports.Button{ID: ActDetails, Text: "Full status"})
	}
	logsShown := v.HasLog && len(c.Buttons) < maxButtons
	if logsShown {
		c.Buttons = append(c.Buttons, reports.Button{ID: ActLogs, Text: "Last log lines"})
	}
	for _, s := range snoozeChoices {
		c.Menu = append(c.Menu, reports.Choice{Text: s.text, Value: ActSnooze + ":" + s.dur})
	}
	if v.HasLog && !logsShown {
		c.Menu = append(c.Menu, reports.Choice{Text: "Last log lines", Value: ActLogs})
	}
	return c
}

// maxButtons is how many buttons a message shows beside its menu: enough to act, not a wall (a status's
// "Full status" comes on top: it is the rest of the message).
const maxButtons = 2

// pendingManualStage is the first stage of r checked by hand ("manual") that is not done yet.
func pendingManualStage(r *config.Run, stages []reports.StageStatus) string {
	manual := map[string]bool{}
	for _, s := range r.Stages {
		if s.Check == "manual" {
			manual[s.Name] = true
		}
	}
	for _, s := range stages {
		if manual[s.Name] && s.State != reports.StageDone {
			return s.Name
		}
	}
	return ""
}

// StatusControls are the buttons of a run's status.
func (b *Bot) StatusControls(rs reports.RunStatus) *reports.Controls {
	r, ok := b.cfg.RunByName(rs.Name)
	if !ok {
		return nil
	}
	_, snoozed := b.mon.SnoozedUntil(rs.Name)
	return controls(controlView{Run: rs.Name, Snoozed: snoozed, Stage: pendingManualStage(r, rs.Stages), HasLog: r.Log != "", Details: true})
}

// WarningControls are the buttons of a warning about run (key is the alerter's condition key).
func (b *Bot) WarningControls(run, key, owner string) *reports.Controls {
	r, ok := b.cfg.RunByName(run)
	if !ok {
		return nil
	}
	_, snoozed := b.mon.SnoozedUntil(run)
	return controls(controlView{Run: run, Key: key, Warning: true, Snoozed: snoozed, Owner: owner, HasLog: r.Log != ""})
}

// StatusMessage is a run's status sized for a channel, with its buttons ("Full status" among them): the
// scheduled post, the /runwatch status answer in Slack and the message refreshed after a press. charts adds
// Slack-drawn charts of the run's history.
func (b *Bot) StatusMessage(rs reports.RunStatus, charts bool) reports.Message {
	m := b.snoozedBy(rs.Name, reports.RenderStatusBrief(rs, b.mon.Now(), b.loc))
	m.Controls = b.StatusControls(rs)
	if charts {
		m.Charts = b.TrendCharts(rs.Name)
	}
	return m
}

// FullStatus is a run's status in full, without buttons: the console's, and the "Full status" of a
// chat-sized one.
func (b *Bot) FullStatus(rs reports.RunStatus) reports.Message {
	return b.snoozedBy(rs.Name, reports.RenderStatus(rs, b.mon.Now(), b.loc))
}

// snoozedBy adds who snoozed run to m's snooze line.
func (b *Bot) snoozedBy(run string, m reports.Message) reports.Message {
	if who := b.SnoozedBy(run); who != "" {
		for i, c := range m.Context {
			if strings.HasPrefix(c, ":zzz: warnings snoozed until ") {
				m.Context[i] = c + " by " + who
			}
		}
	}
	return m
}
