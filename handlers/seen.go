package handlers

import (
	"container/list"
	"strconv"
	"strings"
	"sync"
	"time"

	"runwatch/state"
)

// seenJournal is the state file the keys of delivered Slack requests are kept in across a restart.
const seenJournal = "slack-seen.log"

// seenWindow is how long a delivered request's key is kept across a restart. Slack redelivers an Events API
// callback it saw no acknowledgement for three times, the last about five minutes after the first, and a
// Socket Mode envelope on the next connection; an hour covers both with room for a slow restart.
const seenWindow = time.Hour

// keyJournal remembers the last max keys, least recently seen first out, each with the time it counts from,
// so that a request seen before is recognised without unbounded memory. With a state directory each new key
// is appended to a journal (name) before the request is acted on, and a restart restores the keys of the
// last window, so a crash or a restart reopens nothing. It is the one mechanism behind both the delivered
// requests (slackSeen: event ids, envelope ids, presses, an hour) and the verified signatures (replayCache:
// six minutes past each request's timestamp).
type keyJournal struct {
	name   string
	window time.Duration
	max    int

	mu      sync.Mutex
	order   *list.List // of seenKey, most recent first
	keys    map[string]*list.Element
	now     func() time.Time
	journal *state.Journal // nil: memory only
	onErr   func(error)
}

type seenKey struct {
	key string
	at  int64 // unix seconds it counts from: when first seen, or the request's own timestamp
}

func newKeyJournal(name string, window time.Duration, max int) *keyJournal {
	return &keyJournal{name: name, window: window, max: max, order: list.New(), keys: map[string]*list.Element{},
		now: time.Now, onErr: func(error) {}}
}

// newSlackSeen is the journal of delivered requests, the last max of them.
func newSlackSeen(max int) *keyJournal { return newKeyJournal(seenJournal, seenWindow, max) }

// persist loads the keys dir's journal holds from the last window and appends new ones there.
func (s *keyJournal) persist(dir *state.Dir, onErr func(error)) error {
	j, lines, err := openJournal(dir, s.name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.journal, s.onErr = j, onErr
	oldest := s.oldestLocked()
	for _, l := range lines {
		if k, ok := parseSeenLine(l); ok && k.at >= oldest {
			s.addLocked(k)
		}
	}
	return s.compactLocked()
}

// parseSeenLine reads "<unix> <key>", or a signature journal's line from before the two journals were one
// ("<unix>:<digest>", the key itself), so that an upgrade keeps the signatures of the last minutes.
func parseSeenLine(l string) (seenKey, bool) {
	atText, key, ok := strings.Cut(l, " ")
	if !ok {
		atText, _, ok = strings.Cut(l, ":")
		key = l
	}
	at, err := strconv.ParseInt(atText, 10, 64)
	return seenKey{key, at}, ok && err == nil && key != ""
}

// first records key, seen now, and reports whether it is new. An empty key is always new.
func (s *keyJournal) first(key string) bool { return s.firstAt(key, s.now().Unix()) }

// firstAt records key as counting from at (unix seconds) and reports whether it is new. An empty key is
// always new.
func (s *keyJournal) firstAt(key string, at int64) bool {
	if key == "" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.keys[key]; ok {
		s.order.MoveToFront(e)
		return false
	}
	k := seenKey{key, at}
	s.addLocked(k)
	if s.journal != nil {
		// A key with a line break would split its line; Slack's ids have none, and such a key is kept in
		// memory only.
		if strings.ContainsAny(key, "\r\n") {
			return true
		}
		n, err := s.journal.Append(seenLine(k))
		if err != nil {
			s.onErr(err)
		} else if n > 4*s.order.Len()+1024 {
			if err := s.compactLocked(); err != nil {
				s.onErr(err)
			}
		}
	}
	return true
}

func seenLine(k seenKey) string { return strconv.FormatInt(k.at, 10) + " " + k.key }

func (s *keyJournal) oldestLocked() int64 { return s.now().Add(-s.window).Unix() }

// addLocked puts k in front (replacing an older entry of its key) and drops the least recent past max.
func (s *keyJournal) addLocked(k seenKey) {
	if e, ok := s.keys[k.key]; ok {
		s.order.Remove(e)
	}
	s.keys[k.key] = s.order.PushFront(k)
	for s.order.Len() > s.max {
		old := s.order.Back()
		s.order.Remove(old)
		delete(s.keys, old.Value.(seenKey).key)
	}
}

// compactLocked rewrites the journal with the keys kept, oldest first, leaving out those past the window
// (and dropping them from memory too).
func (s *keyJournal) compactLocked() error {
	oldest := s.oldestLocked()
	lines := make([]string, 0, s.order.Len())
	for e := s.order.Back(); e != nil; {
		prev := e.Prev()
		k := e.Value.(seenKey)
		switch {
		case k.at < oldest:
			s.order.Remove(e)
			delete(s.keys, k.key)
		case !strings.ContainsAny(k.key, "\r\n"):
			lines = append(lines, seenLine(k))
		}
		e = prev
	}
	if s.journal == nil {
		return nil
	}
	return s.journal.Compact(lines)
}

// len is how many keys are kept.
func (s *keyJournal) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
