package probes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A call that hangs (an lstat on a dead NFS server) is started once however often it is asked for:
// each caller gives up at its own deadline, and the next call after it returns starts afresh.
func TestGuardOneHungCallPerKey(t *testing.T) {
	g := NewGuard()
	release := make(chan struct{})
	var started atomic.Int32
	hung := func() (any, error) {
		started.Add(1)
		<-release
		return "/shared/out", nil
	}
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err := g.do(ctx, "resolve /shared/out", hung)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call %d on a hung key = %v; want DeadlineExceeded", i, err)
		}
	}
	if n := started.Load(); n != 1 {
		t.Errorf("hung calls started = %d; want 1 for 5 questions", n)
	}
	// A caller still waiting when the call returns gets its result.
	joined := make(chan struct{})
	g.joined = func(string) { close(joined) }
	got := make(chan any, 1)
	go func() {
		v, _ := g.do(context.Background(), "resolve /shared/out", hung)
		got <- v
	}()
	<-joined
	g.joined = nil
	close(release)
	if v := <-got; v != "/shared/out" {
		t.Errorf("joined call = %v; want /shared/out", v)
	}
	// Once it has returned, the key is free: the next call runs again.
	if v, err := g.do(context.Background(), "resolve /shared/out", hung); err != nil || v != "/shared/out" || started.Load() != 2 {
		t.Errorf("call after recovery = %v, %v (%d started); want a fresh call", v, err, started.Load())
	}
	// Another key is not held up by a hung one.
	if v, err := g.do(context.Background(), "resolve /data", func() (any, error) { return "/data", nil }); err != nil || v != "/data" {
		t.Errorf("other key = %v, %v", v, err)
	}
}

func TestGuardResolveNamesThePath(t *testing.T) {
	g := NewGuard()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Resolve(ctx, "/shared/out"); !errors.Is(err, context.Canceled) || err.Error() != "resolve /shared/out: context canceled" {
		t.Errorf("Resolve(cancelled) = %v; want it to name the path", err)
	}
}

// TestGuardPanicRedactsURLs: a call that panics on a URL it was handling names it in the panic, password and
// query key included; the error the guard returns, which goes into answers and logs, carries neither.
func TestGuardPanicRedactsURLs(t *testing.T) {
	g := NewGuard()
	_, err := g.do(context.Background(), "scrape", func() (any, error) {
		panic(fmt.Sprintf("unexpected label in %s", "http://admin:hunter2@vllm:8000/metrics?api_key=K3Y&x=1"))
	})
	if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "K3Y") ||
		!strings.Contains(err.Error(), "panic: unexpected label in http://vllm:8000/metrics?api_key=[redacted]") {
		t.Errorf("a guarded call that panicked on a URL = %v; want the panic named, the URL redacted", err)
	}
}

// TestGuardPanicIsAnError: a guarded call panics in the goroutine the guard runs it in, where it stopped the
// bot; its caller gets an error naming the panic, and the key is free again.
func TestGuardPanicIsAnError(t *testing.T) {
	g := NewGuard()
	_, err := g.do(context.Background(), "stat /data", func() (any, error) { panic("a filesystem nobody foresaw") })
	if err == nil || !strings.Contains(err.Error(), "panic: a filesystem nobody foresaw") {
		t.Errorf("a guarded call that panicked = %v; want an error naming the panic", err)
	}
	if v, err := g.do(context.Background(), "stat /data", func() (any, error) { return "ok", nil }); v != "ok" || err != nil {
		t.Errorf("the next call of the key = %v, %v; want its own result", v, err)
	}
}

// TestGuardBoundsHungCalls: questions can name key after key on a dead mount, each a call that
// never returns. Past maxHung abandoned calls, a new key fails at once without starting another
// (a thread stuck in the kernel each); once the mount answers, calls run again.
func TestGuardBoundsHungCalls(t *testing.T) {
	g := NewGuard()
	g.maxHung = 3
	release := make(chan struct{})
	var started atomic.Int32
	hung := func() (any, error) {
		started.Add(1)
		<-release
		return "ok", nil
	}
	call := func(key string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_, err := g.do(ctx, key, hung)
		return err
	}
	for i := range 3 {
		if err := call(fmt.Sprintf("resolve /dead/%d", i)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("hung call %d = %v; want DeadlineExceeded", i, err)
		}
	}
	for i := 3; i < 10; i++ {
		if err := call(fmt.Sprintf("resolve /dead/%d", i)); !errors.Is(err, errTooManyHung) {
			t.Errorf("call %d past the bound = %v; want errTooManyHung", i, err)
		}
	}
	if n := started.Load(); n != 3 {
		t.Errorf("calls started = %d; want 3 (the bound)", n)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := g.do(context.Background(), "resolve /alive", func() (any, error) { return "alive", nil })
		if err == nil && v == "alive" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the mount answered, a new call = %v, %v; want it run", v, err)
		}
		time.Sleep(time.Millisecond) // the released calls return in their own goroutines
	}
}
