package monitor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit/fake"
	"runwatch/internal/tmpfs"
	"runwatch/reports"
	"runwatch/state"
)

// vllmServer is a busy vLLM server (fake.VLLM, a real engine's recording) whose generated tokens grow
// by step on every scrape.
func vllmServer(t *testing.T, step float64) *fake.VLLM {
	t.Helper()
	return fake.NewVLLM(t, fake.VLLMOptions{TokensPerScrape: step})
}

// holdOpen starts a real process that keeps file open for writing until the test ends.
func holdOpen(t *testing.T, file string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", `exec 3>>"$1"; echo ready; exec sleep 60`, "sh", file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	// "ready" comes from sh; the writer is the sleep it execs into. Wait for the exec, or a scan
	// may still see sh.
	comm := fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if b, err := os.ReadFile(comm); err == nil && strings.TrimSpace(string(b)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not become sleep", comm)
		}
		time.Sleep(time.Millisecond)
	}
	return cmd.Process.Pid
}

type fixture struct {
	dir, out, shared, link, log string
	file                        *config.File
}

func newFixture(t *testing.T, metrics ...string) fixture {
	t.Helper()
	dir := t.TempDir()
	f := fixture{dir: dir, out: filepath.Join(dir, "out"), shared: filepath.Join(dir, "shared"),
		link: filepath.Join(dir, "samples"), log: filepath.Join(dir, "gen.log")}
	os.MkdirAll(f.out, 0o755)
	os.MkdirAll(filepath.Join(f.shared, "samples"), 0o755)
	// The classic accident: an output path that is a symlink onto the protected mount.
	if err := os.Symlink(filepath.Join(f.shared, "samples"), f.link); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f.log, []byte("starting\nProgress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n"), 0o644)
	f.file = &config.File{Source: "test", Runs: []config.Run{{
		Name: "synth", Outputs: []string{f.out, f.link}, Protected: []string{f.shared}, Watch: []string{dir},
		Log: f.log, Metrics: metrics,
		Plans: []config.Plan{
			{Name: "three", Target: f.out, Tokens: config.Tokens{N: 25e6}, Layers: config.Layers{List: []int{2, 30, 58}}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"},
			{Name: "all", Target: f.out, Tokens: config.Tokens{N: 25e6}, Layers: config.Layers{All: true}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"},
		},
	}}}
	return f
}

func TestStatusEndToEnd(t *testing.T) {
	srv := vllmServer(t, 1386*30)
	f := newFixture(t, srv.URL+"/metrics", "http://127.0.0.1:1/metrics")
	writer := holdOpen(t, filepath.Join(f.shared, "samples", "part-0001.jsonl"))
	ok := holdOpen(t, filepath.Join(f.out, "part-0001.jsonl"))

	m, problems, err := New(f.file, Options{ProbeTimeout: 2 * time.Second})
	if err != nil || len(problems) > 0 {
		t.Fatalf("New = %v, %v", problems, err)
	}
	st := m.Status(context.Background(), All)
	if len(st.Runs) != 1 {
		t.Fatalf("runs = %d", len(st.Runs))
	}
	rs := st.Runs[0]

	// Storage: the symlinked output resolves onto the protected directory, the writer there is
	// flagged, the one in out/ is not.
	var link reports.PathInfo
	for _, p := range rs.Storage.Paths {
		if p.Path == f.link {
			link = p
		}
	}
	if link.Resolved != filepath.Join(f.shared, "samples") || !link.Protected || link.Role != "output" {
		t.Errorf("symlinked output = %+v; want resolved into shared and protected", link)
	}
	if link.FreeBytes == nil || link.TotalBytes == nil || *link.TotalBytes == 0 || link.Mount == "" {
		t.Errorf("symlinked output has no capacity: %+v", link)
	}
	if !rs.Storage.ProtectedWrites {
		t.Errorf("protected_writes = false; want true (pid %d writes into shared)", writer)
	}
	found := map[int]reports.WriterInfo{}
	for _, w := range rs.Storage.Writers {
		found[w.PID] = w
	}
	if w, ok := found[writer]; !ok || !w.Protected || w.Command != "sleep" {
		t.Errorf("writer %d = %+v (found %v); want protected, command sleep", writer, w, ok)
	}
	if w, ok2 := found[ok]; !ok2 || w.Protected || !w.Output {
		t.Errorf("writer %d = %+v; want an unprotected output writer", ok, w)
	}
	kinds := map[string]bool{}
	for _, w := range rs.Storage.Warnings {
		kinds[w.Kind] = true
	}
	if !kinds["protected_write"] || !kinds["output_on_protected"] {
		t.Errorf("warnings = %+v; want protected_write and output_on_protected", rs.Storage.Warnings)
	}

	// Progress from the log, engines summed, the dead endpoint named.
	if rs.Progress == nil || rs.Progress.Done != 300 || rs.Progress.Total != 25000 {
		t.Errorf("progress = %+v; want 300/25000", rs.Progress)
	}
	if len(rs.Engines) != 2 || !rs.Engines[0].OK || rs.Engines[1].OK || rs.Engines[1].Error == "" {
		t.Errorf("engines = %+v; want one up, one down with an error", rs.Engines)
	}
	if rs.ETA == nil || !rs.ETA.Rough {
		t.Errorf("eta = %+v; want a rough single-sample estimate", rs.ETA)
	}
	var named bool
	for _, p := range rs.Problems {
		if strings.Contains(p.Probe, "127.0.0.1:1") {
			named = true
		}
	}
	if !named {
		t.Errorf("problems = %+v; want the dead metrics endpoint named", rs.Problems)
	}

	// Plans: 3 layers and all layers of a 61 x 7168 bf16 model at 25M tokens.
	if len(rs.Plans) != 2 {
		t.Fatalf("plans = %+v", rs.Plans)
	}
	if got := rs.Plans[0].BytesNeeded; got != 3*7168*2*25e6 {
		t.Errorf("plan three needs %g bytes; want %g", got, 3*7168*2*25e6)
	}
	if got := rs.Plans[1].BytesNeeded; got != 61*7168*2*25e6 {
		t.Errorf("plan all needs %g bytes; want %g", got, 61*7168*2*25e6)
	}
}

func TestSampleHistorySurvivesRestart(t *testing.T) {
	srv := vllmServer(t, 1386*30)
	f := newFixture(t, srv.URL+"/metrics")
	dir, err := state.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	m, _, _ := New(f.file, Options{State: dir, Now: clock})
	for i := range 8 {
		now = now.Add(30 * time.Second)
		line := fmt.Sprintf("Progress: %d/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: %ds\n", 300+20*(i+1), 408+30*(i+1))
		appendFile(t, f.log, line)
		m.Sample(context.Background())
	}
	if got := len(m.History("synth")); got != 8 {
		t.Fatalf("history = %d points; want 8", got)
	}
	if err := m.Snooze("synth", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := m.MarkStage("synth", "nope", "done", "U1"); err == nil {
		t.Errorf("MarkStage(unknown stage) = nil; want an error")
	}

	// A new monitor over the same state directory knows the history and the snooze.
	m2, problems, err := New(f.file, Options{State: dir, Now: clock})
	if err != nil || len(problems) > 0 {
		t.Fatalf("restart: %v %v", problems, err)
	}
	if got := len(m2.History("synth")); got != 8 {
		t.Errorf("history after restart = %d points; want 8", got)
	}
	if _, ok := m2.SnoozedUntil("synth"); !ok {
		t.Errorf("snooze lost across restart")
	}
	rs, _ := m2.RunStatus(context.Background(), "synth", Need{Progress: true})
	if rs.ETA == nil || rs.ETA.Rough || rs.ETA.State != reports.StateRunning {
		t.Errorf("eta after restart = %+v; want a running estimate from history", rs.ETA)
	}

	// A corrupt state file is set aside with a named problem; the monitor starts empty.
	os.WriteFile(filepath.Join(dir.Path(), "run-synth.json"), []byte("{garbage"), 0o600)
	m3, problems, err := New(f.file, Options{State: dir, Now: clock})
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0].Error, "kept as") {
		t.Fatalf("corrupt state: problems %v err %v; want one problem saying where the file went", problems, err)
	}
	if got := len(m3.History("synth")); got != 0 {
		t.Errorf("history from a corrupt file = %d points; want 0", got)
	}
}

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	fh, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	fh.WriteString(s)
}

