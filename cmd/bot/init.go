package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"runwatch/config"
	"runwatch/discover"
)

// runInit prints, or writes with --write, the run file for what discovery finds on this host, commented:
// the first run file is an edit of what is already running, not a blank page.
func runInit(ctx context.Context, a *app, args []string) error {
	flags := a.flags()
	write := flags.Bool("write", false, "write the run file (to --config PATH, else ./runwatch.yaml) instead of printing it; an existing file is kept")
	if err := parseNoArgs(flags, args, "init takes no arguments; it looks at this host"); err != nil {
		return err
	}
	if err := loadDotEnv(a.log); err != nil {
		return err
	}
	env, err := config.LoadEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	a.env = env
	if env.DiscoverOff {
		return discoverOffWhy()
	}
	res := a.discover(ctx)
	text := discover.RunFile(discover.File(res), res, time.Now())
	// What it writes must load: a run file that init wrote and load refuses would be the worst first step.
	if _, err := config.Parse([]byte(text), func(string) (string, bool) { return "", false }); err != nil {
		return fmt.Errorf("the run file for what was found does not load (a bug: please report it): %w", err)
	}
	if !*write {
		_, err := fmt.Fprint(a.stdout, text)
		return err
	}
	path := a.configPath
	if path == "" {
		path = "runwatch.yaml"
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s exists and is kept: move it away, or run `bot init` without --write and merge what it prints", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if err := writeNew(path, []byte(text)); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "wrote %s: `bot ask \"ETA?\"` in %s reads it; edit it to add what discovery never guesses (protected:, channel:)\n",
		path, filepath.Dir(absPath(path)))
	return nil
}

// writeNew writes a file that must not exist yet, whole or not at all: a temporary file beside it, linked
// into place, so a crash leaves no half file and a file that appeared meanwhile is not overwritten.
func writeNew(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(absPath(path)), ".runwatch-init-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
