package conversation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/probes"
)

// firstLine is an answer's verdict: the line after its title.
func firstLine(answer string) string {
	lines := strings.SplitN(answer, "\n", 3)
	if len(lines) < 2 {
		return answer
	}
	return lines[1]
}

// "Will the hidden states fit?" when the target's statfs fails or never returns: "can't tell", naming
// statfs, never "fits" and never "not sure yet", which reads as waiting for data. "Will the disk fill?"
// names it too.
func TestFitWhenStatfsFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(release <-chan struct{}) error
		want string // in the plan's line
	}{
		{"fails", func(<-chan struct{}) error { return errors.New("input/output error") }, "input/output error"},
		{"never returns", func(release <-chan struct{}) error { <-release; return nil }, "statfs "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			table, err := probes.NewMounts("/proc").Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			mt, ok := table.Lookup(dir)
			if !ok {
				t.Fatalf("no mount holds %s", dir)
			}
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			usage := func(mountPoint string) (probes.Usage, error) {
				if mountPoint == mt.MountPoint {
					if err := tc.fail(release); err != nil {
						return probes.Usage{}, err
					}
				}
				return probes.Usage{Total: 100 << 30, Free: 40 << 30, Used: 60 << 30}, nil
			}
			const timeout = 300 * time.Millisecond
			e := newBotEnv(t, botOpts{Timeout: timeout, StatFS: probes.NewStatFSFunc(timeout, usage), Run: func(r *config.Run) {
				r.Plans = []config.Plan{{Name: "hidden-states", Target: r.Outputs[0], Tokens: config.Tokens{N: 25e3}, NumLayers: 32, HiddenSize: 4096}}
			}})
			for _, q := range []string{"will the hidden states fit?", "will it fit?", "capacity?"} {
				a := faultAsk(e, q)
				first := firstLine(a)
				if !strings.Contains(strings.ToLower(first), "can't tell") && !strings.Contains(first, "Cannot tell") && !strings.Contains(first, "cannot be checked:") ||
					strings.Contains(first, "fits") || strings.Contains(first, "yet") || strings.Contains(first, "(ok)") {
					t.Errorf("%q while statfs %s: first line %q; want can't tell (not fits, not \"yet\")", q, tc.name, first)
				}
				if !strings.Contains(a, "free space on "+mt.MountPoint+" is unknown: ") || !strings.Contains(a, tc.want) {
					t.Errorf("%q while statfs %s:\n%s\nwant the plan's line to say why free space is unknown (%q)", q, tc.name, a, tc.want)
				}
			}
			if a := faultAsk(e, "will the disk fill?"); !strings.Contains(a, "free space unknown") || !strings.Contains(a, "statfs") || strings.Contains(a, "lasts") {
				t.Errorf("will the disk fill? while statfs %s:\n%s\nwant free space unknown, naming statfs", tc.name, a)
			}
		})
	}
}

// movingJob is a run whose job has moved for five samples 30 s apart (its log and one engine, which the test
// can make fail), and which "is it stuck?" already calls moving.
func movingJob(t *testing.T) (*testkit.FaultEndpoint, *testkit.Clock, *botEnv) {
	t.Helper()
	vllm := testkit.NewFaultEndpoint(t)
	clock := testkit.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	e := newBotEnv(t, botOpts{Clock: clock, Metrics: []string{vllm.URL()}})
	for i := range 5 {
		e.WriteLog(t, 300+i*50, 25000)
		e.Mon.Sample(context.Background())
		clock.Add(30 * time.Second)
	}
	if first := firstLine(faultAsk(e, "is it stuck?")); !strings.Contains(first, "No, it's moving") {
		t.Fatalf("is it stuck? while the job moves: %q; want it moving", first)
	}
	return vllm, clock, e
}

// "Is it stuck?" and "is it still running?" when the log cannot be read and the engine does not answer:
// "can't tell", naming both sources in the verdict, never "moving" nor "stuck".
func TestStuckWhenTheSourcesFail(t *testing.T) {
	vllm, clock, e := movingJob(t)
	ctx := context.Background()
	vllm.Down()
	if err := os.Remove(e.Log); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(e.Log, 0o755); err != nil { // a path that cannot be read as a log
		t.Fatal(err)
	}
	for range 3 {
		e.Mon.Sample(ctx)
		clock.Add(30 * time.Second)
	}
	for _, q := range []string{"is it stuck?", "is it still running?"} {
		first := firstLine(faultAsk(e, q))
		if !strings.Contains(first, "Can't tell") || !strings.Contains(first, "log "+filepath.Join(e.Dir, "gen.log")) || !strings.Contains(first, "metrics "+strings.TrimSuffix(vllm.URL(), "/metrics")) ||
			strings.Contains(first, "moving") || strings.Contains(first, "stuck") || strings.Contains(first, "(ok)") {
			t.Errorf("%q with the log unreadable and the engine down: first line %q; want can't tell, naming the log and the engine", q, first)
		}
	}
}

