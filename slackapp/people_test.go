package slackapp

import (
	"fmt"
	"slices"
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
	w.post(t, "/slack/interactions", pressPayload(t, w.fake, upd, ts, "U222", conversation.ActDetails, ""), nil)
	full := w.fake.Wait(t, "chat.postMessage", 2)[1]
	w.waitIdle()
	if text := full.BlocksText(t); !strings.Contains(text, "marked done by <@UADMIN> at") {
		t.Errorf("full status after Mark review done = %s; want review marked done by <@UADMIN>", text)
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

// TestStatusIsChatSized: the scheduled status in the channel is about ten lines, with the rest a press away:
// "Full status" posts the whole status in the status's thread, and the channel keeps its ten lines.
func TestStatusIsChatSized(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	post, ts := postStatus(t, e)
	text := post.Form.Get("text")
	if lines := strings.Count(text, "\n") + 1; lines > 10 {
		t.Errorf("status in the channel = %d lines; want at most 10:\n%s", lines, text)
	}
	_, btns := controlsOf(t, post.Form.Get("blocks"))
	if !slices.Contains(btns, "details=") {
		t.Fatalf("status buttons = %v; want Full status", btns)
	}
	e.post(t, "/slack/interactions", pressPayload(t, e.fake, post, ts, "U222", conversation.ActDetails, ""), nil)
	full := e.fake.Wait(t, "chat.postMessage", 2)[1]
	e.waitIdle()
	if full.Form.Get("thread_ts") != ts || !strings.Contains(full.Form.Get("text"), "*Checklist*\n") || !strings.Contains(full.Form.Get("text"), "set it with /runwatch stage review done") {
		t.Errorf("Full status = thread %q:\n%s\nwant the whole status (its checklist stage by stage) in the status's thread %s", full.Form.Get("thread_ts"), full.Form.Get("text"), ts)
	}
	if n := len(e.fake.Calls("chat.update")); n != 0 {
		t.Errorf("the status was edited %d times by Full status; want it left as it is", n)
	}
	t.Logf("figure: the status in the channel: %d lines, %d characters; Full status in its thread: %d lines",
		strings.Count(text, "\n")+1, len(text), strings.Count(full.Form.Get("text"), "\n")+1)
}
