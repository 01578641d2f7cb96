package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slacktest"

	"runwatch/config"
	"runwatch/monitor"
	"runwatch/probes"
	"runwatch/reports"
	"runwatch/state"
)

// Test credentials. They look real so that redaction is exercised on realistic shapes.
var (
	testBotToken = config.NewSecret("xoxb-1111111111-2222222222-AbCdEfGhIjKlMnOpQrStUvWx")
	testAppToken = config.NewSecret("xapp-1-A111-3333333333-0123456789abcdef0123456789abcdef")
)

// slackCall is one request the bot made to the fake Slack.
type slackCall struct {
	Method string
	Form   url.Values
	Body   []byte
	TS     string // the ts the fake answered with
}

// blocksText returns the text of every block of a chat call, for assertions on content.
func (c slackCall) blocksText(t testing.TB) string {
	t.Helper()
	raw := c.Form.Get("blocks")
	if raw == "" {
		return ""
	}
	var blocks []map[string]any
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil {
		t.Fatalf("blocks of %s are not JSON: %v\n%s", c.Method, err, raw)
	}
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x["text"].(string); ok {
				b.WriteString(s + "\n")
			}
			for k, e := range x {
				if _, isString := e.(string); k != "text" || !isString {
					walk(e)
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, bl := range blocks {
		walk(bl)
	}
	return b.String()
}

type fakeFailure struct {
	status     int
	retryAfter string
	body       string
}

// slackFake is Slack's Web API for tests: slacktest's server with the methods runwatch calls
// overridden to record each call, answer like Slack, or fail on request.
type slackFake struct {
	t   testing.TB
	srv *slacktest.Server

	mu       sync.Mutex
	calls    []slackCall
	fail     map[string][]fakeFailure
	seq      int
	userID   string // who auth.test says the bot is
	authErr  string // auth.test fails with this error when set
	openErr  string // apps.connections.open fails with this error when set
	wsURL    string // what apps.connections.open hands out
	notify   chan struct{}
	respCode atomic.Int32 // status for response_url posts (0: 200)
	// refuseCharts makes the fake refuse any message with a data_visualization block, as Slack
	// does where the block is not supported (invalid_blocks; a response_url answers 400).
	refuseCharts atomic.Bool
}

func newSlackFake(t testing.TB) *slackFake {
	t.Helper()
	f := &slackFake{t: t, fail: map[string][]fakeFailure{}, userID: "U111", notify: make(chan struct{}, 1)}
	methods := []string{"auth.test", "chat.postMessage", "chat.update", "chat.postEphemeral",
		"files.getUploadURLExternal", "files.completeUploadExternal", "apps.connections.open", "views.publish",
		"chat.getPermalink", "conversations.history", "conversations.replies"}
	f.srv = slacktest.NewTestServer(func(c slacktest.Customize) {
		for _, m := range methods {
			c.Handle("/"+m, f.handler(m))
		}
		c.Handle("/upload/", f.handler("upload"))
		c.Handle("/response/", f.handler("response_url"))
	})
	f.srv.Start()
	t.Cleanup(f.srv.Stop)
	return f
}

// APIURL is the base to give the bot (SLACK_API_URL).
func (f *slackFake) APIURL() string { return f.srv.GetAPIURL() }

// ResponseURL is a response_url on the fake.
func (f *slackFake) ResponseURL(name string) string { return f.srv.GetAPIURL() + "response/" + name }

// failNext makes the next calls of method fail, in order.
func (f *slackFake) failNext(method string, fs ...fakeFailure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[method] = append(f.fail[method], fs...)
}

func channelID(ch string) string {
	if strings.HasPrefix(ch, "#") {
		return "C" + strings.ToUpper(strings.NewReplacer("-", "", "_", "").Replace(ch[1:]))
	}
	return ch
}

func (f *slackFake) handler(method string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		call := slackCall{Method: method, Body: body, Form: url.Values{}}
		ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		switch {
		case ct == "application/x-www-form-urlencoded":
			call.Form, _ = url.ParseQuery(string(body))
		case strings.HasPrefix(ct, "multipart/"):
			mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
			for {
				p, err := mr.NextPart()
				if err != nil {
					break
				}
				b, _ := io.ReadAll(p)
				if p.FileName() != "" {
					call.Body = b
					call.Form.Set("filename", p.FileName())
				} else {
					call.Form.Set(p.FormName(), string(b))
				}
			}
		}
		if method == "response_url" {
			call.Form.Set("_path", r.URL.Path) // which response_url was answered
		}
		for k, vs := range r.URL.Query() {
			if _, set := call.Form[k]; !set {
				call.Form[k] = vs
			}
		}
		f.mu.Lock()
		f.seq++
		ts := fmt.Sprintf("1700000000.%06d", f.seq)
		call.TS = ts
		f.calls = append(f.calls, call)
		var fail *fakeFailure
		if q := f.fail[method]; len(q) > 0 {
			fail, f.fail[method] = &q[0], q[1:]
		}
		history := f.historyLocked(call.Form)
		userID, authErr, openErr, wsURL := f.userID, f.authErr, f.openErr, f.wsURL
		f.mu.Unlock()
		select {
		case f.notify <- struct{}{}:
		default:
		}
		if fail != nil {
			if fail.retryAfter != "" {
				w.Header().Set("Retry-After", fail.retryAfter)
			}
			w.WriteHeader(fail.status)
			io.WriteString(w, fail.body)
			return
		}
		if f.refuseCharts.Load() && bytes.Contains(body, []byte("data_visualization")) {
			if method == "response_url" {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, "invalid_blocks")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":false,"error":"invalid_blocks"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		ok := func(fields string) { fmt.Fprintf(w, `{"ok":true%s}`, fields) }
		switch method {
		case "auth.test":
			if authErr != "" {
				fmt.Fprintf(w, `{"ok":false,"error":%q}`, authErr)
				return
			}
			ok(fmt.Sprintf(`,"user_id":%q,"bot_id":"B111","user":"runwatch","team":"Test Team","team_id":"T111"`, userID))
		case "chat.postMessage":
			ok(fmt.Sprintf(`,"channel":%q,"ts":%q`, channelID(call.Form.Get("channel")), ts))
		case "chat.update":
			ok(fmt.Sprintf(`,"channel":%q,"ts":%q,"text":""`, call.Form.Get("channel"), call.Form.Get("ts")))
		case "chat.postEphemeral":
			ok(fmt.Sprintf(`,"message_ts":%q`, ts))
		case "files.getUploadURLExternal":
			ok(fmt.Sprintf(`,"upload_url":%q,"file_id":"F0001"`, f.srv.GetAPIURL()+"upload/F0001"))
		case "upload":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "OK - "+fmt.Sprint(len(call.Body)))
		case "files.completeUploadExternal":
			ok(`,"files":[{"id":"F0001","title":"chart"}]`)
		case "chat.getPermalink":
			ok(fmt.Sprintf(`,"channel":%q,"permalink":"https://test.slack.com/archives/%s/p%s"`, call.Form.Get("channel"), call.Form.Get("channel"),
				strings.ReplaceAll(call.Form.Get("message_ts"), ".", "")))
		case "conversations.history", "conversations.replies":
			b, _ := json.Marshal(history)
			ok(fmt.Sprintf(`,"messages":%s,"has_more":false`, b))
		case "apps.connections.open":
			if openErr != "" {
				fmt.Fprintf(w, `{"ok":false,"error":%q}`, openErr)
				return
			}
			ok(fmt.Sprintf(`,"url":%q`, wsURL))
		case "views.publish":
			ok(`,"view":{"id":"V0001","type":"home"}`)
		case "response_url":
			if c := f.respCode.Load(); c != 0 {
				w.WriteHeader(int(c))
				return
			}
			io.WriteString(w, "ok")
		}
	}
}

// historyLocked answers conversations.history (top-level messages) and conversations.replies (a
// thread) from the chat.postMessage calls recorded so far, with their metadata, newest first.
func (f *slackFake) historyLocked(q url.Values) []map[string]any {
	var out []map[string]any
	for i := len(f.calls) - 1; i >= 0; i-- {
		c := f.calls[i]
		if c.Method != "chat.postMessage" || channelID(c.Form.Get("channel")) != channelID(q.Get("channel")) || c.Form.Get("thread_ts") != q.Get("ts") {
			continue
		}
		m := map[string]any{"type": "message", "ts": c.TS, "text": c.Form.Get("text"), "bot_id": "B111"}
		var md map[string]any
		if json.Unmarshal([]byte(c.Form.Get("metadata")), &md) == nil && q.Get("include_all_metadata") == "1" {
			m["metadata"] = md
		}
		out = append(out, m)
	}
	return out
}

// Calls returns the recorded calls of method ("" for all).
func (f *slackFake) Calls(method string) []slackCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []slackCall
	for _, c := range f.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// wait waits until at least n calls of method were made and returns them.
func (f *slackFake) wait(t testing.TB, method string, n int) []slackCall {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if cs := f.Calls(method); len(cs) >= n {
			return cs
		}
		select {
		case <-f.notify:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("waited 20s for %d %s calls; got %d (all calls: %v)", n, method, len(f.Calls(method)), f.methods())
		}
	}
}

