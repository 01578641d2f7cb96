package flight

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
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

// TestGroupPanicIsAnError: a call that panics fails its caller and its joiners with an error naming the
// panic, and frees its key; it stopped the bot, and would have left the key taken for every later caller.
func TestGroupPanicIsAnError(t *testing.T) {
	g := &Group[int]{}
	started, release := make(chan struct{}), make(chan struct{})
	joined := make(chan struct{}, 1)
	g.Joined = func(string) { joined <- struct{}{} }
	first, second := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := g.Do(context.Background(), "k", func() (int, error) {
			close(started)
			<-release
			panic("label value past any limit")
		})
		first <- err
	}()
	<-started
	go func() {
		_, err := g.Do(context.Background(), "k", func() (int, error) { return 1, nil })
		second <- err
	}()
	<-joined
	close(release)
	for _, err := range []error{<-first, <-second} {
		if err == nil || !strings.Contains(err.Error(), "panic: label value past any limit") {
			t.Errorf("caller of a call that panicked got %v; want an error naming the panic", err)
		}
	}
	if v, err := g.Do(context.Background(), "k", func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("the next call of the key = %d, %v; want its own 7 (the key freed)", v, err)
	}
}

// TestSafePanicRedactsURLs: a call panics naming the URL it was handling, password and query value
// included; the error Safe returns, which goes into answers and logs, names the panic and the URL
// without either, whoever the caller is (a Group's callers too).
func TestSafePanicRedactsURLs(t *testing.T) {
	const url = "https://user:secret@host/x?token=abc"
	for _, value := range []any{"unexpected label in " + url, errors.New("unexpected label in " + url)} {
		_, err := Safe(func() (int, error) { panic(value) })
		var g Group[int]
		_, gerr := g.Do(context.Background(), "k", func() (int, error) { panic(value) })
		for _, err := range []error{err, gerr} {
			var pe *PanicError
			if !errors.As(err, &pe) || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "abc") ||
				err.Error() != "failed with a panic: unexpected label in https://host/x?token=[redacted]" {
				t.Errorf("a call that panicked with %q = %v; want a PanicError naming the panic, the URL redacted", value, err)
			}
		}
	}
}
