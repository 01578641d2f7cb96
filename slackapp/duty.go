package slackapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/slack-go/slack"

	"runwatch/posts"
	"runwatch/reports"
)

// This file is which of several instances of one Slack app answers. Two instances (say on two hosts,
// each with its own state directory) do not share a disk, only Slack, so they agree there: each one posts
// a duty message in the duty channel, with message metadata naming it (dutyMetadataType), and the newest
// message that says "on duty" names the one instance that answers and posts. The instance on duty renews
// its message (a metadata edit) every Renew; one standing by answers nothing, posts nothing, watches that
// message, and takes over (a new message, so it is the newest) once it went off duty or was not renewed
// for Expire, as measured on its own clock: two hosts' wall clocks never meet. An instance on duty that
// sees a newer "on duty" message of another gives way.

// dutyMetadataType is the event_type of a duty message's metadata.
const dutyMetadataType = "runwatch_duty"

// Duty roles, as the metadata says them.
const (
	roleStarting = "starting"
	roleOnDuty   = "on_duty"
	roleStandby  = "standby"
	roleOffDuty  = "off_duty"
)

// dutyScanPages bounds the history read at start for the message of the instance on duty (200 messages a
// page): one buried deeper is taken for gone, and its instance, if it still runs, gives way at its next
// renewal on seeing the newer message.
const dutyScanPages = 5

// Clock is the time a Duty keeps, the scheduler's kind (posts.Clock): intervals are measured on it (Now's
// monotonic reading), and its After waits; tests step it.
type Clock = posts.Clock

// Duty keeps one instance of the app on duty among those sharing its Slack workspace. Acquire waits,
// standing by, until this instance is on duty; Hold keeps it there until ctx ends or another takes over.
type Duty struct {
	api     *API
	channel string // as configured: a name or an id

	// Instance names this instance uniquely and across its restarts (host and state directory): a message
	// of an earlier process of the same instance is not another instance's.
	Instance string
	// Host and PID are what the channel and the other instances' logs call this one.
	Host string
	PID  int
	// Renew is how often the instance on duty renews its message and one standing by looks (default 20 s);
	// Expire how long a message may go unrenewed before the instance standing by takes over (default 90 s).
	Renew, Expire time.Duration
	Clock         Clock
	Loc           *time.Location
	Log           *slog.Logger
	// OnStandby is told each time this instance stands by, and who is on duty; OnDuty when it takes duty,
	// and how. Serve prints them on its terminal.
	OnStandby func(holder string)
	OnDuty    func(how string)

	chID, ts   string // this instance's duty message
	role, note string // what it says: the role, and a line more
	beat       int
	seen       string    // the newest message ts read in the channel
	since      time.Time // in this role since
	lastRenew  error
}

// NewDuty is a Duty kept in channel (a name or an id) for the instance named instance.
func NewDuty(api *API, channel, instance, host string, pid int) *Duty {
	return &Duty{api: api, channel: channel, Instance: instance, Host: host, PID: pid,
		Renew: 20 * time.Second, Expire: 90 * time.Second, Clock: posts.WallClock{}, Loc: time.UTC, Log: slog.New(slog.DiscardHandler)}
}

// Channel is where the duty messages are.
func (d *Duty) Channel() string { return d.channel }

// dutyRecord is one duty message as read back.
type dutyRecord struct {
	TS, Instance, Host, Role string
	PID, Beat                int
}

func (r dutyRecord) who() string { return fmt.Sprintf("runwatch on %s (pid %d)", r.Host, r.PID) }

// LostDuty says another instance took over while this one was on duty.
type LostDuty struct{ Holder string }

func (e LostDuty) Error() string {
	return e.Holder + " is on duty now (a newer duty message): this instance stops answering and posting, so that one instance does"
}

// ErrLostDuty matches a LostDuty.
var ErrLostDuty = errors.New("lost duty")

// Is makes errors.Is(err, ErrLostDuty) hold.
func (e LostDuty) Is(target error) bool { return target == ErrLostDuty }

func (d *Duty) who() string { return fmt.Sprintf("runwatch on %s (pid %d)", d.Host, d.PID) }

