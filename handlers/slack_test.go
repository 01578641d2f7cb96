package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"runwatch/conversation"
	"runwatch/internal/botmetrics"
	"runwatch/internal/redact"
	"runwatch/internal/testkit"
	"runwatch/posts"
	"runwatch/reports"
)

// newTestAPI is a SlackAPI on the fake that records its waits instead of sleeping.
func newTestAPI(t testing.TB, f *testkit.Slack, log *slog.Logger, m *botmetrics.Metrics) (*SlackAPI, *[]time.Duration) {
	t.Helper()
	var mu sync.Mutex
	waits := &[]time.Duration{}
	api := NewSlackAPI(SlackAPIOptions{Token: testkit.BotToken, APIURL: f.APIURL(), Redactor: redact.New(testkit.BotToken.Reveal(), testkit.AppToken.Reveal()),
		Metrics: m, Log: log, Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			*waits = append(*waits, d)
			mu.Unlock()
			return ctx.Err()
		}})
	return api, waits
}

// readFixture reads a file of testdata.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSlackAPIHonoursRetryAfter(t *testing.T) {
	f := testkit.NewSlack(t)
	api, waits := newTestAPI(t, f, nil, nil)
	f.FailNext("chat.postMessage", testkit.Failure{Status: 429, RetryAfter: "3", Body: `{"ok":false,"error":"ratelimited"}`})
	ch, ts, err := api.Post(context.Background(), "#synth", "", reports.Message{Sections: []string{"hello"}})
	if err != nil {
		t.Fatalf("Post after a 429 = %v; want success on the retry", err)
	}
	if ch != "CSYNTH" || ts == "" {
		t.Errorf("Post = %q, %q; want CSYNTH and a ts", ch, ts)
	}
	if n := len(f.Calls("chat.postMessage")); n != 2 {
		t.Errorf("chat.postMessage calls = %d; want 2 (the 429, then the retry)", n)
	}
	if len(*waits) != 1 || (*waits)[0] != 3*time.Second {
		t.Errorf("waits = %v; want [3s] from Retry-After", *waits)
	}

	// A Retry-After past the caller's deadline fails at once instead of sleeping through it; the
	// caller keeps the post and tries again later.
	f.FailNext("chat.postMessage", testkit.Failure{Status: 429, RetryAfter: "30"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	*waits = nil
	_, _, err = api.Post(ctx, "#synth", "", reports.Message{Sections: []string{"hello"}})
	if err == nil || !strings.Contains(err.Error(), "past the deadline") {
		t.Errorf("Post with Retry-After 30s and a 5s deadline = %v; want an error saying it would pass the deadline", err)
	}
	if len(*waits) != 0 || len(f.Calls("chat.postMessage")) != 3 {
		t.Errorf("waits = %v, calls = %d; want no wait and no extra call", *waits, len(f.Calls("chat.postMessage")))
	}
}

func TestSlackAPIServerErrorsBounded(t *testing.T) {
	tests := []struct {
		name      string
		failures  int
		wantCalls int
		wantErr   bool
		wantWaits []time.Duration
	}{
		{"recovers", 2, 3, false, []time.Duration{500 * time.Millisecond, time.Second}},
		{"gives up", 10, 4, true, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := testkit.NewSlack(t)
			api, waits := newTestAPI(t, f, nil, nil)
			for range tc.failures {
				f.FailNext("chat.update", testkit.Failure{Status: 503, Body: "<html>busy " + testkit.BotToken.Reveal() + "</html>"})
			}
			err := api.Update(context.Background(), "CSYNTH", "1.2", reports.Message{Sections: []string{"x"}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Update with %d 503s = %v; want error %v", tc.failures, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), testkit.BotToken.Reveal()) {
				t.Errorf("error holds the token: %v", err)
			}
			if n := len(f.Calls("chat.update")); n != tc.wantCalls {
				t.Errorf("chat.update calls = %d; want %d", n, tc.wantCalls)
			}
			if fmt.Sprint(*waits) != fmt.Sprint(tc.wantWaits) {
				t.Errorf("waits = %v; want %v (exponential backoff)", *waits, tc.wantWaits)
			}
		})
	}
}

func TestSlackAPIRedactsErrors(t *testing.T) {
	f := testkit.NewSlack(t)
	var logs testkit.LogBuffer
	api, _ := newTestAPI(t, f, redact.Logger(logs.Logger(), redact.New(testkit.BotToken.Reveal())), nil)
	// Slack would not echo a token, but a proxy in between might: nothing reaches an error string.
	f.FailNext("chat.postMessage", testkit.Failure{Status: 200, Body: `{"ok":false,"error":"not_authed ` + testkit.BotToken.Reveal() + `"}`})
	_, _, err := api.Post(context.Background(), "#synth", "", reports.Message{Sections: []string{"x"}})
	if err == nil {
		t.Fatal("Post = nil; want the error")
	}
	if strings.Contains(err.Error(), testkit.BotToken.Reveal()) || !strings.Contains(err.Error(), "xoxb-[redacted]") {
		t.Errorf("Post error = %q; want the token redacted", err)
	}
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); !ok || !strings.HasPrefix(se.Err, "not_authed") {
		t.Errorf("errors.As(SlackErrorResponse) = %v, %v; want the SDK error underneath", se, ok)
	}
}

