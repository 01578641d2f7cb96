package slackapp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/posts"
	"runwatch/reports"
	"runwatch/state"
)

// slackBlock is the part of a Block Kit block the tests look at.
type slackBlock struct {
	Type     string `json:"type"`
	BlockID  string `json:"block_id"`
	Elements []struct {
		Type     string `json:"type"`
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
		Options  []struct {
			Value string `json:"value"`
		} `json:"options"`
	} `json:"elements"`
	Accessory *struct {
		ActionID string `json:"action_id"`
	} `json:"accessory"`
}

func parseBlocks(t testing.TB, raw string) []slackBlock {
	t.Helper()
	var bs []slackBlock
	if err := json.Unmarshal([]byte(raw), &bs); err != nil {
		t.Fatalf("blocks are not JSON: %v\n%s", err, raw)
	}
	return bs
}

// controlsOf returns the runwatch actions block of a message: its block_id, and its buttons and
// menu entries as "action_id=value".
func controlsOf(t testing.TB, raw string) (string, []string) {
	t.Helper()
	for _, b := range parseBlocks(t, raw) {
		if b.Type != "actions" || !strings.HasPrefix(b.BlockID, conversation.RefPrefix) {
			continue
		}
		var out []string
		for _, e := range b.Elements {
			if e.Type == "overflow" {
				for _, o := range e.Options {
					out = append(out, "menu="+o.Value)
				}
				continue
			}
			out = append(out, e.ActionID+"="+e.Value)
		}
		return b.BlockID, out
	}
	return "", nil
}

var pressSeq atomic.Int64

// pressPayload is a block_actions payload as Slack sends it for a press on msg, a chat call the
// fake recorded whose message ts is ts: container, channel, user, the message with its blocks, and
// one action of the message's runwatch actions block (action "menu" picks value from the menu).
func pressPayload(t testing.TB, f *testkit.Slack, msg testkit.Call, ts, user, action, value string) []byte {
	t.Helper()
	blockID, _ := controlsOf(t, msg.Form.Get("blocks"))
	if blockID == "" {
		t.Fatalf("the message has no runwatch buttons: %s", msg.Form.Get("blocks"))
	}
	actionTS := fmt.Sprintf("1700000100.%06d", pressSeq.Add(1)) // each press is a new one
	a := map[string]any{"type": "button", "action_id": action, "block_id": blockID, "value": value, "action_ts": actionTS,
		"text": map[string]any{"type": "plain_text", "text": action}}
	if action == reports.MenuID {
		a = map[string]any{"type": "overflow", "action_id": action, "block_id": blockID, "action_ts": actionTS,
			"selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": value}, "value": value}}
	}
	channel := testkit.ChannelID(msg.Form.Get("channel"))
	p := map[string]any{
		"type": "block_actions", "api_app_id": "A111", "token": "legacy-verification-token", "trigger_id": "1.2.3",
		"user":      map[string]any{"id": user, "username": "someone", "team_id": "T111"},
		"team":      map[string]any{"id": "T111", "domain": "test"},
		"container": map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
		"channel":   map[string]any{"id": channel, "name": strings.TrimPrefix(msg.Form.Get("channel"), "#")},
		"message": map[string]any{"type": "message", "ts": ts, "user": "U111", "bot_id": "B111", "text": msg.Form.Get("text"),
			"blocks": json.RawMessage(msg.Form.Get("blocks"))},
		"response_url": f.ResponseURL("press"),
		"actions":      []any{a},
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(url.Values{"payload": {string(b)}}.Encode())
}

