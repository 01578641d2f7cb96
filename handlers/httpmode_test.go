package handlers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	app     *slackApp
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
	e.app = newSlackApp(ctx, e.bot, api, SlackIdentity{UserID: "U111", User: "runwatch"}, e.metrics, log)
	hm := newHTTPMode(e.app, config.NewSecret(e.secret), e.metrics, log)
	e.srv = httptest.NewServer(hm.handler())
	t.Cleanup(func() {
		e.srv.Close()
		cancel()
		e.app.wait(10 * time.Second)
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
	srv := newHTTPServer(":0", http.NotFoundHandler(), (&testkit.LogBuffer{}).Logger())
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
		{"status", testkit.SlashBody("/runwatch", "status", "C0ALLOWED", "U222", e.fake.ResponseURL("3")), false, []string{"synth · status", "Checklist", "review"}},
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
	e.app.inline = 100 * time.Millisecond
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
	e.app.wait(10 * time.Second)
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
	e.app.wait(10 * time.Second)
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
	e.app.wait(10 * time.Second)
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
		e.app.wait(10 * time.Second)
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
	e.app.wait(10 * time.Second)
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
