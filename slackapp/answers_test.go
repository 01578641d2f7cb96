package slackapp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/reports"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

func TestUserLimiter(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := newUserLimiter()
	l.now = func() time.Time { return now }
	for i := range defaultUserBurst {
		if ok, _, _ := l.allow("U1"); !ok {
			t.Fatalf("question %d of a burst refused", i+1)
		}
	}
	ok, wait, warned := l.allow("U1")
	if ok || wait != defaultUserEvery || warned {
		t.Errorf("past the burst = %v, wait %v, warned %v; want refused, wait %v, not yet warned", ok, wait, warned, defaultUserEvery)
	}
	if _, _, warned := l.allow("U1"); !warned {
		t.Errorf("second refusal: warned = false; want true (events are told once)")
	}
	if ok, _, _ := l.allow("U2"); !ok {
		t.Errorf("another user refused; want each user their own bucket")
	}
	now = now.Add(defaultUserEvery)
	if ok, _, _ := l.allow("U1"); !ok {
		t.Errorf("after %v: refused; want one more question allowed", defaultUserEvery)
	}
}

// fuzzBot is a bot over one run whose probes are cheap: the /proc fixture tree of the probes
// package, a progress log and an output directory in dir.
func fuzzBot(f *testing.F) *conversation.Bot {
	f.Helper()
	dir := f.TempDir()
	log := filepath.Join(dir, "gen.log")
	if err := os.WriteFile(log, []byte("Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	os.MkdirAll(out, 0o755)
	file := &config.File{Source: "fuzz", Runs: []config.Run{{Name: "synth", Channel: "#synth", Log: log, Outputs: []string{out},
		Stages: []config.Stage{{Name: "review", Check: "manual"}}}}}
	m, _, err := monitor.New(file, monitor.Options{ProcRoot: "../probes/testdata/proc", ProbeTimeout: time.Second, RateWindow: -1})
	if err != nil {
		f.Fatal(err)
	}
	return conversation.NewBot(m, time.UTC, config.Env{Admins: []string{"UADMIN"}})
}

// fuzzCheckReply checks what every answer must be, whatever was asked.
func fuzzCheckReply(t *testing.T, text string, rep conversation.Reply) {
	t.Helper()
	if rep.Intent == "" && !rep.Refused && len(rep.Message.Sections) == 0 {
		t.Fatalf("Ask(%q) = %+v; want an answer, a refusal or help", text, rep)
	}
	testkit.NoLiveMarkup(t, fmt.Sprintf("answer to %q", text), rep.Message.Mrkdwn())
	blocks, err := json.Marshal(rep.Message.Blocks())
	if err != nil {
		t.Fatalf("blocks of the answer to %q: %v", text, err)
	}
	var decoded any
	if err := json.Unmarshal(blocks, &decoded); err != nil {
		t.Fatalf("blocks of the answer to %q do not round-trip: %v", text, err)
	}
	testkit.NoLiveMarkup(t, fmt.Sprintf("blocks of the answer to %q", text), string(blocks))
}

// FuzzCommandText feeds text to every slash command and as a mention from a user who is not an
// admin: the parse never fails, an answer always comes back without live markup, and nothing
// changes state without an admin.
func FuzzCommandText(f *testing.F) {
	b := fuzzBot(f)
	var env struct {
		Payload struct{ Text string } `json:"payload"`
	}
	if err := json.Unmarshal(readFixture(f, "slack_socketmode_slash_commands_envelope_pysdk.json"), &env); err != nil {
		f.Fatal(err)
	}
	form, err := url.ParseQuery(string(readFixture(f, "slack_slash_command_weather_docs_body.txt")))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{env.Payload.Text, form.Get("text"), "snooze 2h", "snooze 1d synth", "snooze -5m", "snooze 999999h",
		"unsnooze", "stage review done", "stage review todo synth", "stage nope failed", "chart", "runs", "help", "synth",
		"/storage /etc", "storage /proc/1", "eta synth", "<@U111> ETA?", "<!channel> status", "where does the output go?",
		"will the hidden states fit?", "are we writing to /shared?", "how much space is left on ../../etc?"} {
		f.Add(s)
	}
	app := &App{bot: b}
	slashes := []string{"/eta", "/storage", "/runwatch"}
	f.Fuzz(func(t *testing.T, text string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, cmd := range slashes {
			req := app.slashToRequest(slashRequest{Command: cmd, Text: text, Channel: "C1", User: "U222"})
			fuzzCheckReply(t, cmd+" "+text, b.Ask(ctx, req))
		}
		fuzzCheckReply(t, text, b.Ask(ctx, conversation.Request{Text: text, Channel: "C1", User: "U222", Source: "mention"}))
		if _, snoozed := b.Monitor().SnoozedUntil("synth"); snoozed {
			t.Fatalf("%q from a user who is not an admin snoozed the run", text)
		}
		rs, _ := b.Monitor().RunStatus(ctx, "synth", monitor.Need{Stages: true})
		for _, s := range rs.Stages {
			if s.Name == "review" && (s.State == reports.StageDone || s.State == reports.StageFailed) {
				t.Fatalf("%q from a user who is not an admin marked stage review %q", text, s.State)
			}
		}
	})
}

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
	e.app.Wait(10 * time.Second)
}