// postStatus fires the scheduled status of e's first run once and returns the post and its ts.
func postStatus(t *testing.T, e *httpEnv) (testkit.Call, string) {
	t.Helper()
	dir, err := state.Open(e.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := posts.NewScheduler(e.bot, e.app.api, dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	from := len(e.fake.Calls(""))
	if err := sched.Fire(context.Background(), e.File.Runs[0].Name, e.Mon.Now()); err != nil {
		t.Fatalf("scheduled status: %v", err)
	}
	i, c := e.fake.WaitMatch(t, from, "the status post", func(c testkit.Call) bool { return c.Method == "chat.postMessage" })
	return c, fmt.Sprintf("1700000000.%06d", i+1)
}

func TestStatusPostHasButtons(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	post, _ := postStatus(t, e)
	ref, got := controlsOf(t, post.Form.Get("blocks"))
	want := []string{"snooze=1h", "stage_done=review", "details=", "menu=snooze:30m", "menu=snooze:4h", "menu=snooze:1d", "menu=logs"}
	if !slices.Equal(got, want) {
		t.Errorf("status buttons = %v; want %v", got, want)
	}
	if r, ok := conversation.ParseRef(ref); !ok || r.Run != "synth" || r.Key != "" {
		t.Errorf("buttons' block_id %q = %+v; want the run synth and no warning", ref, r)
	}
	if !strings.Contains(post.Form.Get("text"), "synth · status") {
		t.Errorf("status post fallback text = %q; want the status", post.Form.Get("text"))
	}
}

// waitIdle waits until the app has answered everything in flight.
func (e *httpEnv) waitIdle() { e.app.Wait(20 * time.Second) }

// TestPressFloodIsLimited: presses count against the presser's rate limit, as questions do. An admin pressing
// Snooze 1 h twenty times at once gets at most the burst answered (each an edit of the message), is told once
// to wait, and the rest are dropped; another admin's press still goes through.
func TestPressFloodIsLimited(t *testing.T) {
	e := newHTTPEnv(t, botOpts{Env: config.Env{Admins: []string{"UADMIN", "UOTHER"}}})
	frozen := time.Now()
	e.app.limiter.now = func() time.Time { return frozen } // no refill: the limit's counts are exact
	post, ts := postStatus(t, e)
	for range 2 * defaultUserBurst {
		e.post(t, "/slack/interactions", pressPayload(t, e.fake, post, ts, "UADMIN", conversation.ActSnooze, "1h"), nil)
	}
	e.waitIdle()
	updates := len(e.fake.Calls("chat.update"))
	if updates == 0 || updates > defaultUserBurst {
		t.Errorf("%d presses in a burst made %d message edits; want between 1 and the burst of %d", 2*defaultUserBurst, updates, defaultUserBurst)
	}
	var told int
	for _, c := range e.fake.Calls("chat.postEphemeral") {
		if strings.Contains(c.Form.Get("text"), "Press again in") && c.Form.Get("user") == "UADMIN" {
			told++
		}
	}
	if told != 1 {
		t.Errorf("the flooding presser was told to wait %d times; want once", told)
	}
	e.post(t, "/slack/interactions", pressPayload(t, e.fake, post, ts, "UOTHER", conversation.ActUnsnooze, ""), nil)
	e.waitIdle()
	if _, ok := e.Mon.SnoozedUntil("synth"); ok {
		t.Errorf("another admin's Unsnooze after the flood did not go through")
	}
}

func TestPressSnoozeAsAdmin(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	post, ts := postStatus(t, e)
	resp := e.post(t, "/slack/interactions", pressPayload(t, e.fake, post, ts, "UADMIN", conversation.ActSnooze, "1h"), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("signed press = %d; want 200", resp.StatusCode)
	}
	upd := e.fake.Wait(t, "chat.update", 1)[0]
	e.waitIdle()
	until, ok := e.Mon.SnoozedUntil("synth")
	if !ok || until.Sub(e.Mon.Now()) < 59*time.Minute || until.Sub(e.Mon.Now()) > 61*time.Minute {
		t.Fatalf("after an admin's Snooze 1 h: snoozed %v until %v; want about an hour", ok, until)
	}
	if upd.Form.Get("channel") != "CSYNTH" || upd.Form.Get("ts") != ts {
		t.Errorf("chat.update of %s/%s; want the pressed message CSYNTH/%s", upd.Form.Get("channel"), upd.Form.Get("ts"), ts)
	}
	checkBlockKitLimits(t, "status after a press", []byte(upd.Form.Get("blocks")), 50)
	if !strings.Contains(upd.Form.Get("text"), "warnings snoozed until") {
		t.Errorf("updated status = %q; want it to say the warnings are snoozed", upd.Form.Get("text"))
	}
	if _, btns := controlsOf(t, upd.Form.Get("blocks")); !slices.Contains(btns, "unsnooze=") || slices.Contains(btns, "snooze=1h") {
		t.Errorf("buttons after snoozing = %v; want Unsnooze instead of Snooze 1 h", btns)
	}
	if n := len(e.fake.Calls("chat.postEphemeral")); n != 0 {
		t.Errorf("ephemeral messages after a press that worked = %d; want none (the message shows it)", n)
	}

	// A message Slack will not let runwatch edit: the presser is told the change holds.
	w := e.fake
	w.FailNext("chat.update", testkit.Failure{Status: http.StatusOK, Body: `{"ok":false,"error":"cant_update_message"}`})
	w.RespCode.Store(http.StatusNotFound)
	e.post(t, "/slack/interactions", pressPayload(t, e.fake, post, ts, "UADMIN", conversation.ActUnsnooze, ""), nil)
	eph := e.fake.Wait(t, "chat.postEphemeral", 1)[0]
	e.waitIdle()
	w.RespCode.Store(0)
	if txt := eph.Form.Get("text"); !strings.Contains(txt, "back on") || !strings.Contains(txt, "could not be updated") {
		t.Errorf("after a failed update the presser got %q; want the change confirmed", txt)
	}
	if _, ok := e.Mon.SnoozedUntil("synth"); ok {
		t.Errorf("Unsnooze did not hold when the message could not be updated")
	}
	e.post(t, "/slack/interactions", pressPayload(t, e.fake, post, ts, "UADMIN", conversation.ActSnooze, "1h"), nil)
	e.fake.Wait(t, "chat.update", 3)
	e.waitIdle()
	until, _ = e.Mon.SnoozedUntil("synth")

	// A restart: a new process over the same state directory still has the snooze.
	again := newBotEnv(t, botOpts{StateDir: e.StateDir})
	if u, ok := again.Mon.SnoozedUntil("synth"); !ok || !u.Equal(until) {
		t.Errorf("after a restart snoozed %v until %v; want until %v", ok, u, until)
	}

	// From the menu: another duration.
	e.post(t, "/slack/interactions", pressPayload(t, e.fake, post, ts, "UADMIN", reports.MenuID, "snooze:4h"), nil)
	e.fake.Wait(t, "chat.update", 2)
	e.waitIdle()
	if u, _ := e.Mon.SnoozedUntil("synth"); u.Sub(e.Mon.Now()) < 3*time.Hour+59*time.Minute {
		t.Errorf("after Snooze 4 h from the menu: until %v; want four hours on", u)
	}
}

func TestPressRefusedForNonAdmin(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	post, ts := postStatus(t, e)
	for _, p := range []struct{ action, value string }{{conversation.ActSnooze, "1h"}, {conversation.ActStage, "review"}, {reports.MenuID, "snooze:1d"}} {
		e.post(t, "/slack/interactions", pressPayload(t, e.fake, post, ts, "U222", p.action, p.value), nil)
	}
	eph := e.fake.Wait(t, "chat.postEphemeral", 3)
	e.waitIdle()
	for _, c := range eph {
		if c.Form.Get("user") != "U222" || c.Form.Get("channel") != "CSYNTH" || !strings.Contains(c.Form.Get("text"), "only runwatch admins") {
			t.Errorf("refusal = %v; want an ephemeral 'only runwatch admins' to U222 in CSYNTH", c.Form)
		}
	}
	if _, ok := e.Mon.SnoozedUntil("synth"); ok {
		t.Errorf("a non-admin's press snoozed the run")
	}
	rs, _ := e.Mon.RunStatus(context.Background(), "synth", monitor.Need{Stages: true})
	for _, s := range rs.Stages {
		if s.Name == "review" && s.State == reports.StageDone {
			t.Errorf("a non-admin's press marked review done")
		}
	}
	if n := len(e.fake.Calls("chat.update")); n != 0 {
		t.Errorf("chat.update after refused presses = %d; want none", n)
	}
}

func TestPressForgedOrReplayedRefused(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	post, ts := postStatus(t, e)
	body := pressPayload(t, e.fake, post, ts, "UADMIN", conversation.ActSnooze, "1h")
	now := strconv.FormatInt(time.Now().Unix(), 10)
	stale := strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)
	for name, h := range map[string]http.Header{
		"unsigned":         {},
		"wrong secret":     {"X-Slack-Request-Timestamp": {now}, "X-Slack-Signature": {testkit.Sign("not-the-secret", now, body)}},
		"stale":            {"X-Slack-Request-Timestamp": {stale}, "X-Slack-Signature": {testkit.Sign(e.secret, stale, body)}},
		"signed elsewhere": {"X-Slack-Request-Timestamp": {now}, "X-Slack-Signature": {testkit.Sign(e.secret, now, append([]byte("x"), body...))}},
	} {
		if resp := e.post(t, "/slack/interactions", body, h); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s press = %d; want 401", name, resp.StatusCode)
		}
	}
	h := http.Header{"X-Slack-Request-Timestamp": {now}, "X-Slack-Signature": {testkit.Sign(e.secret, now, body)}}
	if resp := e.post(t, "/slack/interactions", body, h); resp.StatusCode != http.StatusOK {
		t.Fatalf("the genuine press = %d; want 200", resp.StatusCode)
	}
	if resp := e.post(t, "/slack/interactions", body, h); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the same press replayed = %d; want 401", resp.StatusCode)
	}
	// Slack's own retry of the press: signed afresh, the same action; acknowledged, done once.
	n, _ := strconv.ParseInt(now, 10, 64)
	retry := strconv.FormatInt(n-2, 10) // a timestamp, so a signature, the genuine press did not have
	if resp := e.post(t, "/slack/interactions", body, http.Header{"X-Slack-Request-Timestamp": {retry},
		"X-Slack-Signature": {testkit.Sign(e.secret, retry, body)}}); resp.StatusCode != http.StatusOK {
		t.Errorf("Slack's retry of the press = %d; want 200", resp.StatusCode)
	}
	e.waitIdle()
	if n := len(e.fake.Calls("chat.update")); n != 1 {
		t.Errorf("chat.update calls = %d; want 1 (the genuine press only)", n)
	}
	if l := e.logs.String(); !strings.Contains(l, "reason=replayed") || !strings.Contains(l, "reason=bad_signature") {
		t.Errorf("log does not show the refusals:\n%s", l)
	}
}