func TestCounterResetCarriesTotals(t *testing.T) {
	var tokens atomic.Int64
	tokens.Store(1000)
	start := 100.0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total %d\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %g\n", tokens.Load(), start)
	}))
	defer srv.Close()
	f := newFixture(t, srv.URL)
	m, _, _ := New(f.file, Options{})
	ctx := context.Background()
	m.Sample(ctx)
	tokens.Store(5000)
	m.Sample(ctx)
	tokens.Store(200) // the server restarted
	start = 200
	evs := m.Sample(ctx)
	h := m.History("synth")
	if got := *h[len(h)-1].GenTokens; got != 5200 {
		t.Errorf("tokens after restart = %g; want 5000 + 200 carried over", got)
	}
	if len(evs[0].Run.Notices) == 0 || !strings.Contains(evs[0].Run.Notices[0], "restarted") {
		t.Errorf("notices = %v; want the restart noted", evs[0].Run.Notices)
	}
}

func TestResolveTargetRefusesUnconfiguredPaths(t *testing.T) {
	f := newFixture(t)
	m, _, _ := New(f.file, Options{})
	ctx := context.Background()
	for _, ok := range []string{f.shared, filepath.Join(f.out, "x"), f.dir, filepath.Join(f.shared, "new", "dir")} {
		if _, err := m.ResolveTarget(ctx, "synth", ok); err != nil {
			t.Errorf("ResolveTarget(%q) = %v; want it allowed", ok, err)
		}
	}
	// Paths elsewhere that do not resolve (under a file, in a symlink loop) are refused like any
	// other: the resolve error ("not a directory") would tell what exists there.
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(elsewhere, "file"), []byte("x"), 0o600)
	os.Symlink(filepath.Join(elsewhere, "b"), filepath.Join(elsewhere, "a"))
	os.Symlink(filepath.Join(elsewhere, "a"), filepath.Join(elsewhere, "b"))
	for _, bad := range []string{"/etc", "/proc/1", "relative/path", filepath.Join(elsewhere, "file", "sub"), filepath.Join(elsewhere, "a", "x")} {
		if _, err := m.ResolveTarget(ctx, "synth", bad); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("ResolveTarget(%q) = %v; want ErrNotAllowed", bad, err)
		}
	}
}

