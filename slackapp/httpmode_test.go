package slackapp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"runwatch/config"
	"runwatch/internal/botmetrics"
	"runwatch/internal/redact"
	"runwatch/internal/testkit"
)

// signingVector is Slack's published signing example (testdata/slack_signing_example_*).
type signingVector struct {
	secret, timestamp, signature string
	body                         []byte
}

func loadSigningVector(t testing.TB) signingVector {
	t.Helper()
	v := signingVector{body: readFixture(t, "slack_signing_example_body.txt")}
	sc := bufio.NewScanner(bytes.NewReader(readFixture(t, "slack_signing_example_vector.txt")))
	for sc.Scan() {
		k, val, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "signing_secret":
			v.secret = val
		case "X-Slack-Request-Timestamp":
			v.timestamp = val
		case "X-Slack-Signature":
			v.signature = val
		}
	}
	if v.secret == "" || v.timestamp == "" || v.signature == "" {
		t.Fatalf("signing vector incomplete: %+v", v)
	}
	return v
}

// httpEnv is HTTP mode in front of a bot, served by httptest, talking to the fake Slack.
type httpEnv struct {
	*botEnv
	fake    *testkit.Slack
	app     *App
	hm      *HTTPMode
	srv     *httptest.Server
	secret  string
	metrics *botmetrics.Metrics
	logs    *testkit.LogBuffer
}

func newHTTPEnv(t testing.TB, o botOpts) *httpEnv {
	t.Helper()
	e := &httpEnv{botEnv: newBotEnv(t, o), fake: testkit.NewSlack(t), secret: loadSigningVector(t).secret, metrics: botmetrics.New(), logs: &testkit.LogBuffer{}}
	red := redact.New(testkit.BotToken.Reveal(), e.secret)
	log := redact.Logger(e.logs.Logger(), red)
	api, _ := newTestAPI(t, e.fake, log, e.metrics)
	ctx, cancel := context.WithCancel(context.Background())
	e.app = NewApp(ctx, e.bot, api, Identity{UserID: "U111", User: "runwatch"}, e.metrics, log)
	e.hm = NewHTTPMode(e.app, config.NewSecret(e.secret), e.metrics, log)
	e.srv = httptest.NewServer(e.hm.Handler())
	t.Cleanup(func() {
		e.srv.Close()
		cancel()
		e.app.Wait(10 * time.Second)
		if strings.Contains(e.logs.String(), e.secret) || strings.Contains(e.logs.String(), testkit.BotToken.Reveal()) {
			t.Errorf("a credential reached the log:\n%s", e.logs.String())
		}
	})
	return e
}

