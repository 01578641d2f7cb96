package probes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"runwatch/internal/flight"
)

// NoAnswer names a call that ran out of time in words a person can act on: "no answer within 2s".
// Other errors are returned as they are.
func NoAnswer(err error, timeout time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s", timeout)
	}
	return err
}

// Guard runs calls that can hang on a dead mount (an NFS server gone, a stuck FUSE daemon) where
// the caller's ctx can abandon them, one call per key at a time: while a call on a key is still
// running, later callers join it instead of starting another goroutine, and another OS thread
// stuck in the kernel, that would hang as well. Without it a sampler that resolves a path on a
// hung mount every 30 seconds adds a stuck thread each time, and Go stops a program at 10,000
// threads. node_exporter's stuckMountWatcher is the model.
//
// It is the one mechanism for such calls: path resolution, stat, model configs and directory
// sizes go through a Guard; statfs (StatFS) and log reads (Log) through one that fails fast.
type Guard struct {
	mu    sync.Mutex
	calls map[string]*guardCall
	// failHung makes callers fail at once with errStillHung while an abandoned call on their
	// key has not returned, instead of joining it (statfs and log reads: a status should name
	// the hung mount at once, not wait out its deadline again).
	failHung bool
	// joined, when set (tests), is told each time a caller joins a call already running.
	joined func(key string)
	// hung counts the calls given up on that have not returned; maxHung bounds them (0:
	// guardMaxHung). One key holds one stuck thread at most, but keys are whatever is asked about:
	// questions naming path after path on a dead mount would each leave a thread stuck in the
	// kernel, and Go stops a program at 10,000 threads.
	hung, maxHung int
	// resolve is what Resolve runs: mountResolve, or a test's stand-in (NewGuardFunc).
	resolve func(path string) (string, error)
}

// guardMaxHung bounds the abandoned calls one Guard lets run; past it new keys fail at once
// (errTooManyHung) until some return. The sampler's own paths are a few per run.
const guardMaxHung = 256

// errTooManyHung is returned for a new key while too many abandoned calls have not returned.
var errTooManyHung = errors.New("too many earlier file system calls have not returned (a hung mount?)")

type guardCall struct {
	done     chan struct{}
	v        any
	err      error
	hung     bool // a caller gave up on it before it returned; guarded by Guard.mu
	returned bool // fn has returned; guarded by Guard.mu
}

// errStillHung is returned by a failHung Guard while an abandoned call on the key is still running.
var errStillHung = errors.New("an earlier call has not returned yet")

// NewGuard returns an empty Guard.
func NewGuard() *Guard {
	return &Guard{calls: make(map[string]*guardCall), resolve: mountResolve}
}

// NewGuardFunc returns a Guard whose Resolve calls resolve instead of resolving the path on the file
// system, and which lets at most maxHung abandoned calls run (0: the default bound). Tests in other
// packages pass it to stand in for a mount whose path calls never return, as NewStatFSFunc for statfs.
func NewGuardFunc(resolve func(path string) (string, error), maxHung int) *Guard {
	g := NewGuard()
	g.resolve, g.maxHung = resolve, maxHung
	return g
}

// newFailFastGuard returns a Guard whose callers fail at once while a call they would join hangs.
func newFailFastGuard() *Guard {
	g := NewGuard()
	g.failHung = true
	return g
}

// do runs fn for key, or joins the call on key already running, and waits for it or ctx.
func (g *Guard) do(ctx context.Context, key string, fn func() (any, error)) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	c, running := g.calls[key]
	if running && c.hung && g.failHung {
		g.mu.Unlock()
		return nil, errStillHung
	}
	if running && g.joined != nil {
		g.joined(key)
	}
	if !running && g.hung >= cmp.Or(g.maxHung, guardMaxHung) {
		g.mu.Unlock()
		return nil, errTooManyHung
	}
	if !running {
		c = &guardCall{done: make(chan struct{})}
		g.calls[key] = c
		go func() {
			v, err := flight.Safe(fn) // fn runs in a goroutine of its own, where a panic would stop the bot
			g.mu.Lock()
			c.v, c.err = v, err
			delete(g.calls, key)
			c.returned = true
			if c.hung {
				g.hung--
			}
			g.mu.Unlock()
			close(c.done)
		}()
	}
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.v, c.err
	case <-ctx.Done():
		g.mu.Lock()
		if !c.returned && !c.hung {
			c.hung = true
			g.hung++
		}
		g.mu.Unlock()
		return nil, ctx.Err()
	}
}

// Resolve is the package's Resolve (NewGuardFunc's stand-in for it), one call per path at a time.
func (g *Guard) Resolve(ctx context.Context, path string) (string, error) {
	v, err := g.do(ctx, "resolve\x00"+path, func() (any, error) { return g.resolve(path) })
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("resolve %s: %w", path, err)
		}
		return "", err
	}
	return v.(string), nil
}

// ReadModelConfig is the package's ReadModelConfig, one read per file at a time.
func (g *Guard) ReadModelConfig(ctx context.Context, path string) (ModelShape, error) {
	v, err := g.do(ctx, "model\x00"+path, func() (any, error) { return readModelConfig(path) })
	if err != nil {
		if ctx.Err() != nil {
			return ModelShape{}, fmt.Errorf("read model config %s: %w", path, err)
		}
		return ModelShape{}, err
	}
	return v.(ModelShape), nil
}

// Stat is os.Stat, one call per path at a time.
func (g *Guard) Stat(ctx context.Context, path string) (os.FileInfo, error) {
	v, err := g.do(ctx, "stat\x00"+path, func() (any, error) { return os.Stat(path) })
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("stat %s: %w", path, err)
		}
		return nil, err
	}
	return v.(os.FileInfo), nil
}