// message is this instance's duty message in role, with a line saying more.
func (d *Duty) message(role, more string) reports.Message {
	now := reports.SlackTime(d.since, d.Loc)
	who := fmt.Sprintf("runwatch on *%s* (pid %d)", reports.Esc(d.Host), d.PID)
	var line string
	switch role {
	case roleStarting:
		line = fmt.Sprintf(":hourglass: %s is starting: looking for an instance of this app on duty.", who)
	case roleOnDuty:
		line = fmt.Sprintf(":large_green_circle: %s is *on duty* since %s: it answers here and posts the warnings. "+
			"Another instance of this app stands by and takes over once this one goes off duty or stops renewing this message for %s.",
			who, now, reports.Duration(d.Expire.Seconds()))
	case roleStandby:
		line = fmt.Sprintf(":white_circle: %s *stands by* since %s: it answers nothing and posts nothing while %s is on duty.", who, now, reports.Esc(more))
		more = ""
	case roleOffDuty:
		line = fmt.Sprintf(":black_circle: %s went *off duty* at %s.", who, now)
	}
	if more != "" {
		line += " " + reports.Esc(more)
	}
	return reports.Message{Sections: []string{line}}
}

func (d *Duty) metadata(role string) slack.MsgOption {
	return slack.MsgOptionMetadata(slack.SlackMetadata{EventType: dutyMetadataType, EventPayload: map[string]any{
		"instance": d.Instance, "host": d.Host, "pid": d.PID, "role": role, "beat": d.beat}})
}

// post posts this instance's duty message anew, in role.
func (d *Duty) post(ctx context.Context, role, more string) error {
	d.role, d.note, d.since = role, more, d.Clock.Now()
	opts := append(msgOptions(d.message(role, more)), d.metadata(role))
	var ch, ts string
	err := d.api.call(ctx, "chat.postMessage", func(ctx context.Context) error {
		var err error
		ch, ts, err = d.api.client.PostMessageContext(ctx, d.channel, opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("post the duty message in %s: %w", d.channel, err)
	}
	d.chID, d.ts = ch, ts
	if tsAfter(ts, d.seen) {
		d.seen = ts
	}
	return nil
}

// set edits this instance's duty message to role (a renewal when it is the same, which keeps its line).
func (d *Duty) set(ctx context.Context, role, more string) error {
	if role != d.role || more != d.note {
		d.role, d.note, d.since = role, more, d.Clock.Now()
	}
	opts := append(msgOptions(d.message(role, more)), d.metadata(role))
	return d.update(ctx, d.ts, opts)
}

func (d *Duty) update(ctx context.Context, ts string, opts []slack.MsgOption) error {
	return d.api.call(ctx, "chat.update", func(ctx context.Context) error {
		_, _, _, err := d.api.client.UpdateMessageContext(ctx, d.chID, ts, opts...)
		return err
	})
}

// tsAfter reports whether Slack message ts a is later than b ("" is before everything).
func tsAfter(a, b string) bool {
	fa, _ := strconv.ParseFloat(a, 64)
	fb, _ := strconv.ParseFloat(b, 64)
	return b == "" || fa > fb
}

// record reads a message's duty metadata (ok false: not a duty message).
func record(m slack.Message) (dutyRecord, bool) {
	if m.Metadata.EventType != dutyMetadataType {
		return dutyRecord{}, false
	}
	p := m.Metadata.EventPayload
	str := func(k string) string { s, _ := p[k].(string); return s }
	num := func(k string) int { f, _ := p[k].(float64); return int(f) }
	return dutyRecord{TS: m.Timestamp, Instance: str("instance"), Host: str("host"), Role: str("role"), PID: num("pid"), Beat: num("beat")}, true
}

// newer reads the channel's duty messages posted after the newest one read so far (at most pages of 200),
// newest first.
func (d *Duty) newer(ctx context.Context, pages int) ([]dutyRecord, error) {
	return d.scan(ctx, pages, d.seen)
}

// scan reads the channel's duty messages posted after the message ts after ("": any), newest first, at
// most pages of 200 messages, and notes the newest message read.
func (d *Duty) scan(ctx context.Context, pages int, after string) ([]dutyRecord, error) {
	var out []dutyRecord
	cursor, newest := "", d.seen
	for range pages {
		var r *slack.GetConversationHistoryResponse
		err := d.api.call(ctx, "conversations.history", func(ctx context.Context) error {
			var err error
			r, err = d.api.client.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
				ChannelID: d.chID, Cursor: cursor, Limit: 200, IncludeAllMetadata: true})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("read the duty messages in %s: %w", d.channel, err)
		}
		done := !r.HasMore || r.ResponseMetaData.NextCursor == ""
		for _, m := range r.Messages {
			if !tsAfter(m.Timestamp, after) {
				done = true
				break
			}
			if tsAfter(m.Timestamp, newest) {
				newest = m.Timestamp
			}
			if rec, ok := record(m); ok && rec.TS != d.ts {
				out = append(out, rec)
			}
		}
		if done {
			break
		}
		cursor = r.ResponseMetaData.NextCursor
	}
	if tsAfter(newest, d.seen) {
		d.seen = newest
	}
	return out, nil
}

// read reads one duty message as it stands now (ok false: gone, or no longer a duty message).
func (d *Duty) read(ctx context.Context, ts string) (dutyRecord, bool, error) {
	var r *slack.GetConversationHistoryResponse
	err := d.api.call(ctx, "conversations.history", func(ctx context.Context) error {
		var err error
		r, err = d.api.client.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: d.chID, Latest: ts, Inclusive: true, Limit: 1, IncludeAllMetadata: true})
		return err
	})
	if err != nil {
		return dutyRecord{}, false, fmt.Errorf("read the duty message in %s: %w", d.channel, err)
	}
	if len(r.Messages) == 0 || r.Messages[0].Timestamp != ts {
		return dutyRecord{}, false, nil
	}
	rec, ok := record(r.Messages[0])
	return rec, ok, nil
}

