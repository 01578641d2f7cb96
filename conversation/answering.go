package conversation

import (
	"context"
	"strings"
	"sync"
	"time"
)

// Answering is one answer being evaluated, shared by every identical question asked while it runs.
type Answering struct {
	running chan struct{} // closed once it holds an answer slot
	done    chan struct{} // closed when rep is set (or the base context ended first: ok false)
	rep     Reply
	ok      bool
}

// Started reports whether the evaluation holds a slot, so that waiting for it costs only its own time.
func (a *Answering) Started() bool {
	select {
	case <-a.running:
		return true
	default:
		return false
	}
}

// Done is closed once the answer is ready (or will never be).
func (a *Answering) Done() <-chan struct{} { return a.done }

// Reply is the answer once Done is closed; ok is false when the base context ended before it was
// evaluated (shutting down).
func (a *Answering) Reply() (Reply, bool) { return a.rep, a.ok }

// Wait returns the answer once it is ready; ok is false when ctx ended first or the answer will
// never come.
func (a *Answering) Wait(ctx context.Context) (Reply, bool) {
	select {
	case <-a.done:
		return a.rep, a.ok
	case <-ctx.Done():
		return Reply{}, false
	}
}

// Answers evaluates questions in the background, at most cap(slots) at a time, and is the one place
// identical questions share an answer (singleflight): a thousand people asking "/eta" at once cost one
// evaluation and one slot, not a thousand. Identical is the same source, command, text (case and spacing
// aside), run, channel and admin standing, so that every one of them is owed the same answer; a change
// (snooze, a stage mark) is never shared: each is its own act.
type Answers struct {
	bot   *Bot
	slots chan struct{}
	wg    sync.WaitGroup

	mu sync.Mutex
	m  map[string]*Answering
}

// NewAnswers answers through b, bounded by slots (shared with whatever else the transport bounds
// by them).
func NewAnswers(b *Bot, slots chan struct{}) *Answers {
	return &Answers{bot: b, slots: slots, m: map[string]*Answering{}}
}

// Wait waits for the answers in flight, at most d.
func (s *Answers) Wait(d time.Duration) {
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// Begin starts (or joins) the answer to req, evaluated under base (which outlives the request that
// asked), and returns at once: it never waits for a slot. An answer that needs no evaluation (a cheap
// command, a refusal, an unknown question) is made here and returned done. A new evaluation that finds every slot busy
// queues in the background, and the caller sees that it has not started (Answering.Started) and can
// acknowledge at once. The question is parsed here, once.
func (s *Answers) Begin(base context.Context, req Request) *Answering {
	var p prepared
	if rep := s.bot.safely(req, func() Reply { p = s.bot.prepare(req); return Reply{} }); rep.Intent == "failed" {
		a := &Answering{running: make(chan struct{}), done: make(chan struct{}), rep: rep, ok: true}
		close(a.running)
		close(a.done)
		return a
	}
	if p.done != nil || p.cmd.Cheap {
		// Help, a refusal, a question nothing matched: no probe, no evaluation to share. Answered here, ahead
		// of the evaluations queued for a slot, so that their acknowledgement never waits behind slow probes.
		a := &Answering{running: make(chan struct{}), done: make(chan struct{}), ok: true}
		a.rep = s.bot.safely(req, func() Reply { return s.bot.answer(base, p) })
		close(a.running)
		close(a.done)
		return a
	}
	key, share := s.bot.shareKey(req, p)
	if share {
		s.mu.Lock()
		if a := s.m[key]; a != nil {
			s.mu.Unlock()
			return a
		}
	}
	a := &Answering{running: make(chan struct{}), done: make(chan struct{})}
	if share {
		s.m[key] = a
		s.mu.Unlock()
	}
	// A free slot is taken here, so that the caller sees the evaluation started; otherwise the
	// evaluation waits for one in the background.
	select {
	case s.slots <- struct{}{}:
		close(a.running)
	default:
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(a.done)
		defer func() {
			if share {
				s.mu.Lock()
				if s.m[key] == a {
					delete(s.m, key)
				}
				s.mu.Unlock()
			}
		}()
		if !a.Started() {
			select {
			case s.slots <- struct{}{}:
				close(a.running)
			case <-base.Done():
				return
			}
		}
		defer func() { <-s.slots }()
		a.rep = s.bot.safely(req, func() Reply { return s.bot.answer(base, p) })
		a.ok = true
	}()
	return a
}

// shareKey says which requests get the same answer: same source, command and text, same run, channel
// and admin standing. A change is never shared, nor a question no command or intent matched: that
// is cheap to answer.
func (b *Bot) shareKey(req Request, p prepared) (string, bool) {
	if p.cmd.Name == "" || p.cmd.Mutating {
		return "", false
	}
	return strings.Join([]string{req.Source, req.Command, strings.Join(strings.Fields(strings.ToLower(req.Text)), " "), req.Run,
		req.Channel, req.ChannelName, b.adminScope(req.User)}, "\x00"), true
}
