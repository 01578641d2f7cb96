package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
)

// instance is one `bot serve` of the app in HTTP mode, with a bot token of its own (the fake tells its calls
// apart by it), its own state directory, its own duty clock and terminal.
type instance struct {
	*serving
	token string
	clock *testkit.Clock
	out   *testkit.LogBuffer
	logs  *testkit.LogBuffer
}

func startInstance(t *testing.T, e *botEnv, fake *testkit.Slack, secret, name string) *instance {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{serving: &serving{addr: ln.Addr().String(), cancel: cancel, done: make(chan error, 1)},
		token: "xoxb-" + name + "-2222222222-AbCdEfGhIjKl", clock: testkit.NewClock(time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)),
		out: &testkit.LogBuffer{}, logs: &testkit.LogBuffer{}}
	env := config.Env{SlackBotToken: config.NewSecret(in.token), SlackSigningSecret: config.NewSecret(secret), SlackAPIURL: fake.APIURL(), StateDir: e.StateDir}
	go func() {
		in.done <- Serve(ctx, e.bot, ServeOptions{Env: env, Log: in.logs.Logger(), SampleEvery: 500 * time.Millisecond, Listener: ln,
			Out: in.out, DutyClock: in.clock})
	}()
	t.Cleanup(func() { in.stop(t) })
	return in
}

// calls are the instance's calls of method to the fake.
func (in *instance) calls(fake *testkit.Slack, method string) []testkit.Call {
	var out []testkit.Call
	for _, c := range fake.Calls(method) {
		if c.Token == in.token {
			out = append(out, c)
		}
	}
	return out
}

// deliver sends a signed Slack event to the instance, as Slack (or a load balancer in front of both) does,
// and returns the status.
func (in *instance) deliver(t *testing.T, secret string, body []byte, retry int) int {
	t.Helper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest(http.MethodPost, "http://"+in.addr+"/slack/events", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", testkit.Sign(secret, ts, body))
	if retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
		req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func dutyRole(c testkit.Call) string {
	var md struct {
		EventType    string         `json:"event_type"`
		EventPayload map[string]any `json:"event_payload"`
	}
	if json.Unmarshal([]byte(c.Form.Get("metadata")), &md) != nil || md.EventType != "runwatch_duty" {
		return ""
	}
	r, _ := md.EventPayload["role"].(string)
	return r
}

func isSourceDown(c testkit.Call) bool {
	return c.Method == "chat.postMessage" && strings.Contains(c.Form.Get("text"), "source down")
}

// TestServeTwoInstancesOneResponder: two instances of the app (two hosts, each with its own state directory)
// over one Slack. The second stands by: it posts no warning, answers a mention that reaches it (a
// redelivery through a load balancer) with 503, and says so on its terminal, while the first posts the
// warning and answers once. When the first stops, the second takes over at its next look and answers.
// Without duty messages both posted every warning and answered the redelivered mention.
func TestServeTwoInstancesOneResponder(t *testing.T) {
	t.Parallel()
	secret := "8f742231b10e8888abcd99yyyzzz85a5"
	// A metrics endpoint nothing listens on: a "source down" warning once it fails twice.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String() + "/metrics"
	dead.Close()
	opts := botOpts{Metrics: []string{deadURL}, Run: func(r *config.Run) { r.Schedule = "" }}
	fake := testkit.NewSlack(t)
	a := startInstance(t, newBotEnv(t, opts), fake, secret, "a")
	fake.WaitMatch(t, 0, "A on duty", func(c testkit.Call) bool { return c.Token == a.token && dutyRole(c) == "on_duty" })
	b := startInstance(t, newBotEnv(t, opts), fake, secret, "b")
	fake.WaitMatch(t, 0, "B standing by", func(c testkit.Call) bool { return c.Token == b.token && dutyRole(c) == "standby" })

	fake.WaitMatch(t, 0, "A's warning", func(c testkit.Call) bool { return c.Token == a.token && isSourceDown(c) })
	// A mention delivered to A, and redelivered to B (a load balancer in front of both).
	mention := testkit.MentionEvent("EvDuty1", "<@U111> ETA?", "U222", "C0SYNTH", "1700000900.000100", "")
	if code := a.deliver(t, secret, mention, 0); code != http.StatusOK {
		t.Fatalf("mention to A = %d; want 200", code)
	}
	if code := b.deliver(t, secret, mention, 1); code != http.StatusServiceUnavailable {
		t.Errorf("redelivered mention to B, standing by = %d; want 503 (answered by the instance on duty)", code)
	}
	answered := func(c testkit.Call) bool {
		return c.Method == "chat.postMessage" && c.Form.Get("thread_ts") == "1700000900.000100"
	}
	fake.WaitMatch(t, 0, "A's answer", answered)
	// Four more samples of A (two confirm a source down): B, had it sampled too, had as long to warn.
	base := botSamples(a.addr)
	for deadline := time.Now().Add(30 * time.Second); botSamples(a.addr) < base+4; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("A made %d samples in 30 s; want 4", botSamples(a.addr)-base)
		}
	}
	warnings, answers := 0, 0
	for _, c := range fake.Calls("chat.postMessage") {
		if isSourceDown(c) {
			warnings++
		}
		if answered(c) {
			answers++
		}
	}
	if warnings != 1 || answers != 1 {
		t.Errorf("with two instances: %d warnings and %d answers to one mention; want 1 and 1", warnings, answers)
	}
	for _, c := range b.calls(fake, "") {
		if c.Method == "chat.postMessage" && dutyRole(c) == "" {
			t.Errorf("B, standing by, posted %q", c.Form.Get("text"))
		}
	}
	if !strings.Contains(b.out.String(), "standing by: runwatch on") || !strings.Contains(b.out.String(), "answers nothing and posts nothing") {
		t.Errorf("B's terminal does not say it stands by:\n%s", b.out.String())
	}
	resp, err := http.Get("http://" + b.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("B's /healthz standing by = %d; want 503, so that a load balancer sends Slack to A", resp.StatusCode)
	}

	// A stops: its duty message goes off duty, and B takes over at its next look.
	a.stop(t)
	b.clock.AwaitAfter(t)
	b.clock.Add(20 * time.Second)
	fake.WaitMatch(t, 0, "B on duty", func(c testkit.Call) bool {
		return c.Token == b.token && c.Method == "chat.postMessage" && dutyRole(c) == "on_duty"
	})
	second := testkit.MentionEvent("EvDuty2", "<@U111> ETA?", "U222", "C0SYNTH", "1700000901.000100", "")
	deadline := time.After(20 * time.Second)
	for code := b.deliver(t, secret, second, 0); code != http.StatusOK; code = b.deliver(t, secret, second, 0) {
		select {
		case <-deadline:
			t.Fatalf("mention to B after it took over = %d; want 200", code)
		case <-time.After(20 * time.Millisecond): // B flips from standby to on duty right after its message
		}
	}
	fake.WaitMatch(t, 0, "B's answer", func(c testkit.Call) bool {
		return c.Token == b.token && c.Method == "chat.postMessage" && c.Form.Get("thread_ts") == "1700000901.000100"
	})
	if !strings.Contains(b.out.String(), "on duty now: took over from runwatch on") {
		t.Errorf("B's terminal does not say it took over:\n%s", b.out.String())
	}
}