func TestPressFromAChannelNotAllowed(t *testing.T) {
	e := newHTTPEnv(t, botOpts{Env: config.Env{Admins: []string{"UADMIN"}, AllowedChannels: []string{"C0ELSEWHERE"}}})
	// The scheduler posts nothing to a channel the allow-lists leave out: this is a status posted
	// there before they were narrowed.
	rs, err := e.Mon.RunStatus(context.Background(), "synth", monitor.All)
	if err != nil {
		t.Fatal(err)
	}
	from := len(e.fake.Calls(""))
	if _, _, err := e.app.api.Post(context.Background(), "#synth", "", e.bot.StatusMessage(rs, false)); err != nil {
		t.Fatal(err)
	}
	i, post := e.fake.WaitMatch(t, from, "the status post", func(c testkit.Call) bool { return c.Method == "chat.postMessage" })
	ts := fmt.Sprintf("1700000000.%06d", i+1)
	e.post(t, "/slack/interactions", pressPayload(t, e.fake, post, ts, "UADMIN", conversation.ActSnooze, "1h"), nil)
	eph := e.fake.Wait(t, "chat.postEphemeral", 1)
	e.waitIdle()
	if !strings.Contains(eph[0].Form.Get("text"), "allowed_channels") {
		t.Errorf("press outside the allowed channels = %q; want the allow-list refusal", eph[0].Form.Get("text"))
	}
	if _, ok := e.Mon.SnoozedUntil("synth"); ok {
		t.Errorf("a press from a channel not allowed snoozed the run")
	}
}

