package handlers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// soakHour is one line of testdata/soak's output.
type soakHour struct {
	Hour        int     `json:"hour"`
	RSSMiB      float64 `json:"rss_mib"`
	PeakMiB     float64 `json:"peak_mib"`
	HeapMiB     float64 `json:"heap_mib"`
	StateMaxKiB float64 `json:"state_max_kib"`
	StateKiB    float64 `json:"state_kib"`
	History     int     `json:"history"`
	AskMs       float64 `json:"ask_ms"`
	AskKiB      float64 `json:"ask_kib"`
	TickMs      float64 `json:"tick_ms"`
}

// TestSoak samples 10 simulated runs every 30 simulated seconds on a fake clock, asking a question
// every 5 simulated minutes, in a child process built without the race detector (testdata/soak),
// so its memory is the bot's own. Memory stays under 60 MiB, each run's state file under 5 MiB,
// and once the history has reached its bound neither memory, state nor the work of an answer
// grows any more.
//
// By default it covers 8 simulated hours with the history bounded at 200 points, so the bound is
// reached, compacted and reached again a dozen times in well under a minute. RUNWATCH_SOAK_HOURS=168
// runs the full week with the real bound (2,000 points): 10 to 20 minutes on 2 cores.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: builds and runs testdata/soak")
	}
	if raceDetector {
		// The soak runs in a child built without the race detector, so that its memory is the bot's own; this
		// process only waits for it. Under -race its 40 s find nothing, and .ci/run runs it without -race.
		t.Skip("soak: its child is built without -race; .ci/run runs it without -race")
	}
	hours, maxHistory := 8, 200
	if s := os.Getenv("RUNWATCH_SOAK_HOURS"); s != "" {
		h, err := strconv.Atoi(s)
		if err != nil || h < 1 {
			t.Fatalf("RUNWATCH_SOAK_HOURS=%q is not a number of hours", s)
		}
		hours, maxHistory = h, 2000
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "soak")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/soak").CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/soak: %v\n%s", err, out)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-runs", "10", "-hours", strconv.Itoa(hours), "-max-history", strconv.Itoa(maxHistory), "-dir", work)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("soak: %v\n%s", err, stderr.String())
	}
	var hs []soakHour
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var h soakHour
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("soak output %q: %v", sc.Text(), err)
		}
		hs = append(hs, h)
	}
	if len(hs) != hours {
		t.Fatalf("soak reported %d hours; want %d", len(hs), hours)
	}
	bound := maxHistory
	for _, h := range hs {
		if h.PeakMiB >= 60 {
			t.Errorf("hour %d: peak RSS %.1f MiB; want under 60 MiB", h.Hour, h.PeakMiB)
		}
		if h.StateMaxKiB >= 5<<10 {
			t.Errorf("hour %d: a run's state file is %.0f KiB; want under 5 MiB", h.Hour, h.StateMaxKiB)
		}
		if h.History > bound {
			t.Errorf("hour %d: history holds %d points; want at most %d", h.Hour, h.History, bound)
		}
	}

	// Once the history has been compacted the first time, it lives between three quarters of the
	// bound and the bound: the later half of that time must cost no more than the earlier half.
	first := -1
	for i := 1; i < len(hs); i++ {
		if hs[i].History < hs[i-1].History {
			first = i
			break
		}
	}
	if first < 0 || len(hs)-first < 4 {
		t.Fatalf("the history never reached its bound of %d points, or too late to compare (first compaction at hour %d of %d)", bound, first, len(hs))
	}
	mid := first + (len(hs)-first)/2
	a, b := hs[first:mid], hs[mid:]
	peak := func(hs []soakHour, f func(soakHour) float64) float64 {
		m := 0.0
		for _, h := range hs {
			m = max(m, f(h))
		}
		return m
	}
	mean := func(hs []soakHour, f func(soakHour) float64) float64 {
		s := 0.0
		for _, h := range hs {
			s += f(h)
		}
		return s / float64(len(hs))
	}
	heap := func(h soakHour) float64 { return h.HeapMiB }
	stateKiB := func(h soakHour) float64 { return h.StateKiB }
	askKiB := func(h soakHour) float64 { return h.AskKiB }
	if x, y := peak(a, heap), peak(b, heap); y > 1.5*x+2 {
		t.Errorf("live heap grew from %.1f MiB (hours %d-%d) to %.1f MiB (hours %d-%d) with the history at its bound", x, a[0].Hour, a[len(a)-1].Hour, y, b[0].Hour, b[len(b)-1].Hour)
	}
	if x, y := peak(a, stateKiB), peak(b, stateKiB); y > 1.1*x+64 {
		t.Errorf("state directory grew from %.0f KiB to %.0f KiB with the history at its bound", x, y)
	}
	if x, y := mean(a, askKiB), mean(b, askKiB); y > 1.3*x {
		t.Errorf("an answer allocates %.0f KiB late in the soak against %.0f KiB earlier; want no growth", y, x)
	}
	last := hs[len(hs)-1]
	t.Logf("soak: 10 runs, %d h of 30 s samples, history bound %d: peak RSS %.1f MiB, largest state file %.0f KiB (state dir %.0f KiB), "+
		"answer median %.2f ms in hour 1 and %.2f ms in hour %d (%.0f / %.0f KiB allocated), sample of all runs %.1f ms",
		hours, bound, peak(hs, func(h soakHour) float64 { return h.PeakMiB }), peak(hs, func(h soakHour) float64 { return h.StateMaxKiB }), last.StateKiB,
		hs[0].AskMs, last.AskMs, last.Hour, hs[0].AskKiB, last.AskKiB, last.TickMs)
}