// TestReplicasBehindOneURL: two vLLM replicas behind one load-balanced URL answer scrapes in turn, each
// decoding 459 tok/s from counters in the tens of millions, and now and then a stale reading steps the counter
// back. The history's token counter must grow at 918 tok/s: taking each switch for a restart once added the
// other replica's whole counter every scrape (614,079 tok/s).
func TestReplicasBehindOneURL(t *testing.T) {
	var n atomic.Int64
	clock := time.Unix(1.75e9, 0)
	const every, rate = 30.0, 459.0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		g, start := 18e6+rate*every*float64(i), 1.7e9
		if i%2 == 0 {
			g, start = 17.4e6+rate*every*float64(i), 1.71e9
		}
		if i%5 == 3 {
			g -= 4000 // a stale reading
		}
		fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"m\"} %g\n"+
			"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 100\n"+
			"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %g\n", g, start)
	}))
	defer srv.Close()
	f := newFixture(t, srv.URL)
	m, _, _ := New(f.file, Options{Now: func() time.Time { return clock }})
	ctx := context.Background()
	for i := 0; i < 40; i++ {
		m.Sample(ctx)
		clock = clock.Add(every * time.Second)
	}
	h := m.History("synth")
	a, z := h[3], h[len(h)-1]
	got := (*z.GenTokens - *a.GenTokens) / (z.T - a.T)
	if math.Abs(got-2*rate) > 0.05*2*rate {
		t.Errorf("two replicas behind one URL: the history's counter grows %.0f tok/s; want %.0f", got, 2*rate)
	}
}

