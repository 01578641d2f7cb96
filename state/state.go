// Package state owns runwatch's state directory: the files that must survive a restart (estimate
// history, announced ETAs, snoozes, message ids, stage marks). Every write is atomic: a reader sees
// the old file or the new one, never half of either. A corrupt file is set aside, never overwritten
// silently, so nothing is lost.
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// ErrCorrupt marks a state file that could not be decoded or read. Load moves it aside before
// returning.
var ErrCorrupt = errors.New("corrupt state file")

// Dir is a state directory.
type Dir struct {
	path string
	// Tightened is the mode the directory had when Open found it open to others and tightened it to 0700
	// (0: it was not), for the caller to say so.
	Tightened fs.FileMode
}

// Open returns the state directory at path, creating it if needed. Temporary files a killed
// process left behind mid-save (older than staleTemp) are removed: their content was never
// committed, and each crash would otherwise leave one more.
//
// The directory holds what Slack sent and what runwatch posted: it is the bot's user's alone (0700). One
// made with other permissions (an old one, a directory made by hand) is tightened to 0700; one that cannot
// be tightened is refused, with what to do.
func Open(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	d := &Dir{path: path}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		if err := os.Chmod(path, perm&0o700|0o700); err != nil {
			return nil, fmt.Errorf("state dir %s is open to other users (mode %04o) and could not be made the bot user's alone (0700): %w; "+
				"chmod 700 it as its owner, or point RUNWATCH_STATE_DIR at a directory of the bot user's", path, perm, err)
		}
		d.Tightened = perm
	}
	d.removeStaleTemp(time.Now())
	return d, nil
}

// staleTemp is how old a temporary file must be to count as left behind: a save takes
// milliseconds, and another process's save in progress must not be disturbed.
const staleTemp = time.Minute

func (d *Dir) removeStaleTemp(now time.Time) {
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), ".") || !strings.Contains(e.Name(), ".tmp-") {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > staleTemp {
			os.Remove(filepath.Join(d.path, e.Name()))
		}
	}
}

// Path is the directory's location.
func (d *Dir) Path() string { return d.path }

var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (d *Dir) file(name string) (string, error) {
	if !safeName.MatchString(name) {
		return "", fmt.Errorf("state file name %q is not allowed", name)
	}
	return filepath.Join(d.path, name), nil
}

// Load decodes the JSON file name into v. A missing file returns an error matching os.ErrNotExist.
// A file that does not decode is renamed to name.corrupt-<time>, one that cannot be read to
// name.unreadable-<time>; the error then matches ErrCorrupt and says where the file went.
func (d *Dir) Load(name string, v any) error {
	p, err := d.file(name)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read state: %w", err)
	}
	if err != nil {
		// A file that is there but cannot be read (a directory in its place, a permission left by
		// another user, an I/O error) would be replaced by the caller's next Save: set it aside
		// first, so what it holds is not lost.
		return setAside(p, "unreadable", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return setAside(p, "corrupt", err)
	}
	return nil
}

// setAside renames the state file p to p.<why>-<time> and returns an ErrCorrupt error saying where
// it went.
func setAside(p, why string, cause error) error {
	stamp := time.Now().UTC().Format("20060102T150405")
	aside := fmt.Sprintf("%s.%s-%s", p, why, stamp)
	// Two files set aside within one second must not replace each other.
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); err != nil {
			break
		}
		aside = fmt.Sprintf("%s.%s-%s.%d", p, why, stamp, i)
	}
	if rerr := os.Rename(p, aside); rerr != nil {
		return fmt.Errorf("%w: %s: %v (and it could not be moved aside: %v)", ErrCorrupt, p, cause, rerr)
	}
	return fmt.Errorf("%w: %s: %v; kept as %s", ErrCorrupt, p, cause, aside)
}

// Save encodes v as JSON into name atomically: a temporary file in the same directory is written,
// synced and renamed over the old one.
func (d *Dir) Save(name string, v any) error {
	p, err := d.file(name)
	if err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode state %s: %w", name, err)
	}
	return writeAtomic(p, b)
}

func writeAtomic(p string, b []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("save state %s: %w", filepath.Base(p), err)
	}
	if err = f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("save state %s: %w", filepath.Base(p), err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("save state %s: %w", filepath.Base(p), err)
	}
	if err = os.Rename(tmp, p); err != nil {
		return fmt.Errorf("save state %s: %w", filepath.Base(p), err)
	}
	// Sync the directory so the rename itself survives a crash.
	if dir, derr := os.Open(filepath.Dir(p)); derr == nil {
		dir.Sync()
		dir.Close()
	}
	return nil
}

// Size returns the total size in bytes of the files in the directory.
func (d *Dir) Size() (int64, error) {
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return 0, fmt.Errorf("read state dir: %w", err)
	}
	var n int64
	for _, e := range ents {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n, nil
}
