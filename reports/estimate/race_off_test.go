//go:build !race

package estimate

// raceDetector is true in a build with the race detector.
const raceDetector = false
