package slackapp

import (
	"container/list"
	"log/slog"
	"math"
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

// seenKeep is how long a delivered request's key is never given up for room: Slack's last redelivery comes
// about five minutes after the first delivery, doubled for a slow acknowledgement and clock skew. A key past
// it (and inside seenWindow) may go, oldest first, when the journal is full.
const seenKeep = 10 * time.Minute

// seenMax bounds the delivered requests kept: 16,384 keys (about 2 MB) is 27 new keys a second for all of
// seenKeep. An HTTP-mode event takes one (its id), a Socket Mode event two (its envelope and its id), so
// 13-27 events a second: 1.6-3 times Slack's Events API limit of 30,000 events an hour for one workspace. Past it,
// with every key inside seenKeep, a new request is refused for Slack to redeliver, never answered twice.
const seenMax = 16384

// admission is what a keyJournal says of a key: new (recorded), seen before, or refused because every
// key it holds is inside its keep time and it holds max of them.
type admission int

const (
	admitNew admission = iota
	admitSeen
	admitFull
)

// keyJournal remembers keys, each with the time it counts from, so that a request seen before is recognised
// without unbounded memory: at most max keys, and no key is forgotten for room while it is younger than keep;
// when max keys are all that young, a new key is refused (admitFull) rather than an old one forgotten. Keys
// past window are dropped. With a state directory each new key is appended to a journal (name) before the
// request is acted on, and a restart restores the keys of the last window, so a crash or a restart reopens
// nothing. It is the one mechanism behind both the delivered requests (slackSeen: event ids, envelope ids,
// presses, an hour, never forgotten for ten minutes) and the verified signatures (replayCache: six minutes
// past each request's timestamp, all of them kept).
type keyJournal struct {
	name   string
	window time.Duration
	keep   time.Duration
	max    int

	mu      sync.Mutex
	order   *list.List // of seenKey, most recently added first
	keys    map[string]*list.Element
	full    int64 // unix seconds before which a sweep frees nothing (the journal is full until then)
	now     func() time.Time
	journal *state.Journal // nil: memory only
	onErr   func(error)
}

type seenKey struct {
	key string
	at  int64 // unix seconds it counts from: when first seen, or the request's own timestamp
}

func newKeyJournal(name string, window, keep time.Duration, max int) *keyJournal {
	return &keyJournal{name: name, window: window, keep: keep, max: max, order: list.New(), keys: map[string]*list.Element{},
		now: time.Now, onErr: func(error) {}}
}

// newSlackSeen is the journal of delivered requests, at most max of them.
func newSlackSeen(max int) *keyJournal { return newKeyJournal(seenJournal, seenWindow, seenKeep, max) }

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
		if key, ok := strings.CutPrefix(l, seenTombstone); ok {
			s.removeLocked(key)
		} else if k, ok := parseSeenLine(l); ok && k.at >= oldest && s.roomLocked() {
			s.addLocked(k)
		}
	}
	return s.compactLocked()
}

// seenTombstone starts a journal line that removes a key written before it ("- <key>"): forget writes one, so
// that a restart before the next compaction does not restore a key whose request was never acted on, and take
// Slack's redelivery of it for a duplicate. A journal from before tombstones has none; an older runwatch skips
// them, as a line whose time does not parse.
const seenTombstone = "- "

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

// first records key, seen now, and reports whether it is new (admit said admitNew; a key refused for want of
// room is not). An empty key is always new.
func (s *keyJournal) first(key string) bool { return s.admit(key) == admitNew }

// admit records key, seen now, and says whether it is new, seen before, or refused for want of room.
func (s *keyJournal) admit(key string) admission { return s.admitAt(key, s.now().Unix()) }

