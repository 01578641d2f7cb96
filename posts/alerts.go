package posts

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"runwatch/monitor"
	"runwatch/reports"
)

// Warning kinds.
const (
	AlertShift     = "eta_shift"
	AlertStall     = "stall"
	AlertProtected = "protected_write"
	AlertOutput    = "output_on_protected"
	AlertDiskFull  = "disk_full"
	AlertProbe     = "probe_down"
	AlertFinished  = "finished"
)

// Post is something the bot says unprompted: a warning, a follow-up or a scheduled status.
type Post struct {
	Run     string
	Channel string
	Kind    string
	Key     string // identifies the condition, e.g. "synth-25k/stall"
	Message reports.Message
	// ThreadRef is the transport's reference of the message this one follows up (Slack thread ts).
	ThreadRef string
	// ID identifies this post across a crash: it is recorded before the post is sent and travels
	// with it (Slack message metadata), so a restarted bot can ask whether it landed.
	ID string
	// Covers are the keys of the posts this one stands for (the note of a lost alert state, a burst): they
	// are delivered, or not, with it, here and when a restarted bot settles it.
	Covers []string `json:",omitempty"`
	// Burst is the group of a burst of warnings at the top level, or of one going on in its thread: where
	// the next evaluation's warnings of the group go (see coalesceBursts).
	Burst string `json:",omitempty"`
	// Edit, when set, is the transport's reference of a message this post replaces in place: the warning's
	// own message once it resolved, expired, flaps or is open again (see lifecycle.go), or a finish post that
	// the job's progress contradicts (corrected where it stands).
	Edit string `json:",omitempty"`
	// Broadcast sends a reply in a thread to the channel too.
	Broadcast bool `json:",omitempty"`
	// Owner is who said "I'm on it" about the warning an edit shows open ("" when nobody).
	Owner string `json:",omitempty"`
	// Mentions are whom the post pages (config.Mention: user and user group ids, @here): a critical
	// warning's, when it is posted or comes back.
	Mentions []string `json:",omitempty"`
}

