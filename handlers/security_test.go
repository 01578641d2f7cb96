package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/testkit"
	"runwatch/posts"
)

// TestSecurityNonAdminCannotMutate tries every command that changes state, from a user who is not
// an admin, by every way a request arrives from Slack: refused each time, nothing changed.
func TestSecurityNonAdminCannotMutate(t *testing.T) {
	// The monitor's clock stands still: the checklist compared before and after carries an "as of"
	// time that would otherwise differ across a minute boundary.
	clock := testkit.NewClock(time.Date(2026, 11, 29, 7, 58, 59, 0, time.UTC))
	e := newHTTPEnv(t, botOpts{Clock: clock})
	ctx := context.Background()
	if rep := e.bot.Ask(ctx, conversation.Request{Text: "snooze 2h", User: "UADMIN", Source: "mention"}); rep.Refused {
		t.Fatalf("admin snooze refused: %s", rep.Message.Text())
	}
	snooze, _ := e.Mon.SnoozedUntil("synth")
	stages := func() string {
		st := e.bot.Ask(ctx, conversation.Request{Text: "status", Source: "console"}).Message.Text()
		_, checklist, _ := strings.Cut(st, "Checklist")
		return checklist
	}
	before := stages()
	for _, text := range []string{"snooze 2d", "unsnooze", "stage review done", "stage review failed", "stage generate done synth"} {
		t.Run(text, func(t *testing.T) {
			// A slash command, signed like Slack's.
			resp := e.post(t, "/slack/commands", testkit.SlashBody("/runwatch", text, "C1", "UOTHER", e.fake.ResponseURL("x")), nil)
			if body := readAll(t, resp.Body); !strings.Contains(body, "only runwatch admins") || !strings.Contains(body, `"ephemeral"`) {
				t.Errorf("/runwatch %s from a non-admin = %s; want an ephemeral refusal", text, body)
			}
			// A mention and a direct message.
			for _, req := range []conversation.Request{{Text: "<@U111> " + text, Channel: "C1", User: "UOTHER", Source: "mention"},
				{Text: text, Channel: "D1", User: "UOTHER", Source: "dm"}} {
				if rep := e.bot.Ask(ctx, req); !rep.Refused || !rep.Ephemeral {
					t.Errorf("%s %q from a non-admin = %q; want a refusal", req.Source, text, rep.Message.Text())
				}
			}
			if u, ok := e.Mon.SnoozedUntil("synth"); !ok || !u.Equal(snooze) {
				t.Errorf("after %q from a non-admin the snooze is %v, %v; want the admin's %v", text, u, ok, snooze)
			}
			if got := stages(); got != before {
				t.Errorf("after %q from a non-admin the checklist is\n%s\nwant\n%s", text, got, before)
			}
		})
	}
	t.Logf("figure: 5 mutating commands × slash, mention, DM from a non-admin: 15 refusals, state unchanged")
}

