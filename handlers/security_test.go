package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/reports"
)

// TestSecurityNonAdminCannotMutate tries every command that changes state, from a user who is not
// an admin, by every way a request arrives from Slack: refused each time, nothing changed.
func TestSecurityNonAdminCannotMutate(t *testing.T) {
	// The monitor's clock stands still: the checklist compared before and after carries an "as of"
	// time that would otherwise differ across a minute boundary.
	clock := testkit.NewClock(time.Date(2026, 11, 29, 7, 58, 59, 0, time.UTC))
	e := newHTTPEnv(t, botOpts{Clock: clock})
	ctx := context.Background()
	if rep := e.bot.Ask(ctx, Request{Text: "snooze 2h", User: "UADMIN", Source: "mention"}); rep.Refused {
		t.Fatalf("admin snooze refused: %s", rep.Message.Text())
	}
	snooze, _ := e.Mon.SnoozedUntil("synth")
	stages := func() string {
		st := e.bot.Ask(ctx, Request{Text: "status", Source: "console"}).Message.Text()
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
			for _, req := range []Request{{Text: "<@U111> " + text, Channel: "C1", User: "UOTHER", Source: "mention"},
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

// TestSecurityPathsOutsideTheRun asks about paths that are not the run's, including ones that get
// there by .. or by a symlink inside an output: each is refused without saying anything about the
// path, and a path inside the output is still answered.
func TestSecurityPathsOutsideTheRun(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	out := filepath.Join(e.Dir, "out")
	// A symlink in the output onto another filesystem (/proc): following it leaves the run's mount.
	if err := os.Symlink("/proc/self", filepath.Join(out, "to-proc")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, "part-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	refused := []string{"/etc", "/proc/1/environ", "/root/.ssh",
		out + "/../../../../../../../../../etc/shadow", filepath.Join(out, "to-proc"), filepath.Join(out, "to-proc", "environ")}
	for _, p := range refused {
		for _, q := range []string{"how much space is left on " + p + "?", "are we writing to " + p + "?", "/storage " + p} {
			rep := e.bot.Ask(ctx, Request{Text: q, Channel: "C1", User: "U222", Source: "mention"})
			text := rep.Message.Text()
			if !rep.Refused || !strings.Contains(text, "isn't one of them") {
				t.Errorf("%q = %q; want a refusal", q, text)
			}
			for _, leak := range []string{"free", "resolves", "ext4", "proc"} {
				if strings.Contains(strings.ReplaceAll(text, p, ""), leak) && !strings.Contains(out, leak) {
					t.Errorf("%q refused but says %q: %s", q, leak, text)
				}
			}
		}
	}
	t.Logf("figure: %d paths outside the run (absolute, .., a symlink onto /proc) × 3 questions: all refused, nothing said about them", len(refused))
	inside := filepath.Join(out, "part-1")
	if rep := e.bot.Ask(ctx, Request{Text: "how much space is left on " + inside + "?", Channel: "C1", User: "U222", Source: "mention"}); rep.Refused {
		t.Errorf("a path inside the output was refused: %s", rep.Message.Text())
	}
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
		fuzzNoLiveMarkup(t, c.Method+" text", c.Form.Get("text"))
		fuzzNoLiveMarkup(t, c.Method+" blocks", c.Form.Get("blocks"))
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

// TestSecurityRunAdminsOwnTheirRun gives one run its own admins (the run file's per-run `admins:`):
// they may change that run, by command and through a DM, and nothing of another run; a global
// admin may change both.
func TestSecurityRunAdminsOwnTheirRun(t *testing.T) {
	e := newBotEnv(t, botOpts{
		Run: func(r *config.Run) { r.Admins = []string{"URUNADMIN"} },
		File: func(f *config.File) {
			other := f.Runs[0]
			other.Name, other.Channel, other.Admins = "other", "#other", nil
			f.Runs = append(f.Runs, other)
			f.AllowedChannels = []string{"C1"}
		},
	})
	ctx := context.Background()
	for _, c := range []struct {
		user, source, channel, run string
		want                       bool
	}{
		{"URUNADMIN", "mention", "C1", "synth", true},
		{"URUNADMIN", "dm", "D1", "synth", true},
		{"URUNADMIN", "mention", "C1", "other", false},
		{"URUNADMIN", "dm", "D1", "other", false},
		{"UADMIN", "mention", "C1", "other", true},
		{"UADMIN", "dm", "D1", "synth", true},
		{"UOTHER", "mention", "C1", "synth", false},
		{"UOTHER", "dm", "D1", "synth", false},
	} {
		e.bot.Ask(ctx, Request{Text: "unsnooze " + c.run, User: "UADMIN", Source: "console"})
		rep := e.bot.Ask(ctx, Request{Text: "snooze 2h " + c.run, Channel: c.channel, User: c.user, Source: c.source})
		_, snoozed := e.Mon.SnoozedUntil(c.run)
		if snoozed != c.want || rep.Refused == c.want {
			t.Errorf("%s by %s in %s: snooze %s = %q (refused %v), snoozed %v; want snoozed %v",
				c.source, c.user, c.channel, c.run, rep.Message.Text(), rep.Refused, snoozed, c.want)
		}
	}
	// Read-only answers in a DM stay the run's too: a run admin asks about their run, not the other.
	if rep := e.bot.Ask(ctx, Request{Text: "eta other", Channel: "D1", User: "URUNADMIN", Source: "dm"}); !rep.Refused {
		t.Errorf("a run admin's DM about another run = %q; want a refusal", rep.Message.Text())
	}
	if rep := e.bot.Ask(ctx, Request{Text: "eta synth", Channel: "D1", User: "URUNADMIN", Source: "dm"}); rep.Refused {
		t.Errorf("a run admin's DM about their run = %q; want an answer", rep.Message.Text())
	}
}

// TestSecurityLogLinesCarryNoCredentials writes a job log whose lines print a Slack token, a URL
// with a password and an api_key, a presigned S3 URL, a Hugging Face token, an environment dump and a
// bearer header: the last log lines answer (its text,
// its blocks and the JSON data behind it) shows the lines with none of them.
func TestSecurityLogLinesCarryNoCredentials(t *testing.T) {
	e := newBotEnv(t, botOpts{NoLogFile: true, Run: func(r *config.Run) { r.Total = 25000 }})
	const (
		token = "xoxb-1234-5678-TokenLeak"
		pass  = "Pa55wordLeak"
		key   = "ApiKeyLeak"
		sig   = "AmzSigLeak"
		hf    = "hf_HuggingFaceTokenLeak0123456789"
		wandb = "0123456789abcdefWandbKeyLeak"
		oauth = "BearerTokenLeak.abc"
	)
	log := "starting\n" +
		"SLACK_BOT_TOKEN=" + token + "\n" +
		"env: HF_TOKEN=" + hf + " WANDB_API_KEY=" + wandb + " max_tokens=4096\n" +
		"login with " + hf + "; headers {'Authorization': 'Bearer " + oauth + "'}\n" +
		"GET http://10.0.0.1:8000/v1?token=" + key + " ok\n" +
		"connect http://wandb:" + pass + "@wandb.local/api?api_key=" + key + " ok\n" +
		"GET https://bucket.s3.amazonaws.com/x?X-Amz-Signature=" + sig + "&X-Amz-Expires=60\n" +
		"Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n"
	if err := os.WriteFile(e.Log, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := e.bot.Ask(context.Background(), Request{Text: "/runwatch logs", Source: "console"})
	data, _ := json.Marshal(rep.Data)
	blocks, _ := json.Marshal(rep.Message.Blocks())
	places := map[string]string{"text": rep.Message.Text(), "blocks": string(blocks), "data": string(data)}
	for where, s := range places {
		if !strings.Contains(s, "wandb.local/api?api_key=[redacted]") || !strings.Contains(s, "Progress: 300/25000") {
			t.Errorf("logs %s = %s; want the lines, their URLs redacted", where, s)
		}
		if !strings.Contains(s, "max_tokens=4096") || !strings.Contains(s, "v1?token=[redacted] ok") {
			t.Errorf("logs %s = %s; want max_tokens=4096 left as it is, and a URL's query redacted once", where, s)
		}
		for _, leak := range []string{"TokenLeak", pass, key, sig, hf, "HuggingFace", wandb, oauth} {
			if strings.Contains(s, leak) {
				t.Errorf("logs %s holds %q:\n%s", where, leak, s)
			}
		}
	}
}

// TestSecurityPostsOnlyToAllowedChannels: the allow-lists bind what runwatch posts unasked (the
// scheduled status, warnings) as they bind its answers. A run whose channel they leave out gets
// neither; one they list, by name or by id (once Slack has reported the name's id), gets both.
func TestSecurityPostsOnlyToAllowedChannels(t *testing.T) {
	tests := []struct {
		name    string
		env     []string // RUNWATCH_ALLOWED_CHANNELS
		own     []string // the run's allowed_channels
		channel string
		learned string // the id Slack reported for the channel's name before
		want    bool
	}{
		{"no allow-list", nil, nil, "#synth", "", true},
		{"listed by name", []string{"#synth"}, nil, "#synth", "", true},
		{"listed by id", []string{"CSYNTH"}, nil, "CSYNTH", "", true},
		{"listed by id, the name's id learned", []string{"CSYNTH"}, nil, "#synth", "CSYNTH", true},
		{"another channel listed", []string{"C0ELSEWHERE"}, nil, "#synth", "", false},
		{"another channel listed, the name's id learned", []string{"C0ELSEWHERE"}, nil, "#synth", "CSYNTH", false},
		{"the run's own list leaves it out", nil, []string{"C0OWN"}, "#synth", "", false},
		{"the run's own list names it", nil, []string{"#synth"}, "#synth", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newSchedEnvWith(t, botOpts{Env: config.Env{AllowedChannels: tc.env}, Run: func(r *config.Run) {
				r.Channel, r.AllowedChannels = tc.channel, tc.own
			}})
			e.bot.LearnChannel(tc.channel, tc.learned)
			e.fireAt(t, schedT0)
			deliver := slackDeliver(e.bot, e.api, nil)
			if _, err := deliver(context.Background(), Post{Run: "synth", Channel: tc.channel, Kind: AlertStall, Key: "synth/stall",
				Message: reports.Message{Title: "synth is stalled"}}); err != nil {
				t.Fatalf("deliver = %v", err)
			}
			if n, want := len(e.fake.Calls("chat.postMessage")), map[bool]int{true: 2, false: 0}[tc.want]; n != want {
				t.Errorf("channel %s, allowed %v (run's own %v): %d posts; want %d (the status and the warning, or nothing)",
					tc.channel, tc.env, tc.own, n, want)
			}
		})
	}
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
	if posts := w.step(t, w.Mon.Now(), ev("other", stalled)); len(posts) != 1 {
		t.Fatalf("other's stall = %v; want one warning", kinds(posts))
	}
	i, warning := w.fake.WaitMatch(t, 0, "the warning", func(c testkit.Call) bool { return c.Method == "chat.postMessage" })
	ts := fmt.Sprintf("1700000000.%06d", i+1)
	form, err := url.ParseQuery(string(pressPayload(t, w.fake, warning, ts, "USYNTH", actTake, "")))
	if err != nil {
		t.Fatal(err)
	}
	key := "other/" + AlertStall
	jsonText := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	genuine, forged := jsonText(controlRef{Run: "other", Key: key}.encode()), jsonText(controlRef{Run: "synth", Key: key}.encode())
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

// TestSecurityRunsKeptToTheirChannels: a run whose allowed_channels keep it to its own channel is
// not answered about elsewhere, and not named there either: not in `runs` (with its channel and
// snooze), not in the list a refusal or a question back offers.
func TestSecurityRunsKeptToTheirChannels(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) {
		r.AllowedChannels = []string{"CSYNTH"}
	}, File: func(f *config.File) {
		secret := f.Runs[0]
		secret.Name, secret.Channel, secret.AllowedChannels = "skunkworks", "#skunkworks", []string{"CSKUNK"}
		f.Runs = append(f.Runs, secret)
	}})
	ctx := context.Background()
	for _, text := range []string{"runs", "ETA?", "ETA for synth-99k?", "status nosuchrun"} {
		rep := e.bot.Ask(ctx, Request{Text: text, Channel: "CSYNTH", User: "U222", Source: "mention"})
		if txt := rep.Message.Text(); strings.Contains(txt, "skunkworks") || strings.Contains(fmt.Sprint(rep.Data), "skunkworks") {
			t.Errorf("%q in synth's channel = %q (data %v); want no word of the run kept to another channel", text, txt, rep.Data)
		}
	}
	// Asked for by name, it is answered as a name nobody configured: no other answer confirms it exists.
	guessed := e.bot.Ask(ctx, Request{Text: "ETA for skunkworks?", Channel: "CSYNTH", User: "U222", Source: "mention"})
	unknown := e.bot.Ask(ctx, Request{Text: "ETA for skunkworkz?", Channel: "CSYNTH", User: "U222", Source: "mention"})
	if g, u := guessed.Message.Text(), strings.ReplaceAll(unknown.Message.Text(), "skunkworkz", "skunkworks"); g != u || !guessed.Refused {
		t.Errorf("ETA for the hidden run's name = %q; want the same refusal as a name nobody configured, %q", g, u)
	}
	if rep := e.bot.Ask(ctx, Request{Text: "runs", Channel: "CSKUNK", User: "U222", Source: "mention"}); !strings.Contains(rep.Message.Text(), "skunkworks") {
		t.Errorf("runs in its own channel = %q; want it listed", rep.Message.Text())
	}
	if rep := e.bot.Ask(ctx, Request{Text: "runs", Source: "console"}); !strings.Contains(rep.Message.Text(), "skunkworks") || !strings.Contains(rep.Message.Text(), "synth") {
		t.Errorf("runs at the console = %q; want every run", rep.Message.Text())
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
			dm, actLogs, controlRef{Run: "synth"}.encode(), i)
		w.post(t, "/slack/interactions", []byte("payload="+urlEscape(payload)), nil)
	}
	posts := w.fake.Wait(t, "chat.postMessage", 1)
	w.waitIdle()
	for _, c := range w.fake.Calls("chat.postMessage") {
		if ch := c.Form.Get("channel"); ch != "D0ADMIN" {
			t.Errorf("an App Home press answered in %s: %q; want answers in the presser's DM only", ch, c.Form.Get("text"))
		}
	}
	if !strings.Contains(posts[0].Form.Get("text"), "last log lines") {
		t.Errorf("the press from the DM = %q; want the log lines", posts[0].Form.Get("text"))
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
			actLogs, controlRef{Run: "synth"}.encode(), i)
		w.post(t, "/slack/interactions", []byte("payload="+urlEscape(payload)), nil)
	}
	w.waitIdle()
	for _, c := range append(w.fake.Calls("chat.postMessage"), w.fake.Calls("chat.postEphemeral")...) {
		if c.Form.Get("channel") == "C0GENERAL" {
			t.Errorf("a flood of App Home presses naming C0GENERAL posted there: %q; want nothing", c.Form.Get("text"))
		}
	}
}

