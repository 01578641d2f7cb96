package reports

import (
	"strings"
	"testing"
)

// A dead Prometheus fails both its history and its query under the same probe name; the line saying why
// there is no progress names it once, and still names every other source that failed.
func TestNoProgressLineNamesEachSourceOnce(t *testing.T) {
	probs := []Problem{
		{Probe: "prometheus http://127.0.0.1:1/", Error: "history: connection refused"},
		{Probe: "prometheus http://127.0.0.1:1/", Error: "connection refused"},
		{Probe: "log /data/gen.log", Error: "no such file"},
		{Probe: "storage /data", Error: "not a progress source"},
	}
	got := noProgressLine(probs)
	if n := strings.Count(got, "prometheus http://127.0.0.1:1/"); n != 1 {
		t.Errorf("noProgressLine = %q; want the Prometheus server named once, not %d times", got, n)
	}
	if !strings.Contains(got, "log /data/gen.log") || strings.Contains(got, "storage") {
		t.Errorf("noProgressLine = %q; want the log named and the storage probe left out", got)
	}
}

// With no source at all, the status names every kind of source a run file can give, as the ETA answer
// beside it does: it left out prometheus:.
func TestNoProgressLineNamesEverySource(t *testing.T) {
	got := noProgressLine(nil)
	for _, key := range []string{"`log:`", "`metrics:`", "`prometheus:`"} {
		if !strings.Contains(got, key) {
			t.Errorf("noProgressLine(no problems) = %q; want it to name %s", got, key)
		}
	}
}
