package handlers

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"runwatch/config"
	"runwatch/internal/testkit"
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
		{"what is the meaning of life?", "unknown", []string{"I don't know how to answer", "ETA?"}, false},
		{"etaa?", "unknown", []string{"I don't know how to answer `etaa?` yet. Did you mean `eta?`", "ETA?"}, false},
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

func TestAskMutatingCommandsNeedAdmins(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	ctx := context.Background()
	rep := e.bot.Ask(ctx, Request{Text: "snooze 2h", User: "UOTHER", Channel: "C1", Source: "mention"})
	if !rep.Refused || !rep.Ephemeral || !strings.Contains(rep.Message.Mrkdwn(), "only runwatch admins") {
		t.Errorf("non-admin snooze = %+v; want a polite ephemeral refusal", rep)
	}
	if _, snoozed := e.Mon.SnoozedUntil("synth"); snoozed {
		t.Fatal("a refused snooze snoozed the run")
	}
	rep = e.bot.Ask(ctx, Request{Text: "snooze 2h", User: "UADMIN", Source: "mention"})
	if rep.Refused || !strings.Contains(rep.Message.Mrkdwn(), "snoozed for 2 h") {
		t.Errorf("admin snooze = %q", rep.Message.Mrkdwn())
	}
	if _, snoozed := e.Mon.SnoozedUntil("synth"); !snoozed {
		t.Error("admin snooze did not take")
	}
	for _, bad := range []string{"snooze forever", "snooze 30d", "snooze"} {
		rep = e.bot.Ask(ctx, Request{Text: bad, User: "UADMIN", Source: "mention"})
		if !rep.Ephemeral {
			t.Errorf("Ask(%q) = %q; want an ephemeral usage answer", bad, rep.Message.Mrkdwn())
		}
	}
	rep = e.bot.Ask(ctx, Request{Text: "stage review done", User: "UADMIN", Source: "mention"})
	if !strings.Contains(rep.Message.Mrkdwn(), "marked done") {
		t.Errorf("stage mark = %q", rep.Message.Mrkdwn())
	}
	st := e.bot.Ask(ctx, Request{Text: "status", Source: "console"}).Message.Text()
	if !strings.Contains(st, "[done] review — marked done by UADMIN") {
		t.Errorf("status after the mark = %q", st)
	}
	rep = e.bot.Ask(ctx, Request{Text: "stage nope done", User: "UADMIN", Source: "mention"})
	if !strings.Contains(rep.Message.Mrkdwn(), "no stage") {
		t.Errorf("unknown stage = %q", rep.Message.Mrkdwn())
	}
	// The console and the CLI are the operator at the machine: no admin check.
	rep = e.bot.Ask(ctx, Request{Text: "unsnooze", Source: "console"})
	if rep.Refused {
		t.Errorf("console unsnooze refused: %q", rep.Message.Mrkdwn())
	}
	// After the admin's snooze they are back on; with nothing snoozed it says so instead.
	if txt := rep.Message.Text(); !strings.Contains(txt, "are back on") {
		t.Errorf("unsnooze after a snooze = %q; want them back on", txt)
	}
	if txt := e.bot.Ask(ctx, Request{Text: "unsnooze", Source: "console"}).Message.Text(); !strings.Contains(txt, "were not snoozed: they are on") {
		t.Errorf("unsnooze with nothing snoozed = %q; want it to say they were not snoozed", txt)
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

// A run with neither a log nor metrics: each answer leads with its own subject, so the throughput answer does
// not open with "ETA: unknown".
func TestNoProgressSourceAnswers(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) { r.Log, r.Metrics = "", nil }})
	tests := []struct{ text, lead string }{
		{"ETA?", "ETA: unknown — run synth has no progress source."},
		{"how fast are we going?", "Throughput: unknown — run synth has no progress source."},
		{"is it stuck?", "(~) Can't tell — run synth has no progress source."},
	}
	for _, tt := range tests {
		text := e.bot.Ask(context.Background(), Request{Text: tt.text, Source: "console"}).Message.Text()
		if _, body, _ := strings.Cut(text, "\n"); !strings.HasPrefix(body, tt.lead) {
			t.Errorf("Ask(%q) = %q; want its answer to start %q", tt.text, text, tt.lead)
		}
		// A run read from Prometheus is as good a source as a log or a scrape: the advice names all three.
		if !strings.Contains(text, "prometheus:") {
			t.Errorf("Ask(%q) = %q; want the advice to name prometheus: beside log: and metrics:", tt.text, text)
		}
	}
}