// TestSecurityHiddenRunNamedToAChangeChangesNothing: an admin in one run's channel who names a run kept to
// other channels ("snooze 2h skunkworks") is refused as for a name nobody configured. The hidden name was
// dropped as an argument like any other word, so the command went to the channel's own run: synth's
// warnings were snoozed for a request about skunkworks.
func TestSecurityHiddenRunNamedToAChangeChangesNothing(t *testing.T) {
	e := newBotEnv(t, botOpts{Env: config.Env{Admins: []string{"UADMIN"}}, Run: func(r *config.Run) {
		r.Channel, r.AllowedChannels = "CSYNTH", []string{"CSYNTH"}
	}, File: func(f *config.File) {
		secret := f.Runs[0]
		secret.Name, secret.Channel, secret.AllowedChannels = "skunkworks", "CSKUNK", []string{"CSKUNK"}
		f.Runs = append(f.Runs, secret)
	}})
	ctx := context.Background()
	for _, text := range []string{"snooze 2h skunkworks", "runwatch snooze 2h skunkworks"} {
		rep := e.bot.Ask(ctx, Request{Text: text, Channel: "CSYNTH", User: "UADMIN", Source: "mention"})
		if _, snoozed := e.bot.mon.SnoozedUntil("synth"); snoozed || !rep.Refused {
			t.Errorf("%q in synth's channel = %q (refused %v), synth snoozed %v; want a refusal and nothing snoozed", text, rep.Message.Text(), rep.Refused, snoozed)
		}
	}
	rep := e.bot.Ask(ctx, Request{Text: "skunkworks", Command: "eta", Args: []string{"skunkworks"}, Channel: "CSYNTH", User: "U222", Source: "slash"})
	nobody := e.bot.Ask(ctx, Request{Text: "skunkworkz", Command: "eta", Args: []string{"skunkworkz"}, Channel: "CSYNTH", User: "U222", Source: "slash"})
	if g, u := rep.Message.Text(), strings.ReplaceAll(nobody.Message.Text(), "skunkworkz", "skunkworks"); g != u {
		t.Errorf("/eta naming the hidden run = %q; want the refusal of a name nobody configured, %q", g, u)
	}
}