func TestPressMarksStageWithSpaces(t *testing.T) {
	const stage = "Training script updated"
	e := newHTTPEnv(t, botOpts{Run: func(r *config.Run) {
		r.Stages = append(r.Stages, config.Stage{Name: stage, Check: "manual"})
	}})
	// review comes first and is pending too: mark it by slash command, quoted and not.
	for _, text := range []string{`stage review done`} {
		if rep := e.bot.Ask(context.Background(), conversation.Request{Text: text, Source: "console"}); rep.Refused || rep.Ephemeral {
			t.Fatalf("%s = %q", text, rep.Message.Text())
		}
	}
	post, ts := postStatus(t, e)
	if _, btns := controlsOf(t, post.Form.Get("blocks")); !slices.Contains(btns, "stage_done="+stage) {
		t.Fatalf("buttons = %v; want Mark %q done", btns, stage)
	}
	e.post(t, "/slack/interactions", pressPayload(t, e.fake, post, ts, "UADMIN", conversation.ActStage, stage), nil)
	upd := e.fake.Wait(t, "chat.update", 1)[0]
	e.waitIdle()
	if !strings.Contains(upd.BlocksText(t), ":white_check_mark: *"+stage+"*") {
		t.Errorf("updated checklist = %s; want %q done", upd.BlocksText(t), stage)
	}
	if _, btns := controlsOf(t, upd.Form.Get("blocks")); slices.ContainsFunc(btns, func(b string) bool { return strings.HasPrefix(b, "stage_done=") }) {
		t.Errorf("buttons after the last manual stage is done = %v; want no Mark … done", btns)
	}
	// The same by slash command, quoted (straight and curly) and unquoted.
	for _, text := range []string{`stage "Training script updated" todo`, `stage “Training script updated” done`, `stage Training script updated failed`} {
		rep := e.bot.Ask(context.Background(), conversation.Request{Text: text, Source: "console"})
		if rep.Refused || rep.Ephemeral || !strings.Contains(rep.Message.Text(), stage) {
			t.Errorf("%s = %q; want the stage marked", text, rep.Message.Text())
		}
	}
	rs, _ := e.Mon.RunStatus(context.Background(), "synth", monitor.Need{Stages: true})
	for _, s := range rs.Stages {
		if s.Name == stage && s.State != reports.StageFailed {
			t.Errorf("stage %q = %s after the last slash command; want failed", stage, s.State)
		}
	}
}

