package conversation

import (
	"context"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/reports"
)

// "is it stuck?" and "is it still running?" reach the same answer, and each gets its own Yes or No: a
// moving job was told "No, it's moving." when asked whether it was still moving.
func TestStuckAnswerFollowsTheQuestion(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	ask := func(q string) string {
		t.Helper()
		rep := e.bot.Ask(context.Background(), Request{Text: q, Source: "console"})
		if rep.Intent != "stuck" {
			t.Fatalf("%q went to %q; want the stuck question", q, rep.Intent)
		}
		return rep.Message.Text()
	}
	tests := []struct {
		done int
		q    string
		lead string
	}{
		{300, "is it stuck?", "(ok) No, it's moving."},
		{300, "is it hung?", "(ok) No, it's moving."},
		{300, "is the job still running?", "(ok) Yes, it's moving."},
		{300, "is it still moving?", "(ok) Yes, it's moving."},
		{300, "is it alive?", "(ok) Yes, it's moving."},
		{25000, "is it stuck?", "[done] Not stuck:"},
		{25000, "is it still running?", "[done] No, it finished"},
	}
	for _, tt := range tests {
		e.WriteLog(t, tt.done, 25000)
		text := ask(tt.q)
		if lead := strings.SplitN(text, "\n", 3)[1]; !strings.HasPrefix(lead, tt.lead) {
			t.Errorf("%q at %d done = %q; want it to start %q", tt.q, tt.done, lead, tt.lead)
		}
	}
}

// A run read from the engines alone (Prometheus, no total:) has no ETA, but its history shows items and tokens
// moving: "is it stuck?" answers no, and says why there is no ETA, instead of "Can't tell yet". A flat
// history past stall_after still reads as stuck.
func TestStuckWithoutTotal(t *testing.T) {
	cases := []struct {
		name      string
		perSample int64
		want      []string
		not       string
	}{
		{"moving", 20, []string{"No, it's moving.", "ETA: unknown — the total number of items is unknown"}, "Can't tell"},
		{"flat", 0, []string{"(!!) Yes, it looks stuck. Stalled since"}, "moving"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs := testkit.ReplyRuns(t)
			var hist []reports.Observation
			for i := range 40 {
				tok := 7.5e6 + float64(c.perSample*int64(i))*1000
				hist = append(hist, reports.Observation{T: float64(runs.At.Unix()) - float64(39-i)*30, Done: 11228 + c.perSample*int64(i), GenTokens: &tok})
			}
			eta, tp := reports.Estimate(hist, reports.EstimateConfig{Window: 900, StallAfter: 600})
			runs.RS.ETA, runs.RS.Throughput = &eta, &tp
			runs.RS.Progress = &reports.Progress{Done: hist[len(hist)-1].Done, Source: "prometheus"}
			b := NewBot(runs, time.UTC, config.Env{})
			got := b.Ask(context.Background(), Request{Text: "is it stuck?", Source: "mention", Channel: "C1"}).Message.Text()
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("is it stuck? (state %s) = %q; want it to say %q", eta.State, got, w)
				}
			}
			if strings.Contains(got, c.not) {
				t.Errorf("is it stuck? (state %s) = %q; want nothing with %q", eta.State, got, c.not)
			}
		})
	}
}