// waitMatch waits for a call at index from or later that satisfies pred, and returns its index
// (the fake's message ts is 1700000000.<index+1>) and the call.
func (f *slackFake) waitMatch(t testing.TB, from int, what string, pred func(slackCall) bool) (int, slackCall) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		calls := f.Calls("")
		for i := from; i < len(calls); i++ {
			if pred(calls[i]) {
				return i, calls[i]
			}
		}
		select {
		case <-f.notify:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("waited 30s for %s; calls: %v", what, f.methods())
		}
	}
}

func (f *slackFake) methods() []string {
	var out []string
	for _, c := range f.Calls("") {
		out = append(out, c.Method)
	}
	return out
}

// vllmMetrics serves vLLM V1 metrics whose counters grow on every scrape, like a busy server.
func vllmMetrics(t testing.TB) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := float64(n.Add(1))
		fmt.Fprintf(w, `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 200
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 12
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} 0.87
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="m"} %g
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop",model_name="m"} %g
`, 565000+k*41580, 300+k)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// testClock is a settable clock for the monitor.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// botEnv is a bot over one run, "synth", with real probes: a progress log, optionally a metrics
// endpoint, an output directory, a state directory.
type botEnv struct {
	bot      *Bot
	mon      *monitor.Monitor
	file     *config.File
	dir      string
	log      string
	stateDir string
	clock    *testClock // nil: wall clock
}

