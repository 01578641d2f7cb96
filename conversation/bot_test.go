package conversation

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/redact"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/reports"
)

func TestAskIntents(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) {
		r.Protected = []string{filepath.Dir(r.Outputs[0]) + "/shared"}
		r.Plans = []config.Plan{{Name: "hidden-states", Target: r.Outputs[0], Tokens: config.Tokens{N: 25e6},
			Layers: config.Layers{List: []int{2, 30, 58}}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"}}
	}})
	ctx := context.Background()
	tests := []struct {
		text, intent string
		want         []string
		refused      bool
	}{
		{"ETA?", "eta", []string{"synth · ETA", "300 / 25,000"}, false},
		{"is it stuck?", "stuck", []string{"synth · progress"}, false},
		{"how fast are we going?", "throughput", []string{"synth · throughput"}, false},
		{"are we writing to the protected mount?", "writes", []string{"No", "to `" + e.Dir + "/shared`"}, false},
		{"where does the output go?", "where", []string{"Every output lands off the protected mounts", "/out"}, false},
		{"will the hidden states fit?", "fit", []string{"hidden-states", "1.08 TB"}, false},
		{"how much space is left on " + e.Dir + "/out?", "space", []string{"free of"}, false},
		{"how much space is left on /etc?", "space", []string{"isn't one of them", "/etc", "Add it to `watch:`"}, true},
		// A path asked about as a place output must not land is to be protected, not watched: watch: alone
		// neither answers "are we writing there?" as the asker means nor warns.
		{"are we writing to /etc?", "writes", []string{"isn't one of them", "add it to `protected:` in the run file"}, true},
		{"status", "status", []string{"synth · status", "Checklist"}, false},
		{"runs", "runs", []string{"`synth` in #synth"}, false},
		{"help", "help", []string{"runwatch help", "snooze"}, false},
		{"what is the meaning of life?", "unknown", []string{"I don't know how to answer", "ETA?"}, true},
		{"etaa?", "unknown", []string{"I don't know how to answer `etaa?` yet. Did you mean `eta?`", "ETA?"}, true},
		{"eta synth", "eta", []string{"synth · ETA"}, false},
		{"/storage", "storage", []string{"synth · storage", "hidden-states"}, false},
		{"why did the ETA move?", "why", []string{"synth · why the ETA moved", "Now:"}, false},
		{"are we on track?", "ontrack", []string{"synth · on track?"}, false},
		{"what's left to do?", "left", []string{"synth · what's left", "24,700 of 25,000 items left", "review"}, false},
		{"is the protected mount safe?", "safe", []string{"synth · protected mounts", "no output resolves inside it", e.Dir + "/shared"}, false},
		{"is /etc safe?", "safe", []string{"isn't one of them", "add it to `protected:` in the run file"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			rep := e.bot.Ask(ctx, Request{Text: tt.text, Source: "console"})
			if rep.Intent != tt.intent {
				t.Errorf("Ask(%q).Intent = %q; want %q", tt.text, rep.Intent, tt.intent)
			}
			text := rep.Message.Mrkdwn()
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("Ask(%q) = %q; want it to contain %q", tt.text, text, w)
				}
			}
			if rep.Refused != tt.refused {
				t.Errorf("Ask(%q).Refused = %v; want %v", tt.text, rep.Refused, tt.refused)
			}
		})
	}
}

func TestAskPicksTheRun(t *testing.T) {
	e := newBotEnv(t, botOpts{File: func(f *config.File) {
		second := f.Runs[0]
		second.Name, second.Channel = "extract", "#extract"
		f.Runs = append(f.Runs, second)
	}})
	ctx := context.Background()
	tests := []struct {
		req  Request
		want string // run name, or "" when the bot must ask
	}{
		{Request{Text: "ETA?"}, ""},
		{Request{Text: "ETA for extract?"}, "extract"},
		{Request{Text: "ETA?", Channel: "#synth"}, "synth"},
		{Request{Text: "ETA?", Run: "extract"}, "extract"},
		{Request{Text: "eta extract"}, "extract"},
		{Request{Text: "ETA for synth?", Run: "extract"}, ""}, // --run and the question disagree: ask
		{Request{Text: "ETA for EXTRACT?", Run: "extract"}, "extract"},
	}
	for _, tt := range tests {
		rep := e.bot.Ask(ctx, tt.req)
		if rep.Run != tt.want {
			t.Errorf("Ask(%+v).Run = %q; want %q (%q)", tt.req, rep.Run, tt.want, rep.Message.Mrkdwn())
		}
		if tt.want == "" && !strings.Contains(rep.Message.Mrkdwn(), "Which run?") {
			t.Errorf("Ask(%+v) = %q; want it to ask which run", tt.req, rep.Message.Mrkdwn())
		}
	}
	// --run nope and "ETA for nope-2?" are the same mistake: one wording for both.
	rep := e.bot.Ask(ctx, Request{Text: "ETA?", Run: "nope"})
	if !rep.Refused || !strings.Contains(rep.Message.Mrkdwn(), "I don't watch a run called") {
		t.Errorf("unknown run = %+v", rep)
	}
}

