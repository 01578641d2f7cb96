package slackapp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/posts"
	"runwatch/reports"
)

// lifecycleEnv is a sampler over a metrics endpoint that goes down and up, on a clock the test steps a
// second at a time, delivering to the fake Slack.
type lifecycleEnv struct {
	*botEnv
	ep    *testkit.FaultEndpoint
	fake  *testkit.Slack
	clock *testkit.Clock
	api   *API
	logs  *testkit.LogBuffer
	s     *posts.Sampler
	t0    time.Time
	at    time.Duration
}

func newLifecycleEnv(t *testing.T, run func(r *config.Run)) *lifecycleEnv {
	return newLifecycleEnvWith(t, botOpts{Run: run})
}

func newLifecycleEnvWith(t *testing.T, o botOpts) *lifecycleEnv {
	t.Helper()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	e := &lifecycleEnv{ep: testkit.NewFaultEndpoint(t), fake: testkit.NewSlack(t), clock: testkit.NewClock(t0), t0: t0}
	o.Metrics, o.Clock, o.Timeout = []string{e.ep.URL()}, e.clock, 500*time.Millisecond
	e.botEnv = newBotEnv(t, o)
	e.logs = &testkit.LogBuffer{}
	e.api, _ = newTestAPI(t, e.fake, e.logs.Logger(), nil)
	e.api.gate.now = e.clock.Now
	e.s = posts.NewSampler(e.bot, time.Second, slog.New(slog.DiscardHandler))
	e.s.Deliver = Deliver(e.bot, e.api, nil, 0)
	return e
}

// seconds samples once a second for n seconds, the endpoint up or down.
func (e *lifecycleEnv) seconds(n int, up bool) {
	if up {
		e.ep.Up()
	} else {
		e.ep.Down()
	}
	for range n {
		e.clock.Set(e.t0.Add(e.at))
		e.s.Tick(context.Background())
		e.at += time.Second
	}
}

// warning is the source-down warning's post, its ts, and the edits of it since.
func (e *lifecycleEnv) warning(t *testing.T) (testkit.Call, []testkit.Call) {
	t.Helper()
	var first *testkit.Call
	var edits []testkit.Call
	for _, c := range e.fake.Calls("") {
		switch {
		case first == nil && c.Method == "chat.postMessage" && c.Form.Get("thread_ts") == "" && strings.Contains(c.Form.Get("text"), "source down"):
			first = &c
		case first != nil && c.Method == "chat.update" && c.Form.Get("ts") == first.TS:
			edits = append(edits, c)
		}
	}
	if first == nil {
		t.Fatalf("no source-down warning was posted: %v", e.fake.Methods())
	}
	return *first, edits
}

// hasButtons reports whether a chat call's blocks carry runwatch's actions.
func hasButtons(t *testing.T, c testkit.Call) bool {
	t.Helper()
	ref, btns := controlsOf(t, c.Form.Get("blocks"))
	return ref != "" || len(btns) > 0
}

// TestWarningEditedWhenItResolves is a channel flapping once (its source down 8 s, up 8 s): the warning's
// own message is edited to say it resolved, when, after how long, with its buttons gone; the thread hears it
// too.
func TestWarningEditedWhenItResolves(t *testing.T) {
	e := newLifecycleEnv(t, nil)
	e.seconds(8, false)
	e.seconds(8, true)
	w, edits := e.warning(t)
	if !hasButtons(t, w) {
		t.Fatalf("the warning had no buttons to begin with")
	}
	if len(edits) != 1 {
		t.Fatalf("edits of the warning = %d (%v); want one, to resolved", len(edits), e.fake.Methods())
	}
	text := edits[0].BlocksText(t)
	if !strings.Contains(text, "(resolved)") || !strings.Contains(text, "*Resolved* at") || !strings.Contains(text, "after 8 s") || !strings.Contains(text, "is failing") {
		t.Errorf("edited warning = %s; want it resolved after 8 s, its own text kept", text)
	}
	if hasButtons(t, edits[0]) {
		t.Errorf("the resolved warning kept its buttons: %s", edits[0].Form.Get("blocks"))
	}
	checkBlockKitLimits(t, "resolved warning", []byte(edits[0].Form.Get("blocks")), 50)
	var replies []string
	for _, c := range e.fake.Calls("chat.postMessage") {
		if c.Form.Get("thread_ts") == w.TS {
			replies = append(replies, c.Form.Get("text"))
		}
	}
	if len(replies) != 1 || !strings.Contains(replies[0], "Resolved after 8 s") {
		t.Errorf("thread replies = %q; want the resolution once", replies)
	}
}

