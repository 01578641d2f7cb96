package slackapp

import (
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack/slackevents"

	"runwatch/state"
)

// replayWindow is how long a signed request stays acceptable: Slack's verifier takes timestamps
// up to five minutes off the clock either way, so a signature must be remembered for five minutes
// past its timestamp, plus a minute of clock skew.
const replayWindow = 6 * time.Minute

// replayJournal is the state file the seen signatures are kept in across a restart.
const replayJournal = "slack-replays.log"

// replayCache remembers every verified request signature for the window its timestamp is valid
// in, so the same signed request twice is refused. The key is the decoded digest and the
// timestamp, not the header as written: Slack's check decodes hex in either case, so "v0=ABC…"
// and "v0=abc…" are the same signature. With a state directory every key is appended to a journal
// before the request is acted on, so a restart (or a kill -9) does not reopen the window. It is a
// keyJournal counting each key from its request's timestamp.
type replayCache struct {
	keys *keyJournal
}

// replayMax bounds the cache. Every signature is kept for its whole window: past the bound a new
// request is refused (503, for Slack to retry) rather than an old signature forgotten. Only Slack can
// sign requests, and Slack does not send 100,000 in six minutes to one app.
const replayMax = 100000

func newReplayCache(now func() time.Time) *replayCache {
	k := newKeyJournal(replayJournal, replayWindow, replayWindow, replayMax)
	if now != nil {
		k.now = now
	}
	return &replayCache{keys: k}
}

// persist loads the keys still in their window from dir's journal and appends new ones there.
func (c *replayCache) persist(dir *state.Dir, onErr func(error)) error {
	return c.keys.persist(dir, onErr)
}

// openJournal opens dir's journal name for appending and returns the lines it holds.
func openJournal(dir *state.Dir, name string) (*state.Journal, []string, error) {
	j, err := dir.OpenJournal(name)
	if err != nil {
		return nil, nil, err
	}
	lines, err := j.Lines()
	if err != nil {
		j.Close()
		return nil, nil, err
	}
	return j, lines, nil
}

// replayKey is the timestamp and the decoded digest of a v0 signature; "" when it does not decode
// (the signature check refuses such a request anyway).
func replayKey(timestamp, signature string) (int64, string) {
	ts, err := strconv.ParseInt(strings.TrimSpace(timestamp), 10, 64)
	if err != nil {
		return 0, ""
	}
	hexDigest, ok := strings.CutPrefix(strings.TrimSpace(signature), "v0=")
	if !ok {
		return 0, ""
	}
	digest, err := hex.DecodeString(hexDigest)
	if err != nil {
		return 0, ""
	}
	return ts, strconv.FormatInt(ts, 10) + ":" + hex.EncodeToString(digest)
}

// admit records the request's signature and says whether it is new, seen before (or undecodable), or
// refused for want of room.
func (c *replayCache) admit(timestamp, signature string) admission {
	ts, key := replayKey(timestamp, signature)
	if key == "" {
		return admitSeen
	}
	return c.keys.admitAt(key, ts)
}

// forget drops the request's signature, admitted but not acted on.
func (c *replayCache) forget(timestamp, signature string) {
	if _, key := replayKey(timestamp, signature); key != "" {
		c.keys.forget(key)
	}
}

// first records the request's signature and reports whether it is new.
func (c *replayCache) first(timestamp, signature string) bool {
	return c.admit(timestamp, signature) == admitNew
}

// eventKey identifies an Events API callback for redelivery: its event_id, else the message it is
// about (channel and ts name one message), else nothing, and an event nothing identifies is
// answered every time rather than only the first.
func eventKey(eventID string, ev slackevents.EventsAPIEvent) string {
	if eventID != "" {
		return "event:" + eventID
	}
	switch in := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		if in.TimeStamp != "" {
			return "message:" + in.Channel + ":" + in.TimeStamp
		}
	case *slackevents.MessageEvent:
		if in.TimeStamp != "" {
			return "message:" + in.Channel + ":" + in.TimeStamp
		}
	}
	return ""
}
