package probes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Usage is what statfs reports for a mount, in bytes.
type Usage struct {
	Total uint64 // blocks x block size
	Free  uint64 // available to unprivileged users (df's Avail)
	Used  uint64 // (blocks - free blocks) x block size
}

// ErrUnresponsive marks a mount whose statfs did not return in time.
var ErrUnresponsive = errors.New("not responding")

// StatFS reads mount capacity with a timeout. A statfs on a dead NFS server
// blocks in the kernel, uninterruptibly, for as long as the server is away;
// the call runs in its own goroutine so the caller can give up on it. As in
// node_exporter's stuckMountWatcher, a mount point whose call is still hung
// fails fast without starting another goroutine, and becomes usable again
// when the hung call returns.
type StatFS struct {
	timeout time.Duration
	// usage reads one mount's capacity: the statfs syscall, or what
	// NewStatFSFunc was given (tests pass one that blocks).
	usage func(mountPoint string) (Usage, error)

	mu       sync.Mutex
	inflight map[string]*statfsCall // mount point -> the call in flight on it
}

// statfsCall is one statfs in flight. Callers that arrive while it runs
// wait for it instead of starting their own.
type statfsCall struct {
	done  chan struct{} // closed when the syscall returned
	usage Usage
	err   error
	hung  bool // a caller gave up on it; guarded by StatFS.mu
}

// NewStatFS returns a probe whose calls give up after timeout (or earlier if
// the caller's ctx says so).
func NewStatFS(timeout time.Duration) *StatFS {
	return NewStatFSFunc(timeout, statfsSyscall(unix.Statfs))
}

// NewStatFSFunc returns a probe like NewStatFS that reads capacity with
// usage instead of the statfs syscall, under the same timeout and
// stuck-mount rules. It lets a test stand in for a mount that hangs (a
// dead NFS server) or fails, through everything built on the probe.
func NewStatFSFunc(timeout time.Duration, usage func(mountPoint string) (Usage, error)) *StatFS {
	return &StatFS{
		timeout:  timeout,
		usage:    usage,
		inflight: make(map[string]*statfsCall),
	}
}

// statfsSyscall adapts a statfs(2)-shaped function to the probe's usage.
func statfsSyscall(statfs func(path string, st *unix.Statfs_t) error) func(string) (Usage, error) {
	return func(mountPoint string) (Usage, error) {
		var st unix.Statfs_t
		if err := statfs(mountPoint, &st); err != nil {
			return Usage{}, err
		}
		return statfsUsage(&st), nil
	}
}

// Usage returns the capacity of the filesystem mounted at mountPoint. If
// statfs does not return before the timeout or ctx, the error wraps
// ErrUnresponsive and names the mount.
func (s *StatFS) Usage(ctx context.Context, mountPoint string) (Usage, error) {
	if err := ctx.Err(); err != nil {
		return Usage{}, fmt.Errorf("statfs %s: %w", mountPoint, err)
	}
	s.mu.Lock()
	c := s.inflight[mountPoint]
	if c != nil && c.hung {
		s.mu.Unlock()
		return Usage{}, fmt.Errorf("statfs %s: %w (an earlier call is still hung)", mountPoint, ErrUnresponsive)
	}
	if c == nil {
		c = &statfsCall{done: make(chan struct{})}
		s.inflight[mountPoint] = c
		go s.run(mountPoint, c)
	}
	s.mu.Unlock()

	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case <-c.done:
		return c.usage, c.err
	case <-timer.C:
		s.markHung(c)
		return Usage{}, fmt.Errorf("statfs %s: %w after %v", mountPoint, ErrUnresponsive, s.timeout)
	case <-ctx.Done():
		s.markHung(c)
		return Usage{}, fmt.Errorf("statfs %s: %w (%w)", mountPoint, ErrUnresponsive, ctx.Err())
	}
}

// markHung records that a caller gave up on c, unless c finished meanwhile.
func (s *StatFS) markHung(c *statfsCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-c.done:
	default:
		c.hung = true
	}
}

// run performs the syscall for c and retires it.
func (s *StatFS) run(mountPoint string, c *statfsCall) {
	u, err := s.usage(mountPoint)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		c.err = fmt.Errorf("statfs %s: %w", mountPoint, err)
	} else {
		c.usage = u
	}
	delete(s.inflight, mountPoint)
	close(c.done)
}

// statfsUsage converts a statfs result to bytes the way df does: block
// counts are in units of the fragment size (f_frsize), which on NFS can be
// far smaller than f_bsize (the preferred I/O size, e.g. wsize).
func statfsUsage(st *unix.Statfs_t) Usage {
	bs := uint64(st.Frsize)
	if st.Frsize <= 0 {
		bs = uint64(st.Bsize)
	}
	u := Usage{
		Total: st.Blocks * bs,
		Free:  st.Bavail * bs,
	}
	if st.Bfree <= st.Blocks {
		u.Used = (st.Blocks - st.Bfree) * bs
	}
	return u
}