// TestResolutionBroadcast: with broadcast_resolved, the resolution in the thread is sent to the channel too.
func TestResolutionBroadcast(t *testing.T) {
	e := newLifecycleEnv(t, func(r *config.Run) { r.BroadcastResolved = true })
	e.seconds(3, false)
	e.seconds(1, true)
	w, _ := e.warning(t)
	calls := e.fake.Calls("chat.postMessage")
	last := calls[len(calls)-1]
	if last.Form.Get("thread_ts") != w.TS || last.Form.Get("reply_broadcast") != "true" {
		t.Errorf("resolution = thread %q reply_broadcast %q; want it in the warning's thread, broadcast", last.Form.Get("thread_ts"), last.Form.Get("reply_broadcast"))
	}
	// Without the key, it stays in the thread.
	e = newLifecycleEnv(t, nil)
	e.seconds(3, false)
	e.seconds(1, true)
	calls = e.fake.Calls("chat.postMessage")
	if b := calls[len(calls)-1].Form.Get("reply_broadcast"); b == "true" {
		t.Errorf("resolution broadcast without broadcast_resolved")
	}
}

// TestFlappingMinute is a source up 5 s, down 5 s, for a minute: flapping is declared at its second
// recovery, in the warning's own message, and the minute costs at most 6 posts and edits in all.
func TestFlappingMinute(t *testing.T) {
	t.Parallel()
	e := newLifecycleEnv(t, nil)
	for range 6 {
		e.seconds(5, false)
		e.seconds(5, true)
	}
	w, edits := e.warning(t)
	calls := 0
	for _, c := range e.fake.Calls("") {
		if c.Method == "chat.postMessage" || c.Method == "chat.update" {
			calls++
		}
	}
	if calls > 6 {
		t.Errorf("posts and edits in a minute of flapping = %d (%v); want at most 6", calls, e.fake.Methods())
	}
	if len(edits) == 0 || !strings.Contains(edits[len(edits)-1].BlocksText(t), "Flapping") {
		t.Fatalf("the warning's last edit = %v; want it to say it flaps", edits)
	}
	if !hasButtons(t, edits[len(edits)-1]) {
		t.Errorf("a flapping warning lost its buttons: it is not over")
	}
	t.Logf("figure: a source up 5 s, down 5 s for a minute (1 s samples): %d posts and edits (the warning %s, %d edits of it)", calls, w.TS, len(edits))
}

// TestExpiredWarningLosesItsButtons: an ETA-shift warning is news for its cooldown; when it is forgotten its
// message is edited so that no button acts on it any more.
func TestExpiredWarningLosesItsButtons(t *testing.T) {
	w := newWarningEnv(t)
	t0 := w.Mon.Now()
	shifted := testkit.Eval("synth", nil)
	shifted.Shift = &reports.Shift{Reason: "throughput fell 30%"}
	w.step(t, t0, shifted)
	i, warning := w.fake.WaitMatch(t, 0, "the shift warning", func(c testkit.Call) bool { return c.Method == "chat.postMessage" })
	ts := fmt.Sprintf("1700000000.%06d", i+1)
	if _, btns := controlsOf(t, warning.Form.Get("blocks")); len(btns) == 0 || btns[0] != "take=" {
		t.Fatalf("shift warning buttons = %v; want I'm on it first", btns)
	}
	w.step(t, t0.Add(10*time.Minute), testkit.Eval("synth", nil))
	if n := len(w.fake.Calls("chat.update")); n != 0 {
		t.Fatalf("edits within the cooldown = %d; want none", n)
	}
	w.step(t, t0.Add(31*time.Minute), testkit.Eval("synth", nil))
	upd := w.fake.Calls("chat.update")
	if len(upd) != 1 || upd[0].Form.Get("ts") != ts {
		t.Fatalf("edits after the cooldown = %v; want the warning's", w.fake.Methods())
	}
	if hasButtons(t, upd[0]) || !strings.Contains(upd[0].BlocksText(t), "throughput fell 30%") {
		t.Errorf("expired warning = %s; want its text, no buttons", upd[0].Form.Get("blocks"))
	}
	// A press that was on its way meanwhile: told it cleared, and the message loses its buttons again.
	w.post(t, "/slack/interactions", pressPayload(t, w.fake, warning, ts, "UADMIN", conversation.ActTake, ""), nil)
	w.fake.Wait(t, "chat.postEphemeral", 1)
	w.waitIdle()
	if upd := w.fake.Calls("chat.update"); len(upd) != 2 || hasButtons(t, upd[1]) {
		t.Errorf("after a press on the stale message: %v; want it edited without buttons", w.fake.Methods())
	}
}