func TestConsole(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	in := strings.NewReader("ETA?\n\n" + strings.Repeat("x", maxConsoleLine+10) + "\nhelp\r\nnonsense here\n")
	var out bytes.Buffer
	c := &Console{Bot: e.bot, In: in, Out: &out}
	if err := c.Run(context.Background()); err != nil {
		t.Fatalf("Console.Run = %v; want nil at EOF", err)
	}
	got := out.String()
	for _, want := range []string{"synth · ETA", "longer than 64 KiB", "runwatch help", "I don't know how to answer"} {
		if !strings.Contains(got, want) {
			t.Errorf("console output lacks %q:\n%s", want, got)
		}
	}
	// Plain text, not mrkdwn: no emphasis markers or entities.
	for _, bad := range []string{"*synth", "&lt;", ":white_check_mark:"} {
		if strings.Contains(got, bad) {
			t.Errorf("console output contains mrkdwn %q", bad)
		}
	}
}

// "will the disk fill?" names the capacity plan that does not fit on the output's mount: the pace
// of the writes so far says nothing about the hidden states to come.
func TestAskWillTheDiskFillNamesPlans(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) {
		// 10^15 tokens × 43 kB: no disk holds it.
		r.Plans = []config.Plan{{Name: "hidden-states", Target: r.Outputs[0], Tokens: config.Tokens{N: 1e15},
			Layers: config.Layers{List: []int{2, 30, 58}}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"}}
	}})
	rep := e.bot.Ask(context.Background(), Request{Text: "will the disk fill?", Source: "console"})
	text := rep.Message.Mrkdwn()
	if rep.Intent != "space" || !strings.Contains(text, "Plan hidden-states does not fit here: it needs 43.0 EB") {
		t.Errorf("Ask(will the disk fill?) = %s %q; want the space answer naming the plan that does not fit", rep.Intent, text)
	}
}

// A chart asked for before there is history says who takes the samples: in the console it is the
// console itself, not a bot serve the user may not run.
func TestChartWithoutHistorySaysWhoSamples(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	for _, c := range []struct{ source, want string }{
		{"console", "this console takes one every sampling interval"},
		{"cli", "`bot serve` (or `bot console`) takes one every sampling interval"},
	} {
		text := e.bot.Ask(context.Background(), Request{Text: "chart", Source: c.source}).Message.Mrkdwn()
		if !strings.Contains(text, "not enough history") || !strings.Contains(text, c.want) {
			t.Errorf("Ask(chart) from %s = %q; want it to say %q", c.source, text, c.want)
		}
	}
}

// bot ask against a run read only from /metrics has one sample and no elapsed time: the ETA is
// unknown, and the answer says what would give it one (a bot that samples), not only that a rate
// needs a second sample.
func TestAskOneShotETASaysWhoSamples(t *testing.T) {
	srv := testkit.VLLM(t)
	e := newBotEnv(t, botOpts{Metrics: []string{srv.URL + "/metrics"}, NoLogFile: true, Run: func(r *config.Run) {
		r.Log, r.Total = "", 25000
	}})
	rep := e.bot.Ask(context.Background(), Request{Text: "ETA?", Source: "cli"})
	text := rep.Message.Text()
	if !strings.Contains(text, "ETA: unknown") || !strings.Contains(text, "start bot serve") {
		t.Errorf("Ask(ETA?) from the command line, one sample = %q; want the unknown ETA and how to get one (start bot serve)", text)
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

// TestPlanQuestionsLeadWithFinding: "will it fit?" is answered Yes or No; "what's the plan?" and
// "capacity?" are not yes-or-no questions, and led with "No — 2 of 2 plans do not fit." all the same.
func TestPlanQuestionsLeadWithFinding(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) {
		// Far more than any disk holds: neither plan fits wherever the test runs.
		r.Plans = []config.Plan{
			{Name: "hidden-states", Target: r.Outputs[0], Tokens: config.Tokens{N: 25e9},
				Layers: config.Layers{List: []int{2, 30, 58}}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"},
			{Name: "all-layers", Target: r.Outputs[0], Tokens: config.Tokens{N: 25e9},
				Layers: config.Layers{All: true}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"},
		}
	}})
	tests := []struct{ text, lead string }{
		{"what's the plan?", ":red_circle: *Neither plan fits.*"},
		{"capacity?", ":red_circle: *Neither plan fits.*"},
		{"plans", ":red_circle: *Neither plan fits.*"},
		{"will it fit?", ":red_circle: *No* — 2 of 2 plans do not fit."},
		{"is there enough space?", ":red_circle: *No* — 2 of 2 plans do not fit."},
		{"are the plans ok?", ":red_circle: *No* — 2 of 2 plans do not fit."},
	}
	for _, tt := range tests {
		rep := e.bot.Ask(context.Background(), Request{Text: tt.text, Source: "console"})
		if rep.Intent != "fit" || len(rep.Message.Sections) == 0 || rep.Message.Sections[0] != tt.lead {
			t.Errorf("Ask(%q) = %s %q; want the fit answer led by %q", tt.text, rep.Intent, rep.Message.Sections, tt.lead)
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
