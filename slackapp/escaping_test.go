package slackapp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"runwatch/conversation"
	"runwatch/internal/testkit"
	"runwatch/posts"
	"runwatch/reports"
)

// TestHelpAndHomeEscaped: text runwatch sends Slack is escaped: the help's <duration>, <name> and <run>, the
// App Home's `status <run>`, a usage note, and what a log line or a run's data could put in (an & here);
// Slack's own markup (mentions, dates, links) is all that is left as markup.
func TestHelpAndHomeEscaped(t *testing.T) {
	w := newWarningEnvWith(t, botOpts{})
	for _, q := range []struct{ cmd, text string }{{"/runwatch", "help"}, {"/runwatch", "snooze"}, {"/runwatch", "stage"}} {
		resp := w.post(t, "/slack/commands", testkit.SlashBody(q.cmd, q.text, "C0SYNTH", "UADMIN", w.fake.ResponseURL("r")), nil)
		body := readAll(t, resp.Body)
		for _, s := range blocksOfAnswer(t, body) {
			if bad := testkit.UnescapedMrkdwn(s); len(bad) > 0 {
				t.Errorf("%s %s: %q not escaped in %q", q.cmd, q.text, bad, s)
			}
		}
	}
	w.post(t, "/slack/events", homeOpened("EvHome", "U222", "D222"), nil)
	views := w.fake.Wait(t, "views.publish", 1)
	_, text := parseView(t, views[0])
	if !strings.Contains(text, "status &lt;run&gt;") {
		t.Errorf("App Home = %s; want `status &lt;run&gt;`", text)
	}
	if bad := testkit.UnescapedMrkdwn(text); len(bad) > 0 {
		t.Errorf("App Home: %q not escaped", bad)
	}
	// The check itself.
	for s, want := range map[string]int{"<run>": 1, "a & b": 1, "<@U123> <!here> <!subteam^S1> <!date^1^{time}|12:00> <https://x.org|x>": 0, "&lt;run&gt; &amp;": 0} {
		if got := len(testkit.UnescapedMrkdwn(s)); got != want {
			t.Errorf("UnescapedMrkdwn(%q) = %d problems; want %d", s, got, want)
		}
	}
}

// TestLongKeysKeepTheirButtons: a warning whose key is longer than a block_id (a protected write under a
// deep path) keeps "I'm on it": its block_id carries the key's digest, within 255, and a press takes that
// very warning.
func TestLongKeysKeepTheirButtons(t *testing.T) {
	w := newWarningEnv(t)
	deep := "/shared/" + strings.Repeat("checkpoints-of-a-very-long-experiment-name/", 7)
	ev := testkit.Eval("synth", func(rs *reports.RunStatus) {
		rs.Storage.Warnings = []reports.StorageWarning{{Kind: posts.AlertProtected, Mount: deep, Message: "1 process is writing to protected `" + deep + "`"}}
	})
	sent := w.step(t, w.Mon.Now(), ev)
	if len(sent) != 1 || len(sent[0].Key) <= reports.MaxBlockID {
		t.Fatalf("posts = %v; want one warning with a key past 255 characters", kinds(sent))
	}
	i, warning := w.fake.WaitMatch(t, 0, "the warning", func(c testkit.Call) bool { return c.Method == "chat.postMessage" })
	checkBlockKitLimits(t, "warning with a long key", []byte(warning.Form.Get("blocks")), 50)
	blockID, btns := controlsOf(t, warning.Form.Get("blocks"))
	if len(btns) == 0 || btns[0] != "take=" || len(blockID) > reports.MaxBlockID {
		t.Fatalf("buttons = %v under block_id of %d characters; want I'm on it within 255", btns, len(blockID))
	}
	ts := fmt.Sprintf("1700000000.%06d", i+1)
	w.post(t, "/slack/interactions", pressPayload(t, w.fake, warning, ts, "UADMIN", conversation.ActTake, ""), nil)
	upd := w.fake.Wait(t, "chat.update", 1)[0]
	w.waitIdle()
	if cl, ok := w.claims.Get(sent[0].Key); !ok || cl.User != "UADMIN" {
		t.Errorf("claim on the long key = %+v, %v; want UADMIN's", cl, ok)
	}
	if !strings.Contains(upd.BlocksText(t), "<@UADMIN> is on it") {
		t.Errorf("updated warning = %s; want who is on it", upd.BlocksText(t))
	}
	checkBlockKitLimits(t, "taken warning with a long key", []byte(upd.Form.Get("blocks")), 50)
}

// blocksOfAnswer is every mrkdwn text in a slash command's JSON answer.
func blocksOfAnswer(t *testing.T, body string) []string {
	t.Helper()
	var msg struct {
		Blocks []any `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, body)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if x["type"] == "mrkdwn" {
				s, _ := x["text"].(string)
				out = append(out, s)
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(msg.Blocks)
	if len(out) == 0 {
		t.Fatalf("answer has no mrkdwn: %s", body)
	}
	return out
}
