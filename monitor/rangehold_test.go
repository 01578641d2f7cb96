package monitor

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/reports"
	"runwatch/sim"
)

// simWatched is a sim job whose log and vLLM metrics the monitor reads, on a clock the test advances.
type simWatched struct {
	mu  sync.Mutex
	job *sim.Job
	log string
}

func (w *simWatched) now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Unix(1_800_000_000, 0).Add(time.Duration(w.job.Now() * float64(time.Second)))
}

func (w *simWatched) mono() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Duration(w.job.Now() * float64(time.Second))
}

func (w *simWatched) advance(t *testing.T, dt float64) {
	w.mu.Lock()
	w.job.Advance(dt)
	line := w.job.ProgressLine() + "\n"
	w.mu.Unlock()
	if err := os.WriteFile(w.log, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if now := w.now(); os.Chtimes(w.log, now, now) != nil {
		t.Fatal("chtimes")
	}
}

func (w *simWatched) serve(rw http.ResponseWriter, _ *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rw.Write(w.job.Metrics())
}

// TestConsecutiveAnswersKeepOneRange watches the demo's job as the demo does (a sample every 30 s from 10 min in)
// and reads each sample's ETA line as the channel gets it: one answer must not contradict the one before. The
// estimator's range swung from sample to sample ("3 h 9 min (2 h 44 min – 3 h 39 min)", "3 h 6 min (1 h 33 min –
// 6 h 14 min)", "3 h 4 min (or later, up to 6 h 10 min)" in a demo walk): a side of the range may narrow as the
// job gets through the time left, not halve from one sample to the next while the point holds, and the range's
// form ("(a – b)" or "(or later, up to b)") must not flip.
func TestConsecutiveAnswersKeepOneRange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := &simWatched{job: sim.NewJob(sim.DemoScenario(), 1), log: filepath.Join(dir, "gen.log")}
	srv := httptest.NewServer(http.HandlerFunc(w.serve))
	defer srv.Close()
	w.advance(t, 600)
	f := &config.File{Runs: []config.Run{{Name: "demo", Log: w.log, Metrics: []string{srv.URL + "/metrics"},
		Total: int64(sim.DemoScenario().Items), MaxTokens: sim.DemoScenario().MaxTokens}}}
	m, _, err := New(f, Options{ProbeTimeout: 5 * time.Second, Now: w.now, Mono: w.mono})
	if err != nil {
		t.Fatal(err)
	}
	type shown struct {
		line             string
		sec, low, high   float64
		form             string
		progress, at     float64
		seconds, current float64
	}
	form := func(sec, low, high float64) string {
		r := reports.Range(sec, low, high)
		switch {
		case strings.HasPrefix(r, " (or later"):
			return "or later"
		case strings.HasPrefix(r, " (or sooner"):
			return "or sooner"
		case r == "":
			return "none"
		}
		return "a – b"
	}
	var prev *shown
	n, bad := 0, 0
	// 150 samples: 1 h 15 min of the job, from 5% to 35% done, where the demo walk's range swung.
	for i := 0; i < 150 && !w.job.Done(); i++ {
		w.advance(t, 30)
		e := m.Sample(context.Background())[0].Run.ETA
		if e == nil || e.State != reports.StateRunning || e.Seconds == nil || e.LowS == nil || e.HighS == nil || e.Progress < 0.05 {
			prev = nil
			continue
		}
		cur := &shown{line: reports.ETALine(*e, time.UTC), sec: *e.Seconds, low: *e.LowS, high: *e.HighS}
		cur.form = form(cur.sec, cur.low, cur.high)
		n++
		if p := prev; p != nil {
			below := func(s *shown) float64 { return math.Log(s.sec / math.Max(s.low, 1e-3*s.sec)) }
			above := func(s *shown) float64 { return math.Log(s.high / s.sec) }
			held := math.Abs(math.Log(cur.sec/p.sec)) < 0.1
			switch {
			case cur.form != p.form:
				bad++
				t.Errorf("sample %d: the range's form flipped from %q to %q:\n  %s\n  %s", i, p.form, cur.form, p.line, cur.line)
			case held && (below(cur) < below(p)/2 && below(p) > 0.05 || above(cur) < above(p)/2 && above(p) > 0.05):
				bad++
				t.Errorf("sample %d: a side of the range halved while the point held:\n  %s\n  %s", i, p.line, cur.line)
			}
		}
		prev = cur
		if bad > 5 {
			t.Fatal("more than 5 contradictions; stopping")
		}
	}
	if n < 100 {
		t.Errorf("%d answers with a range from 5%% done; want one a sample", n)
	}
}
