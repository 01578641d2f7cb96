package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// botBinDir holds the binary botBinary builds; TestMain removes it.
var botBinDir string

// waitingTests is how many of the parallel tests run at once unless -test.parallel says otherwise. They
// run bot processes and spend their time waiting on them, not computing: on Prometheus's scrapes, a
// bot's samples, the 35 s a restarted bot gives a post's call to time out before it looks the post up.
// The default, GOMAXPROCS (2 here), ran them two at a time, each pair as long as its slower test.
const waitingTests = 6

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(waitingTests, runtime.GOMAXPROCS(0))))
	}
	code := m.Run()
	if botBinDir != "" {
		os.RemoveAll(botBinDir)
	}
	os.Exit(code)
}

// botBinary builds the bot once for every test that runs it as a process (the kill -9 restart
// and the red-team tests), with the race detector when the tests have it.
var botBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "runwatch-bot-")
	if err != nil {
		return "", err
	}
	botBinDir = dir
	bin := filepath.Join(dir, "bot")
	args := []string{"build", "-o", bin}
	if restartRace {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// buildBot is botBinary for a test: the path of the built bot, or a fatal error.
func buildBot(t *testing.T) string {
	t.Helper()
	bin, err := botBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
