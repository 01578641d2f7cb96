package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrLocked marks a state directory another process holds: two bots writing one directory would
// each post the hour's status and overwrite each other's files.
var ErrLocked = errors.New("state directory in use")

const lockFile = "lock"

// Lock is a process's hold on a state directory, an exclusive flock(2) on its lock file. The kernel
// releases it when the process exits, however it exits, so a kill -9 leaves no stale lock.
type Lock struct {
	f *os.File
}

// Lock takes the directory for this process, without waiting. Held by another process, the error
// matches ErrLocked and names that process's pid.
func (d *Dir) Lock() (*Lock, error) {
	p := d.lockPath()
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another process"
			if b, rerr := os.ReadFile(p); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
					who = fmt.Sprintf("another process (pid %d)", pid)
				}
			}
			return nil, fmt.Errorf("%w: %s holds %s", ErrLocked, who, d.path)
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	// The pid is only for the message above; the flock is the lock.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

func (d *Dir) lockPath() string { return filepath.Join(d.path, lockFile) }

// Release gives the directory up.
func (l *Lock) Release() error {
	return l.f.Close()
}