func TestSlackAPIMessages(t *testing.T) {
	f := testkit.NewSlack(t)
	api, _ := newTestAPI(t, f, nil, nil)
	ctx := context.Background()
	msg := reports.Message{Title: "synth · ETA", Sections: []string{"ETA *3 h*", reports.Esc("<!channel> & co")}, Context: []string{"as of now"}}
	if _, _, err := api.Post(ctx, "C1", "1700000000.000001", msg); err != nil {
		t.Fatal(err)
	}
	if err := api.Update(ctx, "C1", "1700000000.000002", msg); err != nil {
		t.Fatal(err)
	}
	if err := api.Ephemeral(ctx, "C1", "U2", "1700000000.000003", msg); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, field, want string
	}{
		{"chat.postMessage", "thread_ts", "1700000000.000001"},
		{"chat.update", "ts", "1700000000.000002"},
		{"chat.postEphemeral", "thread_ts", "1700000000.000003"},
		{"chat.postEphemeral", "user", "U2"},
	}
	for _, tc := range tests {
		cs := f.Calls(tc.method)
		if len(cs) != 1 {
			t.Fatalf("%s calls = %d; want 1", tc.method, len(cs))
		}
		if got := cs[0].Form.Get(tc.field); got != tc.want {
			t.Errorf("%s %s = %q; want %q", tc.method, tc.field, got, tc.want)
		}
		text := cs[0].Form.Get("text")
		if !strings.Contains(text, "*synth · ETA*") || !strings.Contains(text, "&lt;!channel&gt; &amp; co") || strings.Contains(text, "<!channel>") {
			t.Errorf("%s text = %q; want the escaped mrkdwn fallback", tc.method, text)
		}
		if bt := cs[0].BlocksText(t); !strings.Contains(bt, "ETA *3 h*") || strings.Contains(bt, "<!channel>") {
			t.Errorf("%s blocks text = %q; want the sections, escaped", tc.method, bt)
		}
	}
}

func TestSlackAPIUpload(t *testing.T) {
	f := testkit.NewSlack(t)
	api, _ := newTestAPI(t, f, nil, nil)
	png := []byte("\x89PNG\r\n\x1a\nnot really a chart")
	if err := api.Upload(context.Background(), "C1", "1700000000.000009", conversation.Attachment{Name: "synth-chart.png", Title: "synth", AltText: "a chart", Data: png}); err != nil {
		t.Fatalf("Upload = %v", err)
	}
	get := f.Calls("files.getUploadURLExternal")
	if len(get) != 1 || get[0].Form.Get("filename") != "synth-chart.png" || get[0].Form.Get("length") != fmt.Sprint(len(png)) || get[0].Form.Get("alt_txt") != "a chart" {
		t.Errorf("files.getUploadURLExternal = %+v; want filename, length and alt text", get)
	}
	up := f.Calls("upload")
	if len(up) != 1 || !bytes.Equal(up[0].Body, png) {
		t.Errorf("upload = %d calls; want the PNG bytes once", len(up))
	}
	done := f.Calls("files.completeUploadExternal")
	if len(done) != 1 || done[0].Form.Get("channel_id") != "C1" || done[0].Form.Get("thread_ts") != "1700000000.000009" || !strings.Contains(done[0].Form.Get("files"), "F0001") {
		t.Errorf("files.completeUploadExternal = %+v; want the file shared in the thread", done)
	}
	if err := api.Upload(context.Background(), "C1", "", conversation.Attachment{Name: "empty.png"}); err == nil {
		t.Errorf("Upload(empty) = nil; want an error")
	}
}

