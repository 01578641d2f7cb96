package testkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Call is one request the bot made to the fake Slack.
type Call struct {
	Method string
	Form   url.Values
	Body   []byte
	TS     string // the ts the fake answered with
	// held: a chat.postMessage still being taken (Slack.Hold): not in the channel's history yet.
	held bool
	// Token is the bearer token the call carried: which bot process made it, where a test runs
	// several over one fake.
	Token string
}

// BlocksText returns the text of every block of a chat call, for assertions on content.
func (c Call) BlocksText(t testing.TB) string {
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

// Failure is how the fake fails a call: an HTTP status, a Retry-After, a body.
type Failure struct {
	Status     int
	RetryAfter string
	Body       string
}

// Slack is Slack's Web API for tests: an HTTP server answering the methods runwatch calls like
// Slack, recording each call, failing on request.
type Slack struct {
	t   testing.TB
	srv *httptest.Server

	mu    sync.Mutex
	calls []Call
	fail  map[string][]Failure
	seq   int
	// UserID is who auth.test says the bot is; AuthErr, when set, is the error auth.test fails with,
	// OpenErr apps.connections.open's; WSURL is what apps.connections.open hands out. Set them before
	// the bot calls.
	UserID, AuthErr, OpenErr, WSURL string
	// Notify gets a value (when it has room) after each call.
	Notify chan struct{}
	// RespCode is the status for response_url posts (0: 200).
	RespCode atomic.Int32
	// RefuseCharts makes the fake refuse any message with a data_visualization block, as Slack
	// does where the block is not supported (invalid_blocks; a response_url answers 400).
	RefuseCharts atomic.Bool
	// Hold, when set (before the calls), runs before chat.postMessage answers: a Slack slow to take a post.
	// The message is in the channel's history only once Hold returns, as Slack's is once it answers.
	Hold func()
	// HoldHistory, when set (before the calls), runs before conversations.history answers: a look-up in
	// flight. The answer is the history as it was when the call arrived.
	HoldHistory func()
}

// slackMethods are the Web API methods the fake answers.
var slackMethods = []string{"auth.test", "chat.postMessage", "chat.update", "chat.postEphemeral",
	"files.getUploadURLExternal", "files.completeUploadExternal", "apps.connections.open", "views.publish",
	"chat.getPermalink", "conversations.history", "conversations.replies"}

// NewSlack starts the fake; it stops when the test ends.
func NewSlack(t testing.TB) *Slack {
	t.Helper()
	f := &Slack{t: t, fail: map[string][]Failure{}, UserID: "U111", Notify: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	for _, m := range slackMethods {
		mux.HandleFunc("/"+m, f.handler(m))
	}
	mux.HandleFunc("/upload/", f.handler("upload"))
	mux.HandleFunc("/response/", f.handler("response_url"))
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// APIURL is the base to give the bot (SLACK_API_URL).
func (f *Slack) APIURL() string { return f.srv.URL + "/" }

// ResponseURL is a response_url on the fake.
func (f *Slack) ResponseURL(name string) string { return f.APIURL() + "response/" + name }

// ClearFailures drops the failures FailNext queued for method.
func (f *Slack) ClearFailures(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.fail, method)
}

// FailNext makes the next calls of method fail, in order.
func (f *Slack) FailNext(method string, fs ...Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[method] = append(f.fail[method], fs...)
}

// ChannelID is the id the fake gives a channel name: #synth-25k is CSYNTH25K; an id is itself.
func ChannelID(ch string) string {
	if strings.HasPrefix(ch, "#") {
		return "C" + strings.ToUpper(strings.NewReplacer("-", "", "_", "").Replace(ch[1:]))
	}
	return ch
}

func (f *Slack) handler(method string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		call := Call{Method: method, Body: body, Form: url.Values{}, Token: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}
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
		if call.Token == "" {
			call.Token = call.Form.Get("token")
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
		hold := f.Hold
		if method == "conversations.history" {
			hold = f.HoldHistory
		}
		call.held = (method == "chat.postMessage" || method == "conversations.history") && hold != nil
		index := len(f.calls)
		f.calls = append(f.calls, call)
		var fail *Failure
		if q := f.fail[method]; len(q) > 0 {
			fail, f.fail[method] = &q[0], q[1:]
		}
		history := f.historyLocked(call.Form)
		userID, authErr, openErr, wsURL := f.UserID, f.AuthErr, f.OpenErr, f.WSURL
		f.mu.Unlock()
		select {
		case f.Notify <- struct{}{}:
		default:
		}
		if call.held {
			hold()
			f.mu.Lock()
			f.calls[index].held = false
			f.mu.Unlock()
		}
		if fail != nil {
			if fail.RetryAfter != "" {
				w.Header().Set("Retry-After", fail.RetryAfter)
			}
			w.WriteHeader(fail.Status)
			io.WriteString(w, fail.Body)
			return
		}
		if f.RefuseCharts.Load() && bytes.Contains(body, []byte("data_visualization")) {
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
			ok(fmt.Sprintf(`,"channel":%q,"ts":%q`, ChannelID(call.Form.Get("channel")), ts))
		case "chat.update":
			ok(fmt.Sprintf(`,"channel":%q,"ts":%q,"text":""`, call.Form.Get("channel"), call.Form.Get("ts")))
		case "chat.postEphemeral":
			ok(fmt.Sprintf(`,"message_ts":%q`, ts))
		case "files.getUploadURLExternal":
			ok(fmt.Sprintf(`,"upload_url":%q,"file_id":"F0001"`, f.APIURL()+"upload/F0001"))
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
			if c := f.RespCode.Load(); c != 0 {
				w.WriteHeader(int(c))
				return
			}
			io.WriteString(w, "ok")
		}
	}
}

// historyLocked answers conversations.history (top-level messages) and conversations.replies (a
// thread) from the chat.postMessage calls recorded so far, as the latest chat.update of each left it
// (text, metadata), newest first, up to latest (inclusive when asked) and limit, as Slack does. oldest is
// not applied: the fake's ts are not wall time, and callers pass a wall time there.
func (f *Slack) historyLocked(q url.Values) []map[string]any {
	var out []map[string]any
	ts := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	latest, inclusive := ts(q.Get("latest")), q.Get("inclusive") == "true" || q.Get("inclusive") == "1"
	limit, _ := strconv.Atoi(q.Get("limit"))
	for i := len(f.calls) - 1; i >= 0; i-- {
		c := f.calls[i]
		if c.Method != "chat.postMessage" || c.held || ChannelID(c.Form.Get("channel")) != ChannelID(q.Get("channel")) || c.Form.Get("thread_ts") != q.Get("ts") {
			continue
		}
		at := ts(c.TS)
		if q.Get("latest") != "" && (at > latest || at == latest && !inclusive) {
			continue
		}
		text, metadata := c.Form.Get("text"), c.Form.Get("metadata")
		for _, u := range f.calls[i+1:] {
			if u.Method == "chat.update" && u.Form.Get("ts") == c.TS && ChannelID(u.Form.Get("channel")) == ChannelID(c.Form.Get("channel")) {
				text = u.Form.Get("text")
				if u.Form.Has("metadata") {
					metadata = u.Form.Get("metadata")
				}
			}
		}
		m := map[string]any{"type": "message", "ts": c.TS, "text": text, "bot_id": "B111"}
		var md map[string]any
		if json.Unmarshal([]byte(metadata), &md) == nil && q.Get("include_all_metadata") == "1" {
			m["metadata"] = md
		}
		out = append(out, m)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out
}

// Calls returns the recorded calls of method ("" for all).
func (f *Slack) Calls(method string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Wait waits until at least n calls of method were made and returns them.
func (f *Slack) Wait(t testing.TB, method string, n int) []Call {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if cs := f.Calls(method); len(cs) >= n {
			return cs
		}
		select {
		case <-f.Notify:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("waited 20s for %d %s calls; got %d (all calls: %v)", n, method, len(f.Calls(method)), f.Methods())
		}
	}
}

// WaitMatch waits for a call at index from or later that satisfies pred, and returns its index
// (the fake's message ts is 1700000000.<index+1>) and the call.
func (f *Slack) WaitMatch(t testing.TB, from int, what string, pred func(Call) bool) (int, Call) {
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
		case <-f.Notify:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("waited 30s for %s; calls: %v", what, f.Methods())
		}
	}
}

// Methods are the methods of the calls so far, in order.
func (f *Slack) Methods() []string {
	var out []string
	for _, c := range f.Calls("") {
		out = append(out, c.Method)
	}
	return out
}

// Close stops the fake: calls fail to connect from then on.
func (f *Slack) Close() { f.srv.Close() }
