//go:build !race

package reports_test

// raceDetector is true in a build with the race detector.
const raceDetector = false
