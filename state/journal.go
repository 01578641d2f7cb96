package state

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
)

// Journal is an append-only state file of short lines, for facts that must be on disk before the
// request that produced them is acted on (a seen request signature) and are too frequent to
// rewrite a whole file for each. Append is one write(2) of one line with O_APPEND, which a
// kill -9 cannot split; a line torn by a machine crash is skipped on reading. Compact rewrites the
// file atomically with only the lines still wanted.
type Journal struct {
	mu   sync.Mutex
	path string
	f    *os.File
	n    int // lines appended since the last compaction
}

// OpenJournal opens (creating) the journal name in d.
func (d *Dir) OpenJournal(name string) (*Journal, error) {
	p, err := d.file(name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	return &Journal{path: p, f: f}, nil
}

// Lines returns the journal's complete lines, oldest first.
func (j *Journal) Lines() ([]string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	b, err := os.ReadFile(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil // only a torn line
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// Append adds one line (it must not contain a newline) and returns how many lines were appended
// since the last Compact, so the caller can decide when to compact.
func (j *Journal) Append(line string) (int, error) {
	if strings.ContainsRune(line, '\n') {
		return 0, errors.New("journal line contains a newline")
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.WriteString(line + "\n"); err != nil {
		return j.n, fmt.Errorf("append to journal: %w", err)
	}
	j.n++
	return j.n, nil
}

// Compact replaces the journal with lines, atomically.
func (j *Journal) Compact(lines []string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	if err := writeAtomic(j.path, []byte(b.String())); err != nil {
		return err
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("reopen journal: %w", err)
	}
	j.f.Close()
	j.f, j.n = f, 0
	return nil
}

// Close closes the journal's file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Close()
}
