package handlers

import (
	"context"
	"strings"
	"testing"
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