func TestPressLastLogLines(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	post, ts := postStatus(t, e)
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("step %d <!channel> `tick` <https://evil.example|click> %s", i, strings.Repeat("é", 400)))
	}
	lines = append(lines, "export SLACK_BOT_TOKEN="+testkit.BotToken.Reveal())
	e.WriteLogText(t, strings.Join(lines, "\n")+"\n")
	e.post(t, "/slack/interactions", pressPayload(t, e.fake, post, ts, "U222", reports.MenuID, "logs"), nil)
	eph := e.fake.Wait(t, "chat.postEphemeral", 1)[0]
	e.waitIdle()
	if eph.Form.Get("user") != "U222" {
		t.Errorf("log lines shown to %q; want the presser U222 only", eph.Form.Get("user"))
	}
	text := eph.BlocksText(t)
	for _, bad := range []string{"<!channel>", "<https://"} {
		if strings.Contains(text, bad) {
			t.Errorf("log lines carry live markup %q:\n%s", bad, text)
		}
	}
	if strings.Contains(text, testkit.BotToken.Reveal()) || !strings.Contains(text, "SLACK_BOT_TOKEN=xoxb-[redacted]") {
		t.Errorf("a token in the log reached Slack:\n%s", text)
	}
	if !strings.Contains(text, "step 39 &lt;!channel&gt;") || strings.Contains(text, "step 9 ") {
		t.Errorf("log lines = %s; want the newest lines, escaped", text)
	}
	var blocks []struct {
		Type string
		Text *struct{ Text string }
	}
	json.Unmarshal([]byte(eph.Form.Get("blocks")), &blocks)
	for _, b := range blocks {
		if b.Type == "section" && b.Text != nil && len([]rune(b.Text.Text)) > 3000 {
			t.Errorf("log section is %d characters; Slack's limit is 3,000", len([]rune(b.Text.Text)))
		}
	}
	if n := len(e.fake.Calls("chat.update")); n != 0 {
		t.Errorf("showing log lines updated the message %d times; want none", n)
	}
}

func urlEscape(s string) string { return url.QueryEscape(s) }

// warningEnv is an alerter and its claims delivering to the fake Slack, as the sampler does.
type warningEnv struct {
	*httpEnv
	alerter *posts.Alerter
	claims  *posts.Claims
	dir     *state.Dir
}

func newWarningEnv(t *testing.T) *warningEnv { return newWarningEnvWith(t, botOpts{}) }