// TestUnknownSubcommandListsCommands: "/runwatch frob" and "runwatch frob" name the subcommands, which is
// what helps someone typing one; a question nobody understood still gets the example questions.
func TestUnknownSubcommandListsCommands(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	ctx := context.Background()
	for _, req := range []Request{{Text: "frob", Source: "slash"}, {Text: "runwatch frob", Source: "mention"}, {Text: "<@U111> runwatch frob", Source: "mention"}} {
		rep := e.bot.Ask(ctx, req)
		if txt := rep.Message.Text(); rep.Intent != "unknown" || !strings.Contains(txt, "frob is not a runwatch command") || !strings.Contains(txt, "eta, why") {
			t.Errorf("%s %q = %q; want frob named as no command, with the commands", req.Source, req.Text, txt)
		}
	}
	if txt := e.bot.Ask(ctx, Request{Text: "frob", Source: "mention"}).Message.Text(); !strings.Contains(txt, "Try one of these") {
		t.Errorf("mention \"frob\" = %q; want the example questions", txt)
	}
}

// A mistyped subcommand keeps the typo's fix: "/runwatch stauts" is answered "Did you mean status?", as
// "stauts" alone is. The list of commands had replaced the suggestion, on the slash command most of all.
func TestUnknownSubcommandSuggestsTheFix(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	for _, req := range []Request{{Text: "stauts", Source: "slash"}, {Text: "runwatch stauts", Source: "mention"}} {
		rep := e.bot.Ask(context.Background(), req)
		if txt := rep.Message.Text(); !strings.Contains(txt, "Did you mean status?") || !strings.Contains(txt, "not a runwatch command") {
			t.Errorf("%s %q = %q; want the fix suggested beside the commands", req.Source, req.Text, txt)
		}
	}
}

// TestUnknownQuotesTheQuestion: plain text set the question bare, "I don't know how to answer banana
// pancake yet.", where Slack sets it as code; plain text quotes it, Slack keeps the code span.
func TestUnknownQuotesTheQuestion(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	tests := []struct{ text, plain, mrkdwn string }{
		{"banana pancake", `I don't know how to answer "banana pancake" yet. Try one of these:`, "I don't know how to answer `banana pancake` yet. Try one of these:"},
		{"etaa?", `I don't know how to answer "etaa?" yet. Did you mean "eta?" Try one of these:`, "I don't know how to answer `etaa?` yet. Did you mean `eta?` Try one of these:"},
		{"what is *this* <b>?", `I don't know how to answer "what is *this* <b>?" yet.`, "I don't know how to answer `what is *this* &lt;b&gt;?` yet."},
	}
	for _, tt := range tests {
		rep := e.bot.Ask(context.Background(), Request{Text: tt.text, Source: "console"})
		if got := rep.Message.Text(); !strings.Contains(got, tt.plain) || !strings.Contains(got, "Say help for everything I can do.") {
			t.Errorf("Ask(%q).Message.Text() = %q; want it to contain %q", tt.text, got, tt.plain)
		}
		if got := rep.Message.Mrkdwn(); !strings.Contains(got, tt.mrkdwn) {
			t.Errorf("Ask(%q).Message.Mrkdwn() = %q; want it to contain %q", tt.text, got, tt.mrkdwn)
		}
	}
}

// botOpts shape a botEnv.
type botOpts = testkit.Options