// TestMetricsURLsApartOnlyInTheirQuery: a gateway that serves each model's engine at ?model=a and ?model=b.
// Redacted, both read "?model=[redacted]"; keyed by that alone, their counters (2M and 9M tokens, each growing
// 400 tok/s) folded as one server's, and every scrape of the other read as a restart or a replica. The history
// must grow at the two servers' 800 tok/s, and each must be told apart where it is named.
func TestMetricsURLsApartOnlyInTheirQuery(t *testing.T) {
	clock := time.Unix(1.75e9, 0)
	const every, rate = 30.0, 400.0
	var calls atomic.Int64
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() && r.URL.Query().Get("model") == "b" {
			http.Error(w, "engine b is restarting", http.StatusServiceUnavailable)
			return
		}
		base, start, running := 2e6, 1.7e9, 10
		if r.URL.Query().Get("model") == "b" {
			base, start, running = 9e6, 1.71e9, 20
		}
		g := base + rate*float64(clock.Unix()-1.75e9)
		calls.Add(1)
		fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"m\"} %g\n"+
			"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} %d\n"+
			"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %g\n", g, running, start)
	}))
	defer srv.Close()
	f := newFixture(t, srv.URL+"/metrics?model=a", srv.URL+"/metrics?model=b")
	m, _, _ := New(f.file, Options{Now: func() time.Time { return clock }})
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		m.Sample(ctx)
		clock = clock.Add(every * time.Second)
	}
	if calls.Load() < 20 {
		t.Fatalf("%d scrapes; want both URLs scraped every sample", calls.Load())
	}
	h := m.History("synth")
	a, z := h[1], h[len(h)-1]
	if got := (*z.GenTokens - *a.GenTokens) / (z.T - a.T); math.Abs(got-2*rate) > 0.05*2*rate {
		t.Errorf("two URLs apart only in their query: the history's counter grows %.0f tok/s; want %.0f", got, 2*rate)
	}
	if z.Running == nil || *z.Running != 30 {
		t.Errorf("running = %v; want the two servers' 10 + 20", z.Running)
	}
	// With b failing, the answer names which of the two is down, and a's reading is not taken for b's.
	down.Store(true)
	rs := m.Status(ctx, Need{Progress: true}).Runs[0]
	var ok, failed []string
	for _, e := range rs.Engines {
		if e.OK {
			ok = append(ok, e.URL)
		} else {
			failed = append(failed, e.URL)
		}
	}
	if len(ok) != 1 || len(failed) != 1 || !strings.Contains(failed[0], "entry 2") || ok[0] == failed[0] {
		t.Errorf("engines up %q, down %q; want entry 1 up and entry 2 down, named apart", ok, failed)
	}
	for _, u := range append(ok, failed...) {
		if strings.Contains(u, "model=a") || strings.Contains(u, "model=b") {
			t.Errorf("engine named %q: shows a query value redaction hides", u)
		}
	}
}