type botOpts struct {
	metrics   []string
	run       func(r *config.Run)
	file      func(f *config.File)
	env       config.Env
	clock     *testClock
	stateDir  string
	timeout   time.Duration
	logName   string
	noLogFile bool
	statfs    *probes.StatFS // nil: the real statfs
	readOnly  string         // the monitor only reads its state directory, for this reason
	procRoot  string         // "": the real /proc
}

func newBotEnv(t testing.TB, o botOpts) *botEnv {
	t.Helper()
	dir := t.TempDir()
	name := o.logName
	if name == "" {
		name = "gen.log"
	}
	e := &botEnv{dir: dir, log: filepath.Join(dir, name), stateDir: o.stateDir, clock: o.clock}
	if e.stateDir == "" {
		e.stateDir = filepath.Join(dir, "state")
	}
	if !o.noLogFile {
		e.writeLog(t, 300, 25000)
	}
	os.MkdirAll(filepath.Join(dir, "out"), 0o755)
	r := config.Run{Name: "synth", Channel: "#synth", Log: e.log, Metrics: o.metrics, Outputs: []string{filepath.Join(dir, "out")},
		Stages: []config.Stage{{Name: "generate", Check: "progress"}, {Name: "review", Check: "manual"}}}
	if o.run != nil {
		o.run(&r)
	}
	e.file = &config.File{Source: "test", Runs: []config.Run{r}}
	if o.file != nil {
		o.file(e.file)
	}
	st, err := state.Open(e.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	mo := monitor.Options{ProbeTimeout: 2 * time.Second, State: st, RateWindow: -1, StatFS: o.statfs,
		ReadOnly: o.readOnly != "", ReadOnlyWhy: o.readOnly, ProcRoot: o.procRoot}
	if o.timeout > 0 {
		mo.ProbeTimeout = o.timeout
	}
	if o.clock != nil {
		mo.Now = o.clock.Now
	}
	m, problems, err := monitor.New(e.file, mo)
	if err != nil || len(problems) > 0 {
		t.Fatalf("monitor.New = %v, %v", problems, err)
	}
	e.mon = m
	if o.env.Admins == nil {
		o.env.Admins = []string{"UADMIN"}
	}
	e.bot = NewBot(m, time.UTC, o.env)
	return e
}

func (e *botEnv) writeLog(t testing.TB, done, total int) {
	t.Helper()
	line := fmt.Sprintf("starting\nProgress: %d/%d (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n", done, total)
	if err := os.WriteFile(e.log, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

// logBuffer is a slog logger writing into a buffer, for checks on what was logged.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newTestAPI is a SlackAPI on the fake that records its waits instead of sleeping.
func newTestAPI(t testing.TB, f *slackFake, log *slog.Logger, m *Metrics) (*SlackAPI, *[]time.Duration) {
	t.Helper()
	api := NewSlackAPI(SlackAPIOptions{Token: testBotToken, APIURL: f.APIURL(), Redactor: NewRedactor(testBotToken, testAppToken),
		Metrics: m, Log: log})
	var mu sync.Mutex
	waits := &[]time.Duration{}
	api.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return ctx.Err()
	}
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

func TestRedact(t *testing.T) {
	r := NewRedactor(testBotToken, testAppToken, config.NewSecret("8f742231b10e8888abcd99yyyzzz85a5"), config.NewSecret("short"))
	tests := []struct {
		in, want string
	}{
		{"token " + testBotToken.Reveal() + " rejected", "token xoxb-[redacted] rejected"},
		{"app " + testAppToken.Reveal(), "app xapp-[redacted]"},
		{"user token xoxp-12-34-abc in a log", "user token xoxp-[redacted] in a log"},
		{"secret=8f742231b10e8888abcd99yyyzzz85a5;", "secret=[redacted];"},
		{"post https://hooks.slack.com/commands/T1/2/abc failed", "post https://hooks.slack.com/[redacted] failed"},
		// files.getUploadURLExternal's URL is a capability in its path, and the upload sends the bot token to it.
		{`Post "https://files.slack.com/upload/v1/CwABAAAAXAoAAZnjgP5xYz": EOF`, `Post "https://files.slack.com/upload/[redacted]": EOF`},
		{"nothing short here", "nothing short here"},
		{"xoxb- alone", "xoxb- alone"},
		{`Dialing to websocket on url wss://wss-primary.slack.com/link/?ticket=T1CKET&app_id=A1`, `Dialing to websocket on url wss://wss-primary.slack.com/link/?ticket=[redacted]&app_id=[redacted]`},
		{"get http://admin:Pa55@host:9090/api?x=1: refused", "get http://host:9090/api?x=[redacted]: refused"},
	}
	for _, tc := range tests {
		if got := r.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactLogger(t *testing.T) {
	var buf logBuffer
	log := RedactLogger(buf.logger(), NewRedactor(testBotToken))
	tok := testBotToken.Reveal()
	log.Info("calling with "+tok, "err", fmt.Errorf("bad %s", tok), "s", tok, slog.Group("g", "t", tok))
	log.With("k", tok).WithGroup("grp").Warn("again", "x", []string{tok})
	if out := buf.String(); strings.Contains(out, tok) || strings.Contains(out, "AbCdEf") {
		t.Errorf("log output holds the token:\n%s", out)
	} else if strings.Count(out, "xoxb-[redacted]") < 6 {
		t.Errorf("log output lost its content:\n%s", out)
	}
}

func TestSlackRetryable(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		retry bool
		wait  time.Duration
	}{
		{"429 with Retry-After", &slack.RateLimitedError{RetryAfter: 7 * time.Second}, true, 7 * time.Second},
		{"429 with Retry-After 0", &slack.RateLimitedError{}, true, time.Second},
		{"503", slack.StatusCodeError{Code: 503, Status: "503 Service Unavailable"}, true, 0},
		{"404", slack.StatusCodeError{Code: 404, Status: "404 Not Found"}, false, 0},
		{"internal_error", slack.SlackErrorResponse{Err: "internal_error"}, true, 0},
		{"channel_not_found", slack.SlackErrorResponse{Err: "channel_not_found"}, false, 0},
		{"invalid_auth", fmt.Errorf("post: %w", slack.SlackErrorResponse{Err: "invalid_auth"}), false, 0},
		{"connection refused", &url.Error{Op: "Post", URL: "x", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, true, 0},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true, 0},
		{"canceled", context.Canceled, false, 0},
		{"deadline", &url.Error{Op: "Post", URL: "x", Err: context.DeadlineExceeded}, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			retry, wait, _ := slackRetryable(tc.err)
			if retry != tc.retry || wait != tc.wait {
				t.Errorf("slackRetryable(%v) = %v, %v; want %v, %v", tc.err, retry, wait, tc.retry, tc.wait)
			}
		})
	}
}

func TestSlackAPIHonoursRetryAfter(t *testing.T) {
	f := newSlackFake(t)
	api, waits := newTestAPI(t, f, nil, nil)
	f.failNext("chat.postMessage", fakeFailure{status: 429, retryAfter: "3", body: `{"ok":false,"error":"ratelimited"}`})
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
	f.failNext("chat.postMessage", fakeFailure{status: 429, retryAfter: "30"})
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
			f := newSlackFake(t)
			api, waits := newTestAPI(t, f, nil, nil)
			for range tc.failures {
				f.failNext("chat.update", fakeFailure{status: 503, body: "<html>busy " + testBotToken.Reveal() + "</html>"})
			}
			err := api.Update(context.Background(), "CSYNTH", "1.2", reports.Message{Sections: []string{"x"}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Update with %d 503s = %v; want error %v", tc.failures, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), testBotToken.Reveal()) {
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
	f := newSlackFake(t)
	var logs logBuffer
	api, _ := newTestAPI(t, f, RedactLogger(logs.logger(), NewRedactor(testBotToken)), nil)
	// Slack would not echo a token, but a proxy in between might: nothing reaches an error string.
	f.failNext("chat.postMessage", fakeFailure{status: 200, body: `{"ok":false,"error":"not_authed ` + testBotToken.Reveal() + `"}`})
	_, _, err := api.Post(context.Background(), "#synth", "", reports.Message{Sections: []string{"x"}})
	if err == nil {
		t.Fatal("Post = nil; want the error")
	}
	if strings.Contains(err.Error(), testBotToken.Reveal()) || !strings.Contains(err.Error(), "xoxb-[redacted]") {
		t.Errorf("Post error = %q; want the token redacted", err)
	}
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); !ok || !strings.HasPrefix(se.Err, "not_authed") {
		t.Errorf("errors.As(SlackErrorResponse) = %v, %v; want the SDK error underneath", se, ok)
	}
}

func TestSlackAPIMessages(t *testing.T) {
	f := newSlackFake(t)
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
		if bt := cs[0].blocksText(t); !strings.Contains(bt, "ETA *3 h*") || strings.Contains(bt, "<!channel>") {
			t.Errorf("%s blocks text = %q; want the sections, escaped", tc.method, bt)
		}
	}
}

func TestSlackAPIUpload(t *testing.T) {
	f := newSlackFake(t)
	api, _ := newTestAPI(t, f, nil, nil)
	png := []byte("\x89PNG\r\n\x1a\nnot really a chart")
	if err := api.Upload(context.Background(), "C1", "1700000000.000009", Attachment{Name: "synth-chart.png", Title: "synth", AltText: "a chart", Data: png}); err != nil {
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
	if err := api.Upload(context.Background(), "C1", "", Attachment{Name: "empty.png"}); err == nil {
		t.Errorf("Upload(empty) = nil; want an error")
	}
}

func TestResponseURLAllowed(t *testing.T) {
	api := NewSlackAPI(SlackAPIOptions{Token: testBotToken, APIURL: "http://127.0.0.1:4000/api/"})
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

func TestBotAllowedChannels(t *testing.T) {
	e := newBotEnv(t, botOpts{
		env: config.Env{AllowedChannels: []string{"C0ENV"}, Admins: []string{"UADMIN"}},
		file: func(f *config.File) {
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

// TestResponseURLNotInErrors: a response_url is a credential of sorts (anyone holding it posts in the
// channel); neither Respond nor ReplaceOriginal returns an error that names it, whether Slack refuses the
// post or the connection fails.
func TestResponseURLNotInErrors(t *testing.T) {
	f := newSlackFake(t)
	api, _ := newTestAPI(t, f, slog.New(slog.DiscardHandler), NewMetrics())
	hook := f.ResponseURL("T111/SECRETHOOK42")
	f.failNext("response_url", fakeFailure{status: 404, body: "no_such_hook"}, fakeFailure{status: 404, body: "no_such_hook"})
	ctx := context.Background()
	if err := api.ReplaceOriginal(ctx, hook, "x", nil); err == nil || strings.Contains(err.Error(), "SECRETHOOK42") {
		t.Errorf("ReplaceOriginal refused = %v; want an error without the response_url", err)
	}
	if err := api.Respond(ctx, hook, reports.Message{Sections: []string{"x"}}, true); err == nil || strings.Contains(err.Error(), "SECRETHOOK42") {
		t.Errorf("Respond refused = %v; want an error without the response_url", err)
	}
	f.srv.Stop() // the connection fails now
	if err := api.ReplaceOriginal(ctx, hook, "x", nil); err == nil || strings.Contains(err.Error(), "SECRETHOOK42") {
		t.Errorf("ReplaceOriginal unreachable = %v; want an error without the response_url", err)
	} else {
		t.Logf("unreachable: %v", err)
	}
}
