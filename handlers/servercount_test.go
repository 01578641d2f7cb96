package handlers

import (
	"context"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/reports"
)

// A run counted by its servers alone (no log) shows the servers' finished requests as its progress: a
// counter that runs from the server's start, so 46% a few minutes into a job can be an older job's
// requests. Every answer that shows the count says so; one from the job's log says nothing of it.
func TestServerCountSaysItRunsFromTheServerStart(t *testing.T) {
	questions := []string{"ETA?", "status", "what's left?", "is it stuck?"}
	for _, src := range []string{"prometheus", "metrics", "log"} {
		runs := testkit.ReplyRuns(t)
		runs.RS.Progress = &reports.Progress{Done: 11500, Total: 25000, Source: src}
		b := NewBot(runs, time.UTC, config.Env{})
		shown := 0
		for _, q := range questions {
			got := b.Ask(context.Background(), Request{Text: q, Source: "mention", Channel: "C1"}).Message.Text()
			if !strings.Contains(got, "11,500") && !strings.Contains(got, "13,500") {
				continue // this answer shows no count
			}
			shown++
			says := strings.Contains(got, "from the server's start")
			if src != "log" && !says {
				t.Errorf("%s, progress from %s = %q; want it to say the count runs from the server's start", q, src, got)
			}
			if src == "log" && says {
				t.Errorf("%s, progress from the log = %q; want nothing of the server's count", q, got)
			}
			if src != "log" && strings.Contains(got, "0 errors") {
				t.Errorf("%s, progress from %s = %q; want no error count (the servers do not count the job's failures)", q, src, got)
			}
		}
		// Without this the test passes when no answer shows the count at all.
		if shown < 2 {
			t.Errorf("progress from %s: %d of %q show the count; want at least status and what's left", src, shown, questions)
		}
	}
}

// After a run counted by its servers alone finishes, every answer that shows the final count still says whose
// count it is: "No items left: all 25,000 are done" alone claimed the job's own count.
func TestFinishedServerCountSaysItRunsFromTheServerStart(t *testing.T) {
	for _, src := range []string{"prometheus", "metrics", "log"} {
		runs := testkit.ReplyRuns(t)
		runs.RS.Progress = &reports.Progress{Done: 25000, Total: 25000, Source: src}
		runs.RS.ETA = &reports.ETA{State: reports.StateDone, Reason: "all done", Progress: 1}
		runs.RS.Stages = nil
		b := NewBot(runs, time.UTC, config.Env{})
		for _, q := range []string{"ETA?", "status", "what's left?", "is it stuck?"} {
			got := b.Ask(context.Background(), Request{Text: q, Source: "mention", Channel: "C1"}).Message.Text()
			if !strings.Contains(got, "25,000") {
				continue // this answer shows no count
			}
			if says := strings.Contains(got, "from the server's start"); says != (src != "log") {
				t.Errorf("%s, finished, progress from %s = %q; want the server's count named: %v", q, src, got, src != "log")
			}
		}
	}
}
