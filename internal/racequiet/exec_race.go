//go:build race

package racequiet

import (
	"os"
	"strings"
	"syscall"
)

func init() {
	if strings.Contains(os.Getenv("GORACE"), "atexit_sleep_ms") {
		return // set by the caller, or this is the restarted binary
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := append(os.Environ(), ChildEnv())
	// The race runtime reads GORACE before any package starts: only a new start sees it. Exec keeps the
	// process, its arguments and its open files; on failure the binary simply goes on, sleep and all.
	_ = syscall.Exec(exe, os.Args, env)
}