// post sends a body to path, signed now unless headers say otherwise.
func (e *httpEnv) post(t testing.TB, path string, body []byte, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	ct := "application/json"
	if path != "/slack/events" {
		ct = "application/x-www-form-urlencoded"
	}
	req.Header.Set("Content-Type", ct)
	if header == nil {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", testkit.Sign(e.secret, ts, body))
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Read the answer at once so the connection is reused; callers read the copy.
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}

func readAll(t testing.TB, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSlackSigningExample(t *testing.T) {
	v := loadSigningVector(t)
	if got := testkit.Sign(v.secret, v.timestamp, v.body); got != v.signature {
		t.Fatalf("testkit.Sign(published example) = %s; want %s", got, v.signature)
	}
	e := newHTTPEnv(t, botOpts{})
	now := strconv.FormatInt(time.Now().Unix(), 10)
	signed := func(ts, sig string) http.Header {
		return http.Header{"X-Slack-Request-Timestamp": {ts}, "X-Slack-Signature": {sig}}
	}
	fresh := signed(now, testkit.Sign(v.secret, now, v.body))
	forged := []byte(testkit.Sign(v.secret, now, v.body))
	forged[len(forged)-1] ^= 1
	stale := strconv.FormatInt(time.Now().Add(-6*time.Minute).Unix(), 10)
	future := strconv.FormatInt(time.Now().Add(6*time.Minute).Unix(), 10)
	tests := []struct {
		name   string
		body   []byte
		header http.Header
		status int
	}{
		{"published request, as published (2018: stale)", v.body, signed(v.timestamp, v.signature), http.StatusUnauthorized},
		{"published body signed now", v.body, fresh, http.StatusOK},
		{"the same signed request again (replay)", v.body, fresh, http.StatusUnauthorized},
		{"signature with one bit flipped", v.body, signed(now, string(forged)), http.StatusUnauthorized},
		{"body changed after signing", append(append([]byte{}, v.body...), "&text=snooze"...), signed(now, testkit.Sign(v.secret, now, v.body)), http.StatusUnauthorized},
		{"signed with another secret", v.body, signed(now, testkit.Sign("another-secret-0123456789", now, v.body)), http.StatusUnauthorized},
		{"signed six minutes ago", v.body, signed(stale, testkit.Sign(v.secret, stale, v.body)), http.StatusUnauthorized},
		{"signed six minutes ahead", v.body, signed(future, testkit.Sign(v.secret, future, v.body)), http.StatusUnauthorized},
		{"not signed", v.body, http.Header{}, http.StatusUnauthorized},
		{"not a v0 signature", v.body, signed(now, "v1="+strings.TrimPrefix(testkit.Sign(v.secret, now, v.body), "v0=")), http.StatusUnauthorized},
	}
	rejected := 0
	for _, tc := range tests {
		if tc.status != http.StatusOK {
			rejected++
		}
		t.Run(tc.name, func(t *testing.T) {
			resp := e.post(t, "/slack/commands", tc.body, tc.header)
			body := readAll(t, resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("POST /slack/commands = %d %q; want %d", resp.StatusCode, body, tc.status)
			}
			if tc.status != http.StatusOK {
				return
			}
			// /webhook-collect is not one of ours: the answer is the short help, only for the asker.
			var msg slack.WebhookMessage
			if err := json.Unmarshal([]byte(body), &msg); err != nil {
				t.Fatalf("answer is not JSON: %v\n%s", err, body)
			}
			if msg.ResponseType != "ephemeral" || !strings.Contains(msg.Text, "Try one of these") {
				t.Errorf("answer = %+v; want the ephemeral short help", msg)
			}
		})
	}
	if n := len(e.fake.Calls("")); n != 0 {
		t.Errorf("Slack API calls = %v; want none for rejected requests or an inline answer", e.fake.Methods())
	}
	// Rejections are counted on /metrics, which needs no signature.
	resp, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics := readAll(t, resp.Body)
	for _, want := range []string{`runwatch_slack_requests_rejected_total{reason="stale"} 3`, `runwatch_slack_requests_rejected_total{reason="replayed"} 1`,
		`runwatch_slack_requests_rejected_total{reason="bad_signature"} 4`, `runwatch_slack_requests_rejected_total{reason="unsigned"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !t.Failed() {
		t.Logf("figure: %d requests (forged, stale, future, replayed, altered, other secret, unsigned, not v0, Slack's published 2018 example): %d rejected with 401 and counted on /metrics, %d answered, 0 Slack calls",
			len(tests), rejected, len(tests)-rejected)
	}
}

func TestHTTPBodyCapped(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	big := bytes.Repeat([]byte("a"), maxSlackBody+1)
	resp := e.post(t, "/slack/events", big, nil)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("POST of %d bytes = %d; want 413", len(big), resp.StatusCode)
	} else {
		t.Logf("figure: a %d-byte body (cap %d): 413 before any signature check or parse", len(big), maxSlackBody)
	}
}

func TestHTTPHealthAndMetricsOpen(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	for _, path := range []string{"/healthz", "/metrics"} {
		resp, err := http.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d; want 200 without a signature", path, resp.StatusCode)
		}
		if path == "/metrics" && !strings.Contains(body, "runwatch_answer_duration_seconds") && !strings.Contains(body, "go_goroutines") {
			t.Errorf("GET /metrics = %q; want the bot's metrics", body[:min(len(body), 200)])
		}
	}
	resp, err := http.Get(e.srv.URL + "/slack/events")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /slack/events = %d; want 405", resp.StatusCode)
	}
}

func TestHTTPServerTimeouts(t *testing.T) {
	srv := NewHTTPServer(":0", http.NotFoundHandler(), (&testkit.LogBuffer{}).Logger())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Errorf("server timeouts = %v %v %v %v; want all set", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout)
	}
	if srv.WriteTimeout <= defaultInlineBudget {
		t.Errorf("WriteTimeout %v must exceed the inline budget %v", srv.WriteTimeout, defaultInlineBudget)
	}
}

func TestHTTPURLVerification(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	body := readFixture(t, "slack_url_verification_apislack.json")
	resp := e.post(t, "/slack/events", body, nil)
	got := readAll(t, resp.Body)
	if resp.StatusCode != http.StatusOK || got != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Errorf("url_verification = %d %q; want the challenge", resp.StatusCode, got)
	}
}

func TestHTTPSlashCommands(t *testing.T) {
	metrics := testkit.VLLM(t)
	e := newHTTPEnv(t, botOpts{Metrics: []string{metrics.URL + "/metrics"}, Env: config.Env{Admins: []string{"UADMIN"}, AllowedChannels: []string{"#synth", "C0ALLOWED"}}})
	weather := readFixture(t, "slack_slash_command_weather_docs_body.txt")
	tests := []struct {
		name      string
		body      []byte
		ephemeral bool
		want      []string
	}{
		{"eta", testkit.SlashBody("/eta", "", "C0ALLOWED", "U222", e.fake.ResponseURL("1")), false, []string{"synth · ETA", "ETA", "done (", "Servers: 1 of 1 up"}},
		{"eta names the run", testkit.SlashBody("/eta", "synth", "C0ALLOWED", "U222", e.fake.ResponseURL("2")), false, []string{"synth · ETA"}},
		{"status", testkit.SlashBody("/runwatch", "status", "C0ALLOWED", "U222", e.fake.ResponseURL("3")), false, []string{"synth · status", "Checklist", "generate"}},
		{"storage of a path that is not the run's", testkit.SlashBody("/storage", "/etc", "C0ALLOWED", "U222", e.fake.ResponseURL("4")), true, []string{"isn't one of them"}},
		{"runwatch help", testkit.SlashBody("/runwatch", "", "C0ALLOWED", "U222", e.fake.ResponseURL("5")), true, []string{"runwatch help", "/eta [run]", "/runwatch status [run]", "chart"}},
		{"runwatch snooze, not an admin", testkit.SlashBody("/runwatch", "snooze 2h", "C0ALLOWED", "U222", e.fake.ResponseURL("6")), true, []string{"only runwatch admins"}},
		{"runwatch snooze, admin", testkit.SlashBody("/runwatch", "snooze 2h", "C0ALLOWED", "UADMIN", e.fake.ResponseURL("7")), false, []string{"snoozed for 2 h"}},
		{"channel not allowed", testkit.SlashBody("/eta", "", "C0OTHER", "UADMIN", e.fake.ResponseURL("8")), true, []string{"allowed_channels"}},
		{"weather (Slack's docs example)", weather, true, []string{"allowed_channels"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.post(t, "/slack/commands", tc.body, nil)
			body := readAll(t, resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST /slack/commands = %d %q", resp.StatusCode, body)
			}
			var msg struct {
				Text         string            `json:"text"`
				ResponseType string            `json:"response_type"`
				Blocks       []json.RawMessage `json:"blocks"`
			}
			if err := json.Unmarshal([]byte(body), &msg); err != nil {
				t.Fatalf("answer is not JSON: %v\n%s", err, body)
			}
			if (msg.ResponseType == "ephemeral") != tc.ephemeral {
				t.Errorf("response_type = %q; want ephemeral %v\n%s", msg.ResponseType, tc.ephemeral, msg.Text)
			}
			if len(msg.Blocks) == 0 || len(msg.Blocks) > 50 {
				t.Errorf("blocks = %d; want Block Kit within 50 blocks", len(msg.Blocks))
			}
			for _, w := range tc.want {
				if !strings.Contains(msg.Text, w) {
					t.Errorf("answer text lacks %q:\n%s", w, msg.Text)
				}
			}
		})
	}
	if _, ok := e.Mon.SnoozedUntil("synth"); !ok {
		t.Errorf("synth is not snoozed after the admin's /runwatch snooze 2h")
	}
}

func TestHTTPSlashCommandSlowProbe(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); hung.Close() })
	e := newHTTPEnv(t, botOpts{Metrics: []string{hung.URL + "/metrics"}, Timeout: time.Second})
	e.app.Inline = 100 * time.Millisecond
	resp := e.post(t, "/slack/commands", testkit.SlashBody("/eta", "", "C1", "U222", e.fake.ResponseURL("slow")), nil)
	var ack slack.WebhookMessage
	if err := json.NewDecoder(resp.Body).Decode(&ack); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ack.Text, "Working on it") || ack.ResponseType != "ephemeral" {
		t.Errorf("acknowledgement = %+v; want an ephemeral 'working on it'", ack)
	}
	calls := e.fake.Wait(t, "response_url", 1)
	var follow struct {
		Text         string `json:"text"`
		ResponseType string `json:"response_type"`
	}
	if err := json.Unmarshal(calls[0].Body, &follow); err != nil {
		t.Fatalf("follow-up is not JSON: %v", err)
	}
	if follow.ResponseType != "in_channel" || !strings.Contains(follow.Text, "synth · ETA") || !strings.Contains(follow.Text, "metrics "+hung.URL+"/metrics") ||
		!strings.Contains(follow.Text, "no answer within") {
		t.Errorf("follow-up = %+v; want the ETA answer naming the metrics probe that timed out", follow)
	}
}

func TestHTTPEventsAnsweredOnce(t *testing.T) {
	metrics := testkit.VLLM(t)
	e := newHTTPEnv(t, botOpts{Metrics: []string{metrics.URL + "/metrics"}})
	body := testkit.MentionEvent("Ev001", "<@U111> ETA?", "U222", "C0SYNTH", "1700000100.000100", "1700000000.000001")
	now := time.Now().Unix()
	signedAt := func(ts int64, extra ...string) http.Header {
		s := strconv.FormatInt(ts, 10)
		h := http.Header{"X-Slack-Request-Timestamp": {s}, "X-Slack-Signature": {testkit.Sign(e.secret, s, body)}}
		for i := 0; i+1 < len(extra); i += 2 {
			h.Set(extra[i], extra[i+1])
		}
		return h
	}
	deliveries := []struct {
		name   string
		header http.Header
		status int
	}{
		{"first delivery", signedAt(now), http.StatusOK},
		// Slack redelivers as a new request, signed anew, when it thinks we were slow.
		{"redelivery", signedAt(now+1, "X-Slack-Retry-Num", "1", "X-Slack-Retry-Reason", "http_timeout"), http.StatusOK},
		{"second redelivery", signedAt(now+2, "X-Slack-Retry-Num", "2", "X-Slack-Retry-Reason", "http_error"), http.StatusOK},
		// The first request sent again byte for byte is a replay, not a redelivery.
		{"replay", signedAt(now), http.StatusUnauthorized},
	}
	for _, d := range deliveries {
		if resp := e.post(t, "/slack/events", body, d.header); resp.StatusCode != d.status {
			t.Errorf("%s = %d; want %d", d.name, resp.StatusCode, d.status)
		}
	}
	e.app.Wait(10 * time.Second)
	sent := e.fake.Calls("chat.postMessage")
	if len(sent) != 1 {
		t.Fatalf("chat.postMessage calls = %d; want 1 answer for 1 event delivered 3 times", len(sent))
	}
	p := sent[0]
	if p.Form.Get("channel") != "C0SYNTH" || p.Form.Get("thread_ts") != "1700000000.000001" {
		t.Errorf("answer went to %s thread %s; want C0SYNTH in the question's thread", p.Form.Get("channel"), p.Form.Get("thread_ts"))
	}
	if !strings.Contains(p.BlocksText(t), "synth · ETA") {
		t.Errorf("answer blocks = %q; want the ETA", p.BlocksText(t))
	}
	// A mention at the top of a channel is answered in a thread under it.
	e.post(t, "/slack/events", testkit.MentionEvent("Ev002", "<@U111> how fast are we going?", "U222", "C0SYNTH", "1700000300.000200", ""), nil)
	e.app.Wait(10 * time.Second)
	if sent := e.fake.Calls("chat.postMessage"); len(sent) != 2 || sent[1].Form.Get("thread_ts") != "1700000300.000200" {
		t.Errorf("top-level mention answer = %+v; want a reply in the thread of ts 1700000300.000200", sent)
	}
}

func TestHTTPMentionEscapesOutsideText(t *testing.T) {
	// A log path (a string from outside) holding a broadcast: it must reach Slack escaped, never as
	// <!channel>, in the blocks and in the notification text.
	e := newHTTPEnv(t, botOpts{LogName: "<!channel> run.log", NoLogFile: true})
	if !strings.Contains(e.Log, "<!channel>") {
		t.Fatal("setup: log path lacks the broadcast")
	}
	os.WriteFile(e.Log, []byte("nothing useful\n"), 0o644)
	tests := []struct{ id, text string }{
		{"Ev100", "<@U111> ETA?"},
		{"Ev101", "<@U111> what about <!channel> & <https://evil.example|this>?"},
	}
	for _, tc := range tests {
		e.post(t, "/slack/events", testkit.MentionEvent(tc.id, tc.text, "U222", "C1", "1700000200.000100", ""), nil)
	}
	e.app.Wait(10 * time.Second)
	calls := append(e.fake.Calls("chat.postMessage"), e.fake.Calls("chat.postEphemeral")...)
	if len(calls) != len(tests) {
		t.Fatalf("answers = %d; want %d", len(calls), len(tests))
	}
	sawPath := false
	for _, c := range calls {
		for _, s := range []string{c.Form.Get("text"), c.BlocksText(t)} {
			if strings.Contains(s, "<!channel>") || strings.Contains(s, "<https://evil") {
				t.Errorf("%s carries a live mention or link:\n%s", c.Method, s)
			}
			if strings.Contains(s, "&lt;!channel&gt;") {
				sawPath = true
			}
		}
	}
	if !sawPath {
		t.Errorf("no answer names the log path (escaped); answers: %v", calls)
	}
	if filepath.Base(e.Log) == "" {
		t.Fatal("unreachable")
	}
}

func TestHTTPDirectMessagesAndBots(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	msg := func(id string, ev map[string]any) []byte {
		b, _ := json.Marshal(map[string]any{"type": "event_callback", "event_id": id, "team_id": "T111", "event": ev})
		return b
	}
	botMention := map[string]any{"type": "event_callback", "event_id": "Ev6", "team_id": "T111", "event": map[string]any{
		"type": "app_mention", "text": "<@U111> status", "user": "U9", "bot_id": "B9", "channel": "C1", "ts": "1.6"}}
	botMentionBody, _ := json.Marshal(botMention)
	events := []struct {
		name   string
		body   []byte
		answer bool
	}{
		{"a DM", msg("Ev1", map[string]any{"type": "message", "channel_type": "im", "channel": "D1", "user": "U222", "text": "status", "ts": "1.1"}), true},
		{"our own DM", msg("Ev2", map[string]any{"type": "message", "channel_type": "im", "channel": "D1", "user": "U111", "text": "status", "ts": "1.2"}), false},
		{"another bot", msg("Ev3", map[string]any{"type": "message", "channel_type": "im", "channel": "D1", "bot_id": "B9", "user": "U9", "text": "status", "ts": "1.3"}), false},
		{"an edit", msg("Ev4", map[string]any{"type": "message", "subtype": "message_changed", "channel_type": "im", "channel": "D1", "text": "status", "ts": "1.4"}), false},
		{"a join", msg("Ev5", map[string]any{"type": "message", "subtype": "channel_join", "channel_type": "channel", "channel": "C1", "user": "U222", "ts": "1.5"}), false},
		{"a mention by a bot", botMentionBody, false},
		{"a mention of ourselves by ourselves", testkit.MentionEvent("Ev8", "<@U111> status", "U111", "C1", "1.8", ""), false},
		{"a channel message", msg("Ev7", map[string]any{"type": "message", "channel_type": "channel", "channel": "C1", "user": "U222", "text": "status", "ts": "1.7"}), false},
	}
	want := 0
	for _, tc := range events {
		if resp := e.post(t, "/slack/events", tc.body, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", tc.name, resp.StatusCode)
		}
		e.app.Wait(10 * time.Second)
		if tc.answer {
			want++
		}
		if got := len(e.fake.Calls("chat.postMessage")) + len(e.fake.Calls("chat.postEphemeral")); got != want {
			t.Errorf("after %s: answers = %d; want %d", tc.name, got, want)
		}
	}
	sent := e.fake.Calls("chat.postMessage")
	if len(sent) != 1 || sent[0].Form.Get("channel") != "D1" || sent[0].Form.Get("thread_ts") != "" {
		t.Errorf("DM answer = %+v; want one post in D1, not threaded", sent)
	}
}

func TestHTTPChartUploaded(t *testing.T) {
	metrics := testkit.VLLM(t)
	e := newHTTPEnv(t, botOpts{Metrics: []string{metrics.URL + "/metrics"}})
	resp := e.post(t, "/slack/commands", testkit.SlashBody("/runwatch", "chart", "C1", "U222", e.fake.ResponseURL("c0")), nil)
	if body := readAll(t, resp.Body); !strings.Contains(body, "not enough history") {
		t.Errorf("chart without history = %s; want a note that there is not enough history yet", body)
	}
	e.app.Wait(10 * time.Second)
	if n := len(e.fake.Calls("files.getUploadURLExternal")); n != 0 {
		t.Fatalf("uploads without history = %d; want none", n)
	}
	e.Mon.Sample(context.Background())
	e.Mon.Sample(context.Background())
	resp = e.post(t, "/slack/commands", testkit.SlashBody("/runwatch", "chart", "C1", "U222", e.fake.ResponseURL("c1")), nil)
	if body := readAll(t, resp.Body); !strings.Contains(body, "synth · chart") {
		t.Errorf("chart answer = %s; want the chart's caption", body)
	}
	done := e.fake.Wait(t, "files.completeUploadExternal", 1)
	if done[0].Form.Get("channel_id") != "C1" {
		t.Errorf("chart shared in %q; want C1", done[0].Form.Get("channel_id"))
	}
	up := e.fake.Calls("upload")
	if len(up) != 1 || !bytes.HasPrefix(up[0].Body, []byte("\x89PNG\r\n\x1a\n")) || up[0].Form.Get("filename") != "synth-chart.png" {
		t.Errorf("uploaded %d files; want one PNG named synth-chart.png", len(up))
	}
}

func TestHTTPInteractionsAcknowledged(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	var env struct {
		Payload json.RawMessage `json:"payload"`
	}
	json.Unmarshal(readFixture(t, "slack_socketmode_interactive_shortcut_envelope_pysdk.json"), &env)
	body := []byte(url.Values{"payload": {string(env.Payload)}}.Encode())
	if resp := e.post(t, "/slack/interactions", body, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("signed interaction = %d; want 200", resp.StatusCode)
	}
	if resp := e.post(t, "/slack/interactions", body, http.Header{}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned interaction = %d; want 401", resp.StatusCode)
	}
	if n := len(e.fake.Calls("")); n != 0 {
		t.Errorf("Slack calls for a shortcut = %v; want none", e.fake.Methods())
	}
}

// labelBomb is 3 series of 5,000 labels each under vLLM's names (about 147 KB): the red team's
// finding 4, which held every answer for 57–87 s.
func labelBomb() string {
	var b strings.Builder
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:generation_tokens_total"} {
		fmt.Fprintf(&b, "# TYPE %s gauge\n%s{", name, name)
		for i := range 5000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "l%d=\"v\"", i)
		}
		b.WriteString("} 1\n")
	}
	return b.String()
}

// TestHTTPLabelBombAnsweredWithinProbeTimeout sends a signed /eta while the run's metrics endpoint
// serves a label bomb. The scrape is refused before the parser sees it, the answer names the
// problem, and it comes inline (within the inline budget, so well within the probe timeout).
func TestHTTPLabelBombAnsweredWithinProbeTimeout(t *testing.T) {
	bomb := labelBomb()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(bomb))
	}))
	defer srv.Close()
	e := newHTTPEnv(t, botOpts{Metrics: []string{srv.URL + "/metrics"}, Timeout: 2 * time.Second})
	goroutines := runtime.NumGoroutine()
	var took []time.Duration
	for i := range 3 {
		start := time.Now()
		resp := e.post(t, "/slack/commands", testkit.SlashBody("/eta", "", "C0SYNTH", "U222", e.fake.ResponseURL(fmt.Sprint("eta", i))), nil)
		took = append(took, time.Since(start))
		var msg struct {
			Text string `json:"text"`
		}
		body := readAll(t, resp.Body)
		if err := json.Unmarshal([]byte(body), &msg); err != nil {
			t.Fatalf("/eta = %d %q: %v", resp.StatusCode, body, err)
		}
		if !strings.Contains(msg.Text, "has 5000 labels (limit 128)") {
			t.Fatalf("/eta with a label bomb = %q; want it inline, naming the series refused", msg.Text)
		}
	}
	e.app.Wait(10 * time.Second)
	t.Logf("figure: label bomb (3 series × 5,000 labels, %d KB): /eta answered inline in %v, %v, %v (probe timeout 2s), naming the refused series; goroutines %d -> %d",
		len(bomb)/1000, took[0].Round(time.Millisecond), took[1].Round(time.Millisecond), took[2].Round(time.Millisecond), goroutines, runtime.NumGoroutine())
}

// floodRequest is one signed request of the flood and what came back.
type floodRequest struct {
	path, kind, user, respName string
	body                       []byte
	status                     int
	ack                        string
	took                       time.Duration
}

// TestHTTPFloodAcksNeverWait is the red team's finding 5: 1,000 concurrent signed requests of every
// command kind (each slash command, admin mutations, mentions and DMs) from 100 users, then one
// user flooding 30 more slash commands and another 15 mentions. Every request is acknowledged with 200; a slash command is answered
// inline, or told "working on it" and answered through its response_url, or (the flooder past
// its burst of 10) politely told to wait; every mention and DM within the limit is answered.
// Identical questions share one evaluation. Ack times are logged, not asserted (house rule).
func TestHTTPFloodAcksNeverWait(t *testing.T) {
	// The engine's /metrics, counting scrapes: shared evaluations show as few scrapes.
	inner := testkit.VLLM(t).Config.Handler
	var scrapes atomic.Int64
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scrapes.Add(1)
		inner.ServeHTTP(w, r)
	}))
	defer metrics.Close()
	var users, admins []string
	for i := range 100 {
		users = append(users, fmt.Sprintf("U%03d", i))
	}
	admins = append(admins, users...)
	e := newHTTPEnv(t, botOpts{Metrics: []string{metrics.URL + "/metrics"}, Env: config.Env{Admins: admins}})
	frozen := time.Now()
	e.app.limiter.now = func() time.Time { return frozen } // no refill: the limit's counts are exact
	out := filepath.Join(e.Dir, "out")
	slash := []struct{ kind, command, text, want string }{
		{"eta", "/eta", "", "synth · ETA"}, {"eta run", "/eta", "synth", "synth · ETA"}, {"storage", "/storage", "", "synth · storage"},
		{"storage path", "/storage", out, "synth · space"}, {"status", "/runwatch", "status", "synth · status"},
		{"help", "/runwatch", "help", "runwatch help"}, {"runs", "/runwatch", "runs", "*Runs*"}, {"chart", "/runwatch", "chart", "chart"},
		{"snooze", "/runwatch", "snooze 1h", "snoozed for 1 h"}, {"unsnooze", "/runwatch", "unsnooze", "on."}, // "are back on." or "were not snoozed: they are on.", in whichever order it ran with snooze
		{"stage", "/runwatch", "stage review done", "review"},
	}
	want := map[string]string{}
	for _, k := range slash {
		want[k.kind] = k.want
	}
	kinds := len(slash) + 2 // and mentions, DMs
	var reqs []*floodRequest
	add := func(user string, i int) {
		r := &floodRequest{user: user}
		switch k := i % kinds; {
		case k < len(slash):
			r.path, r.kind, r.respName = "/slack/commands", slash[k].kind, fmt.Sprintf("r%d", len(reqs))
			r.body = testkit.SlashBody(slash[k].command, slash[k].text, "C0SYNTH", user, e.fake.ResponseURL(r.respName))
		case k == len(slash):
			r.path, r.kind = "/slack/events", "mention"
			r.body = testkit.MentionEvent(fmt.Sprintf("Ev%d", len(reqs)), "<@U111> ETA?", user, "C0SYNTH", fmt.Sprintf("1700000100.%06d", len(reqs)), "")
		default:
			r.path, r.kind = "/slack/events", "dm"
			r.body, _ = json.Marshal(map[string]any{"type": "event_callback", "event_id": fmt.Sprintf("Ev%d", len(reqs)), "team_id": "T111",
				"event": map[string]any{"type": "message", "channel_type": "im", "channel": "D" + user, "user": user, "text": "how fast are we going?", "ts": fmt.Sprintf("1700000200.%06d", len(reqs))}})
		}
		reqs = append(reqs, r)
	}
	for i := range 1000 {
		add(users[i%len(users)], i/len(users)+i) // each user sends 10, of different kinds
	}
	for i := range 30 {
		add("UFLOOD", i*kinds) // the flooder asks /eta 30 times
	}
	for range 15 {
		add("UFLOODM", len(slash)) // and another mentions the bot 15 times
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1100}}
	var wg sync.WaitGroup
	startFlood := make(chan struct{})
	for _, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+r.path, bytes.NewReader(r.body))
			ct := "application/x-www-form-urlencoded"
			if r.path == "/slack/events" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
			req.Header.Set("X-Slack-Request-Timestamp", ts)
			req.Header.Set("X-Slack-Signature", testkit.Sign(e.secret, ts, r.body))
			<-startFlood
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			resp.Body.Close()
			r.took, r.status, r.ack = time.Since(start), resp.StatusCode, b.String()
		}()
	}
	close(startFlood)
	wg.Wait()

	var working, inline, limited, events []*floodRequest
	for _, r := range reqs {
		if r.status != http.StatusOK {
			t.Fatalf("%s from %s = %d %q; want 200", r.kind, r.user, r.status, r.ack)
		}
		if r.path == "/slack/events" {
			events = append(events, r)
			continue
		}
		var msg struct{ Text string }
		if err := json.Unmarshal([]byte(r.ack), &msg); err != nil {
			t.Fatalf("%s ack is not JSON: %v\n%s", r.kind, err, r.ack)
		}
		switch {
		case strings.Contains(msg.Text, "Working on it"):
			working = append(working, r)
		case strings.Contains(msg.Text, "Ask again in"):
			limited = append(limited, r)
			if r.user != "UFLOOD" {
				t.Errorf("%s from %s was rate limited; want only the flooder limited", r.kind, r.user)
			}
		default:
			inline = append(inline, r)
			if !strings.Contains(msg.Text, want[r.kind]) {
				t.Errorf("inline answer to %s = %q; want it to contain %q", r.kind, msg.Text, want[r.kind])
			}
		}
	}
	if len(limited) != 20 {
		t.Errorf("rate-limited /eta of the flooder = %d; want 20 (30 asked, a burst of 10)", len(limited))
	}
	// Every "working on it" gets its answer through its own response_url.
	e.fake.Wait(t, "response_url", len(working))
	answers := map[string]string{}
	for _, c := range e.fake.Calls("response_url") {
		var m struct{ Text string }
		json.Unmarshal(c.Body, &m)
		answers[strings.TrimPrefix(c.Form.Get("_path"), "/response/")] = m.Text
	}
	for _, r := range working {
		if a, ok := answers[r.respName]; !ok || !strings.Contains(a, want[r.kind]) {
			t.Errorf("follow-up to %s via its response_url = %q (sent %v); want it to contain %q", r.kind, a, ok, want[r.kind])
		}
	}
	// Every mention and DM within the limit is answered where it was asked.
	e.app.Wait(60 * time.Second)
	answered := len(e.fake.Calls("chat.postMessage")) + len(e.fake.Calls("chat.postEphemeral"))
	// The mention flooder: 10 answered, told once to wait, 4 left unanswered.
	if answered != len(events)-4 {
		t.Errorf("mention and DM answers = %d; want %d, one per event within the limit and one 'ask again' to the flooder", answered, len(events)-4)
	}
	told := 0
	for _, c := range e.fake.Calls("") {
		if (c.Method == "chat.postMessage" || c.Method == "chat.postEphemeral") && strings.Contains(c.Form.Get("text"), "Ask again in") {
			told++
		}
	}
	if told != 1 {
		t.Errorf("the mention flooder was told to wait %d times; want once", told)
	}
	if n := len(e.fake.Calls("response_url")); n != len(working) {
		t.Errorf("response_url follow-ups = %d; want %d, one per 'working on it'", n, len(working))
	}
	durs := make([]time.Duration, 0, len(reqs))
	for _, r := range reqs {
		durs = append(durs, r.took)
	}
	slices.Sort(durs)
	pct := func(p float64) time.Duration { return durs[int(p*float64(len(durs)-1))].Round(time.Millisecond) }
	scraping := 0
	for _, r := range reqs {
		if r.kind == "eta" || r.kind == "eta run" || r.kind == "status" || r.kind == "mention" || r.kind == "dm" {
			scraping++
		}
	}
	t.Logf("figure: %d concurrent signed requests (%d kinds: %d slash, %d events; 100 users + 2 flooders): all 200; slash %d inline, %d 'working on it' then answered via response_url, %d rate limited (flooder: 30 asked, burst 10); %d mention/DM answers (a mention flooder: 15 asked, 10 answered, told once to wait); %d metrics scrapes for %d questions that read them; ack p50 %v, p99 %v, max %v",
		len(reqs), kinds, len(reqs)-len(events), len(events), len(inline), len(working), len(limited), answered, scrapes.Load(), scraping, pct(0.5), pct(0.99), durs[len(durs)-1].Round(time.Millisecond))
}

// fuzzSlackServer is HTTP mode over the fuzz bot. Answers go nowhere: the app's context is
// cancelled, so an answer started in the background gives up at once instead of calling Slack.
func fuzzSlackServer(f *testing.F) (http.Handler, string) {
	b := fuzzBot(f)
	const secret = "8f742231b10e8888abcd99yyyzzz85a5"
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	api := NewAPI(APIOptions{Token: testkit.BotToken, APIURL: "http://127.0.0.1:1/api/", Log: log})
	app := NewApp(ctx, b, api, Identity{UserID: "U111"}, botmetrics.New(), log)
	hm := NewHTTPMode(app, config.NewSecret(secret), botmetrics.New(), log)
	return hm.Handler(), secret
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