// TestSecurityLogMarkupNeverPings writes a job log whose lines carry Slack markup (a broadcast, a
// user mention, a link) around real progress, and asks every question about it over HTTP mode:
// the messages posted to Slack carry no live markup, in the text or the blocks.
func TestSecurityLogMarkupNeverPings(t *testing.T) {
	e := newHTTPEnv(t, botOpts{NoLogFile: true, Run: func(r *config.Run) { r.Total = 25000 }})
	lines := []string{
		"<!channel> <!here> <@U0ADMIN> starting <https://evil.example|click here> <#C0123|general>",
		"Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s <!channel>",
		"<!everyone> Processed prompts:  30%|███       | 980/3273 [00:13<00:00, 5753.50it/s] <!subteam^S123>",
		"Progress: 320/25000 (0 errors), 0.7 req/s <https://evil.example/x|status> *bold* _it_ ~s~ `code` &amp; &lt;!channel&gt;",
	}
	if err := os.WriteFile(e.Log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Mon.Sample(context.Background())
	questions := []string{"ETA?", "status", "is it stuck?", "how fast are we going?", "where does the output go?", "help"}
	for i, q := range questions {
		e.post(t, "/slack/events", testkit.MentionEvent(fmt.Sprintf("EvMark%d", i), "<@U111> "+q, "U222", "C1", fmt.Sprintf("1700000300.%06d", i), ""), nil)
	}
	e.app.wait(20 * time.Second)
	calls := append(e.fake.Calls("chat.postMessage"), e.fake.Calls("chat.postEphemeral")...)
	if len(calls) != len(questions) {
		t.Fatalf("answers = %d; want %d", len(calls), len(questions))
	}
	sawProgress := false
	for _, c := range calls {
		testkit.NoLiveMarkup(t, c.Method+" text", c.Form.Get("text"))
		testkit.NoLiveMarkup(t, c.Method+" blocks", c.Form.Get("blocks"))
		sawProgress = sawProgress || strings.Contains(c.Form.Get("text"), "320 / 25,000")
	}
	if !sawProgress {
		t.Errorf("no answer shows the progress read from the log (320 / 25,000): the markup must not hide it")
	}
	t.Logf("figure: a log full of <!channel>, <@U…>, links: %d answers posted, 0 live mentions or links in text or blocks", len(calls))
}

// TestSecurityServeLogsNoCredentials runs `bot serve` in HTTP mode with a logger into a buffer,
// at debug level, through the paths that log errors: Slack refusing posts with the token echoed
// in its error pages (as a misbehaving proxy might), a source going down, requests with bad
// signatures. No log line carries the bot token or the signing secret.
func TestSecurityServeLogsNoCredentials(t *testing.T) {
	ep := testkit.NewFaultEndpoint(t)
	secret := "8f742231b10e8888abcd99yyyzzz85a5"
	e := newBotEnv(t, botOpts{Metrics: []string{ep.URL()}})
	fake := testkit.NewSlack(t)
	echo := testkit.Failure{Status: 502, Body: "<html>upstream said: Authorization: Bearer " + testkit.BotToken.Reveal() + " secret=" + secret + "</html>"}
	for range 4 {
		fake.FailNext("chat.postMessage", echo)
	}
	fake.FailNext("chat.postMessage", testkit.Failure{Status: 200, Body: `{"ok":false,"error":"invalid_auth ` + testkit.BotToken.Reveal() + `"}`})
	logs := &testkit.LogBuffer{}
	ep.Down()
	s := startServe(t, e, fake, secret, logs)
	// Requests with bad signatures, and one with the secret itself in the body.
	for _, body := range []string{"token=" + secret, "text=" + testkit.BotToken.Reveal()} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/slack/commands", strings.NewReader(body))
		req.Header.Set("X-Slack-Request-Timestamp", fmt.Sprint(time.Now().Unix()))
		req.Header.Set("X-Slack-Signature", "v0="+secret)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	// Wait until the warning about the dead endpoint has been refused, with the token in the error.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "invalid_auth") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	s.stop(t)
	out := logs.String()
	if !strings.Contains(out, "warning not delivered") || !strings.Contains(out, "invalid_auth xoxb-[redacted]") {
		t.Fatalf("the log lacks the refused warning with its error redacted; the test did not reach the paths it means to:\n%s", out)
	}
	for _, cred := range []string{testkit.BotToken.Reveal(), secret, "AbCdEfGhIjKl"} {
		if strings.Contains(out, cred) {
			t.Errorf("a credential (%.8s…) reached the log:\n%s", cred, out)
		}
	}
	t.Logf("figure: bot serve logging at debug through echoed tokens and bad signatures: %d log lines, 0 credentials", strings.Count(out, "\n"))
}

// TestSecurityForgedTakeStaysInItsRun: a press's block_id names its run and its warning, and a
// user can send any payload Slack would sign for them. An admin of one run who names their run
// beside another run's warning takes nothing: the warning must belong to the run the check was on.
func TestSecurityForgedTakeStaysInItsRun(t *testing.T) {
	w := newWarningEnvWith(t, botOpts{Env: config.Env{Admins: []string{"UNOBODY"}}, Run: func(r *config.Run) {
		r.Admins = []string{"USYNTH"}
	}, File: func(f *config.File) {
		other := f.Runs[0]
		other.Name, other.Admins = "other", []string{"UOTHER"}
		f.Runs = append(f.Runs, other)
	}})
	if sent := w.step(t, w.Mon.Now(), testkit.Eval("other", testkit.Stalled)); len(sent) != 1 {
		t.Fatalf("other's stall = %v; want one warning", kinds(sent))
	}
	i, warning := w.fake.WaitMatch(t, 0, "the warning", func(c testkit.Call) bool { return c.Method == "chat.postMessage" })
	ts := fmt.Sprintf("1700000000.%06d", i+1)
	form, err := url.ParseQuery(string(pressPayload(t, w.fake, warning, ts, "USYNTH", conversation.ActTake, "")))
	if err != nil {
		t.Fatal(err)
	}
	key := "other/" + posts.AlertStall
	jsonText := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	genuine, forged := jsonText(conversation.ControlRef{Run: "other", Key: key}.Encode()), jsonText(conversation.ControlRef{Run: "synth", Key: key}.Encode())
	payload := form.Get("payload")
	if !strings.Contains(payload, genuine) {
		t.Fatalf("the warning's press does not carry block_id %q: %s", genuine, payload)
	}
	body := url.Values{"payload": {strings.ReplaceAll(payload, genuine, forged)}}.Encode()
	w.post(t, "/slack/interactions", []byte(body), nil)
	w.fake.Wait(t, "chat.postEphemeral", 1)
	w.waitIdle()
	if cl, ok := w.claims.Get(key); ok {
		t.Errorf("synth's admin took other's warning through a forged block_id: %+v", cl)
	}
}

// TestSecurityHomePressAnswersOnlyInADM: a press on the App Home is answered in the DM its view's
// private_metadata names, and counts as a DM for the allow-lists. Metadata naming a channel (a
// forged payload) gets no answer at all: not the log lines, meant for the presser only, posted
// for the whole channel to read.
func TestSecurityHomePressAnswersOnlyInADM(t *testing.T) {
	w := newWarningEnv(t)
	for i, dm := range []string{"C0GENERAL", "G0PRIVATE", "D0ADMIN"} {
		payload := fmt.Sprintf(`{"type":"block_actions","user":{"id":"UADMIN","team_id":"T111"},"api_app_id":"A111","trigger_id":"1.2.3",`+
			`"container":{"type":"view","view_id":"V0001"},"view":{"id":"V0001","type":"home","private_metadata":%q,"blocks":[]},`+
			`"actions":[{"type":"button","action_id":%q,"block_id":%q,"value":"","action_ts":"1700000400.%06d"}]}`,
			dm, conversation.ActLogs, conversation.ControlRef{Run: "synth"}.Encode(), i)
		w.post(t, "/slack/interactions", []byte("payload="+urlEscape(payload)), nil)
	}
	sent := w.fake.Wait(t, "chat.postMessage", 1)
	w.waitIdle()
	for _, c := range w.fake.Calls("chat.postMessage") {
		if ch := c.Form.Get("channel"); ch != "D0ADMIN" {
			t.Errorf("an App Home press answered in %s: %q; want answers in the presser's DM only", ch, c.Form.Get("text"))
		}
	}
	if !strings.Contains(sent[0].Form.Get("text"), "last log lines") {
		t.Errorf("the press from the DM = %q; want the log lines", sent[0].Form.Get("text"))
	}
}

// TestSecurityHomePressFloodTellsNoChannel: a flood of App Home presses whose private_metadata names a
// channel gets no answer there either. Past the rate limit, the note to wait went through the Home's
// path, a post in the "DM" the metadata names: for the whole channel to read.
func TestSecurityHomePressFloodTellsNoChannel(t *testing.T) {
	w := newWarningEnv(t)
	frozen := time.Now()
	w.app.limiter.now = func() time.Time { return frozen } // no refill: the flood is past the limit
	for i := range 2 * defaultUserBurst {
		payload := fmt.Sprintf(`{"type":"block_actions","user":{"id":"UADMIN","team_id":"T111"},"api_app_id":"A111","trigger_id":"1.2.3",`+
			`"container":{"type":"view","view_id":"V0001"},"view":{"id":"V0001","type":"home","private_metadata":"C0GENERAL","blocks":[]},`+
			`"actions":[{"type":"button","action_id":%q,"block_id":%q,"value":"","action_ts":"1700000500.%06d"}]}`,
			conversation.ActLogs, conversation.ControlRef{Run: "synth"}.Encode(), i)
		w.post(t, "/slack/interactions", []byte("payload="+urlEscape(payload)), nil)
	}
	w.waitIdle()
	for _, c := range append(w.fake.Calls("chat.postMessage"), w.fake.Calls("chat.postEphemeral")...) {
		if c.Form.Get("channel") == "C0GENERAL" {
			t.Errorf("a flood of App Home presses naming C0GENERAL posted there: %q; want nothing", c.Form.Get("text"))
		}
	}
}

// TestSecurityChannelIDLearnedFromASlashCommand: a run written as "#synth" with allowed_channels listing ids
// posts nothing until the name's id is known; a slash command from the channel (Slack signs its id and its
// name) teaches it, and the run's statuses and warnings may go there from then on. A command from another
// channel teaches nothing.
func TestSecurityChannelIDLearnedFromASlashCommand(t *testing.T) {
	e := newHTTPEnv(t, botOpts{Env: config.Env{AllowedChannels: []string{"CSYNTH"}}, Run: func(r *config.Run) { r.Channel = "#synth" }})
	run, _ := e.bot.Monitor().Config().RunByName("synth")
	if e.bot.PostAllowed(run, run.Channel) {
		t.Fatal("setup: #synth admitted before its id is known")
	}
	e.app.slash(slashRequest{Command: "/eta", Channel: "C0OTHER", ChannelName: "general", User: "U222", ResponseURL: e.fake.ResponseURL("1")})
	if e.bot.PostAllowed(run, run.Channel) {
		t.Error("a command from #general admitted #synth")
	}
	e.app.slash(slashRequest{Command: "/eta", Channel: "CSYNTH", ChannelName: "synth", User: "U222", ResponseURL: e.fake.ResponseURL("2")})
	if !e.bot.PostAllowed(run, run.Channel) {
		t.Error("after a slash command from #synth (CSYNTH), its posts are still refused; want them admitted")
	}
	e.app.wait(10 * time.Second)
}
