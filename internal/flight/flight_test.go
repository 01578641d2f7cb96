package flight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestGroupSharesOneCall(t *testing.T) {
	for _, keep := range []bool{false, true} {
		g := &Group[int]{Keep: keep}
		release := make(chan struct{})
		joined := make(chan struct{}, 8)
		g.Joined = func(string) { joined <- struct{}{} }
		var calls atomic.Int32
		fn := func() (int, error) {
			calls.Add(1)
			<-release
			return 42, nil
		}
		var wg sync.WaitGroup
		got := make([]int, 5)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], _ = g.Do(context.Background(), "k", fn)
			}()
		}
		for range 4 {
			<-joined
		}
		close(release)
		wg.Wait()
		for i, v := range got {
			if v != 42 {
				t.Errorf("keep=%v: caller %d got %d; want 42", keep, i, v)
			}
		}
		// Afterwards: a kept result is handed out again; otherwise the key runs afresh.
		v, _ := g.Do(context.Background(), "k", func() (int, error) { calls.Add(1); return 7, nil })
		want, wantCalls := 7, int32(2)
		if keep {
			want, wantCalls = 42, 1
		}
		if v != want || calls.Load() != wantCalls {
			t.Errorf("keep=%v: later call = %d after %d calls; want %d after %d", keep, v, calls.Load(), want, wantCalls)
		}
	}
}

func TestGroupCallerGivesUp(t *testing.T) {
	var g Group[int]
	release := make(chan struct{})
	started := make(chan struct{})
	go g.Do(context.Background(), "k", func() (int, error) { close(started); <-release; return 1, nil })
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Do(ctx, "k", func() (int, error) { return 2, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Do with a cancelled ctx while the key runs = %v; want context.Canceled", err)
	}
	close(release)
}
