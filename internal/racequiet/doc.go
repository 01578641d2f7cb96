// Package racequiet takes the race detector's sleep at exit out of a test binary: imported (for its
// side effect) by one test file of each package, it restarts a binary built with -race once, at start,
// with atexit_sleep_ms=0 added to GORACE. The detector otherwise sleeps a second before every exit so
// that other threads can finish their reports; a test binary exits once its tests are done, and the
// suite runs some thirty of them, two at a time. Without -race it does nothing.
package racequiet