func newWarningEnvWith(t *testing.T, o botOpts) *warningEnv {
	t.Helper()
	e := newHTTPEnv(t, o)
	dir, err := state.Open(e.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	w := &warningEnv{httpEnv: e, alerter: posts.NewAlerter(time.UTC, func(string) string { return "#synth" }), claims: posts.NewClaims(dir, nil), dir: dir}
	e.app.Claims = w.claims
	return w
}

// step is one sampler tick at at: evaluate, shape the posts by the claims, deliver them.
func (w *warningEnv) step(t *testing.T, at time.Time, evs ...monitor.Evaluation) []posts.Post {
	t.Helper()
	snoozed := func(run string) bool { _, ok := w.Mon.SnoozedUntil(run); return ok }
	sent := w.claims.Apply(w.alerter, w.alerter.Process(evs, at, snoozed), at, snoozed)
	deliver := Deliver(w.bot, w.app.api, nil, 0)
	for _, p := range sent {
		ref, err := deliver(context.Background(), p)
		if err != nil {
			t.Fatalf("deliver %s: %v", p.Kind, err)
		}
		w.alerter.Delivered(p, ref)
	}
	return sent
}

// TestPressTakeReadOnly: a serve that only answers (a console holds the state directory) keeps no claims; "I'm on
// it" says why it cannot be taken here, not that the warning has cleared.
func TestPressTakeReadOnly(t *testing.T) {
	why := "`bot console` (pid 42) holds the state directory and this `bot serve` only reads it until the console exits"
	w := newWarningEnvWith(t, botOpts{ReadOnly: why})
	w.step(t, w.Mon.Now(), testkit.Eval("synth", testkit.Stalled))
	i, warning := w.fake.WaitMatch(t, 0, "the warning", func(c testkit.Call) bool { return c.Method == "chat.postMessage" })
	w.post(t, "/slack/interactions", pressPayload(t, w.fake, warning, fmt.Sprintf("1700000000.%06d", i+1), "UADMIN", conversation.ActTake, ""), nil)
	eph := w.fake.Wait(t, "chat.postEphemeral", 1)[0]
	w.waitIdle()
	if txt := eph.Form.Get("text"); !strings.Contains(txt, "pid 42") || strings.Contains(txt, "cleared") {
		t.Errorf("I'm on it on a read-only serve = %q; want why it only reads, not that the warning cleared", txt)
	}
	if _, ok := w.claims.Get("synth/" + posts.AlertStall); ok {
		t.Errorf("a read-only serve took the warning")
	}
}

func TestPressTakeWarning(t *testing.T) {
	w := newWarningEnv(t)
	t0 := w.Mon.Now()
	if sent := w.step(t, t0, testkit.Eval("synth", testkit.Stalled)); len(sent) != 1 || sent[0].Kind != posts.AlertStall {
		t.Fatalf("first stall = %v; want one warning", kinds(sent))
	}
	i, warning := w.fake.WaitMatch(t, 0, "the warning", func(c testkit.Call) bool { return c.Method == "chat.postMessage" })
	ts := fmt.Sprintf("1700000000.%06d", i+1)
	if _, btns := controlsOf(t, warning.Form.Get("blocks")); !slices.Equal(btns, []string{"take=", "snooze=1h", "menu=snooze:30m", "menu=snooze:4h", "menu=snooze:1d", "menu=logs"}) {
		t.Errorf("warning buttons = %v; want I'm on it, Snooze 1 h and the menu with Last log lines", btns)
	}

	// Not an admin: refused, nothing taken.
	w.post(t, "/slack/interactions", pressPayload(t, w.fake, warning, ts, "U222", conversation.ActTake, ""), nil)
	w.fake.Wait(t, "chat.postEphemeral", 1)
	w.waitIdle()
	if _, ok := w.claims.Get("synth/" + posts.AlertStall); ok {
		t.Fatalf("a non-admin took the warning")
	}

	// An admin: the warning says who is on it, and its I'm on it button is gone.
	w.post(t, "/slack/interactions", pressPayload(t, w.fake, warning, ts, "UADMIN", conversation.ActTake, ""), nil)
	upd := w.fake.Wait(t, "chat.update", 1)[0]
	w.waitIdle()
	if upd.Form.Get("ts") != ts || !strings.Contains(upd.BlocksText(t), ":eyes: <@UADMIN> is on it since") || !strings.Contains(upd.BlocksText(t), "synth · stalled") {
		t.Errorf("updated warning = %s; want the warning with who is on it", upd.BlocksText(t))
	}
	checkBlockKitLimits(t, "taken warning", []byte(upd.Form.Get("blocks")), 50)
	if _, btns := controlsOf(t, upd.Form.Get("blocks")); !slices.Equal(btns[:2], []string{"snooze=1h", "logs="}) {
		t.Errorf("buttons of a taken warning = %v; want Snooze 1 h and Last log lines, no I'm on it", btns)
	}
	// Snooze from the warning: the run is snoozed, the warning says so and offers Unsnooze.
	w.post(t, "/slack/interactions", pressPayload(t, w.fake, upd, ts, "UADMIN", reports.MenuID, "snooze:30m"), nil)
	snoozedMsg := w.fake.Wait(t, "chat.update", 2)[1]
	w.waitIdle()
	if txt := snoozedMsg.BlocksText(t); !strings.Contains(txt, ":zzz: synth's warnings snoozed until") || !strings.Contains(txt, ":eyes: <@UADMIN> is on it") {
		t.Errorf("warning after Snooze 30 min = %s; want who is on it and the snooze", txt)
	}
	if _, btns := controlsOf(t, snoozedMsg.Form.Get("blocks")); btns[0] != "unsnooze=" {
		t.Errorf("buttons of a snoozed warning = %v; want Unsnooze first", btns)
	}
	if strings.Count(snoozedMsg.BlocksText(t), "is on it") != 1 {
		t.Errorf("the state line was repeated instead of replaced: %s", snoozedMsg.BlocksText(t))
	}
	w.post(t, "/slack/interactions", pressPayload(t, w.fake, snoozedMsg, ts, "UADMIN", conversation.ActUnsnooze, ""), nil)
	w.fake.Wait(t, "chat.update", 3)
	w.waitIdle()
	if _, ok := w.Mon.SnoozedUntil("synth"); ok {
		t.Fatalf("Unsnooze from the warning left the run snoozed")
	}
	// The claim survives a restart.
	if cl, ok := posts.NewClaims(w.dir, nil).Get("synth/" + posts.AlertStall); !ok || cl.User != "UADMIN" {
		t.Errorf("claims after a restart = %+v, %v; want UADMIN's", cl, ok)
	}

	// Still stalled: no repeat of the warning; the owner is reminded after the cooldown, again
	// after another one, and the resolution names them.
	if sent := w.step(t, t0.Add(30*time.Minute), testkit.Eval("synth", testkit.Stalled)); len(sent) != 0 {
		t.Errorf("within the reminder interval: %v; want nothing", kinds(sent))
	}
	for _, at := range []time.Duration{62 * time.Minute, 2*time.Hour + 3*time.Minute} {
		sent := w.step(t, t0.Add(at), testkit.Eval("synth", testkit.Stalled))
		if len(sent) != 1 || sent[0].Kind != posts.AlertStall+"_reminder" || sent[0].ThreadRef != ts ||
			!strings.Contains(sent[0].Message.Mrkdwn(), "<@UADMIN>, this is still not resolved") {
			t.Errorf("at +%s: %+v; want one reminder to UADMIN in the warning's thread", at, sent)
		}
	}
	sent := w.step(t, t0.Add(3*time.Hour), testkit.Eval("synth", nil))
	if len(sent) != 2 || sent[0].Edit != ts || sent[1].ThreadRef != ts {
		t.Errorf("resolution = %+v; want the warning edited and a reply in its thread", sent)
	}
	for _, p := range sent {
		if !strings.Contains(p.Message.Mrkdwn(), "<@UADMIN> was on it") {
			t.Errorf("resolution %q; want it to name who was on it", p.Message.Mrkdwn())
		}
	}
	if _, ok := w.claims.Get("synth/" + posts.AlertStall); ok {
		t.Errorf("the claim outlived its warning")
	}
	if open := w.claims.Open("synth"); len(open) != 0 {
		t.Errorf("open warnings after the resolution = %v; want none", open)
	}
}

// statusPost has the scheduler post synth's status into the Socket Mode fake and returns the post and the ts
// it was given, for a test to press its buttons.
func (e *socketEnv) statusPost(t *testing.T) (testkit.Call, string) {
	t.Helper()
	dir, _ := state.Open(e.StateDir)
	sched, err := posts.NewScheduler(e.bot, e.app.api, dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Fire(context.Background(), "synth", e.Mon.Now()); err != nil {
		t.Fatal(err)
	}
	i, post := e.fake.WaitMatch(t, 0, "the status post", func(c testkit.Call) bool { return c.Method == "chat.postMessage" })
	return post, fmt.Sprintf("1700000000.%06d", i+1)
}

func TestSocketModeButtonPress(t *testing.T) {
	e := newSocketEnv(t, botOpts{})
	e.ws.waitFor(t, "the connection", func() bool { return e.ws.connections() == 1 })
	post, ts := e.statusPost(t)
	form, _ := url.ParseQuery(string(pressPayload(t, e.fake, post, ts, "UADMIN", conversation.ActSnooze, "1h")))
	envelope := func(id string) []byte {
		return []byte(`{"envelope_id":"` + id + `","type":"interactive","accepts_response_payload":false,"payload":` + form.Get("payload") + `}`)
	}
	e.ws.send(envelope("env-press"))
	e.ws.waitAck(t, "env-press")
	e.fake.Wait(t, "chat.update", 1)
	e.ws.send(envelope("env-press")) // redelivered: acknowledged, not answered again
	e.ws.waitFor(t, "the second ack", func() bool { return len(e.ws.acksOf("env-press")) == 2 })
	e.app.Wait(10 * time.Second)
	if _, ok := e.Mon.SnoozedUntil("synth"); !ok {
		t.Errorf("an admin's press over Socket Mode did not snooze the run")
	}
	if n := len(e.fake.Calls("chat.update")); n != 1 {
		t.Errorf("chat.update calls = %d; want 1 (the redelivered envelope is not answered)", n)
	}
}

// Snooze pressed on a burst's post (its buttons name no single warning) snoozes the run and edits the post's
// buttons, keeping its list. The press took the post for a status and drew the run's status over the list.
func TestPressOnBurstKeepsItsText(t *testing.T) {
	w := newWarningEnv(t)
	var sent []posts.Post
	for i := range 4 {
		sent = append(sent, posts.Post{Run: "synth", Channel: "#synth", Kind: posts.AlertProtected, Key: fmt.Sprintf("synth/%s/n%d", posts.AlertProtected, i),
			Message: reports.Message{Title: "synth · protected write", Sections: []string{fmt.Sprintf("On host n%d, 1 process is writing to protected /shared.", i)}}})
	}
	burst := posts.Coalesce(sent)
	if len(burst) != 1 {
		t.Fatalf("coalesce(4) = %d posts; want 1", len(burst))
	}
	if _, err := Deliver(w.bot, w.app.api, nil, 0)(context.Background(), burst[0]); err != nil {
		t.Fatal(err)
	}
	i, post := w.fake.WaitMatch(t, 0, "the burst", func(c testkit.Call) bool { return c.Method == "chat.postMessage" })
	ts := fmt.Sprintf("1700000000.%06d", i+1)
	w.post(t, "/slack/interactions", pressPayload(t, w.fake, post, ts, "UADMIN", conversation.ActSnooze, "1h"), nil)
	upd := w.fake.Wait(t, "chat.update", 1)[0]
	w.waitIdle()
	if _, ok := w.Mon.SnoozedUntil("synth"); !ok {
		t.Fatalf("Snooze 1 h on the burst did not snooze the run")
	}
	txt := upd.BlocksText(t)
	if upd.Form.Get("ts") != ts || !strings.Contains(txt, "4 at once") || !strings.Contains(txt, "On host n3") || !strings.Contains(txt, ":zzz: synth's warnings snoozed until") {
		t.Errorf("the burst after Snooze 1 h = %s; want its list kept and the snooze said", txt)
	}
	if _, btns := controlsOf(t, upd.Form.Get("blocks")); len(btns) == 0 || btns[0] != "unsnooze=" {
		t.Errorf("buttons of the snoozed burst = %v; want Unsnooze first", btns)
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
