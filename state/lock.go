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
// matches ErrLocked and names that process's pid (and its command, with LockAs).
func (d *Dir) Lock() (*Lock, error) { return d.LockAs("") }

// LockAs is Lock recording what holds the directory ("bot console"), for the message another process
// gets; HeldBy reads it back.
func (d *Dir) LockAs(what string) (*Lock, error) {
	p := d.lockPath()
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another process"
			if pid, cmd, ok := d.HeldBy(); ok {
				who = fmt.Sprintf("another process (pid %d)", pid)
				if cmd != "" {
					who = fmt.Sprintf("%s (pid %d)", cmd, pid)
				}
			}
			return nil, fmt.Errorf("%w: %s holds %s", ErrLocked, who, d.path)
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	// The pid and command are only for the messages; the flock is the lock.
	if err := f.Truncate(0); err == nil {
		line := strconv.Itoa(os.Getpid())
		if what != "" {
			line += " " + what
		}
		f.WriteAt([]byte(line+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// HeldBy is the pid and command the lock file names (as the holder wrote it; ok false when it names none).
func (d *Dir) HeldBy() (pid int, what string, ok bool) {
	b, err := os.ReadFile(d.lockPath())
	if err != nil {
		return 0, "", false
	}
	pidText, what, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	pid, err = strconv.Atoi(pidText)
	return pid, what, err == nil
}

func (d *Dir) lockPath() string { return filepath.Join(d.path, lockFile) }

// Release gives the directory up.
func (l *Lock) Release() error {
	return l.f.Close()
}