// PendingPost is a post whose intent was recorded and whose delivery was not yet confirmed.
type PendingPost struct {
	Post Post      `json:"post"`
	At   time.Time `json:"at"`
	// Timeout is how long the post's call could take (zero in state saved before it was recorded:
	// DeliverTimeout). It is kept with the intent, so that a restart with a shorter RUNWATCH_POST_TIMEOUT
	// still waits out the call the crash interrupted.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// AlertState is the alerter's persisted memory: which conditions are active, when each was last
// posted and where, so a restart neither repeats nor forgets a warning.
type AlertState struct {
	Active map[string]*ActiveAlert `json:"active"`
	// Pending holds posts being delivered, by ID; after a crash they are looked up before anything
	// is posted again.
	Pending map[string]PendingPost `json:"pending,omitempty"`
	// Bursts are the bursts of warnings posted a moment ago, by group: more of a group's warnings in the
	// next evaluation go on in the burst's thread.
	Bursts map[string]BurstRecord `json:"bursts,omitempty"`
	// Retry holds follow-ups (a resolution, a flapping notice) the chat service refused or failed: a warning
	// that fails is simply due again at the next evaluation, a follow-up is said once, so it is kept here and
	// delivered again, under its first ID, until it lands or pendingGiveUp passes.
	Retry []PendingPost `json:"retry,omitempty"`
	// Channels are the ids Slack gave the run file's "#name" channels where warnings landed: a warning's
	// message is edited (chat.update) by channel id, after a restart too.
	Channels map[string]string `json:"channels,omitempty"`
}

// ActiveAlert is one condition that is (or recently was) true.
type ActiveAlert struct {
	Kind       string    `json:"kind"`
	Run        string    `json:"run"`
	Since      time.Time `json:"since"`
	Seen       int       `json:"seen"`       // consecutive evaluations it held
	Posted     time.Time `json:"posted"`     // last warning posted (zero: not yet)
	Ref        string    `json:"ref"`        // transport reference of the warning, for follow-ups
	Summary    string    `json:"summary"`    // the warning's first line, for the follow-up
	Cleared    bool      `json:"cleared"`    // condition gone; kept, with its thread, until its cooldown ends
	Suppressed bool      `json:"suppressed"` // held back by a snooze

	// A condition that recovers and comes back within its cooldown is the same warning: it goes on
	// in the first warning's thread. Downs are the times it went down (confirmed) within the flap
	// window; from flapDowns of them on it is flapping, and its changes are summarised once it
	// holds steady instead of posted one by one.
	Confirmed bool        `json:"confirmed,omitempty"` // this episode reached Confirm
	Recurring bool        `json:"recurring,omitempty"` // came back after it cleared; not yet said
	ClearedAt time.Time   `json:"cleared_at,omitzero"` // when it last went away
	Changed   time.Time   `json:"changed,omitzero"`    // last confirmed down or clear
	Downs     []time.Time `json:"downs,omitempty"`
	Flapping  bool        `json:"flapping,omitempty"`
	// Correcting: a finish post that progress contradicts is being corrected in place.
	Correcting bool `json:"correcting,omitempty"`

	// Message is the warning as posted (without its buttons), so that its message can be edited when it
	// resolves, expires, flaps or comes back; Shared marks a warning posted inside a post standing for others
	// (a burst, the note of a lost memory), whose message is not its own to edit.
	Message reports.Message `json:"message,omitzero"`
	Shared  bool            `json:"shared,omitempty"`
}

// Flapping: a condition that recovers for the second time within flapWindow of going down is flapping:
// its message says so, and its changes are not posted one by one until it has been steady (up or down)
// for flapWindow.
const (
	flapWindow = 5 * time.Minute
	flapDowns  = 2
)

// recentDowns is the downs within flapWindow of now.
func (al *ActiveAlert) recentDowns(now time.Time) int {
	n := 0
	for _, d := range al.Downs {
		if now.Sub(d) < flapWindow {
			n++
		}
	}
	return n
}

func (al *ActiveAlert) recordDown(now time.Time) {
	kept := al.Downs[:0]
	for _, d := range al.Downs {
		if now.Sub(d) < flapWindow {
			kept = append(kept, d)
		}
	}
	al.Downs = append(kept, now)
	al.Changed = now
}

// AlertPolicy sets how often each kind may be posted.
type AlertPolicy struct {
	Cooldown map[string]time.Duration // minimum time between two posts of the same condition
	// Confirm is how many consecutive evaluations a condition must hold before it is posted
	// (1 posts at once); probes that fail once are not worth a warning.
	Confirm map[string]int
}

// DefaultAlertPolicy is the policy used unless a test sets another.
func DefaultAlertPolicy() AlertPolicy {
	return AlertPolicy{
		Cooldown: map[string]time.Duration{
			AlertShift: 30 * time.Minute, AlertStall: time.Hour, AlertProtected: time.Hour,
			AlertOutput: 6 * time.Hour, AlertDiskFull: 2 * time.Hour, AlertProbe: time.Hour, AlertFinished: 24 * time.Hour,
			AlertFinishShare: 2 * time.Hour, AlertDrafterDrop: 2 * time.Hour,
		},
		Confirm: map[string]int{AlertProbe: 2, AlertDiskFull: 2},
	}
}

// Alerter turns monitor evaluations into warnings and follow-ups. It is transport-agnostic: Slack
// and the console both feed it evaluations and deliver what it returns.
type Alerter struct {
	Policy AlertPolicy
	State  AlertState
	// Channel finds where a run's warnings go.
	Channel func(run string) string
	// Broadcast says whether a run's resolutions go to the channel as well as the warning's thread (nil: not).
	Broadcast func(run string) bool
	// Page is whom a run's warning of kind pages (nil, or nil for a kind: nobody); only critical kinds do.
	Page func(run, kind string) []string
	loc  *time.Location
}

// NewAlerter returns an alerter with the default policy.
func NewAlerter(loc *time.Location, channel func(string) string) *Alerter {
	return &Alerter{Policy: DefaultAlertPolicy(), State: AlertState{Active: map[string]*ActiveAlert{}}, Channel: channel, loc: loc}
}

// stateNotSaved summarises the warning that a run's state is not on disk.
const stateNotSaved = "state not saved"

type condition struct {
	kind, key, summary string
	msg                reports.Message
}

// conditions lists what is wrong with a run right now.
func (a *Alerter) conditions(ev monitor.Evaluation) []condition {
	rs := ev.Run
	var out []condition
	title := func(kind string) string { return rs.Name + " · " + strings.ReplaceAll(kind, "_", " ") }
	if ev.Shift != nil {
		out = append(out, condition{kind: AlertShift, key: rs.Name + "/" + AlertShift,
			summary: "ETA moved: " + ev.Shift.Reason,
			msg:     reports.Message{Title: rs.Name + " · ETA moved", Sections: reports.ETASections(rs, a.loc, reports.ShiftLead(*ev.Shift, a.loc))}})
	}
	if rs.ETA != nil && rs.ETA.State == reports.StateStalled {
		out = append(out, condition{kind: AlertStall, key: rs.Name + "/" + AlertStall,
			summary: "no progress",
			msg:     reports.Message{Title: title("stalled"), Sections: reports.ETASections(rs, a.loc, "")}})
	}
	if rs.ETA != nil && rs.ETA.State == reports.StateDone {
		line := ":white_check_mark: *" + reports.Esc(rs.Name) + " finished.*"
		if rs.Progress != nil {
			line += " " + reports.ProgressLine(*rs.Progress)
		}
		if rs.Finish != nil {
			line += "\n" + reports.FinishLine(*rs.Finish, a.loc)
		}
		out = append(out, condition{kind: AlertFinished, key: rs.Name + "/" + AlertFinished, summary: "finished",
			msg: reports.Message{Title: rs.Name + " · finished", Sections: []string{line}}})
	}
	out = append(out, signalConditions(rs)...)
	for _, w := range rs.Storage.Warnings {
		kind := w.Kind
		out = append(out, condition{kind: kind, key: rs.Name + "/" + kind + "/" + w.Mount, summary: reports.PlainText(w.Message),
			msg: reports.Message{Title: title(kind), Sections: []string{rs.Storage.WarningSeverity(w) + " " + w.Message}}})
	}
	for _, p := range rs.Problems {
		if p.Probe == "state" {
			out = append(out, condition{kind: AlertProbe, key: rs.Name + "/" + AlertProbe + "/state", summary: stateNotSaved,
				msg: reports.Message{Title: title("state not saved"), Sections: []string{fmt.Sprintf(
					":floppy_disk: What runwatch knows about %s is not on disk: %s. Answers go on; history, snoozes and stage marks are kept in memory and saved once the state directory takes writes again.",
					reports.Esc(rs.Name), reports.Esc(p.Error))}}})
			continue
		}
		if !strings.HasPrefix(p.Probe, "metrics ") && !strings.HasPrefix(p.Probe, "log ") && !strings.HasPrefix(p.Probe, "prometheus") {
			continue
		}
		if rs.ServerRetired(p.Probe) {
			continue
		}
		// A source that answers with something else (HTTP 500, a login page) is up: restarting it may not be the fix.
		summary, head := p.Probe+summaryUnreachable, "source down"
		if p.Answers {
			summary, head = p.Probe+summaryNotMetrics, "source answers, but not with metrics"
		}
		out = append(out, condition{kind: AlertProbe, key: rs.Name + "/" + AlertProbe + "/" + p.Probe,
			summary: summary,
			msg: reports.Message{Title: title(head), Sections: []string{fmt.Sprintf(":red_circle: %s is failing: %s. Until it recovers, answers say what it leaves unseen.",
				reports.Code(p.Probe), reports.Esc(p.Error))}}})
	}
	return out
}

// Process updates the alert state from one evaluation per run and returns what to post. snoozed
// says whether a run's warnings are silenced; conditions still track while snoozed, so unsnoozing
// does not replay old news but does report what is still wrong.
func (a *Alerter) Process(evs []monitor.Evaluation, now time.Time, snoozed func(run string) bool) []Post {
	if a.State.Active == nil {
		a.State.Active = map[string]*ActiveAlert{}
	}
	var posts []Post
	current := map[string]bool{}
	post := func(al *ActiveAlert, p Post) {
		if a.Channel != nil {
			p.Channel = a.Channel(al.Run)
		}
		posts = append(posts, p)
	}
	for _, ev := range evs {
		run := ev.Run.Name
		for _, c := range a.conditions(ev) {
			current[c.key] = true
			al := a.State.Active[c.key]
			switch {
			case al == nil || (al.Cleared && al.Posted.IsZero()):
				al = &ActiveAlert{Kind: c.kind, Run: run, Since: now}
				a.State.Active[c.key] = al
			case al.Cleared:
				// Back within its cooldown: the same warning, in the same thread.
				al.Cleared, al.Confirmed, al.Recurring, al.Since, al.Seen = false, false, true, now, 0
			}
			al.Seen++
			if al.Seen < max(1, a.Policy.Confirm[c.kind]) {
				continue
			}
			if !al.Confirmed {
				al.Confirmed = true
				if c.kind != AlertShift && c.kind != AlertFinished {
					al.recordDown(now)
				}
			}
			if snoozed(run) {
				if al.Posted.IsZero() || now.Sub(al.Posted) >= a.Policy.Cooldown[c.kind] {
					al.Suppressed = true
				}
				continue
			}
			recurred := al.Recurring && al.Ref != ""
			al.Recurring = false
			if recurred {
				if al.Flapping {
					continue // summarised when it holds steady
				}
				al.Posted, al.Summary, al.Suppressed = now, c.summary, false
				again := fmt.Sprintf(":repeat: Again (it had recovered at %s).", reports.SlackTime(al.ClearedAt, a.loc))
				p := Post{Run: run, Kind: c.kind, Key: c.key, Message: c.msg, ThreadRef: al.Ref, Mentions: a.page(run, c)}
				p.Message.Sections = append([]string{again}, p.Message.Sections...)
				post(al, p)
				al.Message = c.msg
				a.edit(al, c.key, c.kind, post, fmt.Sprintf(":repeat: *Again* since %s (it had recovered at %s).",
					reports.SlackTime(now, a.loc), reports.SlackTime(al.ClearedAt, a.loc)))
				continue
			}
			if al.Flapping {
				if now.Sub(al.Changed) >= flapWindow {
					al.Flapping, al.Posted = false, now
					post(al, Post{Run: run, Kind: c.kind, Key: c.key, ThreadRef: al.Ref, Message: reports.Message{Sections: []string{fmt.Sprintf(
						":red_circle: Holding steady, down, since %s, after flapping (down %d times within %s).",
						reports.SlackTime(al.Changed, a.loc), len(al.Downs), reports.Duration(flapWindow.Seconds()))}}})
					a.edit(al, c.key, c.kind, post, fmt.Sprintf(":red_circle: *Down* since %s, steady after flapping (down %d times within %s).",
						reports.SlackTime(al.Changed, a.loc), len(al.Downs), reports.Duration(flapWindow.Seconds())))
				}
				continue
			}
			// A shift is an event, not a state: each one the detector confirms is news (it has its
			// own cooldown). Other conditions are posted once, then again only after their cooldown.
			due := al.Posted.IsZero() || now.Sub(al.Posted) >= a.Policy.Cooldown[c.kind]
			if !due {
				continue
			}
			if c.kind == AlertFinished && !al.Posted.IsZero() {
				continue // a finished job is announced once
			}
			al.Posted, al.Summary, al.Suppressed = now, c.summary, false
			p := Post{Run: run, Kind: c.kind, Key: c.key, Message: c.msg}
			if al.Ref != "" {
				p.ThreadRef = al.Ref // a repeat goes under the first warning
				p.Message.Sections = append([]string{fmt.Sprintf("Still %s (since %s).", reports.Esc(strings.ReplaceAll(c.kind, "_", " ")), reports.SlackTime(al.Since, a.loc))}, p.Message.Sections...)
			} else {
				al.Message = c.msg
				p.Mentions = a.page(run, c)
			}
			post(al, p)
		}
	}
	// Conditions that went away: a follow-up in the warning's thread, once.
	keys := make([]string, 0, len(a.State.Active))
	for k := range a.State.Active {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// A condition is over only when this evaluation could have seen it: a storage warning does
	// not clear because the /proc scan failed, a stall does not clear because the log vanished.
	evaluated := map[string]monitor.Evaluation{}
	for _, ev := range evs {
		evaluated[ev.Run.Name] = ev
	}
	for _, k := range keys {
		al := a.State.Active[k]
		ev, ok := evaluated[al.Run]
		if current[k] || !ok || !canClear(al, k, ev) {
			continue
		}
		if al.Kind == AlertFinished && !al.Posted.IsZero() && al.Ref != "" && !al.Correcting && finishContradicted(ev) {
			// The finish post said every item was done; the job's progress since says otherwise: the post is
			// corrected where it stands, and a real finish is announced anew.
			al.Correcting = true
			post(al, Post{Run: al.Run, Kind: AlertFinished + correctedSuffix, Key: k, Edit: al.Ref, Message: finishCorrection(ev.Run)})
			continue
		}
		if al.Kind == AlertShift || al.Kind == AlertFinished {
			// Events, not states: forget them after their cooldown so the next one is news, and take the
			// buttons off the message: there is nothing left to take or snooze on it.
			if now.Sub(al.Posted) >= a.Policy.Cooldown[al.Kind] || al.Posted.IsZero() {
				if !al.Posted.IsZero() && IsWarning(al.Kind) {
					a.edit(al, k, al.Kind+"_expired", post, fmt.Sprintf(":hourglass: News at %s, and no longer current: ask _ETA?_ for the estimate now.",
						reports.SlackTime(al.Posted, a.loc)))
				}
				delete(a.State.Active, k)
			}
			continue
		}
		if al.Cleared {
			// Gone, and kept for its cooldown so that a recurrence goes into its thread.
			if al.Flapping && now.Sub(al.Changed) >= flapWindow {
				al.Flapping = false
				post(al, Post{Run: al.Run, Kind: al.Kind + "_resolved", Key: k, ThreadRef: al.Ref, Message: reports.Message{Sections: []string{fmt.Sprintf(
					":large_green_circle: Holding steady since %s: %s. It went down %d times within %s.",
					reports.SlackTime(al.ClearedAt, a.loc), reports.Esc(recoveredText(al)), len(al.Downs), reports.Duration(flapWindow.Seconds()))}}})
				a.edit(al, k, al.Kind+"_resolved", post, fmt.Sprintf(":large_green_circle: *Resolved* at %s, after flapping (down %d times within %s): %s.",
					reports.SlackTime(al.ClearedAt, a.loc), len(al.Downs), reports.Duration(flapWindow.Seconds()), reports.Esc(recoveredText(al))))
			}
			if !al.Flapping && now.Sub(al.ClearedAt) >= a.Policy.Cooldown[al.Kind] {
				delete(a.State.Active, k)
			}
			continue
		}
		if al.Posted.IsZero() || snoozed(al.Run) {
			if !al.Posted.IsZero() {
				a.edit(al, k, al.Kind+"_resolved", post, fmt.Sprintf(":large_green_circle: *Cleared* at %s (after %s), while the run's warnings were snoozed.",
					reports.SlackTime(now, a.loc), reports.Duration(now.Sub(al.Since).Seconds())))
			}
			delete(a.State.Active, k)
			continue
		}
		al.Cleared, al.ClearedAt = true, now
		if !al.Confirmed {
			continue // came back and went again before it was confirmed: nothing was said
		}
		al.Confirmed, al.Changed = false, now
		if al.Flapping {
			continue
		}
		if n := al.recentDowns(now); n >= flapDowns {
			// The second recovery in a row: it flaps. Its message says so once; the changes are not posted
			// one by one until it holds steady.
			al.Flapping = true
			a.edit(al, k, al.Kind+"_flapping", post, fmt.Sprintf(":arrows_counterclockwise: *Flapping*: down %d times in %s, up again since %s. Its changes are not posted one by one; this message says when it holds steady.",
				n, reports.Duration(now.Sub(al.Downs[len(al.Downs)-n]).Seconds()), reports.SlackTime(now, a.loc)))
			continue
		}
		text := recoveredText(al)
		if al.Kind == AlertProtected {
			text = protectedRecovered(warnedMount(al, k), ev.Run.Storage)
		}
		if ev.Run.ServerRetired(al.Summary) {
			text = fmt.Sprintf("%s finished, so %s is not needed any more", al.Run, strings.TrimSuffix(strings.TrimSuffix(al.Summary, summaryUnreachable), summaryNotMetrics))
		}
		after := reports.Duration(now.Sub(al.Since).Seconds())
		a.edit(al, k, al.Kind+"_resolved", post, fmt.Sprintf(":large_green_circle: *Resolved* at %s, after %s: %s.", reports.SlackTime(now, a.loc), after, reports.Esc(text)))
		msg := reports.Message{Sections: []string{fmt.Sprintf(":large_green_circle: Resolved after %s: %s.", after, reports.Esc(text))}}
		post(al, Post{Run: al.Run, Kind: al.Kind + "_resolved", Key: k, Message: msg, ThreadRef: al.Ref, Broadcast: a.Broadcast != nil && a.Broadcast(al.Run)})
	}
	return posts
}

// page is whom condition c of run pages: the run's paging for its kind, when it is critical. The state
// directory not taking writes is runwatch's own trouble, not the job's: it pages nobody.
func (a *Alerter) page(run string, c condition) []string {
	if a.Page == nil || strings.HasSuffix(c.key, "/state") {
		return nil
	}
	return a.Page(run, c.kind)
}

// followUp reports whether a post kind follows up a warning rather than being one: a resolution,
// a flapping notice, a claim's reminder.
func followUp(kind string) bool {
	return strings.HasSuffix(kind, "_resolved") || strings.HasSuffix(kind, "_flapping") || strings.HasSuffix(kind, "_reminder") ||
		strings.HasSuffix(kind, "_expired") || strings.HasSuffix(kind, correctedSuffix)
}

// followsUp reports whether p follows up a warning rather than being one: a follow-up's kind, or an edit of
// the warning's message. It is said once: when it fails it is kept for another try (Sampler.retryLater).
func (p Post) followsUp() bool { return p.Edit != "" || followUp(p.Kind) }

// stillTrue reports whether a follow-up kept for another try still says what is so: a resolution whose
// warning came back, or a flapping notice of a warning that holds steady again, is out of date.
func (a *Alerter) stillTrue(p Post) bool {
	al := a.State.Active[p.Key]
	switch {
	case strings.HasSuffix(p.Kind, "_resolved"):
		return al == nil || al.Cleared
	case strings.HasSuffix(p.Kind, "_flapping"):
		return al != nil && al.Flapping
	case p.Edit != "" && IsWarning(p.Kind):
		return al != nil && !al.Cleared // shown open again: only while it is
	}
	return true
}

// Delivered records where a posted warning landed, so follow-ups can thread under it.
func (a *Alerter) Delivered(p Post, ref string) {
	if strings.HasSuffix(p.Kind, correctedSuffix) {
		delete(a.State.Active, p.Key) // corrected: the next finish is news again
		return
	}
	if p.Burst != "" {
		if p.ThreadRef != "" {
			ref = p.ThreadRef // a burst going on: its warnings thread under the burst, not under the reply
		} else if b, ok := a.State.Bursts[p.Burst]; ok {
			b.Ref = ref
			a.State.Bursts[p.Burst] = b
		}
	}
	if p.Edit != "" {
		return // the warning's own message, edited: it is where it was
	}
	for _, k := range p.Covers {
		a.Delivered(Post{Key: k, Kind: p.Kind}, ref)
		if al := a.State.Active[k]; al != nil && al.Ref == ref {
			al.Shared = true // its message stands for the others too: not its own to edit
		}
	}
	if al := a.State.Active[p.Key]; al != nil && al.Ref == "" && ref != "" && !followUp(p.Kind) {
		al.Ref = ref
	}
}

// Undelivered forgets that a post was made, so the next evaluation tries again instead of losing it.
func (a *Alerter) Undelivered(p Post) {
	if al := a.State.Active[p.Key]; al != nil && strings.HasSuffix(p.Kind, correctedSuffix) {
		al.Correcting = false // tried again on the next evaluation
		return
	}
	for _, k := range p.Covers {
		a.Undelivered(Post{Key: k, Kind: p.Kind})
	}
	if al := a.State.Active[p.Key]; al != nil && !followUp(p.Kind) {
		al.Posted = time.Time{}
	}
}

// IsWarning reports whether a post of this kind is a warning that buttons can act on: not a
// follow-up, a reminder or the good news that a job finished.
func IsWarning(kind string) bool {
	return kind != AlertFinished && kind != lostKind && !strings.HasSuffix(kind, "_resolved") && !strings.HasSuffix(kind, "_reminder") &&
		!strings.HasSuffix(kind, "_expired") && !strings.HasSuffix(kind, correctedSuffix)
}
