package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/tmpfs"
	"runwatch/probes"
	"runwatch/reports"
	"runwatch/state"
)

// faultProblem returns the problem whose probe starts with prefix.
func faultProblem(rs reports.RunStatus, prefix string) (reports.Problem, bool) {
	for _, p := range rs.Problems {
		if strings.HasPrefix(p.Probe, prefix) {
			return p, true
		}
	}
	return reports.Problem{}, false
}

// faultWithin runs fn and fails the test if it has not returned after a generous bound: it guards
// against a hang, it does not measure speed.
func faultWithin[T any](t *testing.T, what string, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return: the monitor hung on a fault", what)
		panic("unreachable")
	}
}

// faultHungStatfs stands in for statfs on a dead NFS server: calls on the hung mount point block
// until release, others answer at once. It counts the calls that reached it.
type faultHungStatfs struct {
	mount   string
	release chan struct{}
	calls   atomic.Int32
}

func (h *faultHungStatfs) usage(mountPoint string) (probes.Usage, error) {
	if mountPoint == h.mount {
		h.calls.Add(1)
		<-h.release
	}
	return probes.Usage{Total: 100 << 30, Free: 40 << 30, Used: 60 << 30}, nil
}

func TestFaultStatfsNeverReturns(t *testing.T) {
	srv := vllmServer(t, 1386*30)
	f := newFixture(t, srv.URL+"/metrics")
	table, err := probes.NewMounts("/proc").Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mt, ok := table.Lookup(f.out)
	if !ok {
		t.Fatalf("no mount holds %s", f.out)
	}
	hung := &faultHungStatfs{mount: mt.MountPoint, release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(hung.release) }) }
	t.Cleanup(release)
	// Only the hung statfs meets the timeout; a second is far beyond the rest of a status's work.
	const timeout = time.Second
	m, _, err := New(f.file, Options{ProbeTimeout: timeout, RateWindow: -1, StatFS: probes.NewStatFSFunc(timeout, hung.usage)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// While statfs hangs, every status still comes back: progress and engines answered, the mount
	// named, and no second call piles up behind the hung one.
	for i := range 3 {
		rs := faultWithin(t, "status with statfs hung", func() reports.RunStatus { return m.Status(ctx, All).Runs[0] })
		// The probe's own timer and the status deadline are the same length; either may end the wait.
		p, ok := faultProblem(rs, "statfs "+mt.MountPoint)
		if !ok || !strings.Contains(p.Error, "not responding") && !strings.Contains(p.Error, "no answer within") {
			t.Errorf("status %d problems = %+v; want statfs %s named as not responding", i, rs.Problems, mt.MountPoint)
		}
		if rs.Progress == nil || rs.Progress.Done != 300 || len(rs.Engines) != 1 || !rs.Engines[0].OK {
			t.Errorf("status %d progress = %+v, engines = %+v; want the log and the engine answered while statfs hangs", i, rs.Progress, rs.Engines)
		}
		for _, pi := range rs.Storage.Paths {
			if pi.Mount == mt.MountPoint && pi.FreeBytes != nil {
				t.Errorf("status %d: %s shows %d bytes free from a statfs that never returned", i, pi.Path, *pi.FreeBytes)
			}
		}
	}
	if n := hung.calls.Load(); n != 1 {
		t.Errorf("statfs calls on the hung mount = %d; want 1 (later statuses fail fast instead of starting another)", n)
	}

	// The mount comes back: the next status has its capacity and no problem.
	release()
	// The stuck call's goroutine frees the mount once it returns: wait for that (polling the status,
	// with a bound that only guards against a hang).
	var rs reports.RunStatus
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		rs = m.Status(ctx, All).Runs[0]
		if _, still := faultProblem(rs, "statfs "); !still {
			break
		}
	}
	if p, still := faultProblem(rs, "statfs "); still {
		t.Fatalf("after the mount came back problems = %+v; want none for statfs (%v)", rs.Problems, p)
	}
	for _, pi := range rs.Storage.Paths {
		if pi.Path == f.out && (pi.FreeBytes == nil || *pi.FreeBytes != 40<<30) {
			t.Errorf("after recovery %s free = %v; want 40 GiB", pi.Path, pi.FreeBytes)
		}
	}
	t.Logf("figure: statfs never returns: 3 statuses each bounded by the %v timeout, 1 stuck call; capacity back after release", timeout)
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

// TestFaultLogPermissionDenied reads a log the monitor's user may not read. chmod does not stop
// root, so as root the monitor runs in a child process (this test binary again) as nobody; the
// log is then made readable and the same child reads it.
func TestFaultLogPermissionDenied(t *testing.T) {
	if path := os.Getenv("RUNWATCH_TEST_PERMISSION_CHILD"); path != "" {
		faultPermissionChild(path)
		return
	}
	dir, err := os.MkdirTemp("", "runwatch-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "gen.log")
	if err := os.WriteFile(log, []byte("Progress: 300/25000 (0 errors), 0.7 req/s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	status := faultStatusAsOther(t, dir, log)
	if os.Geteuid() != 0 {
		if err := os.Chmod(log, 0); err != nil {
			t.Fatal(err)
		}
		status = faultStatusAsOther(t, dir, log)
	}
	p, ok := faultProblem(status, "log "+log)
	if !ok || !strings.Contains(p.Error, "permission denied") || !strings.Contains(p.Error, "run as the job's user") {
		t.Errorf("status of an unreadable log: problems = %+v; want the log named with what to do", status.Problems)
	}
	if status.Name != "synth" {
		t.Errorf("status = %+v; want run synth answered", status)
	}

	// The job's owner fixes the mode: the same user now reads it.
	if err := os.Chmod(log, 0o644); err != nil {
		t.Fatal(err)
	}
	status = faultStatusAsOther(t, dir, log)
	if len(status.Problems) > 0 || status.Progress == nil || status.Progress.Done != 300 {
		t.Errorf("status once readable = progress %+v, problems %+v; want 300 done and no problem", status.Progress, status.Problems)
	}
	who := "this user, mode 000"
	if os.Geteuid() == 0 {
		who = "nobody, in a child process"
	}
	t.Logf("figure: log unreadable (read as %s): status answered naming the log and what to do; read again once chmod 644", who)
}

// faultStatusAsOther runs the monitor over log in a child process: as nobody when this process is
// root (so file modes apply), else as this user. It returns the run's status.
func faultStatusAsOther(t *testing.T, dir, log string) reports.RunStatus {
	t.Helper()
	bin := os.Args[0]
	cmd := exec.Command(bin, "-test.run=^TestFaultLogPermissionDenied$")
	cmd.Env = append(os.Environ(), "RUNWATCH_TEST_PERMISSION_CHILD="+log)
	if os.Geteuid() == 0 {
		// nobody cannot reach the test binary in go's private build directory: copy it beside the log.
		bin = filepath.Join(dir, "monitor.test")
		if _, err := os.Stat(bin); err != nil {
			faultCopy(t, os.Args[0], bin)
		}
		cmd.Path, cmd.Args[0] = bin, bin
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Dir = dir
	}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("child status: %v\n%s%s", err, out, stderr)
	}
	_, js, ok := strings.Cut(string(out), "STATUS ")
	if !ok {
		t.Fatalf("child printed no status:\n%s", out)
	}
	js, _, _ = strings.Cut(js, "\n")
	var rs reports.RunStatus
	if err := json.Unmarshal([]byte(js), &rs); err != nil {
		t.Fatalf("child status %q: %v", js, err)
	}
	return rs
}

func faultCopy(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// faultPermissionChild is the child's side: one status of a run that reads log, printed as JSON.
func faultPermissionChild(log string) {
	f := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Log: log}}}
	m, _, err := New(f, Options{ProbeTimeout: 5 * time.Second, RateWindow: -1})
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	rs, _ := m.RunStatus(context.Background(), "synth", Need{Progress: true})
	b, _ := json.Marshal(rs)
	fmt.Printf("STATUS %s\n", b)
}

// faultDeadMount stands in for path resolution under a mount whose server is gone: a resolve of a
// path under root tells started and blocks until release; every other path resolves for real.
type faultDeadMount struct {
	root    string
	started chan string
	release chan struct{}
}

func (d *faultDeadMount) resolve(path string) (string, error) {
	if reports.Under(path, d.root) {
		select {
		case d.started <- path:
		case <-d.release:
		}
		<-d.release
		return path, nil
	}
	return probes.Resolve(context.Background(), path)
}

// TestFaultQuestionsOnDeadMountSpareTheSampler: questions name path after path under a dead mount that
// none of the run's paths is near, each resolve a call that never returns. They use up the bound on calls
// left hanging of the guard questions resolve such paths under (Monitor.askGuard), and then fail at once;
// the run's own paths, which the sampler and questions about them resolve under the other guard, still
// resolve. With one guard for both, the sampler's every path would fail with "too many earlier file
// system calls have not returned" until the dead mount answered.
func TestFaultQuestionsOnDeadMountSpareTheSampler(t *testing.T) {
	f := newFixture(t)
	dead := &faultDeadMount{root: "/dead-nfs", started: make(chan string), release: make(chan struct{})}
	t.Cleanup(func() { close(dead.release) }) // the hung resolves return, and their goroutines end
	const bound = 3
	m, _, err := New(f.file, Options{ProbeTimeout: 30 * time.Second, RateWindow: -1,
		newGuard: func() *probes.Guard { return probes.NewGuardFunc(dead.resolve, bound) }})
	if err != nil {
		t.Fatal(err)
	}
	// ask asks about path and, once its resolve hangs (hung), gives up as an asker's deadline would.
	ask := func(path string) (hung bool, err error) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := m.ResolveTarget(ctx, "synth", path)
			done <- err
		}()
		select {
		case <-dead.started:
			cancel()
			return true, <-done
		case err := <-done:
			return false, err
		case <-time.After(30 * time.Second):
			t.Fatalf("question about %s neither hung nor returned", path)
			return false, nil
		}
	}
	for i := range bound + 4 {
		path := fmt.Sprintf("%s/home/u%d", dead.root, i)
		hung, err := ask(path)
		if want := i < bound; hung != want {
			t.Errorf("question %d (%s): its resolve hung = %v; want %v (the question guard lets %d hang)", i, path, hung, want, bound)
		}
		if !errors.Is(err, ErrNotAllowed) {
			t.Errorf("question %d (%s) = %v; want ErrNotAllowed (a path near none of the run's is not named)", i, path, err)
		}
	}

	// The sampler's own path probes are under a bound of their own: every path resolves.
	rs := faultWithin(t, "status while questions hang", func() reports.RunStatus { return m.Status(context.Background(), Need{Storage: true}).Runs[0] })
	if p, ok := faultProblem(rs, "path "); ok {
		t.Errorf("status problems = %+v; want none for the run's paths (%v)", rs.Problems, p)
	}
	var link *reports.PathInfo
	for i, p := range rs.Storage.Paths {
		if p.Path == f.link {
			link = &rs.Storage.Paths[i]
		}
	}
	if link == nil || link.Resolved != filepath.Join(f.shared, "samples") {
		t.Errorf("status paths = %+v; want %s resolved through its symlink to %s", rs.Storage.Paths, f.link, filepath.Join(f.shared, "samples"))
	}
	// And so are questions about the run's own paths, inside one or above one.
	for _, path := range []string{f.out, filepath.Join(f.link, "part-0001.jsonl"), filepath.Join(f.shared, "new", "dir"), f.dir} {
		if hung, err := ask(path); hung || err != nil {
			t.Errorf("question about the run's %s while the question guard is full = hung %v, %v; want it answered", path, hung, err)
		}
	}
}
