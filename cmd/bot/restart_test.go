package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/slack-go/slack/slacktest"

	"runwatch/config"
	"runwatch/monitor"
	"runwatch/sim"
	"runwatch/state"
)

const (
	restartBotToken = "xoxb-1111111111-2222222222-AbCdEfGhIjKlMnOpQrStUvWx"
	restartSecret   = "8f742231b10e8888abcd99yyyzzz85a5"
)

// restartCall is one Web API call `bot serve` made.
type restartCall struct {
	Method string
	Form   url.Values
	At     time.Time
	Lands  time.Time // when Slack answers it; a message is in the channel from then on
}

// restartSlack is Slack's Web API as far as `bot serve` uses it, recording each call.
type restartSlack struct {
	srv *slacktest.Server

	mu    sync.Mutex
	calls []restartCall
	seq   int
	// postDelay is how long chat.postMessage takes to answer. The call is recorded as it arrives; the
	// message is in the channel once Slack answers, as Slack's is: a look-up (answered at once) made
	// meanwhile does not find it.
	postDelay atomic.Int64
	next      chan struct{} // closed at the next call (watch); nil while nobody waits
}

func newRestartSlack(t *testing.T) *restartSlack {
	t.Helper()
	f := &restartSlack{}
	f.srv = slacktest.NewTestServer(func(c slacktest.Customize) {
		for _, m := range []string{"auth.test", "chat.postMessage", "chat.update", "chat.postEphemeral", "conversations.history", "conversations.replies", "chat.getPermalink"} {
			c.Handle("/"+m, f.handler(m))
		}
	})
	f.srv.Start()
	t.Cleanup(f.srv.Stop)
	return f
}

