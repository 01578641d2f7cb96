//go:build !race

package handlers

// raceDetector is true in a build with the race detector.
const raceDetector = false
