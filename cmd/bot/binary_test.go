package main

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runwatch/internal/promtest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// botBinDir holds the link botBinary makes; TestMain removes it.
var botBinDir string

// botName is the name the test binary answers to as the bot: botBinary links it under that name.
const botName = "bot"

// waitingTests is how many of the parallel tests run at once unless -test.parallel says otherwise. They
// run bot processes and spend their time waiting on them, not computing: on Prometheus's scrapes, a
// bot's samples, the time a restarted bot gives a post's call to time out before it looks the post up.
const waitingTests = 6

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == botName {
		// Run as the bot by a test (botBinary): this binary's main is the bot's main.
		os.Exit(realMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	closeInheritedOnExec()
	flag.Parse()
	promtest.RaiseParallel(waitingTests)
	code := m.Run()
	if botBinDir != "" {
		os.RemoveAll(botBinDir)
	}
	os.Exit(code)
}

// closeInheritedOnExec marks the files this process inherited open beyond stdin, stdout and stderr
// close-on-exec. Go opens its own files so, but one a wrapper left open (/usr/bin/time -o's output, a CI
// runner's pipe) passed on to every process the tests start: a job holding it open for writing had it
// among its outputs ("writes samples.jsonl and 1 other file", TestZeroConfig under `time -o`).
func closeInheritedOnExec() {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return // no /proc: nothing the tests start is looked at through it either
	}
	for _, e := range fds {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// botBinary gives every test that runs the bot as a process (the kill -9 restart and the red-team tests)
// this test binary under the name "bot", run as which it is the bot (TestMain): the bot's code as the
// tests built it, with the race detector when they have it. A `go build` of the bot compiled the main
// package again and linked a second binary as big as this one (with -race, 10 s of CPU on a cold cache)
// before the first of those tests could start.
var botBinary = sync.OnceValues(func() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "runwatch-bot-")
	if err != nil {
		return "", err
	}
	botBinDir = dir
	bin := filepath.Join(dir, botName)
	if err := os.Symlink(self, bin); err != nil {
		return "", err
	}
	return bin, nil
})

// buildBot is botBinary for a test: the path of the bot, or a fatal error.
func buildBot(t *testing.T) string {
	t.Helper()
	bin, err := botBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// runBot runs the bot as a process in dir with env alone (processEnv), as a user's shell would: for the
// tests that run beside others, which realMain in the test's own process (run, with setEnv's environment
// and working directory) cannot.
func runBot(t *testing.T, dir string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(buildBot(t), args...)
	var out, errb strings.Builder
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("bot %q: %v", args, err)
	}
	return code, out.String(), errb.String()
}
