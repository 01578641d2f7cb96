// Package racequiet takes the race detector's sleep at exit out of a test binary: imported (for its
// side effect) by one test file of each package, it restarts a binary built with -race once, at start,
// with atexit_sleep_ms=0 added to GORACE. The detector otherwise sleeps a second before every exit so
// that other threads can finish their reports; a test binary exits once its tests are done, and the
// suite runs some thirty of them, two at a time. Without -race it does nothing. ChildEnv gives the same to the
// processes a test starts with an environment of its own.
package racequiet

import (
	"os"
	"strings"
)

// option is what racequiet adds to GORACE.
const option = "atexit_sleep_ms=0"

// ChildEnv is the GORACE entry for a process a test starts from a race-built binary (the test binary run as
// the bot) with an environment of its own: the caller's options and no sleep at exit, added only if the
// caller's GORACE does not set it already (this binary's own, once restarted, does). Outside -race the
// variable is read by nothing.
func ChildEnv() string {
	gorace := os.Getenv("GORACE")
	if !strings.Contains(gorace, "atexit_sleep_ms") {
		gorace = strings.TrimSpace(gorace + " " + option)
	}
	return "GORACE=" + gorace
}
