//go:build race

package racequiet

import (
	"os"
	"strings"
	"syscall"
)

// Option is what the restart adds to GORACE.
const Option = "atexit_sleep_ms=0"

func init() {
	gorace := os.Getenv("GORACE")
	if strings.Contains(gorace, "atexit_sleep_ms") {
		return // set by the caller, or this is the restarted binary
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := append(os.Environ(), "GORACE="+strings.TrimSpace(gorace+" "+Option))
	// The race runtime reads GORACE before any package starts: only a new start sees it. Exec keeps the
	// process, its arguments and its open files; on failure the binary simply goes on, sleep and all.
	_ = syscall.Exec(exe, os.Args, env)
}