// botEnv is a bot over testkit's world: one run, "synth", with real probes.
type botEnv struct {
	*testkit.World
	bot *Bot
}

func newBotEnv(t testing.TB, o botOpts) *botEnv {
	t.Helper()
	w := testkit.NewWorld(t, o)
	return &botEnv{World: w, bot: NewBot(w.Mon, w.Loc, w.Env)}
}

func TestAskUnknownRunSaysSo(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	ctx := context.Background()
	for _, req := range []Request{
		{Text: "ETA for synth-99k?", Source: "console"},
		{Text: "how is synth-99k doing? status of synth-99k", Source: "mention", Channel: "C1"},
		{Command: "eta", Text: "synth-99k", Source: "slash", Channel: "C1"},
		{Text: "/runwatch why synth-99k", Source: "mention", Channel: "C1"},
	} {
		rep := e.bot.Ask(ctx, req)
		text := rep.Message.Text()
		if !rep.Refused || !strings.Contains(text, "I don't watch a run called synth-99k") || !strings.Contains(text, "synth") {
			t.Errorf("Ask(%+v) = %q (refused %v); want a refusal naming synth-99k and the runs", req, text, rep.Refused)
		}
	}
	if rep := e.bot.Ask(ctx, Request{Text: "ETA for synth?", Source: "console"}); rep.Refused {
		t.Errorf("ETA for the configured run was refused: %q", rep.Message.Text())
	}
}