func TestResponseURLAllowed(t *testing.T) {
	api := NewSlackAPI(SlackAPIOptions{Token: testkit.BotToken, APIURL: "http://127.0.0.1:4000/api/"})
	tests := []struct {
		url  string
		want bool
	}{
		{"https://hooks.slack.com/commands/T1DC2JH3J/397700885554/96rGlfmibIGlgcZRskXaIFfN", true},
		{"https://slack.com/x", true},
		{"http://hooks.slack.com/commands/1", false},
		{"https://hooks.slack.com.evil.example/commands/1", false},
		{"http://127.0.0.1:4000/response/1", true},
		{"http://127.0.0.1:4001/response/1", false},
		{"http://169.254.169.254/latest/meta-data", false},
		{"not a url", false},
	}
	for _, tc := range tests {
		if got := api.ResponseURLAllowed(tc.url); got != tc.want {
			t.Errorf("ResponseURLAllowed(%q) = %v; want %v", tc.url, got, tc.want)
		}
	}
}

// TestSlackSeen: a bound of 3 keys; a key is refused (not forgotten, not recorded) while the three held are
// inside seenKeep, and once the oldest is past it, it is the one that goes.
func TestSlackSeen(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := newSlackSeen(3)
	s.now = func() time.Time { return now }
	steps := []struct {
		after time.Duration
		key   string
		want  admission
	}{
		{0, "a", admitNew}, {0, "b", admitNew}, {0, "a", admitSeen}, {time.Minute, "c", admitNew},
		{0, "d", admitFull}, {0, "a", admitSeen}, {0, "d", admitFull}, {0, "", admitNew}, {0, "", admitNew},
		{seenKeep, "d", admitNew},               // a and b are past seenKeep: a, the oldest added, goes
		{0, "b", admitSeen}, {0, "a", admitNew}, // b is past seenKeep too and goes
		{0, "e", admitFull}, {time.Second, "e", admitNew}, // c, added a minute later, is past it a second later
	}
	for i, st := range steps {
		now = now.Add(st.after)
		if got := s.admit(st.key); got != st.want {
			t.Errorf("step %d: admit(%q) = %v; want %v", i, st.key, got, st.want)
		}
	}
}

// TestResponseURLNotInErrors: a response_url is a credential of sorts (anyone holding it posts in the
// channel); neither Respond nor ReplaceOriginal returns an error that names it, whether Slack refuses the
// post or the connection fails.
func TestResponseURLNotInErrors(t *testing.T) {
	f := testkit.NewSlack(t)
	api, _ := newTestAPI(t, f, slog.New(slog.DiscardHandler), botmetrics.New())
	hook := f.ResponseURL("T111/SECRETHOOK42")
	f.FailNext("response_url", testkit.Failure{Status: 404, Body: "no_such_hook"}, testkit.Failure{Status: 404, Body: "no_such_hook"})
	ctx := context.Background()
	if err := api.ReplaceOriginal(ctx, hook, "x", nil); err == nil || strings.Contains(err.Error(), "SECRETHOOK42") {
		t.Errorf("ReplaceOriginal refused = %v; want an error without the response_url", err)
	}
	if err := api.Respond(ctx, hook, reports.Message{Sections: []string{"x"}}, true); err == nil || strings.Contains(err.Error(), "SECRETHOOK42") {
		t.Errorf("Respond refused = %v; want an error without the response_url", err)
	}
	f.Close() // the connection fails now
	if err := api.ReplaceOriginal(ctx, hook, "x", nil); err == nil || strings.Contains(err.Error(), "SECRETHOOK42") {
		t.Errorf("ReplaceOriginal unreachable = %v; want an error without the response_url", err)
	} else {
		t.Logf("unreachable: %v", err)
	}
}

// botOpts shape a botEnv.
type botOpts = testkit.Options

// botEnv is a bot over testkit's world: one run, "synth", with real probes.
type botEnv struct {
	*testkit.World
	bot *conversation.Bot
}

func newBotEnv(t testing.TB, o botOpts) *botEnv {
	t.Helper()
	w := testkit.NewWorld(t, o)
	return &botEnv{World: w, bot: conversation.NewBot(w.Mon, w.Loc, w.Env)}
}

func kinds(ps []posts.Post) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Kind)
	}
	return out
}