func (f *restartSlack) handler(method string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		f.mu.Lock()
		f.seq++
		ts := fmt.Sprintf("1700000000.%06d", f.seq)
		delay := time.Duration(0)
		if method == "chat.postMessage" {
			delay = time.Duration(f.postDelay.Load())
		}
		f.calls = append(f.calls, restartCall{Method: method, Form: r.PostForm, At: time.Now(), Lands: time.Now().Add(delay)})
		if f.next != nil {
			close(f.next)
			f.next = nil
		}
		f.mu.Unlock()
		if delay > 0 {
			time.Sleep(delay)
		}
		f.mu.Lock()
		history := f.historyLocked(r.PostForm)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch method {
		case "conversations.history", "conversations.replies":
			b, _ := json.Marshal(history)
			fmt.Fprintf(w, `{"ok":true,"messages":%s,"has_more":false}`, b)
			return
		case "chat.getPermalink":
			fmt.Fprintf(w, `{"ok":true,"permalink":"https://test.slack.com/archives/%s/p%s"}`, r.PostForm.Get("channel"), strings.ReplaceAll(r.PostForm.Get("message_ts"), ".", ""))
			return
		case "auth.test":
			io.WriteString(w, `{"ok":true,"user_id":"U111","bot_id":"B111","user":"runwatch","team":"Test Team","team_id":"T111"}`)
		case "chat.postMessage":
			ch := r.PostForm.Get("channel")
			if strings.HasPrefix(ch, "#") {
				ch = "C" + strings.ToUpper(strings.ReplaceAll(ch[1:], "-", ""))
			}
			fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, ch, ts)
		case "chat.update":
			fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q,"text":""}`, r.PostForm.Get("channel"), r.PostForm.Get("ts"))
		default:
			fmt.Fprintf(w, `{"ok":true,"message_ts":%q}`, ts)
		}
	}
}

// historyLocked is the channel's (or the thread's) messages so far, newest first, with their
// metadata when asked for; each message's ts is its call's number, as chat.postMessage answered.
func (f *restartSlack) historyLocked(q url.Values) []map[string]any {
	var out []map[string]any
	for i := len(f.calls) - 1; i >= 0; i-- {
		c := f.calls[i]
		if c.Method != "chat.postMessage" || c.Lands.After(time.Now()) || c.Form.Get("channel") != q.Get("channel") || c.Form.Get("thread_ts") != q.Get("ts") {
			continue
		}
		m := map[string]any{"type": "message", "ts": fmt.Sprintf("1700000000.%06d", i+1), "text": c.Form.Get("text")}
		var md map[string]any
		if q.Get("include_all_metadata") == "1" && json.Unmarshal([]byte(c.Form.Get("metadata")), &md) == nil {
			m["metadata"] = md
		}
		out = append(out, m)
	}
	return out
}

// watch is the calls so far and a channel closed at the next one: a test waits on Slack's calls
// instead of polling them.
func (f *restartSlack) watch() ([]restartCall, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.next == nil {
		f.next = make(chan struct{})
	}
	return append([]restartCall(nil), f.calls...), f.next
}

func (f *restartSlack) snapshot() []restartCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]restartCall(nil), f.calls...)
}

// restartStatus reports whether c is a scheduled status of run (its title).
func restartStatus(c restartCall, run string) bool {
	return (c.Method == "chat.postMessage" || c.Method == "chat.update") && strings.Contains(c.Form.Get("text"), "*"+run+" · status")
}

// restartJob is a vLLM job behind httptest: sim.Job advanced at ten times the wall clock, its
// /metrics served and its progress logged. It starts a few thousand items in, so the estimate is
// worth announcing within seconds.
type restartJob struct {
	mu      sync.Mutex
	job     *sim.Job
	log     string
	metrics *httptest.Server
}

func startRestartJob(t *testing.T, dir string) *restartJob {
	t.Helper()
	s := sim.Scenario{Name: "restart", Items: 25000, Concurrency: 200, QueueDepth: 56, MaxTokens: 4096, MeanTokens: 1000, Sigma: 0.8,
		PromptTokens: 350, PeakTokensPerS: 1400, SingleTokensPerS: 60, Jitter: 0.04, Engines: 1}
	j := &restartJob{job: sim.NewJob(s, 1), log: filepath.Join(dir, "gen.log")}
	j.job.Advance(1800)
	j.metrics = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.mu.Lock()
		b := j.job.Metrics()
		j.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(b)
	}))
	t.Cleanup(j.metrics.Close)
	f, err := os.Create(j.log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer f.Close()
		last := time.Now()
		for {
			j.mu.Lock()
			now := time.Now()
			j.job.Advance(10 * now.Sub(last).Seconds())
			last = now
			fmt.Fprintln(f, j.job.ProgressLine())
			j.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return j
}

// restartBot is one `bot serve` process.
type restartBot struct {
	cmd    *exec.Cmd
	addr   string
	stderr *restartBuffer
	exited chan struct{} // closed when the process is gone; err says how it ended
	err    error
}

// restartBuffer is a goroutine-safe buffer for a child's output.
type restartBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *restartBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *restartBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func restartFreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startRestartBot(t *testing.T, bin, dir string, env []string) *restartBot {
	t.Helper()
	b := &restartBot{addr: restartFreeAddr(t), stderr: &restartBuffer{}, exited: make(chan struct{})}
	b.cmd = exec.Command(bin, "serve")
	b.cmd.Dir = dir
	b.cmd.Env = append(env, "RUNWATCH_HTTP_ADDR="+b.addr)
	b.cmd.Stdout, b.cmd.Stderr = b.stderr, b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		b.err = b.cmd.Wait()
		close(b.exited)
	}()
	t.Cleanup(func() {
		b.cmd.Process.Kill()
		<-b.exited
	})
	restartWait(t, "bot serve to answer /healthz", func() bool {
		select {
		case <-b.exited:
			t.Fatalf("bot serve exited: %v\n%s", b.err, b.stderr)
		default:
		}
		resp, err := http.Get("http://" + b.addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return b
}

// slash sends a signed slash command and returns the answer's text.
func (b *restartBot) slash(t *testing.T, text string) string {
	t.Helper()
	body, ts, sig := signSlash(text)
	resp := postSlash(t, b.addr, body, ts, sig)
	defer resp.Body.Close()
	var ans struct{ Text string }
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/runwatch %s = %d, %v", text, resp.StatusCode, err)
	}
	return ans.Text
}

// postSlash posts a signed slash command's body to the bot at addr, as Slack does.
func postSlash(t *testing.T, addr, body, ts, sig string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/slack/commands", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// signSlash is an admin's /runwatch text from #synth, signed now with the test's signing secret: the body,
// its timestamp and its v0 signature.
func signSlash(text string) (body, ts, sig string) {
	body = url.Values{"command": {"/runwatch"}, "text": {text}, "channel_id": {"CSYNTH"}, "channel_name": {"synth"},
		"user_id": {"UADMIN"}, "team_id": {"T111"}, "trigger_id": {"1.2.3"}}.Encode()
	ts = strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(restartSecret))
	fmt.Fprintf(mac, "v0:%s:%s", ts, body)
	return body, ts, "v0=" + hex.EncodeToString(mac.Sum(nil))
}

func restartWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 60s for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// restartPersisted is what the test reads back from a run's state file, as `bot serve` wrote it.
type restartPersisted struct {
	Shift struct {
		Announced bool    `json:"announced"`
		FinishT   float64 `json:"finish_t"`
	} `json:"shift"`
	LastETA json.RawMessage `json:"last_eta"`
}

func restartReadState(t *testing.T, stateDir, run string) restartPersisted {
	t.Helper()
	var p restartPersisted
	b, err := os.ReadFile(filepath.Join(stateDir, "run-"+run+".json"))
	if err != nil {
		return p
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("run-%s.json does not decode (a save was not atomic): %v", run, err)
	}
	return p
}

// restartMonitor opens the state directory the way `bot status` does (read-only) and returns what
// it finds.
func restartMonitor(t *testing.T, cfg, stateDir string) *monitor.Monitor {
	t.Helper()
	f, err := config.Load(cfg, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	dir, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	m, problems, err := monitor.New(f, monitor.Options{State: dir, ReadOnly: true, RateWindow: -1})
	if err != nil || len(problems) > 0 {
		t.Fatalf("state after the kill: %v %v", problems, err)
	}
	return m
}

// TestServeSurvivesKill9 runs the real binary's `bot serve` in HTTP mode against a fake Slack and
// a simulated vLLM job, lets it sample and post, kills it with SIGKILL and starts it again over
// the same state directory. History, the announced ETA, the snooze, the stage mark, the living
// status message and the day's thread survive; nothing is posted twice and no ETA shift is
// announced because of the restart.
func TestServeSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the bot for about 20 seconds")
	}
	dir := t.TempDir()
	bin := buildBot(t)
	job := startRestartJob(t, dir)
	stateDir := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "runwatch.yaml")
	out := filepath.Join(dir, "out")
	os.MkdirAll(out, 0o755)
	runFile := fmt.Sprintf(`runs:
  - name: synth
    channel: "#synth"
    log: %[1]q
    metrics: [%[2]q]
    outputs: [%[3]q]
    schedule: "@every 2s"
    post_mode: update
    stages:
      - {name: generate, check: progress}
      - {name: review, check: manual}
  - name: synth-thread
    channel: "#synth-thread"
    log: %[1]q
    metrics: [%[2]q]
    outputs: [%[3]q]
    schedule: "@every 2s"
    post_mode: thread