// contender is, among recs (newest first), the message this instance defers to: the newest "on duty" one
// of another instance, else (while claiming) a newer one still starting, which will decide in a moment.
// A message of an earlier process of this instance is nobody's: that process is gone.
func (d *Duty) contender(recs []dutyRecord, claiming bool) (dutyRecord, bool) {
	for _, r := range recs {
		if r.Instance != d.Instance && r.Role == roleOnDuty {
			return r, true
		}
	}
	for _, r := range recs {
		if claiming && r.Instance != d.Instance && r.Role == roleStarting && tsAfter(r.TS, d.ts) {
			return r, true
		}
	}
	return dutyRecord{}, false
}

// Acquire returns once this instance is on duty (nil), or when ctx ends (its error); meanwhile it stands
// by. An error posting or reading the duty messages is returned: the caller decides whether to serve
// without them.
func (d *Duty) Acquire(ctx context.Context) error {
	if err := d.post(ctx, roleStarting, ""); err != nil {
		return err
	}
	recs, err := d.scan(ctx, dutyScanPages, "")
	if err != nil {
		return err
	}
	d.retireOwn(ctx, recs)
	// The newer messages read: posted while this one starts. Deferring to one still starting waits at
	// most Expire for it to decide.
	holder, held := d.contender(recs, true)
	if !held {
		if err := d.set(ctx, roleOnDuty, ""); err != nil {
			return err
		}
		recs, err := d.newer(ctx, 1)
		if err != nil {
			return err
		}
		if holder, held = d.contender(recs, false); !held {
			d.onDuty("no other instance was on duty")
			return nil
		}
	}
	return d.standBy(ctx, holder)
}

// retireOwn marks the "on duty" message of an earlier process of this instance off duty: it stopped
// without saying so (a crash, kill -9), and its message must not look live to anyone reading the channel.
func (d *Duty) retireOwn(ctx context.Context, recs []dutyRecord) {
	for _, r := range recs {
		if r.Instance == d.Instance && r.Role == roleOnDuty {
			opts := append(msgOptions(d.message(roleOffDuty, "It stopped without saying so; this instance started again below.")), d.metadata(roleOffDuty))
			if err := d.update(ctx, r.TS, opts); err != nil {
				d.Log.Warn("could not mark an earlier process's duty message off duty", "channel", d.channel, "err", err)
			}
		}
	}
}

