package conversation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"runwatch/config"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

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
	if !strings.Contains(st, "[done] review — marked done by @UADMIN") {
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

func TestBotAllowedChannels(t *testing.T) {
	e := newBotEnv(t, botOpts{
		Env: config.Env{AllowedChannels: []string{"C0ENV"}, Admins: []string{"UADMIN"}},
		File: func(f *config.File) {
			f.AllowedChannels = []string{"#ops"}
			f.Runs[0].AllowedChannels = []string{"#synth"}
			f.Runs = append(f.Runs, config.Run{Name: "extract", Channel: "#extract", Log: f.Runs[0].Log})
		},
	})
	e.bot.LearnChannel("#synth", "C0SYNTH")
	e.bot.LearnChannel("#extract", "C0EXTRACT")
	tests := []struct {
		name    string
		req     Request
		refused bool
		run     string
	}{
		{"the run's channel, by learned id", Request{Text: "ETA?", Channel: "C0SYNTH", User: "U1", Source: "mention"}, false, "synth"},
		{"the environment's channel", Request{Text: "ETA for synth?", Channel: "C0ENV", User: "U1", Source: "mention"}, false, "synth"},
		{"a top-level channel by name", Request{Text: "ETA for synth?", Channel: "C0OPS", ChannelName: "ops", User: "U1", Source: "slash"}, false, "synth"},
		{"another channel", Request{Text: "ETA?", Channel: "C0RANDOM", User: "U1", Source: "mention"}, true, ""},
		{"a channel named like an allowed id", Request{Text: "ETA for synth?", Channel: "C0RANDOM", ChannelName: "c0env", User: "U1", Source: "slash"}, true, ""},
		{"extract's channel is not on synth's list", Request{Text: "ETA for synth?", Channel: "C0EXTRACT", User: "U1", Source: "mention"}, true, ""},
		{"a DM from a user", Request{Text: "ETA for synth?", Channel: "D1", User: "U1", Source: "dm"}, true, ""},
		{"a DM from an admin", Request{Text: "ETA for synth?", Channel: "D1", User: "UADMIN", Source: "dm"}, false, "synth"},
		{"the console has no channel", Request{Text: "ETA for synth?", Source: "console"}, false, "synth"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := e.bot.Ask(context.Background(), tc.req)
			if rep.Refused != tc.refused || (!tc.refused && rep.Run != tc.run) {
				t.Errorf("Ask(%+v) = refused %v, run %q (%s); want refused %v, run %q", tc.req, rep.Refused, rep.Run, rep.Message.Text(), tc.refused, tc.run)
			}
			if tc.refused && (!rep.Ephemeral || !strings.Contains(rep.Message.Text(), "allowed_channels")) {
				t.Errorf("refusal = %q (ephemeral %v); want a polite ephemeral refusal", rep.Message.Text(), rep.Ephemeral)
			}
		})
	}
	refused := 0
	for _, tc := range tests {
		if tc.refused {
			refused++
		}
	}
	if !t.Failed() {
		t.Logf("figure: %d requests from channels and DMs: %d outside the allow-lists refused (ephemeral, naming allowed_channels), %d answered", len(tests), refused, len(tests)-refused)
	}
}
