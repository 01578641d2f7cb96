package reports_test

import (
	"math"
	"strings"
	"testing"

	"runwatch/reports"
)

// These replay jobs recorded against the third-party simulator (testdata/peer2, scripts/recordpeer's second())
// through the estimator as the bot runs it, with both kinds of token counter: as the simulator counts (a request's
// tokens when it finishes) and as vLLM does (as they are decoded; NAME.iter.jsonl).

// replayed is a recorded job replayed: each answer with its time, share done and true finish.
type replayed struct {
	obs    []reports.Observation
	lines  []reports.ReplayLine
	finish float64
}

func replayTrace(t *testing.T, path string) replayed {
	t.Helper()
	obs := readPeerTrace(t, path)
	rp := reports.NewReplayer(reports.EstimateConfig{}, reports.ShiftConfig{})
	r := replayed{obs: obs, finish: obs[len(obs)-1].T}
	for _, o := range obs {
		r.lines = append(r.lines, rp.Step(o))
	}
	return r
}

// firstAt is the T at which share of the job's items were done.
func (r replayed) firstAt(share float64) float64 {
	for _, o := range r.obs {
		if float64(o.Done) >= share*float64(o.Total) {
			return o.T
		}
	}
	return math.Inf(1)
}

// TestWorkerDropFollowsTheBatch: the client drops from 64 workers to 16 at 35% done, and the engines' running
// requests with it. The whole run's full-batch rate said nothing of the rest: the estimate kept "8,117 tok/s of
// the whole run" to the end, 20-40% of the job early, while tqdm's EMA was within 5%. From a tenth of the job
// after the drop, every answer must be within 12% of the job, and say the rates are the new batch's.
func TestWorkerDropFollowsTheBatch(t *testing.T) {
	for _, kind := range []string{"", ".iter"} {
		r := replayTrace(t, "testdata/peer2/c2-workers-drop"+kind+".jsonl")
		from := r.firstAt(0.35) + 0.1*r.finish
		n := 0
		for i, l := range r.lines {
			o := r.obs[i]
			if o.T < from || o.Done >= o.Total {
				continue
			}
			n++
			if l.ETAS == nil {
				t.Fatalf("%s: t=%.1f: no estimate (%s)", kind, o.T, l.Reason)
			}
			if e := math.Abs(o.T+*l.ETAS-r.finish) / r.finish; e > 0.12 {
				t.Errorf("%s: t=%.1f (%.0f%% done): finish %.1f s, true %.1f s (%.0f%% of the job off); want within 12%%: %s",
					kind, o.T, 100*float64(o.Done)/float64(o.Total), o.T+*l.ETAS, r.finish, 100*e, l.Reason)
			}
			if float64(o.Done) < 0.9*float64(o.Total) && !strings.Contains(l.Reason, "running requests to 16") {
				t.Errorf("%s: t=%.1f: reason %q; want it to say the rates are since the batch fell to 16", kind, o.T, l.Reason)
			}
		}
		if n < 10 {
			t.Fatalf("%s: %d answers after the drop; want the replay to reach them", kind, n)
		}
	}
}

// TestNeighbourJobOnTheSameServer: another job runs on the same server from before this one starts, so the
// engines' counters (finished requests, tokens, running requests) hold both jobs' work. Taken as this job's,
// they priced it at the server's rate ("157 tokens each at 1,448 tok/s" on a held-out job running at about
// 925). The estimate must read this job's own log, say why, and be as close as the log allows.
func TestNeighbourJobOnTheSameServer(t *testing.T) {
	for _, kind := range []string{"", ".iter"} {
		r := replayTrace(t, "testdata/peer2/c2-neighbour-before"+kind+".jsonl")
		var sum float64
		n := 0
		for i, l := range r.lines {
			o := r.obs[i]
			if float64(o.Done) < 0.1*float64(o.Total) || o.Done >= o.Total || l.ETAS == nil {
				continue
			}
			n++
			sum += math.Abs(o.T+*l.ETAS-r.finish) / r.finish
			if !strings.Contains(l.Reason, "the server also serves other work") || strings.Contains(l.Reason, "tok/s") {
				t.Errorf("%s: t=%.1f: reason %q; want this job's log, and why", kind, o.T, l.Reason)
			}
		}
		if n < 20 {
			t.Fatalf("%s: %d answers; want the replay to reach them", kind, n)
		}
		if mean := sum / float64(n); mean > 0.04 {
			t.Errorf("%s: mean error %.1f%% of the job; want at most 4%% (the log alone gives about 2%%)", kind, 100*mean)
		}
	}
}

// TestFrozenServerIsStalled: the server is stopped (SIGSTOP) at 50% done for 40 s of a job that moves every
// 1.5 s; /metrics does not answer and nothing finishes. With a fixed 600 s threshold the answers said
// "running" with a finish that slid further each time; by the job's own pace the run is stalled a few of its
// gaps into the freeze, and the answer names the server.
func TestFrozenServerIsStalled(t *testing.T) {
	for _, kind := range []string{"", ".iter"} {
		r := replayTrace(t, "testdata/peer2/c2-frozen"+kind+".jsonl")
		frozeAt, resumed := math.Inf(1), math.Inf(1)
		for i, o := range r.obs {
			if i > 0 && o.GenTokens == nil && r.obs[i-1].GenTokens != nil && frozeAt > o.T {
				frozeAt = r.obs[i-1].T
			}
			if o.T > frozeAt && o.GenTokens != nil && resumed > o.T {
				resumed = o.T
			}
		}
		if math.IsInf(frozeAt, 1) || resumed-frozeAt < 30 {
			t.Fatalf("%s: froze at %v, resumed at %v; want a freeze of about 40 s in the trace", kind, frozeAt, resumed)
		}
		stalled := 0
		for i, l := range r.lines {
			o := r.obs[i]
			if o.T < frozeAt+0.3*(resumed-frozeAt) || o.T >= resumed {
				continue
			}
			if l.State != reports.StateStalled || !strings.Contains(l.Reason, "server stopped answering") {
				t.Errorf("%s: t=%.1f, %.0f s into the freeze: %s %q; want stalled, naming the server", kind, o.T,
					o.T-frozeAt, l.State, l.Reason)
				continue
			}
			stalled++
		}
		if stalled < 5 {
			t.Errorf("%s: %d stalled answers during the freeze; want every answer past its first third", kind, stalled)
		}
	}
}
