// Package flight shares one call among the concurrent callers of a key: the first caller runs it,
// the others wait for its result (or for their own context). The monitor uses it for one scrape
// per URL and one statfs per mount in a pass, and one evaluation for identical questions. A call that
// panics fails with an error (Safe, PanicError) whose text has the URL secrets in it redacted; the probes'
// Guard uses Safe for the calls it runs on its own.
package flight

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"runwatch/internal/redact"
)

// Group runs at most one call per key at a time. The zero Group is ready to use.
type Group[T any] struct {
	// Keep holds each result for every later caller of its key (a memo for one pass); without it
	// a key is free again once its call returns.
	Keep bool
	// Joined, when set (tests), is told each time a caller joins a call of its key.
	Joined func(key string)

	mu    sync.Mutex
	calls map[string]*call[T]
}

type call[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// Do runs fn for key, or waits for the call of key already made. A caller whose ctx ends first
// gets ctx's error; the call goes on for the others.
func (g *Group[T]) Do(ctx context.Context, key string, fn func() (T, error)) (T, error) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[string]*call[T]{}
	}
	c, joined := g.calls[key]
	if joined && g.Joined != nil {
		g.Joined(key)
	}
	if !joined {
		c = &call[T]{done: make(chan struct{})}
		g.calls[key] = c
	}
	g.mu.Unlock()
	if !joined {
		c.v, c.err = Safe(fn)
		if !g.Keep {
			g.mu.Lock()
			delete(g.calls, key)
			g.mu.Unlock()
		}
		close(c.done)
		return c.v, c.err
	}
	select {
	case <-c.done:
		return c.v, c.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Safe runs fn, a panic in it returned as an error: a call that probes the outside world (a scrape, a statfs)
// or answers a question, and panics on input nobody foresaw, fails that call, named, instead of stopping the
// bot, and a Group's key it holds is freed (otherwise every later caller would wait out its context).
func Safe[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, err = zero, &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// PanicError is the error of a call that panicked: Value is what it panicked with, as it was. A panic's
// value is whatever the call was handling (a scrape names the URL it choked on, password and query key
// included), and the error goes into answers and logs, so its text has the URLs in it redacted
// (redact.URLsIn); show the error, not Value. A goroutine that recovers a panic itself makes one of it.
type PanicError struct {
	Value any
	// Stack is the panicking goroutine's stack, for the log (nil when not captured).
	Stack []byte
}

func (e *PanicError) Error() string {
	return "failed with a panic: " + redact.URLsIn(fmt.Sprint(e.Value))
}
