package main

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// neighbourJob runs another job on main's servers (see neighbour) until ctx ends or main has done nb.Until of
// its items: its requests and tokens are the servers', not main's. Each worker starts once main has done its
// share of the ramp; with a lead, before main starts.
func neighbourJob(ctx context.Context, main *job, nb neighbour, client *http.Client, log io.Writer) {
	words := max(1, nb.PromptWords)
	sc := scenario{
		Items: 4 * main.sc.Items, Concurrency: nb.Clients, MaxTokens: fixed(nb.MaxTokens), Chat: main.sc.Chat,
		PromptWords: func(int, *rand.Rand) int { return words }, Stream: main.sc.Stream, Seed: nb.Seed,
	}
	other := newJob(sc, main.urls, client)
	other.meter = main.meter
	share := func() float64 {
		st := main.state(time.Now())
		return float64(st.Done) / float64(st.Total)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range nb.Clients {
		from := nb.From
		if nb.RampTo > nb.From {
			from += (nb.RampTo - nb.From) * float64(w) / float64(nb.Clients)
		}
		wg.Go(func() {
			if from > 0 && !main.waitDone(ctx, int64(from*float64(main.sc.Items))) {
				return
			}
			if w == 0 {
				fmt.Fprintf(log, "neighbour: sending from %.0f%% of the job\n", 100*share())
			}
			for ctx.Err() == nil && (nb.Until >= 1 || share() < nb.Until) {
				i := int(next.Add(1)-1) % len(other.max)
				// A failure is the neighbour's to retry or not; it only adds load.
				other.send(ctx, other.urls[i%len(other.urls)], i)
			}
		})
	}
	wg.Wait()
}

// throttleServer stops s for the throttle's share of every period (SIGSTOP, then SIGCONT), as a CPU or power
// cap does, from the share of main's items done the throttle starts at, until ctx ends.
func throttleServer(ctx context.Context, main *job, s *server, t throttle, log io.Writer) {
	period := t.Period
	if period <= 0 {
		period = 100 * time.Millisecond
	}
	said := false
	for ctx.Err() == nil {
		st := main.state(time.Now())
		d := t.duty(float64(st.Done) / float64(st.Total))
		if d <= 0 || s.cmd == nil {
			sleepCtx(ctx, period)
			continue
		}
		if !said {
			fmt.Fprintf(log, "throttle: from %.1fs\n", st.Elapsed)
			said = true
		}
		s.cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(time.Duration(d * float64(period)))
		s.cmd.Process.Signal(syscall.SIGCONT)
		sleepCtx(ctx, time.Duration((1-d)*float64(period)))
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}
