//go:build race

package main

// restartRace says the tests run with the race detector, so the bot they build gets it too (and
// reuses the build cache).
const restartRace = true
