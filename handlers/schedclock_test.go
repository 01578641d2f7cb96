package handlers

import (
	"context"
	"runwatch/config"
	"runwatch/state"
	"testing"
	"time"
)

// A local-time daily cron posts on the day the clocks change: Europe/London's 09:00 on the Sunday
// summer time starts is 23 hours after Saturday's, and reading the last post's time in UTC put
// "the next 09:00" an hour after it, so that day's status was skipped as not due.
func TestScheduleLocalCronAcrossDST(t *testing.T) {
	t.Parallel()
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Skipf("no tz database: %v", err)
	}
	tests := []struct {
		name        string
		first, next time.Time
	}{
		{"spring forward", time.Date(2026, 3, 28, 9, 0, 0, 0, london), time.Date(2026, 3, 29, 9, 0, 0, 0, london)},
		{"fall back", time.Date(2026, 10, 24, 9, 0, 0, 0, london), time.Date(2026, 10, 25, 9, 0, 0, 0, london)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newSchedEnvWith(t, botOpts{Loc: london, Run: func(r *config.Run) { r.PostMode, r.Schedule = "new", "0 9 * * *" }})
			e.fireAt(t, tc.first)
			e.WriteLog(t, 900, 25000)
			// An hour before the next 09:00 is not due, whichever way the clocks went.
			e.fireAt(t, tc.next.Add(-time.Hour))
			if n := len(e.fake.Calls("chat.postMessage")); n != 1 {
				t.Fatalf("posts by %s = %d; want 1 (08:00 is not due)", tc.next.Add(-time.Hour), n)
			}
			e.fireAt(t, tc.next)
			if n := len(e.fake.Calls("chat.postMessage")); n != 2 {
				t.Errorf("posts by %s (%s) = %d; want 2: the day the clocks change has its 09:00 status", tc.next, tc.next.UTC().Format(time.Kitchen), n)
			}
		})
	}
}

// jump steps the wall clock by d without firing anything, as a suspend/resume or an NTP step does:
// a timer counts elapsed time, so what waits is as far from firing as it was.
func (c *stepClock) jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	for i := range c.waiters {
		c.waiters[i].at = c.waiters[i].at.Add(d)
	}
}

// startSched starts s on clock until the test ends.
func startSched(t *testing.T, s *Scheduler, clock *stepClock) {
	t.Helper()
	s.Clock = clock
	ctx, cancel := context.WithCancel(context.Background())
	s.Start(ctx)
	t.Cleanup(func() {
		cancel()
		s.Stop(10 * time.Second)
	})
}

// A machine suspended for 50 minutes of an hourly wait, or a clock NTP steps 50 minutes on, posts
// at the hour it shows: one timer of an hour counted only the 10 minutes that elapsed, and posted
// 50 minutes late.
func TestScheduleWallClockJump(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t, "new", "@hourly", "")
	clock := newStepClock(schedT0)
	startSched(t, e.sched, clock)
	clock.awaitWaiter(t)
	clock.jump(50 * time.Minute)
	for clock.Now().Before(schedT0.Add(time.Hour)) {
		clock.advance(time.Minute)
		select {
		case <-clock.waiting:
		case <-time.After(10 * time.Second):
			t.Fatalf("at %s (wall clock) nothing reads the clock again: the hourly post waits for a timer that counts elapsed time only", clock.Now().Format(time.TimeOnly))
		}
	}
	posts := e.fake.Wait(t, "chat.postMessage", 1)
	if len(posts) != 1 {
		t.Errorf("posts at %s = %d; want 1", clock.Now().Format(time.TimeOnly), len(posts))
	}
}

// A bot restarted across the hour (stopped at 10:59:59, started at 11:00:01) posts the 11:00
// status at once: it waited for 12:00, and the status of 11:00 was never posted.
func TestScheduleRestartAcrossTheHour(t *testing.T) {
	t.Parallel()
	first, second := postedThenRestarted(t)
	second.fake = first.fake
	second.api = first.api
	s, err := NewScheduler(second.bot, first.api, mustOpen(t, first.StateDir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	restart := schedT0.Add(time.Hour + time.Second)
	second.Clock.Set(restart)
	startSched(t, s, newStepClock(restart))
	first.fake.Wait(t, "chat.postMessage", 2)

	// Started again at 11:00:02, after the 11:00 post landed, it waits for 12:00.
	third := newSchedEnv(t, "new", "@hourly", first.StateDir)
	third.Clock.Set(restart.Add(time.Second))
	s3, err := NewScheduler(third.bot, third.api, mustOpen(t, first.StateDir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := newStepClock(restart.Add(time.Second))
	startSched(t, s3, clock)
	clock.awaitWaiter(t)
	if n := len(third.fake.Calls("chat.postMessage")); n != 0 {
		t.Errorf("posts after a restart a second after the hour's post = %d; want none", n)
	}
}

// A bot restarted 40 ms before the hour, having missed the last one, posts once, at the hour: it posted
// the missed status at once and the hour's 40 ms later, two statuses in a row.
func TestScheduleRestartJustBeforeTheHour(t *testing.T) {
	t.Parallel()
	first, second := postedThenRestarted(t)
	s, err := NewScheduler(second.bot, second.api, mustOpen(t, first.StateDir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	restart := schedT0.Add(2*time.Hour - 40*time.Millisecond) // 11:00 was missed; 12:00 is 40 ms away
	second.Clock.Set(restart)
	clock := newStepClock(restart)
	startSched(t, s, clock)
	clock.awaitWaiter(t)
	if n := len(second.fake.Calls("chat.postMessage")) + len(second.fake.Calls("chat.update")); n != 0 {
		t.Errorf("posts 40 ms before the hour after missing the last = %d; want none until the hour", n)
	}
	second.Clock.Set(restart.Add(40 * time.Millisecond))
	clock.advance(40 * time.Millisecond)
	second.fake.Wait(t, "chat.postMessage", 1)
	clock.awaitWaiter(t)
	if n := len(second.fake.Calls("chat.postMessage")); n != 1 {
		t.Errorf("posts at the hour = %d; want 1", n)
	}
}

// postedThenRestarted is an hourly run that posted at schedT0, and a second bot over its state directory.
func postedThenRestarted(t *testing.T) (first, second *schedEnv) {
	t.Helper()
	first = newSchedEnv(t, "new", "@hourly", "")
	first.fireAt(t, schedT0)
	first.WriteLog(t, 900, 25000)
	second = newSchedEnv(t, "new", "@hourly", first.StateDir)
	second.WriteLog(t, 900, 25000)
	return first, second
}

func mustOpen(t *testing.T, path string) *state.Dir {
	t.Helper()
	d, err := state.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
