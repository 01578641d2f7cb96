package fake

import (
	"sync"
	"testing"
	"time"
)

// Clock is a clock that moves only when the test moves it (Set, Add). Its After channels fire when
// the clock reaches their time, so code that waits on it (a scheduler) runs at the test's pace.
type Clock struct {
	mu      sync.Mutex
	t       time.Time
	waiters []waiter
	waiting chan struct{} // a signal per After call, for AwaitAfter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewClock is a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t, waiting: make(chan struct{}, 64)} }

// Now is the time the test set last.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t and fires the After channels it reaches.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.t) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.t
	}
	c.waiters = kept
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

// Jump moves the clock by d without firing anything, as a suspend and resume or an NTP step move the
// wall clock: a timer counts elapsed time, so what waits is as far from firing as it was.
func (c *Clock) Jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	for i := range c.waiters {
		c.waiters[i].at = c.waiters[i].at.Add(d)
	}
}

// After is a channel that gets the time once the clock reaches d from now.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.t
	} else {
		c.waiters = append(c.waiters, waiter{at: c.t.Add(d), ch: ch})
	}
	select {
	case c.waiting <- struct{}{}:
	default:
	}
	return ch
}

// Waits gets a value each time something calls After (while it has room), for a test that waits on
// it with a message of its own; AwaitAfter is the common case.
func (c *Clock) Waits() <-chan struct{} { return c.waiting }

// AwaitAfter waits until something calls After (once per call since the last AwaitAfter): the code
// under test is waiting on the clock, and the test may move it.
func (c *Clock) AwaitAfter(t testing.TB) {
	t.Helper()
	select {
	case <-c.waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("nothing waits on the clock")
	}
}