// TestSecurityChannelIDLearnedFromASlashCommand: a run written as "#synth" with allowed_channels listing ids
// posts nothing until the name's id is known; a slash command from the channel (Slack signs its id and its
// name) teaches it, and the run's statuses and warnings may go there from then on. A command from another
// channel teaches nothing.
func TestSecurityChannelIDLearnedFromASlashCommand(t *testing.T) {
	e := newHTTPEnv(t, botOpts{Env: config.Env{AllowedChannels: []string{"CSYNTH"}}, Run: func(r *config.Run) { r.Channel = "#synth" }})
	run, _ := e.bot.mon.Config().RunByName("synth")
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

// TestSecurityAnswersQuoteNoPastedCredentials is the red team's: an answer that quotes the question back ("I
// don't know how to answer `…` yet", "I don't watch a run called `…`", "`…` is not a stage state", a path it
// refuses) quoted a token or a password pasted into it by mistake, and in a DM posted it again as a message of
// the bot's own. What the answers quote is redacted as log lines are.
func TestSecurityAnswersQuoteNoPastedCredentials(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	questions := []string{
		"my token is xoxb-1234-5678-Sekr3tSlackValue can you use it",
		"curl https://admin:Sekr3tPassw0rd@grafana.local/api?api_key=Sekr3tKeyValue",
		"HF_TOKEN=hf_Sekr3tHuggingFace0123456789",
		"ETA for sk-proj-Sekr3tOpenAIValue0123456789?",
		"runwatch sk-proj-Sekr3tOpenAIValue0123456789",
		"how much space is left on /data/api_key=Sekr3tInAPath?",
		"snooze api_key=Sekr3tSnoozeArg",
		"stage review password=Sekr3tStageWord",
		"stage api_key=Sekr3tStageName done",
		// A path inside the run's output that cannot be resolved (a file taken for a directory): the refusal
		// quoted it redacted, and the error after it quoted it whole.
		"how much space is left on " + e.Dir + "/out/gen.jsonl/api_key=Sekr3tInAPath?",
		"are we writing to " + e.Dir + "/out/gen.jsonl/hf_Sekr3tHuggingFace0123456789?",
	}
	if err := os.WriteFile(filepath.Join(e.Dir, "out", "gen.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, q := range questions {
		for _, src := range []string{"dm", "mention", "slash"} {
			rep := e.bot.Ask(context.Background(), Request{Text: q, Source: src, User: "UADMIN", Channel: "D0123"})
			blocks, _ := json.Marshal(rep.Message.Blocks())
			for where, s := range map[string]string{"text": rep.Message.Text(), "blocks": string(blocks)} {
				if strings.Contains(strings.ToLower(s), "sekr3") {
					t.Errorf("%s %q: answer %s = %s; want the pasted credential redacted", src, q, where, s)
				}
			}
		}
	}
}