// A run file's total: that disagrees with the total the log prints: the log's lines are not taken for the
// job's progress (another bar, a quoted line, would give any total), and the problem says why, naming both
// totals, so the person who wrote total: learns which is wrong. A total: that agrees says nothing.
func TestRunFileTotalDisagreeingWithLog(t *testing.T) {
	for _, tc := range []struct {
		total int64
		want  bool
	}{{1000000, true}, {25000, false}, {0, false}} {
		f := newFixture(t)
		f.file.Runs[0].Total = tc.total
		m, _, err := New(f.file, Options{ProbeTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		rs := m.Status(context.Background(), Need{Progress: true}).Runs[0]
		said := false
		for _, p := range rs.Problems {
			said = said || strings.Contains(p.Error, `"Progress:" (300/25000): its total (25000) contradicts the run file's total: 1000000`)
		}
		if said != tc.want {
			t.Errorf("total: %d: problems = %+v; want the disagreement named: %v", tc.total, rs.Problems, tc.want)
		}
		if got := rs.Progress != nil && rs.Progress.Total == 25000; got == tc.want {
			t.Errorf("total: %d: progress = %+v; want the log's line used: %v", tc.total, rs.Progress, !tc.want)
		}
	}
}

func TestFaultStateDir(t *testing.T) {
	srv := vllmServer(t, 1386*30)
	f := newFixture(t, srv.URL+"/metrics")
	root := tmpfs.Mount(t, "256k")
	dir, err := state.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	tick := func() {
		mu.Lock()
		now = now.Add(30 * time.Second)
		mu.Unlock()
	}
	m, problems, err := New(f.file, Options{State: dir, Now: clock, RateWindow: -1})
	if err != nil || len(problems) > 0 {
		t.Fatalf("New = %v, %v", problems, err)
	}
	ctx := context.Background()
	done := 300
	sample := func() Evaluation {
		t.Helper()
		tick()
		done += 20
		appendFile(t, f.log, fmt.Sprintf("Progress: %d/25000 (0 errors), 0.7 req/s\n", done))
		return m.Sample(ctx)[0]
	}
	if ev := sample(); len(ev.Run.Problems) > 0 {
		t.Fatalf("healthy sample problems = %+v", ev.Run.Problems)
	}

	faults := []struct {
		name       string
		make, heal func(t *testing.T)
		want       string
	}{
		{"full", func(t *testing.T) {
			// Fill the disk the way another writer would: until it refuses.
			fh, err := os.Create(filepath.Join(root, "filler"))
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			if _, err := fh.Write(make([]byte, 1<<20)); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the tmpfs: %v; want ENOSPC", err)
			}
		}, func(t *testing.T) {
			if err := os.Remove(filepath.Join(root, "filler")); err != nil {
				t.Fatal(err)
			}
		}, "no space left on device"},
		{"read-only", func(t *testing.T) { tmpfs.Remount(t, root, "ro") }, func(t *testing.T) { tmpfs.Remount(t, root, "rw") }, "read-only file system"},
	}
	for _, fc := range faults {
		t.Run(fc.name, func(t *testing.T) {
			before := len(m.History("synth"))
			fc.make(t)
			ev := sample()
			p, ok := faultProblem(ev.Run, "state")
			if !ok || !strings.Contains(p.Error, fc.want) || !strings.Contains(p.Error, "not saved") {
				t.Fatalf("sample on a %s state dir: problems = %+v; want state named (%q)", fc.name, ev.Run.Problems, fc.want)
			}
			if ev.Run.Progress == nil || ev.Run.ETA == nil {
				t.Errorf("sample on a %s state dir lost the answer: progress %+v, eta %+v", fc.name, ev.Run.Progress, ev.Run.ETA)
			}
			// An answer between samples names it too.
			rs, _ := m.RunStatus(ctx, "synth", Need{Progress: true})
			if _, ok := faultProblem(rs, "state"); !ok {
				t.Errorf("answer on a %s state dir: problems = %+v; want state named", fc.name, rs.Problems)
			}
			// A snooze set now holds in memory and says it is not saved.
			until := clock().Add(time.Hour)
			if err := m.Snooze("synth", until); !errors.Is(err, ErrNotSaved) {
				t.Errorf("Snooze on a %s state dir = %v; want ErrNotSaved", fc.name, err)
			}
			if _, ok := m.SnoozedUntil("synth"); !ok {
				t.Errorf("the snooze set on a %s state dir does not hold", fc.name)
			}
			sample()
			if got := len(m.History("synth")); got != before+2 {
				t.Errorf("history on a %s state dir = %d points; want %d (kept in memory)", fc.name, got, before+2)
			}

			// The fault clears: the next sample saves everything kept meanwhile, and a restart has it.
			fc.heal(t)
			ev = sample()
			if p, ok := faultProblem(ev.Run, "state"); ok {
				t.Fatalf("sample after the %s state dir recovered: %+v; want no state problem", fc.name, p)
			}
			if rs, _ := m.RunStatus(ctx, "synth", Need{Progress: true}); len(rs.Problems) > 0 {
				t.Errorf("answer after recovery names %+v; want nothing", rs.Problems)
			}
			m2, problems, err := New(f.file, Options{State: dir, Now: clock, RateWindow: -1, ReadOnly: true})
			if err != nil || len(problems) > 0 {
				t.Fatalf("restart after recovery: %v %v", problems, err)
			}
			if got, want := len(m2.History("synth")), before+3; got != want {
				t.Errorf("history after a restart = %d points; want %d (the ones sampled during the fault included)", got, want)
			}
			if u, ok := m2.SnoozedUntil("synth"); !ok || !u.Equal(until) {
				t.Errorf("snooze after a restart = %v, %v; want the one set during the fault (%v)", u, ok, until)
			}
			if err := m.Snooze("synth", time.Time{}); err != nil {
				t.Fatal(err)
			}
			t.Logf("figure: state dir %s: named in samples and answers, history and snooze kept in memory, all saved on the 1st sample after it cleared", fc.name)
		})
	}

	t.Run("corrupt", func(t *testing.T) {
		p := filepath.Join(root, "run-synth.json")
		if err := os.WriteFile(p, []byte(`{"version":1,"history":[{"t":`), 0o600); err != nil {
			t.Fatal(err)
		}
		m3, problems, err := New(f.file, Options{State: dir, Now: clock, RateWindow: -1})
		if err != nil || len(problems) != 1 || !strings.Contains(problems[0].Error, "kept as") {
			t.Fatalf("New over a corrupt file = %v, %v; want one problem saying where it went", problems, err)
		}
		// Answers say why the history is empty until the state is saved again.
		rs, _ := m3.RunStatus(ctx, "synth", Need{Progress: true})
		if p, ok := faultProblem(rs, "state"); !ok || !strings.Contains(p.Error, "corrupt state file") {
			t.Errorf("answer after loading a corrupt file: problems = %+v; want state named as corrupt", rs.Problems)
		}
		tick()
		if ev := m3.Sample(ctx)[0]; len(ev.Run.Problems) > 0 {
			t.Errorf("first sample after the corrupt file: problems = %+v; want none (saved afresh)", ev.Run.Problems)
		}
		aside, _ := filepath.Glob(p + ".corrupt-*")
		if len(aside) != 1 {
			t.Errorf("corrupt copies = %v; want the file kept", aside)
		}
	})
}

// TestSurviveNamesThePanickedProbe: a probe that panics in its goroutine adds a problem named for it and
// lets the run's status go on; the panic stopped the bot before.
func TestSurviveNamesThePanickedProbe(t *testing.T) {
	var mu sync.Mutex
	var got []string
	add := func(probe string, err error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, probe+": "+err.Error())
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		defer survive("progress", add)
		panic("a log line nobody foresaw")
	}()
	go func() {
		defer wg.Done()
		defer survive("storage", add)
	}()
	go func() {
		defer wg.Done()
		defer survive("metrics", add)
		panic("no series in http://admin:hunter2@vllm:8000/metrics?api_key=K3Y")
	}()
	wg.Wait()
	sort.Strings(got)
	if len(got) != 2 || !strings.Contains(got[1], "progress: failed with a panic: a log line nobody foresaw") {
		t.Errorf("problems = %q; want the two panicked probes, named", got)
	}
	// A panic's text is what the probe was handling: a URL in it is redacted before it is a problem.
	if len(got) == 2 && (strings.Contains(got[0], "hunter2") || strings.Contains(got[0], "K3Y") ||
		!strings.Contains(got[0], "metrics: failed with a panic: no series in http://vllm:8000/metrics?api_key=[redacted]")) {
		t.Errorf("problem of a panic on a URL = %q; want the URL redacted", got[0])
	}
}
