package slackapp

import (
	"fmt"
	"strings"
	"testing"

	"runwatch/conversation"
	"runwatch/internal/testkit"
)

// TestStateChangesSayWho: each change says who made it, as a mention: a stage marked done (the status's
// checklist, not "marked done by UADMIN"), a snooze by a warning's button (its state line), and the
// answers to the commands.
func TestStateChangesSayWho(t *testing.T) {
	w := newWarningEnv(t)
	// A stage marked by its button: the status's checklist names who, as a mention.
	post, ts := postStatus(t, w.httpEnv)
	w.post(t, "/slack/interactions", pressPayload(t, w.fake, post, ts, "UADMIN", conversation.ActStage, "review"), nil)
	upd := w.fake.Wait(t, "chat.update", 1)[0]
	w.waitIdle()
	if text := upd.BlocksText(t); !strings.Contains(text, "marked done by <@UADMIN> at") {
		t.Errorf("checklist after Mark review done = %s; want it marked done by <@UADMIN>", text)
	}
	// A snooze by a warning's button: the warning says who snoozed it.
	w.step(t, w.Mon.Now(), testkit.Eval("synth", testkit.Stalled))
	i, warning := w.fake.WaitMatch(t, 0, "the warning", func(c testkit.Call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.Form.Get("text"), "stalled")
	})
	wts := fmt.Sprintf("1700000000.%06d", i+1)
	w.post(t, "/slack/interactions", pressPayload(t, w.fake, warning, wts, "UADMIN", conversation.ActSnooze, "1h"), nil)
	snoozed := w.fake.Wait(t, "chat.update", 2)[1]
	w.waitIdle()
	if text := snoozed.BlocksText(t); !strings.Contains(text, "snoozed until") || !strings.Contains(text, "by <@UADMIN>") {
		t.Errorf("warning after Snooze 1 h = %s; want who snoozed it", text)
	}
	// The commands' answers.
	for _, q := range []struct{ text, want string }{
		{"snooze 2h", "snoozed for 2 h by <@UADMIN>, until"},
		{"unsnooze", "<@UADMIN> turned the warnings of `synth` back on."},
		{"stage review todo", "back to its automatic check by <@UADMIN>."},
	} {
		got := slashAnswer(t, w.httpEnv, "/runwatch", q.text, "UADMIN")
		if !strings.Contains(got, q.want) {
			t.Errorf("/runwatch %s = %q; want %q", q.text, got, q.want)
		}
	}
}
