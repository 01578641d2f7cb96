package probes

import (
	"context"
	"errors"
	"fmt"
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
// the call runs through a fail-fast Guard so the caller can give up on it. As
// in node_exporter's stuckMountWatcher, a mount point whose call is still hung
// fails fast without starting another goroutine, and becomes usable again
// when the hung call returns.
type StatFS struct {
	timeout time.Duration
	// usage reads one mount's capacity: the statfs syscall, or what
	// NewStatFSFunc was given (tests pass one that blocks).
	usage func(mountPoint string) (Usage, error)
	guard *Guard
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
	return &StatFS{timeout: timeout, usage: usage, guard: newFailFastGuard()}
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
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := s.guard.do(c, mountPoint, func() (any, error) { return s.usage(mountPoint) })
	switch {
	case err == nil:
		return v.(Usage), nil
	case errors.Is(err, errStillHung):
		return Usage{}, fmt.Errorf("statfs %s: %w (an earlier call is still hung)", mountPoint, ErrUnresponsive)
	case ctx.Err() != nil:
		return Usage{}, fmt.Errorf("statfs %s: %w (%w)", mountPoint, ErrUnresponsive, ctx.Err())
	case c.Err() != nil:
		return Usage{}, fmt.Errorf("statfs %s: %w after %v", mountPoint, ErrUnresponsive, s.timeout)
	}
	return Usage{}, fmt.Errorf("statfs %s: %w", mountPoint, err)
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
