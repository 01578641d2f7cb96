package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/botmetrics"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/reports"
)

// fuzzSlackServer is HTTP mode over the fuzz bot. Answers go nowhere: the app's context is
// cancelled, so an answer started in the background gives up at once instead of calling Slack.
func fuzzSlackServer(f *testing.F) (http.Handler, string) {
	b := fuzzBot(f)
	const secret = "8f742231b10e8888abcd99yyyzzz85a5"
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	api := NewSlackAPI(SlackAPIOptions{Token: testkit.BotToken, APIURL: "http://127.0.0.1:1/api/", Log: log})
	app := newSlackApp(ctx, b, api, SlackIdentity{UserID: "U111"}, botmetrics.New(), log)
	hm := newHTTPMode(app, config.NewSecret(secret), botmetrics.New(), log)
	return hm.handler(), secret
}

// FuzzSlackRequest sends signed bodies to the Events API, slash command and interactivity
// endpoints: whatever the body, the answer is an acknowledgement or a 4xx, never a crash or a
// 5xx, and a slash command's answer is JSON without live markup.
func FuzzSlackRequest(f *testing.F) {
	h, secret := fuzzSlackServer(f)
	paths := []string{"/slack/events", "/slack/commands", "/slack/interactions"}
	f.Add(uint8(0), readFixture(f, "slack_url_verification_apislack.json"))
	for _, name := range []string{"slack_socketmode_events_api_app_mention_envelope_pysdk.json", "slack_socketmode_interactive_shortcut_envelope_pysdk.json",
		"slack_socketmode_slash_commands_envelope_pysdk.json"} {
		var env struct {
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(readFixture(f, name), &env); err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), []byte(env.Payload))
		f.Add(uint8(2), []byte(url.Values{"payload": {string(env.Payload)}}.Encode()))
	}
	f.Add(uint8(0), testkit.MentionEvent("Ev1", "<@U111> ETA? <!channel>", "U222", "C1", "1700000000.000100", ""))
	f.Add(uint8(0), []byte(`{"type":"event_callback","event_id":"Ev2","event":{"type":"message","channel_type":"im","channel":"D1","user":"U222","text":"status","ts":"1.1"}}`))
	f.Add(uint8(0), []byte(`{"type":"app_rate_limited","minute_rate_limited":1518467820}`))
	f.Add(uint8(2), []byte(url.Values{"payload": {`{"type":"block_actions","user":{"id":"U222"},"container":{"type":"message","channel_id":"C1","message_ts":"1.1"},` +
		`"channel":{"id":"C1"},"message":{"ts":"1.1","blocks":[]},"actions":[{"type":"overflow","action_id":"menu","block_id":"rw:r=synth",` +
		`"action_ts":"1.2","selected_option":{"value":"snooze:1d"}}]}`}}.Encode()))
	f.Add(uint8(1), readFixture(f, "slack_slash_command_weather_docs_body.txt"))
	f.Add(uint8(1), testkit.SlashBody("/runwatch", "snooze 2h", "C1", "U222", "https://hooks.slack.com/commands/T1/2/x"))
	f.Add(uint8(1), testkit.SlashBody("/storage", "/etc <!here>", "C1", "U222", "http://169.254.169.254/latest"))
	n := 0
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		n++
		path := paths[int(kind)%len(paths)]
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		if path == "/slack/events" {
			req.Header.Set("Content-Type", "application/json")
		} else {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		// A fresh timestamp per call: the same body twice is a new request, not a replay.
		ts := strconv.FormatInt(time.Now().Unix()-int64(n%200), 10)
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", testkit.Sign(secret, ts, body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		switch code := w.Code; {
		case code == http.StatusOK:
		case code >= 400 && code < 500:
			return
		default:
			t.Fatalf("POST %s %q = %d; want 200 or a 4xx", path, body, code)
		}
		if path != "/slack/commands" || w.Body.Len() == 0 {
			return // an empty acknowledgement: the answer (charts) follows through the response_url
		}
		var msg struct {
			Text   string          `json:"text"`
			Blocks json.RawMessage `json:"blocks"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &msg); err != nil {
			t.Fatalf("slash answer to %q is not JSON: %v\n%s", body, err, w.Body)
		}
		testkit.NoLiveMarkup(t, "slash answer", msg.Text)
		testkit.NoLiveMarkup(t, "slash answer blocks", string(msg.Blocks))
	})
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
	app := &slackApp{bot: b}
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
