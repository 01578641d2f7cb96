package monitor

import "testing"

// The free-space history stays within maxFreePoints readings however long the bot runs, keeps every recent
// reading, and still reaches back to the first: 1,000 readings 5 s apart are 83 minutes, and a disk that
// fills in 6 h needs 36 of them behind its forecast (reports.FillRate); the last 240 alone were 20.
func TestThinFreeReachesBack(t *testing.T) {
	var pts []freePoint
	for i := range 1000 {
		pts = thinFree(append(pts, freePoint{T: float64(5 * i), Free: uint64(1e12 - i)}))
		if len(pts) > maxFreePoints {
			t.Fatalf("after %d readings: %d kept; want at most %d", i+1, len(pts), maxFreePoints)
		}
	}
	if pts[0].T != 0 {
		t.Errorf("oldest reading kept at %g s; want the first, at 0", pts[0].T)
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].T <= pts[i-1].T {
			t.Fatalf("readings out of order at %d: %g after %g", i, pts[i].T, pts[i-1].T)
		}
	}
	recent := pts[len(pts)-maxFreePoints/2:]
	for i, p := range recent {
		if want := float64(5 * (1000 - len(recent) + i)); p.T != want {
			t.Fatalf("recent reading %d at %g s; want every one of the last %d readings kept (%g)", i, p.T, len(recent), want)
		}
	}
}