// A /runwatch subcommand is a command even when its name starts sentences ("left", "why", "safe").
func TestSlashSubcommandsThatStartSentences(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	ctx := context.Background()
	for _, tc := range []struct{ text, intent string }{
		{"left synth", "left"}, {"why", "why"}, {"safe", "safe"}, {"ontrack synth", "ontrack"},
	} {
		if rep := e.bot.Ask(ctx, Request{Text: tc.text, Source: "slash", Channel: "C1"}); rep.Intent != tc.intent {
			t.Errorf("/runwatch %s: intent %q; want %q (%q)", tc.text, rep.Intent, tc.intent, rep.Message.Text())
		}
	}
	// In a mention the same words start a sentence.
	if rep := e.bot.Ask(ctx, Request{Text: "why is it stuck?", Source: "mention", Channel: "C1"}); rep.Intent != "stuck" {
		t.Errorf("mention 'why is it stuck?': intent %q; want stuck", rep.Intent)
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

// panicRuns is a monitor whose run statuses panic, as a probe or renderer might on input nobody foresaw.
type panicRuns struct{ Runs }

func (panicRuns) RunStatus(context.Context, string, monitor.Need) (reports.RunStatus, error) {
	panic("a renderer met xoxb-1234567890-abcdefghij in a log line")
}

// TestAskPanicIsAReply: an answer that panics inside Bot.Ask, the one place every transport asks (mentions,
// slash commands, buttons, the console, bot ask), is a reply saying it failed, refused so that bot ask exits
// 1, logged redacted; the next question is answered. Before, a mention got no reply at all and the console
// and bot ask stopped with Go's crash report.
func TestAskPanicIsAReply(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	var lb testkit.LogBuffer
	b := NewBot(panicRuns{e.Mon}, time.UTC, config.Env{})
	b.Log = redact.Logger(lb.Logger(), redact.New())
	rep := b.Ask(context.Background(), Request{Text: "ETA?", Source: "console"})
	if !rep.Refused || rep.Intent != "failed" || !strings.Contains(rep.Message.Text(), "That answer failed with an internal error") {
		t.Errorf("a panicking answer = %+v; want the failure said, refused", rep)
	}
	if out := lb.String(); !strings.Contains(out, "an answer failed with a panic") || !strings.Contains(out, "xoxb-[redacted]") ||
		strings.Contains(out, "1234567890") {
		t.Errorf("log:\n%s\nwant the panic logged, its token redacted", out)
	}
	if rep := b.Ask(context.Background(), Request{Text: "help", Source: "console"}); rep.Refused {
		t.Errorf("help after a failed answer = %+v; want it answered", rep)
	}
}

func TestShareKey(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	b := e.bot
	eta := Request{Command: "eta", Channel: "C1", User: "U222", Source: "slash"}
	k1, ok1 := b.shareKey(eta, b.prepare(eta))
	other := eta
	other.User = "U333"
	k2, ok2 := b.shareKey(other, b.prepare(other))
	if !ok1 || !ok2 || k1 != k2 {
		t.Errorf("shareKey(/eta by two non-admins) = %q %v, %q %v; want one shared key", k1, ok1, k2, ok2)
	}
	admin := eta
	admin.User = "UADMIN"
	if k, _ := b.shareKey(admin, b.prepare(admin)); k == k1 {
		t.Errorf("an admin's /eta shares a non-admin's key; want them apart (refusals differ)")
	}
	elsewhere := eta
	elsewhere.Channel = "C2"
	if k, _ := b.shareKey(elsewhere, b.prepare(elsewhere)); k == k1 {
		t.Errorf("/eta in another channel shares the key; want them apart (allow-lists differ)")
	}
	for _, text := range []string{"snooze 2h", "unsnooze", "stage review done"} {
		req := Request{Text: text, Channel: "C1", User: "UADMIN", Source: "slash"}
		if k, ok := b.shareKey(req, b.prepare(req)); ok {
			t.Errorf("shareKey(%q) = %q; want a mutating command never shared", text, k)
		}
	}
}

// TestHeldOutPhrasingsAnswerWhatTheyName: everyday phrasings that no phrase of the table matches, about a
// protected mount, an output, a plan or a run. Each gets what it names answered (the mount's verdict, the
// output's writes, the plan's fit, the run's status), never "I don't know how to answer". The phrasings were
// not written into the table to make this pass; the second half was written after the fallback, to see it
// hold on phrasings it was not tuned on.
func TestHeldOutPhrasingsAnswerWhatTheyName(t *testing.T) {
	b := NewBot(testkit.ReplyRuns(t), time.UTC, config.Env{})
	tests := []struct{ q, intent, names string }{
		{"is anything landing in /shared right now", "safe", "/shared"},
		{"what's up with synth", "status", "synth · status"},
		{"anything going on in /shared?", "safe", "/shared"},
		{"/shared?", "safe", "/shared"},
		{"shared ok?", "safe", "/shared"},
		{"synth?", "status", "synth · status"},
		{"tell me about synth", "status", "synth · status"},
		{"how's synth looking", "status", "synth · status"},
		{"what about /data/runs/gen-0412", "writes", "/data/runs/gen-0412"},
		{"and hidden-states?", "fit", "hidden-states"},
		{"any news on synth", "status", "synth · status"},
		{"what's happening with /shared", "safe", "/shared"},
		{"is /shared being hit", "safe", "/shared"},
		{"what's the deal with gen-0412", "writes", "/data/runs/gen-0412"},
		{"how are things on /shared", "safe", "/shared"},
		{"what's up?", "status", "synth · status"},
		// Written after the fallback.
		{"yo, /shared?", "safe", "/shared"},
		{"shared looking ok?", "safe", "/shared"},
		{"what's synth doing", "status", "synth · status"},
		{"hows synth", "status", "synth · status"},
		{"anything on gen-0412?", "writes", "/data/runs/gen-0412"},
		{"/data/runs/gen-0412 ok?", "writes", "/data/runs/gen-0412"},
		{"is hidden-states going to make it", "fit", "hidden-states"},
		{"quick check on /shared", "safe", "/shared"},
		{"anything weird on shared", "safe", "/shared"},
		{"all good with synth?", "status", "synth · status"},
		{"how is /shared doing", "safe", "/shared"},
	}
	for _, tc := range tests {
		rep := b.Ask(context.Background(), Request{Text: tc.q, Source: "console"})
		text := rep.Message.Text()
		if rep.Intent != tc.intent || rep.Refused || strings.Contains(text, "I don't know how to answer") || !strings.Contains(text, tc.names) {
			t.Errorf("Ask(%q) = %s %q; want %s naming %q", tc.q, rep.Intent, text, tc.intent, tc.names)
		}
	}
	// What names nothing the run has is still not guessed at.
	for _, q := range []string{"banana pancake", "what is the meaning of life"} {
		if rep := b.Ask(context.Background(), Request{Text: q, Source: "console"}); rep.Intent != "unknown" {
			t.Errorf("Ask(%q) = %s; want unknown", q, rep.Intent)
		}
	}
}
