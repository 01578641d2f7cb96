package handlers

import (
	"strings"
	"testing"

	"runwatch/sim"
)

// The demo asked at once answers a rough one-sample figure, which is never the baseline (no warning may measure
// a move from it); asked a few minutes later, every answer that names the first recorded estimate calls it the
// first baseline estimate, the word the rough answer used ("No baseline estimate yet"), so the channel never reads
// two different "first" estimates.
func TestRoughFigureIsNotAFirstEstimate(t *testing.T) {
	f := startFinishJob(t, sim.DemoScenario(), 600)
	f.step(t, 1)
	rough := f.ask(t, "ETA?")
	if !strings.Contains(rough, "(rough)") || !strings.Contains(rough, "No baseline estimate yet") {
		t.Fatalf("ETA at once = %q; want a rough figure and no baseline yet", rough)
	}
	for range 10 {
		f.step(t, 30)
	}
	for _, q := range []string{"ETA?", "are we on track?", "why did the ETA move?"} {
		text := f.ask(t, q)
		if !strings.Contains(text, "first baseline estimate") {
			t.Errorf("%s a few minutes in = %q; want the first recorded estimate named as the first baseline estimate", q, text)
		}
		if strings.Contains(text, "first estimate") {
			t.Errorf("%s a few minutes in = %q; names a \"first estimate\" other than the rough figure already answered", q, text)
		}
	}
	for !f.job.Done() {
		f.step(t, 60)
	}
	for _, q := range []string{"ETA?", "are we on track?"} {
		if text := f.ask(t, q); !strings.Contains(text, "The first baseline estimate (at ") || strings.Contains(text, "first estimate") {
			t.Errorf("%s after the finish = %q; want the first baseline estimate compared with the finish", q, text)
		}
	}
}
