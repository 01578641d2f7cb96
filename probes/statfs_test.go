package probes

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestStatfsUsage(t *testing.T) {
	tests := []struct {
		name string
		st   unix.Statfs_t
		want Usage
	}{
		{
			name: "ext4, frsize = bsize",
			st:   unix.Statfs_t{Bsize: 4096, Frsize: 4096, Blocks: 1000, Bfree: 300, Bavail: 250},
			want: Usage{Total: 4096000, Free: 1024000, Used: 2867200},
		},
		{
			name: "nfs: bsize is wsize, blocks count fragments",
			st:   unix.Statfs_t{Bsize: 1 << 20, Frsize: 4096, Blocks: 1000, Bfree: 500, Bavail: 500},
			want: Usage{Total: 4096000, Free: 2048000, Used: 2048000},
		},
		{
			name: "no frsize reported",
			st:   unix.Statfs_t{Bsize: 512, Blocks: 10, Bfree: 4, Bavail: 4},
			want: Usage{Total: 5120, Free: 2048, Used: 3072},
		},
		{
			name: "more free than total (corrupt)",
			st:   unix.Statfs_t{Bsize: 4096, Frsize: 4096, Blocks: 10, Bfree: 20, Bavail: 20},
			want: Usage{Total: 40960, Free: 81920, Used: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := statfsUsage(&tt.st); got != tt.want {
				t.Errorf("statfsUsage(%+v) = %+v; want %+v", tt.st, got, tt.want)
			}
		})
	}
}

func TestStatFSUsageReal(t *testing.T) {
	dir := t.TempDir()
	got, err := NewStatFS(10*time.Second).Usage(context.Background(), dir)
	if err != nil {
		t.Fatalf("Usage(%q): %v", dir, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	// Total does not move while other tests write; Free and Used do.
	if want := statfsUsage(&st).Total; got.Total != want || got.Total == 0 {
		t.Errorf("Usage(%q).Total = %d; want %d (non-zero)", dir, got.Total, want)
	}
	if got.Free > got.Total || got.Used > got.Total {
		t.Errorf("Usage(%q) = %+v; Free and Used must not exceed Total", dir, got)
	}
}

func TestStatFSUsageMissing(t *testing.T) {
	_, err := NewStatFS(10*time.Second).Usage(context.Background(), "/nonexistent/runwatch-test")
	if !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrUnresponsive) {
		t.Errorf("Usage(missing) error = %v; want ErrNotExist and not ErrUnresponsive", err)
	}
}

// statfsHungFake is a statfs that blocks on the mount point "/hung" until
// released, and counts its calls (each call is one goroutine).
type statfsHungFake struct {
	release chan struct{}
	calls   atomic.Int32
}

func (h *statfsHungFake) statfs(path string, st *unix.Statfs_t) error {
	h.calls.Add(1)
	if path == "/hung" {
		<-h.release
	}
	*st = unix.Statfs_t{Bsize: 4096, Frsize: 4096, Blocks: 100, Bfree: 40, Bavail: 30}
	return nil
}

// within fails the test if fn does not return within a generous bound; it
// guards against a hang, it does not measure speed.
func statfsWithin(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

func TestStatFSHungMount(t *testing.T) {
	h := &statfsHungFake{release: make(chan struct{})}
	// A timeout no test would wait out: the first call is bounded by its
	// ctx, and the second must not wait at all.
	s := NewStatFS(time.Hour)
	s.usage = statfsSyscall(h.statfs)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := s.Usage(ctx, "/hung")
	if !errors.Is(err, ErrUnresponsive) || !strings.Contains(err.Error(), "/hung") {
		t.Fatalf("Usage(/hung) error = %v; want ErrUnresponsive naming /hung", err)
	}

	statfsWithin(t, "second Usage(/hung)", func() {
		_, err = s.Usage(context.Background(), "/hung")
	})
	if !errors.Is(err, ErrUnresponsive) {
		t.Errorf("second Usage(/hung) error = %v; want ErrUnresponsive", err)
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("statfs called %d times while /hung was stuck; want 1 (no new goroutine)", n)
	}

	// Other mounts are unaffected.
	u, err := s.Usage(context.Background(), "/ok")
	if err != nil || u.Total != 409600 {
		t.Errorf("Usage(/ok) = %+v, %v; want Total 409600", u, err)
	}

	// Once the hung call returns, the mount is usable again.
	close(h.release)
	statfsWithin(t, "recovery of /hung", func() {
		for {
			u, err = s.Usage(context.Background(), "/hung")
			if !errors.Is(err, ErrUnresponsive) {
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	if err != nil || u.Total != 409600 {
		t.Errorf("Usage(/hung) after release = %+v, %v; want Total 409600", u, err)
	}
}

func TestStatFSTimeout(t *testing.T) {
	h := &statfsHungFake{release: make(chan struct{})}
	defer close(h.release)
	s := NewStatFS(10 * time.Millisecond)
	s.usage = statfsSyscall(h.statfs)
	_, err := s.Usage(context.Background(), "/hung")
	if !errors.Is(err, ErrUnresponsive) || !strings.Contains(err.Error(), "/hung") {
		t.Errorf("Usage(/hung) error = %v; want ErrUnresponsive naming /hung", err)
	}
}

func TestStatFSCancelledCtx(t *testing.T) {
	h := &statfsHungFake{release: make(chan struct{})}
	s := NewStatFS(time.Hour)
	s.usage = statfsSyscall(h.statfs)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Usage(ctx, "/ok"); !errors.Is(err, context.Canceled) {
		t.Errorf("Usage(cancelled ctx) error = %v; want Canceled", err)
	}
	if n := h.calls.Load(); n != 0 {
		t.Errorf("statfs called %d times for a cancelled ctx; want 0", n)
	}
}
