package probes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"runwatch/internal/spell"
)

// LogMissing is a log that is not there (it wraps fs.ErrNotExist), with what is beside its path: a log
// that does not exist yet and a log: with a typo in it read the same to the open call, and only the
// directory tells them apart.
type LogMissing struct {
	Path string
	// Near is a file in the log's directory whose name the path's most likely misspells ("generate.log"
	// for "generat.log"), "" when none is near.
	Near string
	// NoDir: the directory does not exist either.
	NoDir bool
	err   error
}

func (e *LogMissing) Error() string { return fmt.Sprintf("read %s: %v", e.Path, e.err) }

func (e *LogMissing) Unwrap() error { return e.err }

// logMissingEntries bounds how much of a directory is read to find a near name: a log beside thousands of
// shards is not worth a long listing on a slow filesystem.
const logMissingEntries = 4096

// logMissing describes a log that open found missing. It runs inside the log's guarded read, so a directory
// on a hung filesystem is abandoned with the read.
func logMissing(path string, err error) error {
	m := &LogMissing{Path: path, err: err}
	dir := filepath.Dir(path)
	d, derr := os.Open(dir)
	if derr != nil {
		m.NoDir = errors.Is(derr, fs.ErrNotExist)
		return m
	}
	defer d.Close()
	entries, _ := d.ReadDir(logMissingEntries)
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	m.Near = nearestName(filepath.Base(path), names)
	return m
}

// nearestName is the name of names that want most likely misspells (spell.Near; the closest, and of
// those the first in sorted order), "" when none is near.
func nearestName(want string, names []string) string {
	names = slices.Clone(names)
	slices.Sort(names)
	best, bestD := "", -1
	for _, n := range names {
		if n == want || !spell.Near(want, n) {
			continue
		}
		if d := spell.Distance(want, n); bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	return best
}