`, job.log, job.metrics.URL+"/metrics", out)
	if err := os.WriteFile(cfg, []byte(runFile), 0o644); err != nil {
		t.Fatal(err)
	}
	slack := newRestartSlack(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "RUNWATCH_DISCOVER=off", "RUNWATCH_CONFIG=" + cfg, "RUNWATCH_STATE_DIR=" + stateDir,
		"RUNWATCH_SAMPLE_INTERVAL=1s", "RUNWATCH_ADMINS=UADMIN", "SLACK_BOT_TOKEN=" + restartBotToken,
		"SLACK_SIGNING_SECRET=" + restartSecret, "SLACK_API_URL=" + slack.srv.GetAPIURL()}

	first := startRestartBot(t, bin, dir, env)
	restartWait(t, "the first status posts", func() bool {
		var living, parent bool
		for _, c := range slack.snapshot() {
			living = living || c.Method == "chat.postMessage" && restartStatus(c, "synth")
			parent = parent || c.Method == "chat.postMessage" && restartStatus(c, "synth-thread") && c.Form.Get("thread_ts") == ""
		}
		return living && parent
	})
	if a := first.slash(t, "snooze 2h synth"); !strings.Contains(a, "snoozed for 2 h") {
		t.Fatalf("snooze answer = %q", a)
	}
	if a := first.slash(t, "stage review done synth"); !strings.Contains(a, "marked done") {
		t.Fatalf("stage answer = %q", a)
	}
	marked := len(slack.snapshot())
	restartWait(t, "an announced ETA, some history and a status showing the mark", func() bool {
		shown := false
		for _, c := range slack.snapshot()[marked:] {
			shown = shown || restartStatus(c, "synth") && strings.Contains(c.Form.Get("text"), ":white_check_mark: *review*")
		}
		return shown && restartReadState(t, stateDir, "synth").Shift.Announced && len(restartMonitor(t, cfg, stateDir).History("synth")) >= 3
	})

	// kill -9: no chance to save anything on the way out.
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	// A save the kill interrupted leaves its temporary file; the next start removes it once it is
	// stale. Only files the second process leaves count against it.
	leftover := map[string]bool{}
	ents, _ := os.ReadDir(stateDir)
	for _, e := range ents {
		leftover[e.Name()] = true
	}
	before := restartMonitor(t, cfg, stateDir)
	history := before.History("synth")
	snooze, snoozed := before.SnoozedUntil("synth")
	announced := restartReadState(t, stateDir, "synth")
	if len(history) < 3 || !snoozed || !announced.Shift.Announced || len(announced.LastETA) == 0 {
		t.Fatalf("state after the kill: %d points, snoozed %v, shift %+v, last ETA %s; want history, the snooze and an announced ETA",
			len(history), snoozed, announced.Shift, announced.LastETA)
	}
	var livingTS, parentTS string
	for _, c := range slack.snapshot() {
		if c.Method == "chat.postMessage" && restartStatus(c, "synth") && livingTS == "" {
			livingTS = restartTS(slack, c)
		}
		if c.Method == "chat.postMessage" && restartStatus(c, "synth-thread") && c.Form.Get("thread_ts") == "" && parentTS == "" {
			parentTS = restartTS(slack, c)
		}
	}
	killedAt := len(slack.snapshot())

	second := startRestartBot(t, bin, dir, env)
	restartWait(t, "statuses and samples after the restart", func() bool {
		var living, thread int
		for _, c := range slack.snapshot()[killedAt:] {
			if restartStatus(c, "synth") {
				living++
			}
			if restartStatus(c, "synth-thread") {
				thread++
			}
		}
		return living >= 2 && thread >= 2 && len(restartMonitor(t, cfg, stateDir).History("synth")) >= len(history)+3
	})
	after := restartMonitor(t, cfg, stateDir)

	// History: every point from before the kill, in place, then new ones.
	h := after.History("synth")
	for i, o := range history {
		if h[i].T != o.T || h[i].Done != o.Done {
			t.Fatalf("history point %d after the restart = t %v done %d; want t %v done %d as before the kill", i, h[i].T, h[i].Done, o.T, o.Done)
		}
	}
	// Snooze and stage mark.
	if u, ok := after.SnoozedUntil("synth"); !ok || !u.Equal(snooze) {
		t.Errorf("snooze after the restart = %v, %v; want until %v", u, ok, snooze)
	}
	// Announced ETA: the detector goes on from the announcement made before the kill.
	if got := restartReadState(t, stateDir, "synth").Shift; !got.Announced || got.FinishT != announced.Shift.FinishT {
		t.Errorf("announced finish after the restart = %+v; want %v from before the kill", got, announced.Shift.FinishT)
	}
	for _, c := range slack.snapshot()[killedAt:] {
		text := c.Form.Get("text")
		switch {
		case restartStatus(c, "synth"):
			if c.Method != "chat.update" || c.Form.Get("ts") != livingTS {
				t.Errorf("status after the restart: %s ts %q; want chat.update of the living message %s", c.Method, c.Form.Get("ts"), livingTS)
			}
			if !strings.Contains(text, "warnings snoozed until") || !strings.Contains(text, ":white_check_mark: *review*") {
				t.Errorf("status after the restart lacks the snooze or the stage mark:\n%s", text)
			}
		case restartStatus(c, "synth-thread"):
			if c.Method != "chat.postMessage" || c.Form.Get("thread_ts") != parentTS {
				t.Errorf("thread status after the restart: %s in thread %q; want a reply under the day's parent %s", c.Method, c.Form.Get("thread_ts"), parentTS)
			}
		}
	}
	for _, c := range slack.snapshot() {
		if strings.Contains(c.Form.Get("text"), "ETA moved") {
			t.Errorf("an ETA shift was announced:\n%s", c.Form.Get("text"))
		}
	}
	// No run is posted more often than its schedule across the restart: the restarted bot's first status comes
	// no sooner than the schedule after the last one the killed bot posted. Only that pair is timed: within one
	// process the schedule is cron's, and the arrival times of two posts a tick apart carry however long each
	// took to build and send on a loaded machine (636 ms apart once, under a parallel test run), not the bot's.
	calls := slack.snapshot()
	for _, run := range []string{"synth", "synth-thread"} {
		var before, after time.Time
		for i, c := range calls {
			if !restartStatus(c, run) {
				continue
			}
			if i < killedAt {
				before = c.At
			} else if after.IsZero() {
				after = c.At
			}
		}
		// And the restarted bot posts no more statuses than its schedule holds over their span, with 1.5 s of
		// arrival jitter: two posts in one tick (a tenth of a second apart) still show.
		var n int
		var first, last time.Time
		for _, c := range calls[killedAt:] {
			if restartStatus(c, run) {
				if n == 0 {
					first = c.At
				}
				last, n = c.At, n+1
			}
		}
		if most := int((last.Sub(first)+1500*time.Millisecond)/(2*time.Second)) + 1; n > most {
			t.Errorf("%s: %d statuses after the restart over %v; want at most %d on a 2 s schedule", run, n,
				last.Sub(first), most)
		}
		if !before.IsZero() && !after.IsZero() && after.Sub(before) < time.Second {
			t.Errorf("%s: the last status before the kill and the first after the restart %v apart; want no more often than every 2 s (less a second of cron rounding)",
				run, after.Sub(before))
		}
	}

	// A clean stop this time; the state directory holds only whole files.
	second.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-second.exited:
		if second.err != nil {
			t.Errorf("bot serve after SIGTERM: %v\n%s", second.err, second.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("bot serve did not stop on SIGTERM")
	}
	ents, _ = os.ReadDir(stateDir)
	for _, e := range ents {
		if !leftover[e.Name()] && strings.Contains(e.Name(), ".tmp-") || strings.Contains(e.Name(), ".corrupt-") {
			t.Errorf("state dir holds %s after a clean stop", e.Name())
		}
	}
	t.Logf("figure: kill -9 of bot serve: %d history points, snooze, stage mark, announced ETA, living message and thread intact; 0 duplicate posts, 0 shift warnings",
		len(history))
	for _, b := range []*restartBot{first, second} {
		if logs := b.stderr.String(); strings.Contains(logs, restartBotToken) || strings.Contains(logs, restartSecret) || strings.Contains(logs, "AbCdEfGh") {
			t.Errorf("a credential reached the bot's output:\n%s", logs)
		}
	}
}

// restartTS is the ts the fake answered c with: calls are numbered in order.
func restartTS(f *restartSlack, c restartCall) string {
	for i, x := range f.snapshot() {
		if x.At.Equal(c.At) && x.Method == c.Method && x.Form.Encode() == c.Form.Encode() {
			return fmt.Sprintf("1700000000.%06d", i+1)
		}
	}
	return ""
}