// TestCriticalWarningsPage: a run's page: mentions its users, user groups and @here on a critical warning
// (a source down), when it is posted; not on its resolution, not on a warning that is not critical (an ETA
// move), not on the scheduled status. A run without a page: of its own pages whom the top level names.
func TestCriticalWarningsPage(t *testing.T) {
	e := newLifecycleEnv(t, func(r *config.Run) {
		r.Page = &config.Page{Critical: []config.Mention{"U0ONCALL", "S0SRE", "@here"}}
	})
	e.seconds(3, false)
	e.seconds(1, true)
	w, edits := e.warning(t)
	if text := w.Form.Get("text"); !strings.HasPrefix(text, "*synth · source down*\n<@U0ONCALL> <!subteam^S0SRE> <!here>\n") {
		t.Errorf("critical warning = %q; want the mentions under its title (the notification's text)", text)
	}
	if blocks := w.BlocksText(t); !strings.Contains(blocks, "<@U0ONCALL> <!subteam^S0SRE> <!here>") {
		t.Errorf("critical warning's blocks = %s; want the mentions", blocks)
	}
	for _, c := range append(e.fake.Calls("chat.postMessage")[1:], edits...) {
		if strings.Contains(c.Form.Get("text"), "U0ONCALL") || strings.Contains(c.Form.Get("text"), "<!here>") {
			t.Errorf("a follow-up pages: %q", c.Form.Get("text"))
		}
	}
	// An ETA move is not critical.
	shift := testkit.Eval("synth", nil)
	shift.Shift = &reports.Shift{Reason: "throughput fell"}
	for _, p := range e.s.Alerter.Process([]monitor.Evaluation{shift}, e.t0.Add(time.Hour), func(string) bool { return false }) {
		if len(p.Mentions) > 0 {
			t.Errorf("%s pages %v; want only critical warnings to", p.Kind, p.Mentions)
		}
	}
	// Nor is the scheduled status.
	sched, err := posts.NewScheduler(e.bot, NewAPI(APIOptions{Token: testkit.BotToken, APIURL: e.fake.APIURL()}), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Fire(context.Background(), "synth", e.t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	calls := e.fake.Calls("")
	if last := calls[len(calls)-1]; !strings.Contains(last.Form.Get("text"), "synth · status") || strings.Contains(last.Form.Get("text"), "<!here>") {
		t.Errorf("scheduled status = %q; want it without mentions", last.Form.Get("text"))
	}

	// The top level's page: for a run without its own.
	top := newLifecycleEnvWith(t, botOpts{File: func(f *config.File) {
		f.Page = &config.Page{ProbeDown: []config.Mention{"S0INFRA"}, Critical: []config.Mention{"@here"}}
	}})
	top.seconds(3, false)
	if w, _ := top.warning(t); !strings.Contains(w.Form.Get("text"), "\n<!subteam^S0INFRA>\n") {
		t.Errorf("source down under the top-level page = %q; want the kind's own list, S0INFRA", w.Form.Get("text"))
	}
}

// TestChannelNeverInvited is a run whose channel never invited the bot: Slack answers not_in_channel. The
// bot says so once (the log, the terminal of bot serve, the App Home: "invite @runwatch to #synth") and
// holds the channel's posts back: at most 3 attempts in 25 s of 1 s sampling, where every sample tried.
// Once invited, the next attempt lands, and posts go on.
func TestChannelNeverInvited(t *testing.T) {
	t.Parallel()
	e := newLifecycleEnv(t, nil)
	var told []string
	e.api.OnChannelHeld = func(channel, advice string) { told = append(told, channel+": "+advice) }
	refused := testkit.Failure{Status: 200, Body: `{"ok":false,"error":"not_in_channel"}`}
	for range 100 {
		e.fake.FailNext("chat.postMessage", refused)
	}
	sched, err := posts.NewScheduler(e.bot, e.api, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.s.OnSample = sched.RetryPending
	sched.Fire(context.Background(), "synth", e.t0) // the first status: refused
	e.seconds(25, false)                            // and the source down: a warning every sample
	attempts := len(e.fake.Calls("chat.postMessage"))
	if attempts > 3 {
		t.Errorf("attempts to post in a channel that never invited the bot, in 25 s of 1 s samples = %d; want at most 3", attempts)
	}
	if len(told) != 1 || !strings.Contains(told[0], "invite @runwatch to #synth (/invite @runwatch there)") {
		t.Errorf("told on the terminal %q; want once: invite @runwatch to #synth", told)
	}
	if n := strings.Count(e.logs.String(), "invite @runwatch to #synth"); n != 1 {
		t.Errorf("the log says to invite the bot %d times; want once:\n%s", n, e.logs.String())
	}
	// The App Home says it first.
	app := NewApp(context.Background(), e.bot, e.api, Identity{UserID: "U111"}, nil, e.logs.Logger())
	app.Claims = posts.NewClaims(nil, nil)
	var text []string
	for _, b := range app.homeBlocks(nil, e.t0) {
		if sb, ok := b.(*slack.SectionBlock); ok && sb.Text != nil {
			text = append(text, sb.Text.Text)
		}
	}
	if len(text) == 0 || !strings.Contains(text[0], "runwatch cannot post in #synth (not_in_channel): invite @runwatch to #synth") {
		t.Errorf("App Home sections = %q; want the channel to invite the bot to, first", text)
	}
	// Invited: the next attempt lands, and the channel is no longer held.
	e.fake.ClearFailures("chat.postMessage")
	e.seconds(60, false)
	if n := len(e.fake.Calls("chat.postMessage")); n <= attempts {
		t.Fatalf("posts after the bot was invited = %d; want the held warning and status posted", n-attempts)
	}
	if held := e.api.HeldChannels(); len(held) != 0 {
		t.Errorf("held channels after a post landed = %v; want none", held)
	}
	if !strings.Contains(e.logs.String(), "runwatch posts in #synth again") {
		t.Errorf("the log does not say the channel takes posts again")
	}
	t.Logf("figure: a channel that never invited the bot, 25 s of 1 s samples with a warning due each: %d attempts (50 before: the status and the warning each sample); said once", attempts)
}
