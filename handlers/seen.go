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

// slackSeen remembers the last max keys (event ids, envelope ids), least recently seen first out, so a
// redelivered request is recognised without unbounded memory. With a state directory each new key is
// appended to a journal before the request is answered, so a request Slack redelivers after a crash or a
// restart (its acknowledgement lost with the process) is not answered a second time.
type slackSeen struct {
	mu      sync.Mutex
	max     int
	order   *list.List // of seenKey, most recent first
	keys    map[string]*list.Element
	now     func() time.Time
	journal *state.Journal // nil: memory only
	onErr   func(error)
}

type seenKey struct {
	key string
	at  int64 // unix seconds it was first seen
}

func newSlackSeen(max int) *slackSeen {
	return &slackSeen{max: max, order: list.New(), keys: map[string]*list.Element{}, now: time.Now, onErr: func(error) {}}
}

// persist loads the keys dir's journal holds from the last seenWindow and appends new ones there.
func (s *slackSeen) persist(dir *state.Dir, onErr func(error)) error {
	j, lines, err := openJournal(dir, seenJournal)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.journal, s.onErr = j, onErr
	oldest := s.now().Add(-seenWindow).Unix()
	for _, l := range lines {
		atText, key, ok := strings.Cut(l, " ")
		at, err := strconv.ParseInt(atText, 10, 64)
		if !ok || err != nil || key == "" || at < oldest {
			continue
		}
		s.addLocked(seenKey{key, at})
	}
	return s.compactLocked()
}

// first records key and reports whether it is new. An empty key is always new.
func (s *slackSeen) first(key string) bool {
	if key == "" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.keys[key]; ok {
		s.order.MoveToFront(e)
		return false
	}
	k := seenKey{key, s.now().Unix()}
	s.addLocked(k)
	if s.journal != nil {
		// A key with a line break would split its line; Slack's ids have none, and such a key is kept in
		// memory only.
		if strings.ContainsAny(key, "\r\n") {
			return true
		}
		n, err := s.journal.Append(strconv.FormatInt(k.at, 10) + " " + key)
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

// addLocked puts k in front (replacing an older entry of its key) and drops the least recent past max.
func (s *slackSeen) addLocked(k seenKey) {
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

// compactLocked rewrites the journal with the keys kept, oldest first, leaving out those past the window.
func (s *slackSeen) compactLocked() error {
	if s.journal == nil {
		return nil
	}
	oldest := s.now().Add(-seenWindow).Unix()
	lines := make([]string, 0, s.order.Len())
	for e := s.order.Back(); e != nil; e = e.Prev() {
		if k := e.Value.(seenKey); k.at >= oldest && !strings.ContainsAny(k.key, "\r\n") {
			lines = append(lines, strconv.FormatInt(k.at, 10)+" "+k.key)
		}
	}
	return s.journal.Compact(lines)
}
