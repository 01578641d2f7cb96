package monitor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"runwatch/probes"
	"runwatch/reports"
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
