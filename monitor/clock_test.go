package monitor

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"runwatch/config"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

// steppedJob is a job at 1.3 items/s and 1,386 tok/s whose log and vLLM metrics follow the time it has run
// (a monotonic clock), while the machine's wall clock is the test's to step.
type steppedJob struct {
	mu   sync.Mutex
	mono time.Duration // how long the job has run
	wall time.Time     // what the machine's clock says
	log  string
}

func (j *steppedJob) now() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.wall
}

func (j *steppedJob) since() time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mono
}

// advance moves both clocks by d and the wall clock by step more, and writes the job's log line, stamped by
// the wall clock as a job's file is.
func (j *steppedJob) advance(t *testing.T, d, step time.Duration) {
	j.mu.Lock()
	j.mono += d
	j.wall = j.wall.Add(d + step)
	el, wall := j.mono.Seconds(), j.wall
	j.mu.Unlock()
	done := 300 + int(1.3*el)
	line := fmt.Sprintf("Progress: %d/25000 (0 errors), avg completion: 1066 tokens, elapsed: %.0fs\n", done, 408+el)
	if err := os.WriteFile(j.log, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(j.log, wall, wall); err != nil {
		t.Fatal(err)
	}
}

func (j *steppedJob) serve(w http.ResponseWriter, _ *http.Request) {
	el := j.since().Seconds()
	fmt.Fprintf(w, `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 200
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 12
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="m"} %g
`, 565405+1386*el)
}

// TestWallClockStepMovesNothing: the machine's clock steps an hour forward or back mid-run (NTP, a VM
// resumed). The history keeps one point per sample 30 s apart on the run clock, every ETA is the one the same
// job gives without the step, no shift warning is raised that the job without the step does not raise, and the
// finish an answer shows moves with the wall clock. Stamped with wall time, +1 h read as an hour without progress (ETA 11 h 32 min -> 30 h and a shift
// warning "throughput fell 1,397 -> 540 tok/s"), and -1 h stopped the history for an hour.
func TestWallClockStepMovesNothing(t *testing.T) {
	type sample struct {
		eta    float64
		finish time.Time
		shift  bool
	}
	watch := func(t *testing.T, step time.Duration) ([]sample, []float64) {
		dir := t.TempDir()
		j := &steppedJob{wall: time.Unix(1_800_000_000, 0), log: filepath.Join(dir, "gen.log")}
		srv := httptest.NewServer(http.HandlerFunc(j.serve))
		defer srv.Close()
		j.advance(t, 0, 0)
		f := &config.File{Runs: []config.Run{{Name: "synth", Log: j.log, Metrics: []string{srv.URL + "/metrics"}}}}
		m, _, err := New(f, Options{ProbeTimeout: 5 * time.Second, Now: j.now, Mono: j.since})
		if err != nil {
			t.Fatal(err)
		}
		var out []sample
		for i := 0; i < 60; i++ {
			var by time.Duration
			if i == 30 {
				by = step
			}
			j.advance(t, 30*time.Second, by)
			ev := m.Sample(context.Background())[0]
			e := ev.Run.ETA
			if e == nil || e.Seconds == nil || e.FinishAt == nil {
				t.Fatalf("sample %d: ETA %+v; want a finish", i, e)
			}
			out = append(out, sample{*e.Seconds, *e.FinishAt, ev.Shift != nil})
		}
		var ts []float64
		for _, o := range m.History("synth") {
			ts = append(ts, o.T)
		}
		return out, ts
	}
	still, stillT := watch(t, 0)
	for _, step := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(fmt.Sprintf("step %v", step), func(t *testing.T) {
			got, ts := watch(t, step)
			if len(ts) != len(stillT) {
				t.Fatalf("history of %d points; want %d, one per sample", len(ts), len(stillT))
			}
			for i := 1; i < len(ts); i++ {
				if d := ts[i] - ts[i-1]; math.Abs(d-30) > 1e-6 {
					t.Fatalf("history points %d and %d are %.0f s apart; want 30 s on the run clock", i-1, i, d)
				}
			}
			for i, s := range got {
				if s.shift != still[i].shift {
					t.Errorf("sample %d: a shift warning %v, without the step %v; want the same (only the wall clock moved)",
						i, s.shift, still[i].shift)
				}
				if math.Abs(s.eta-still[i].eta) > 1e-6*still[i].eta {
					t.Errorf("sample %d: ETA %.0f s; want %.0f s, as without the step", i, s.eta, still[i].eta)
				}
				wantShown := still[i].finish
				if i >= 30 {
					wantShown = wantShown.Add(step)
				}
				if d := s.finish.Sub(wantShown); d > time.Second || d < -time.Second {
					t.Errorf("sample %d: finish shown at %v; want %v, on the wall clock", i, s.finish, wantShown)
				}
			}
		})
	}
}
