package handlers

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"runwatch/internal/botmetrics"
	"runwatch/internal/testkit"
	"runwatch/probes"
	"runwatch/state"
)

// TestFlappingIsOneWarning is the red team's finding 6 through the recording Slack stand-in: the
// run's metrics endpoint goes down and up every 5 s for 60 s of an injected clock, sampled every
// second. Before, each down was a new top-level warning (a resolved alert was forgotten with its
// cooldown); now there is one warning, its thread takes the recurrences, says when it is flapping,
// and says once when it holds steady. Every follow-up links the first warning.
func TestFlappingIsOneWarning(t *testing.T) {
	ep := testkit.NewFaultEndpoint(t)
	clock := testkit.NewClock(schedT0)
	// A disk that never changes: the machine's own, written by other tests meanwhile, made a fill forecast
	// (and a second warning) now and then.
	steady := func(string) (probes.Usage, error) {
		return probes.Usage{Total: 100 << 30, Free: 40 << 30, Used: 60 << 30}, nil
	}
	e := newBotEnv(t, botOpts{Metrics: []string{ep.URL()}, Timeout: 500 * time.Millisecond, Clock: clock,
		StatFS: probes.NewStatFSFunc(500*time.Millisecond, steady)})
	fake := testkit.NewSlack(t)
	api, _ := newTestAPI(t, fake, nil, nil)
	s := NewSampler(e.bot, time.Second, slog.New(slog.DiscardHandler))
	dir, err := state.Open(e.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	s.State = dir
	s.Deliver = slackDeliver(e.bot, api, botmetrics.New())
	s.Find = slackFind(e.bot, api)
	ctx := context.Background()
	up := true
	for sec := 0; sec <= 60; sec++ {
		if want := (sec/5)%2 == 0; want != up {
			if want {
				ep.Up()
			} else {
				ep.Down()
			}
			up = want
		}
		clock.Set(schedT0.Add(time.Duration(sec) * time.Second))
		s.Tick(ctx)
	}
	if !up {
		ep.Up()
	}
	// Steady: up for longer than the flap window.
	for _, after := range []time.Duration{61 * time.Second, 2 * time.Minute, 7 * time.Minute} {
		clock.Set(schedT0.Add(after))
		s.Tick(ctx)
	}
	// The source's posts: its warnings, and every reply that names it or answers one of its warnings. Other
	// warnings of the run (the real disk's fill forecast moves while other processes write to it) and their
	// threads are not the flapping's.
	var top, thread []testkit.Call
	downs := map[string]bool{}
	for _, c := range fake.Calls("chat.postMessage") {
		text, ts := c.Form.Get("text"), c.Form.Get("thread_ts")
		switch {
		case ts == "" && strings.Contains(text, "source down"):
			top = append(top, c)
			downs[c.TS] = true
		case ts != "" && (downs[ts] || strings.Contains(text, ep.URL())):
			thread = append(thread, c)
		}
	}
	if len(top) != 1 {
		t.Fatalf("top-level warnings during 60 s of flapping = %d; want 1", len(top))
	}

	var texts []string
	for _, c := range thread {
		text := c.Form.Get("text")
		texts = append(texts, text)
		if c.Form.Get("thread_ts") != top[0].TS {
			t.Errorf("follow-up in thread %q; want the first warning's %q", c.Form.Get("thread_ts"), top[0].TS)
		}
		if !strings.Contains(c.Form.Get("blocks"), "p"+strings.ReplaceAll(top[0].TS, ".", "")) {
			t.Errorf("follow-up %q does not link the first warning", text)
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"Again (it had recovered at", "Flapping: ", "down 5 times in 5 min", "Holding steady since", "It went down 6 times within 5 min"} {
		if !strings.Contains(all, want) {
			t.Errorf("the thread lacks %q:\n%s", want, all)
		}
	}
	if n := strings.Count(all, "Holding steady"); n != 1 {
		t.Errorf("'holding steady' said %d times; want once", n)
	}
	t.Logf("figure: 60 s of flapping (down 6 times, sampled every second): %d top-level post, %d replies in its thread (recurrences, one 'flapping', one 'holding steady'), each linking the first warning",
		len(top), len(thread))
}