// "Is it stuck?" right after the run's only server stopped answering: the log has not moved since, and
// the stall verdict waits for several samples without progress; until then the pace so far is no
// evidence it moves now. Before, "(ok) No, it's moving. 1.67 items/s" over a dead server.
func TestStuckWhenEveryServerIsSilent(t *testing.T) {
	vllm, clock, e := movingJob(t)
	ctx := context.Background()
	vllm.Down()
	e.Mon.Sample(ctx)
	clock.Add(30 * time.Second)
	for _, q := range []string{"is it stuck?", "is it still running?"} {
		answer := faultAsk(e, q)
		first := firstLine(answer)
		if !strings.Contains(first, "Can't tell — the run's server does not answer") || strings.Contains(first, "moving") || strings.Contains(first, "(ok)") {
			t.Errorf("%q with the run's only server down: first line %q; want can't tell, naming the silent server", q, first)
		}
		t.Logf("%s:\n%s", q, answer)
		if !strings.Contains(answer, strings.TrimSuffix(vllm.URL(), "/metrics")) {
			t.Errorf("%q with the run's only server down does not name it:\n%s", q, answer)
		}
	}
}

// "Will it fit?" for a `tokens: auto` plan once the run's progress sources fail (the log unreadable, the
// engine down): "can't tell", naming them, never "not sure yet", which reads as waiting for data.
func TestFitWhenTheProgressSourcesFail(t *testing.T) {
	vllm := testkit.NewFaultEndpoint(t)
	clock := testkit.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	e := newBotEnv(t, botOpts{Clock: clock, Metrics: []string{vllm.URL()}, Run: func(r *config.Run) {
		r.Plans = []config.Plan{{Name: "hidden", Target: r.Outputs[0], Tokens: config.Tokens{Auto: true},
			Layers: config.Layers{List: []int{2}}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"}}
	}})
	ctx := context.Background()
	for i := range 8 {
		e.WriteLog(t, 300+i*400, 25000)
		e.Mon.Sample(ctx)
		clock.Add(30 * time.Second)
	}
	if first := firstLine(faultAsk(e, "will it fit?")); !strings.Contains(first, "hidden does not fit") && !strings.Contains(first, "every plan fits") {
		t.Fatalf("will it fit? while the job moves: %q; want a verdict", first)
	}
	vllm.Down()
	if err := os.Remove(e.Log); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(e.Log, 0o755); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.Mon.Sample(ctx)
		clock.Add(30 * time.Second)
	}
	answer := faultAsk(e, "will it fit?")
	if first := firstLine(answer); !strings.Contains(first, "Cannot tell") || strings.Contains(first, "yet") {
		t.Errorf("will it fit? with the progress sources failed: first line %q; want cannot tell, not waiting", first)
	}
	if !strings.Contains(answer, "the token count cannot be projected: no progress reading: log "+e.Log) || !strings.Contains(answer, "metrics "+vllm.URL()) {
		t.Errorf("will it fit? with the progress sources failed does not name them in the plan's line:\n%s", answer)
	}
}

// "How much space is left?" with the run's Prometheus down and no host of its known yet (a one-shot
// command, a bot started during the outage): the other hosts' free space is unknown, said where their
// lines would be, not left out as though this machine were the run's only one.
func TestSpaceWhenPrometheusIsDown(t *testing.T) {
	dead := testkit.NewFaultEndpoint(t)
	dead.Down()
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) {
		r.Prometheus = &config.Prometheus{URL: strings.TrimSuffix(dead.URL(), "/metrics"), Selector: `{run="synth"}`}
	}})
	answer := faultAsk(e, "how much space is left?")
	if !strings.Contains(answer, "Other hosts: free space unknown — the storage query to Prometheus failed") {
		t.Errorf("how much space is left? with Prometheus down says nothing of the other hosts:\n%s", answer)
	}
	if status := faultAsk(e, "status"); !strings.Contains(status, "other hosts' free space unknown") {
		t.Errorf("status with Prometheus down says nothing of the other hosts' free space:\n%s", status)
	}
}
