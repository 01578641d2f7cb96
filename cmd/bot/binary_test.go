package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// botBinDir holds the binary botBinary builds; TestMain removes it.
var botBinDir string

func TestMain(m *testing.M) {
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
