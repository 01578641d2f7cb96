package handlers

import (
	"context"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/testkit"
)

// TestConsoleShowsScheduledStatus: the console prints a run's scheduled status where a channel would get it,
// on the run's schedule (not before it is due), and the living message's edits in update mode.
func TestConsoleShowsScheduledStatus(t *testing.T) {
	for _, mode := range []string{"new", "update"} {
		t.Run(mode, func(t *testing.T) {
			e := newBotEnv(t, botOpts{Clock: testkit.NewClock(schedT0), Run: func(r *config.Run) { r.PostMode, r.Schedule = mode, "@hourly" }})
			var out testkit.LogBuffer
			c := &conversation.Console{Bot: e.bot, In: strings.NewReader(""), Out: &out}
			s, err := NewScheduler(e.bot, conversation.NewConsolePoster(c), nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			fire := func(at time.Time) {
				t.Helper()
				e.Clock.Set(at)
				if err := s.fire(context.Background(), "synth", at, false); err != nil {
					t.Fatal(err)
				}
			}
			fire(schedT0)
			first := out.String()
			if !strings.Contains(first, "Scheduled status for #synth:") || !strings.Contains(first, "synth · status") {
				t.Fatalf("console after the first scheduled fire:\n%s\nwant the status, headed by its channel", first)
			}
			fire(schedT0.Add(30 * time.Minute)) // not due on an hourly schedule
			if out.String() != first {
				t.Errorf("a status was printed half an hour into an hourly schedule:\n%s", out.String())
			}
			e.WriteLog(t, 310, 25000)
			fire(schedT0.Add(time.Hour))
			second := strings.TrimPrefix(out.String(), first)
			want := "Scheduled status for #synth:"
			if mode == "update" {
				want = "Scheduled status for #synth (the living message, updated):"
			}
			if !strings.Contains(second, want) || !strings.Contains(second, "310 / 25,000") {
				t.Errorf("console after the job moved on (%s):\n%s\nwant %q and the new progress", mode, second, want)
			}
		})
	}
}
