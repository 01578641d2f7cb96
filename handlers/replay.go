package handlers

import (
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
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
// before the request is acted on, so a restart (or a kill -9) does not reopen the window.
type replayCache struct {
	mu      sync.Mutex
	seen    map[string]int64 // key -> request timestamp (unix seconds)
	now     func() time.Time
	journal *state.Journal // nil: memory only
	onErr   func(error)
}

// replayMax bounds the cache; past it the oldest keys go first. Only Slack can sign requests, and
// Slack does not send 100,000 in six minutes to one app.
const replayMax = 100000

func newReplayCache(now func() time.Time) *replayCache {
	if now == nil {
		now = time.Now
	}
	return &replayCache{seen: map[string]int64{}, now: now, onErr: func(error) {}}
}

// persist loads the keys still in their window from dir's journal and appends new ones there.
func (c *replayCache) persist(dir *state.Dir, onErr func(error)) error {
	j, lines, err := openJournal(dir, replayJournal)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.journal, c.onErr = j, onErr
	for _, l := range lines {
		if ts, key, ok := parseReplayLine(l); ok {
			c.seen[key] = ts
		}
	}
	c.expireLocked()
	return c.compactLocked()
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

func parseReplayLine(l string) (int64, string, bool) {
	tsText, _, ok := strings.Cut(l, ":")
	if !ok {
		return 0, "", false
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	return ts, l, err == nil
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

// first records the request's signature and reports whether it is new.
func (c *replayCache) first(timestamp, signature string) bool {
	ts, key := replayKey(timestamp, signature)
	if key == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[key]; ok {
		return false
	}
	if len(c.seen) >= replayMax {
		c.expireLocked()
		for len(c.seen) >= replayMax {
			c.dropOldestLocked()
		}
	}
	c.seen[key] = ts
	if c.journal != nil {
		n, err := c.journal.Append(key)
		if err != nil {
			c.onErr(err)
		} else if n > 4*len(c.seen)+1024 {
			c.expireLocked()
			if err := c.compactLocked(); err != nil {
				c.onErr(err)
			}
		}
	}
	return true
}

func (c *replayCache) expireLocked() {
	oldest := c.now().Add(-replayWindow).Unix()
	for k, ts := range c.seen {
		if ts < oldest {
			delete(c.seen, k)
		}
	}
}

func (c *replayCache) dropOldestLocked() {
	var oldKey string
	var oldTS int64
	for k, ts := range c.seen {
		if oldKey == "" || ts < oldTS {
			oldKey, oldTS = k, ts
		}
	}
	delete(c.seen, oldKey)
}

func (c *replayCache) compactLocked() error {
	if c.journal == nil {
		return nil
	}
	lines := make([]string, 0, len(c.seen))
	for k := range c.seen {
		lines = append(lines, k)
	}
	return c.journal.Compact(lines)
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
