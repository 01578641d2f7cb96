package handlers

import (
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
			e := newSchedEnv(t, "new", "0 9 * * *", "")
			e.bot.loc = london
			e.fireAt(t, tc.first)
			e.writeLog(t, 900, 25000)
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