// standBy watches holder's message until it goes off duty or unrenewed for Expire, then takes over.
func (d *Duty) standBy(ctx context.Context, holder dutyRecord) error {
	say := func(h dutyRecord) {
		if err := d.set(ctx, roleStandby, h.who()); err != nil {
			d.Log.Warn("could not say in the duty channel that this instance stands by", "channel", d.channel, "err", err)
		}
		d.Log.Info("standing by: another instance of this app is on duty; answering nothing and posting nothing until it stops",
			"on_duty", h.who(), "channel", d.channel, "takes_over_after", d.Expire)
		if d.OnStandby != nil {
			d.OnStandby(h.who())
		}
	}
	say(holder)
	lastBeat, changed := holder.Beat, d.Clock.Now()
	for {
		select {
		case <-ctx.Done():
			d.goOff(roleOffDuty, "Stopped while standing by.")
			return ctx.Err()
		case <-d.Clock.After(d.Renew):
		}
		recs, err := d.newer(ctx, 1)
		if err != nil {
			d.Log.Warn("standing by, and cannot read the duty channel: not taking over on silence", "channel", d.channel, "err", err)
			changed = d.Clock.Now() // what could not be read is no sign the other stopped
			continue
		}
		if h, ok := d.contender(recs, false); ok && h.TS != holder.TS {
			holder, lastBeat, changed = h, h.Beat, d.Clock.Now()
			say(holder)
			continue
		}
		cur, ok, err := d.read(ctx, holder.TS)
		if err != nil {
			d.Log.Warn("standing by, and cannot read the duty message: not taking over on silence", "channel", d.channel, "err", err)
			changed = d.Clock.Now()
			continue
		}
		why := ""
		switch {
		case !ok:
			why = "its duty message is gone"
		case cur.Role == roleStarting && d.Clock.Now().Sub(changed) < d.Expire:
			continue // it decides in a moment
		case cur.Role != roleOnDuty && cur.Role != roleStarting:
			why = "it went off duty"
		case cur.Beat != lastBeat:
			lastBeat, changed = cur.Beat, d.Clock.Now()
			continue
		case d.Clock.Now().Sub(changed) >= d.Expire:
			why = fmt.Sprintf("its duty message was not renewed for %s", reports.Duration(d.Clock.Now().Sub(changed).Seconds()))
		default:
			continue
		}
		// Take over: a new message, so that it is the newest whatever the other's.
		previous := d.ts
		if err := d.post(ctx, roleOnDuty, "Took over from "+holder.who()+": "+why+"."); err != nil {
			d.Log.Warn("could not take over", "channel", d.channel, "err", err)
			continue
		}
		opts := append(msgOptions(d.message(roleOffDuty, "It took over, below.")), d.metadata(roleOffDuty))
		if err := d.update(ctx, previous, opts); err != nil {
			d.Log.Warn("could not close this instance's standby message", "channel", d.channel, "err", err)
		}
		recs, err = d.newer(ctx, 1)
		if err == nil {
			if h, ok := d.contender(recs, false); ok {
				// Another instance standing by took over at the same moment, after this one: it is on duty.
				d.goOff(roleOffDuty, "Another instance took over at the same moment.")
				holder, lastBeat, changed = h, h.Beat, d.Clock.Now()
				say(holder)
				continue
			}
		}
		d.onDuty("took over from " + holder.who() + ": " + why)
		return nil
	}
}

func (d *Duty) onDuty(how string) {
	d.since = d.Clock.Now()
	d.Log.Info("on duty: this instance answers and posts", "how", how, "channel", d.channel)
	if d.OnDuty != nil {
		d.OnDuty(how)
	}
}

// goOff edits this instance's message off duty, within 5 s of its own (ctx may have ended).
func (d *Duty) goOff(role, more string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.set(ctx, role, more); err != nil {
		d.Log.Warn("could not mark the duty message off duty: an instance standing by takes over once it is not renewed", "channel", d.channel, "err", err)
	}
}

// Hold keeps this instance on duty, renewing its message every Renew, until ctx ends (it then goes off
// duty, so that an instance standing by takes over at its next look, and Hold returns nil), or another
// instance's newer "on duty" message appears (a LostDuty). A renewal that fails is tried again at the next.
func (d *Duty) Hold(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			d.goOff(roleOffDuty, "It stopped.")
			return nil
		case <-d.Clock.After(d.Renew):
		}
		d.beat++
		err := d.set(ctx, roleOnDuty, d.note)
		if err == nil {
			var recs []dutyRecord
			recs, err = d.newer(ctx, 1)
			if h, ok := d.contender(recs, false); err == nil && ok {
				d.Log.Warn("another instance of this app took over: going off duty", "on_duty", h.who(), "channel", d.channel)
				d.goOff(roleOffDuty, h.who()+" took over.")
				return LostDuty{Holder: h.who()}
			}
		}
		if ctx.Err() != nil {
			continue
		}
		if err != nil && d.lastRenew == nil {
			d.Log.Warn("could not renew the duty message: an instance standing by takes over if this lasts", "channel", d.channel,
				"expire", d.Expire, "err", err)
		} else if err == nil && d.lastRenew != nil {
			d.Log.Info("duty message renewed again", "channel", d.channel)
		}
		d.lastRenew = err
	}
}