// admitAt records key as counting from at (unix seconds) and says whether it is new, seen before, or refused
// for want of room (then it is not recorded, and its redelivery can be admitted once there is room). An empty
// key is always new.
func (s *keyJournal) admitAt(key string, at int64) admission {
	if key == "" {
		return admitNew
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[key]; ok {
		return admitSeen
	}
	if !s.roomLocked() {
		return admitFull
	}
	k := seenKey{key, at}
	s.addLocked(k)
	if s.journal != nil {
		// A key with a line break would split its line; Slack's ids have none, and such a key is kept in
		// memory only.
		if strings.ContainsAny(key, "\r\n") {
			return admitNew
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
	return admitNew
}

// forget drops key, recorded by a caller that then could not act on it, so that its redelivery is admitted,
// after a restart too: the journal gets a tombstone for the key's line.
func (s *keyJournal) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[key]; !ok {
		return
	}
	s.removeLocked(key)
	// A key with a line break was never written (see admitAt).
	if s.journal != nil && !strings.ContainsAny(key, "\r\n") {
		if _, err := s.journal.Append(seenTombstone + key); err != nil {
			s.onErr(err)
		}
	}
}

// removeLocked drops key, if held.
func (s *keyJournal) removeLocked(key string) {
	if e, ok := s.keys[key]; ok {
		s.order.Remove(e)
		delete(s.keys, key)
	}
}

func seenLine(k seenKey) string { return strconv.FormatInt(k.at, 10) + " " + k.key }

func (s *keyJournal) oldestLocked() int64 { return s.now().Add(-s.window).Unix() }

// addLocked puts k in front, replacing an older entry of its key; the caller has made room (roomLocked).
// The keys past window at the back (the oldest added) go, so memory shrinks as time passes.
func (s *keyJournal) addLocked(k seenKey) {
	if e, ok := s.keys[k.key]; ok {
		s.order.Remove(e)
	}
	s.keys[k.key] = s.order.PushFront(k)
	expired := s.oldestLocked()
	for e := s.order.Back(); e != nil && e.Value.(seenKey).at < expired; e = s.order.Back() {
		s.order.Remove(e)
		delete(s.keys, e.Value.(seenKey).key)
	}
}

// roomLocked reports whether one more key fits, making room when max are held: first by dropping every key
// past window, then the oldest added of those past keep. Keys younger than keep are never dropped; when they
// are all there is, it reports false until the oldest of them is past keep (remembered, so a full journal
// refuses without scanning).
func (s *keyJournal) roomLocked() bool {
	if s.order.Len() < s.max {
		return true
	}
	now := s.now().Unix()
	if now < s.full {
		return false
	}
	expired, kept := s.oldestLocked(), now-int64(s.keep/time.Second)
	var evictable *list.Element
	youngest := int64(math.MaxInt64) // the earliest time a key younger than keep counts from
	for e := s.order.Back(); e != nil; {
		prev := e.Prev()
		k := e.Value.(seenKey)
		switch {
		case k.at < expired:
			s.order.Remove(e)
			delete(s.keys, k.key)
		case k.at < kept:
			if evictable == nil {
				evictable = e
			}
		default:
			youngest = min(youngest, k.at)
		}
		e = prev
	}
	if s.order.Len() < s.max {
		return true
	}
	if evictable != nil {
		s.order.Remove(evictable)
		delete(s.keys, evictable.Value.(seenKey).key)
		return true
	}
	s.full = youngest + int64(s.keep/time.Second) + 1
	return false
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

// close closes the journal, if any; keys are kept in memory only from then on. A serve closes its journals
// when it returns: the read-only serve a console kept waiting returns when the full one takes over, in the
// same process, which opens them again.
func (s *keyJournal) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal == nil {
		return nil
	}
	err := s.journal.Close()
	s.journal = nil
	return err
}

// closeOrLog closes the journal when a serve returns and logs a failure, which has no caller left to go to:
// a close is where a write the disk took but could not keep (NFS, a full disk or quota) shows, and a journal
// missing its last keys may have a restart answer a redelivered request twice. log is the serve's, which
// redacts; the error names the journal's file, never a token or URL.
func (s *keyJournal) closeOrLog(log *slog.Logger) {
	if err := s.close(); err != nil {
		log.Warn("journal not closed cleanly: its last lines may not be on disk", "journal", s.name, "err", err)
	}
}

// len is how many keys are kept.
func (s *keyJournal) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
