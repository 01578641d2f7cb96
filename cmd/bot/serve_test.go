package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/racequiet"
	"runwatch/internal/testkit"
)

func TestServeCredentials(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	fake := testkit.NewSlack(t)
	rejecting := testkit.NewSlack(t)
	rejecting.AuthErr = "invalid_auth"
	noSocket := testkit.NewSlack(t)
	noSocket.OpenErr = "invalid_auth"
	secret := config.NewSecret("8f742231b10e8888abcd99yyyzzz85a5")
	tests := []struct {
		name string
		env  config.Env
		want string
	}{
		{"nothing set", config.Env{}, "no Slack connection configured"},
		{"HTTP without a signing secret", config.Env{HTTPAddr: "127.0.0.1:0", SlackBotToken: testkit.BotToken}, "SLACK_SIGNING_SECRET is not set"},
		{"a bot token as the app token", config.Env{SlackAppToken: testkit.BotToken, SlackBotToken: testkit.BotToken}, "SLACK_APP_TOKEN does not start with xapp-"},
		{"no bot token", config.Env{SlackAppToken: testkit.AppToken}, "SLACK_BOT_TOKEN is not set"},
		// One token of the pair: the other is named, not both as if nothing were set.
		{"only the bot token", config.Env{SlackBotToken: testkit.BotToken}, "SLACK_APP_TOKEN is not set: SLACK_BOT_TOKEN is, and Socket Mode needs the app-level token beside it"},
		{"only the signing secret", config.Env{SlackSigningSecret: secret}, "RUNWATCH_HTTP_ADDR is not set: SLACK_SIGNING_SECRET is"},
		{"a user token as the bot token", config.Env{SlackAppToken: testkit.AppToken, SlackBotToken: config.NewSecret("xoxp-1-2-3-abcdef")}, "SLACK_BOT_TOKEN does not start with xoxb-"},
		{"a bad API URL", config.Env{SlackAppToken: testkit.AppToken, SlackBotToken: testkit.BotToken, SlackAPIURL: "ftp://example/"}, "SLACK_API_URL"},
		{"bot token rejected", config.Env{SlackAppToken: testkit.AppToken, SlackBotToken: testkit.BotToken, SlackAPIURL: rejecting.APIURL()}, "SLACK_BOT_TOKEN was rejected by Slack (invalid_auth)"},
		{"app token rejected", config.Env{SlackAppToken: testkit.AppToken, SlackBotToken: testkit.BotToken, SlackAPIURL: noSocket.APIURL(), StateDir: t.TempDir()}, "SLACK_APP_TOKEN was rejected by Slack (invalid_auth)"},
		{"HTTP address unusable", config.Env{HTTPAddr: "256.0.0.1:1", SlackSigningSecret: secret, SlackBotToken: testkit.BotToken, SlackAPIURL: fake.APIURL(), StateDir: t.TempDir()}, "RUNWATCH_HTTP_ADDR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := Serve(ctx, e.bot, ServeOptions{Env: tc.env, SampleEvery: time.Hour})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Serve = %v; want an error containing %q", err, tc.want)
			}
			for _, s := range []config.Secret{tc.env.SlackAppToken, tc.env.SlackBotToken, secret} {
				if s.Set() && strings.Contains(err.Error(), s.Reveal()) {
					t.Errorf("error %q reveals a credential", err)
				}
			}
		})
	}
	if !errors.Is(Serve(context.Background(), e.bot, ServeOptions{}), ErrNoTransport) {
		t.Errorf("Serve with nothing configured is not ErrNoTransport")
	}
	if !errors.Is(Serve(context.Background(), e.bot, ServeOptions{Env: config.Env{SlackBotToken: testkit.BotToken}}), ErrNoTransport) {
		t.Errorf("Serve with the bot token alone is not ErrNoTransport")
	}
}

// serving is one `bot serve` in HTTP mode on a local port.
type serving struct {
	addr   string
	cancel context.CancelFunc
	done   chan error
}

func startServe(t *testing.T, e *botEnv, fake *testkit.Slack, secret string, logs *testkit.LogBuffer) *serving {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{addr: ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	env := config.Env{SlackBotToken: testkit.BotToken, SlackSigningSecret: config.NewSecret(secret), SlackAPIURL: fake.APIURL(), StateDir: e.StateDir}
	go func() {
		s.done <- Serve(ctx, e.bot, ServeOptions{Env: env, Log: logs.Logger(), SampleEvery: time.Second, Listener: ln})
	}()
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *serving) stop(t *testing.T) {
	t.Helper()
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("Serve after cancel = %v; want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("Serve did not return after cancel")
	}
}

func statusPosts(calls []testkit.Call) []testkit.Call {
	var out []testkit.Call
	for _, c := range calls {
		if strings.Contains(c.Form.Get("text"), "synth · status") {
			out = append(out, c)
		}
	}
	return out
}

func TestServeRestartKeepsSnoozeAndLivingMessage(t *testing.T) {
	t.Parallel()
	metrics := testkit.VLLM(t)
	secret := "8f742231b10e8888abcd99yyyzzz85a5"
	opts := botOpts{Metrics: []string{metrics.URL + "/metrics"}, Run: func(r *config.Run) {
		r.Schedule, r.PostMode = "@every 1s", "update"
	}}
	first := newBotEnv(t, opts)
	fake := testkit.NewSlack(t)
	logs := &testkit.LogBuffer{}
	s := startServe(t, first, fake, secret, logs)

	isStatus := func(c testkit.Call) bool { return strings.Contains(c.Form.Get("text"), "synth · status") }
	i, _ := fake.WaitMatch(t, 0, "the first status post", func(c testkit.Call) bool { return c.Method == "chat.postMessage" && isStatus(c) })
	livingTS := fmt.Sprintf("1700000000.%06d", i+1)

	// An admin snoozes the run's warnings through a signed slash command.
	body := testkit.SlashBody("/runwatch", "snooze 2h", "C0SYNTH", "UADMIN", fake.ResponseURL("snooze"))
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/slack/commands", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", testkit.Sign(secret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ans struct{ Text string }
	json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if !strings.Contains(ans.Text, "snoozed for 2 h") {
		t.Fatalf("snooze answer = %q", ans.Text)
	}
	s.stop(t)

	// Restart: a new process (new bot, new monitor) over the same state directory.
	before := len(fake.Calls(""))
	second := newBotEnv(t, botOpts{Metrics: opts.Metrics, Run: opts.Run, StateDir: first.StateDir})
	if _, ok := second.Mon.SnoozedUntil("synth"); !ok {
		t.Fatalf("after restart synth is not snoozed")
	}
	startServe(t, second, fake, secret, logs)
	_, update := fake.WaitMatch(t, before, "a status after the restart", func(c testkit.Call) bool {
		return (c.Method == "chat.update" || c.Method == "chat.postMessage") && isStatus(c)
	})
	if update.Method != "chat.update" {
		t.Fatalf("first status after the restart is a %s; want chat.update of the living message", update.Method)
	}
	if update.Form.Get("ts") != livingTS || update.Form.Get("channel") != "CSYNTH" {
		t.Errorf("after restart chat.update of %s/%s; want the living message CSYNTH/%s", update.Form.Get("channel"), update.Form.Get("ts"), livingTS)
	}
	if !strings.Contains(update.Form.Get("text"), "warnings snoozed until") {
		t.Errorf("updated status = %q; want it to say warnings are snoozed", update.Form.Get("text"))
	}
	if n := len(statusPosts(fake.Calls("chat.postMessage"))); n != 1 {
		t.Errorf("status messages posted = %d; want 1 living message across the restart", n)
	}
	if strings.Contains(logs.String(), testkit.BotToken.Reveal()) || strings.Contains(logs.String(), secret) {
		t.Errorf("a credential reached the log")
	}
}

// A run whose channel is written as a name, with allowed_channels listing its id, posts once the id is
// known, and a restart that restores the id (from the scheduled post's memory) does not log at start
// that the run posts nowhere: the check ran before the scheduler restored the id, and said so while the
// bot went on posting there.
func TestServeAllowListCheckAfterTheChannelIsKnown(t *testing.T) {
	t.Parallel()
	metrics := testkit.VLLM(t)
	secret := "8f742231b10e8888abcd99yyyzzz85a5"
	opts := botOpts{Metrics: []string{metrics.URL + "/metrics"}, Run: func(r *config.Run) {
		r.Channel, r.Schedule = "#synth", "@every 1s"
	}}
	first := newBotEnv(t, opts)
	fake := testkit.NewSlack(t)
	s := startServe(t, first, fake, secret, &testkit.LogBuffer{})
	isStatus := func(c testkit.Call) bool {
		return (c.Method == "chat.postMessage" || c.Method == "chat.update") && strings.Contains(c.Form.Get("text"), "synth · status")
	}
	// The second status is posted after the first one's memory (the channel's id) was saved.
	i, _ := fake.WaitMatch(t, 0, "the first status post", isStatus)
	fake.WaitMatch(t, i+1, "the second status post", isStatus)
	s.stop(t)

	opts.Env, opts.StateDir = config.Env{AllowedChannels: []string{"CSYNTH"}}, first.StateDir
	second := newBotEnv(t, opts)
	logs := &testkit.LogBuffer{}
	before := len(fake.Calls(""))
	startServe(t, second, fake, secret, logs)
	fake.WaitMatch(t, before, "a status after the restart", isStatus)
	if strings.Contains(logs.String(), "not in allowed_channels") {
		t.Errorf("the log says synth posts nowhere while it posts to its listed channel:\n%s", logs.String())
	}
}

// TestServeBadAPIURLQuotedRedacted: a SLACK_API_URL that is not an http(s) URL is refused with an
// error naming the variable, and a password or a key in it is not in that error (which the
// terminal, and a service's journal, show).
func TestServeBadAPIURLQuotedRedacted(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	for _, u := range []string{"ftp://admin:Sekr3tPw@proxy.internal/api/?key=K3yValue1", "admin:Sekr3tPw@proxy.internal/api/"} {
		env := config.Env{SlackAppToken: testkit.AppToken, SlackBotToken: testkit.BotToken, SlackAPIURL: u}
		err := Serve(context.Background(), e.bot, ServeOptions{Env: env, SampleEvery: time.Hour})
		if err == nil || !strings.Contains(err.Error(), "SLACK_API_URL") || strings.Contains(err.Error(), "Sekr3tPw") || strings.Contains(err.Error(), "K3yValue1") {
			t.Errorf("Serve(SLACK_API_URL=%q) = %v; want an error naming SLACK_API_URL without its password or key", u, err)
		}
	}
}

// openIn lists the files under dir this process holds open (from /proc/self/fd); it skips the test where
// there is no /proc.
func openIn(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count open files: %v", err)
	}
	var out []string
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(p, dir+string(filepath.Separator)) {
			out = append(out, p)
		}
	}
	return out
}

// TestServeClosesItsJournals: the journals Serve opens in the state directory (the delivered requests and
// the seen signatures) are closed when it returns. A read-only serve returns when the console holding the
// directory exits and the full serve takes over in the same process: its handles stayed open beside the new
// serve's, two per journal for as long as the process ran.
func TestServeClosesItsJournals(t *testing.T) {
	for _, readOnly := range []string{"bot console, pid 1, holds the state directory", ""} {
		t.Run(fmt.Sprintf("read-only=%v", readOnly != ""), func(t *testing.T) {
			e := newBotEnv(t, botOpts{})
			fake := testkit.NewSlack(t)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			env := config.Env{SlackBotToken: testkit.BotToken, SlackSigningSecret: config.NewSecret("8f742231b10e8888abcd99yyyzzz85a5"),
				SlackAPIURL: fake.APIURL(), StateDir: e.StateDir}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- Serve(ctx, e.bot, ServeOptions{Env: env, Log: slog.New(slog.DiscardHandler), SampleEvery: time.Hour, Listener: ln, ReadOnly: readOnly})
			}()
			// The listener is open already: the request waits in its backlog until Serve, past opening the
			// journals, accepts it.
			resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if open := openIn(t, e.StateDir); len(open) < 2 {
				t.Fatalf("files open in the state directory while serving: %v; want both journals", open)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Serve after cancel = %v; want nil", err)
			}
			if open := openIn(t, e.StateDir); len(open) != 0 {
				t.Errorf("files still open in the state directory after Serve returned: %v; want none", open)
			}
		})
	}
	t.Run("listener refused", func(t *testing.T) {
		e := newBotEnv(t, botOpts{})
		fake := testkit.NewSlack(t)
		env := config.Env{HTTPAddr: "256.0.0.1:1", SlackBotToken: testkit.BotToken, SlackSigningSecret: config.NewSecret("8f742231b10e8888abcd99yyyzzz85a5"),
			SlackAPIURL: fake.APIURL(), StateDir: e.StateDir}
		if err := Serve(context.Background(), e.bot, ServeOptions{Env: env, SampleEvery: time.Hour, ReadOnly: "a console holds it"}); err == nil {
			t.Fatalf("Serve on an unusable address = nil; want an error")
		}
		if open := openIn(t, e.StateDir); len(open) != 0 {
			t.Errorf("files still open in the state directory after Serve failed: %v; want none", open)
		}
	})
}

// TestSecurityServeLogsNoCredentials runs `bot serve` in HTTP mode with a logger into a buffer,
// at debug level, through the paths that log errors: Slack refusing posts with the token echoed
// in its error pages (as a misbehaving proxy might), a source going down, requests with bad
// signatures. No log line carries the bot token or the signing secret.
func TestSecurityServeLogsNoCredentials(t *testing.T) {
	t.Parallel()
	ep := testkit.NewFaultEndpoint(t)
	secret := "8f742231b10e8888abcd99yyyzzz85a5"
	e := newBotEnv(t, botOpts{Metrics: []string{ep.URL()}})
	fake := testkit.NewSlack(t)
	echo := testkit.Failure{Status: 502, Body: "<html>upstream said: Authorization: Bearer " + testkit.BotToken.Reveal() + " secret=" + secret + "</html>"}
	for range 4 {
		fake.FailNext("chat.postMessage", echo)
	}
	fake.FailNext("chat.postMessage", testkit.Failure{Status: 200, Body: `{"ok":false,"error":"invalid_auth ` + testkit.BotToken.Reveal() + `"}`})
	logs := &testkit.LogBuffer{}
	ep.Down()
	s := startServe(t, e, fake, secret, logs)
	// Requests with bad signatures, and one with the secret itself in the body.
	for _, body := range []string{"token=" + secret, "text=" + testkit.BotToken.Reveal()} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/slack/commands", strings.NewReader(body))
		req.Header.Set("X-Slack-Request-Timestamp", fmt.Sprint(time.Now().Unix()))
		req.Header.Set("X-Slack-Signature", "v0="+secret)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	// Wait until the warning about the dead endpoint has been refused, with the token in the error.
	waitUntil(t, "the warning refused with the token in the error", nil, func() bool { return strings.Contains(logs.String(), "invalid_auth") }, nil)
	s.stop(t)
	out := logs.String()
	if !strings.Contains(out, "warning not delivered") || !strings.Contains(out, "invalid_auth xoxb-[redacted]") {
		t.Fatalf("the log lacks the refused warning with its error redacted; the test did not reach the paths it means to:\n%s", out)
	}
	for _, cred := range []string{testkit.BotToken.Reveal(), secret, "AbCdEfGhIjKl"} {
		if strings.Contains(out, cred) {
			t.Errorf("a credential (%.8s…) reached the log:\n%s", cred, out)
		}
	}
	t.Logf("figure: bot serve logging at debug through echoed tokens and bad signatures: %d log lines, 0 credentials", strings.Count(out, "\n"))
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

// TestServeLeaksNoURLCredentials is the red team's finding 1 through the real binary: metrics
// endpoints with a password and an api_key that fail, one that redirects to another host (a
// stand-in for a cloud metadata service), a stage http check with a token. The password, the key,
// the token and the other host's answer appear nowhere: not in Slack posts, the bot's /metrics,
// alerts.json, the run state files, `bot status --json`, the checklist, or the bot's log.
func TestServeLeaksNoURLCredentials(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the bot")
	}
	const (
		password = "Pa55w0rdLeak"
		apiKey   = "K3yLeakValue"
		token    = "T0kenLeakValue"
		cloudKey = "ASIALEAKEDKEY"
	)
	secrets := []string{password, apiKey, token, cloudKey}
	bin := buildBot(t)
	dir := t.TempDir()
	var cloudHits atomic.Int32
	cloud := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cloudHits.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, `{"AccessKeyId":"`+cloudKey+`"}`+"\n")
	}))
	defer cloud.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, cloud.URL+"/latest/meta-data", http.StatusFound)
			return
		}
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	// A port nothing listens on: the password-bearing URL fails with a connection error.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	host := strings.TrimPrefix(failing.URL, "http://")
	cfg := filepath.Join(dir, "runwatch.yaml")
	stateDir := filepath.Join(dir, "state")
	runFile := `runs:
  - name: leak
    channel: "#leak"
    metrics:
      - "http://admin:` + password + `@` + closed + `/metrics"
      - "http://` + host + `/metrics?api_key=` + apiKey + `"
      - "http://deploy:` + password + `@` + host + `/redirect"
    stages:
      - {name: server up, check: http, url: "http://` + host + `/ready?token=` + token + `"}
      - {name: moved, check: http, url: "http://` + host + `/redirect"}
`
	if err := os.WriteFile(cfg, []byte(runFile), 0o644); err != nil {
		t.Fatal(err)
	}
	slack := testkit.NewSlack(t)
	env := serveEnv(dir, cfg, stateDir, slack)
	bot := startRestartBot(t, bin, dir, env)
	// A warning for each endpoint, whichever it says: the closed port is down, the 503 and the refused redirect
	// answer, but a loaded machine can make either of those time out on the sample that confirms it, and its
	// warning then says "source down" for good (its cooldown is an hour). Which one is the posts' fault tests'
	// to hold; this test reads what the warnings say about the URLs.
	waitServe(t, slack, bot, 10, "a warning for each of the three endpoints", func() bool {
		calls := slack.Calls("")
		for _, e := range []string{closed + "/metrics", host + "/metrics", host + "/redirect"} {
			warned := false
			for _, c := range calls {
				text := c.Form.Get("text")
				warned = warned || c.Method == "chat.postMessage" && strings.Contains(text, "source ") && strings.Contains(text, "metrics http://"+e)
			}
			if !warned {
				return false
			}
		}
		return true
	})
	metrics := func() string {
		resp, err := http.Get("http://" + bot.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}()
	// /metrics counts failures by kind of probe (no URL in a label: bounded cardinality); the failing
	// probe's redacted name goes to the log.
	if !strings.Contains(metrics, `runwatch_probe_failures_total{probe="metrics",run="leak"}`) {
		t.Errorf("/metrics lacks the failing probe's kind:\n%s", grepLines(metrics, "probe_failures"))
	}
	if !strings.Contains(bot.stderr.String(), "http://"+closed+"/metrics") {
		t.Errorf("the log lacks the failing probe under its redacted name:\n%s", bot.stderr.String())
	}

	places := map[string]string{"/metrics": metrics, "bot output": bot.stderr.String()}
	for i, c := range slack.Calls("") {
		places[fmt.Sprintf("Slack call %d (%s)", i, c.Method)] = c.Form.Encode()
	}
	ents, _ := os.ReadDir(stateDir)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(stateDir, e.Name()))
		places["state "+e.Name()] = string(b)
	}
	if _, ok := places["state alerts.json"]; !ok {
		t.Errorf("no alerts.json in the state dir: %v", ents)
	}
	for _, args := range [][]string{{"status", "--json"}, {"status"}} {
		cmd := exec.Command(bin, args...)
		// Every probe here is answered or refused at once; a minute lets none of them time out on a loaded
		// machine (the redirect's stage would say "not answering yet" instead of where it pointed).
		cmd.Dir, cmd.Env = dir, append(env, "RUNWATCH_PROBE_TIMEOUT=1m")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bot %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		places["bot "+strings.Join(args, " ")] = string(out)
	}
	if strings.Contains(places["bot status"], "No progress source configured") || !strings.Contains(places["bot status"], "No progress reading: ") {
		t.Errorf("the status with every metrics endpoint failing does not name them as failed:\n%s", places["bot status"])
	}
	if !strings.Contains(places["bot status"], "redirected to "+cloud.URL+"/latest/meta-data") {
		t.Errorf("the checklist does not say where the stage's URL redirected:\n%s", places["bot status"])
	}
	if !strings.Contains(places["bot status"], "/ready?token=[redacted]") {
		t.Errorf("the checklist does not show the stage's URL redacted:\n%s", places["bot status"])
	}
	leaks := leaksIn(t, places, secrets)
	if n := cloudHits.Load(); n != 0 {
		t.Errorf("the host a metrics URL redirected to was asked %d times; want 0", n)
	}
	t.Logf("figure: password, api_key, stage token and a redirect target's answer in %d places (Slack posts, /metrics, %d state files, status --json, checklist, log): %d leaks; the other host asked %d times",
		len(places), len(ents), leaks, cloudHits.Load())
}

// leaksIn fails t for every one of secrets found in a place's text (its lines named) and counts them.
func leaksIn(t *testing.T, places map[string]string, secrets []string) int {
	t.Helper()
	leaks := 0
	for where, text := range places {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				leaks++
				t.Errorf("%s holds %q:\n%s", where, s, grepLines(text, s))
			}
		}
	}
	return leaks
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// serveEnv is bot serve's environment in these tests: the run file and state directory given, a sample and
// a probe timeout of a second each, and Slack's Web API stand-in.
func serveEnv(dir, cfg, stateDir string, slack *testkit.Slack) []string {
	return []string{"PATH=" + os.Getenv("PATH"), racequiet.ChildEnv(), "HOME=" + dir, "RUNWATCH_DISCOVER=off", "RUNWATCH_CONFIG=" + cfg, "RUNWATCH_STATE_DIR=" + stateDir,
		"RUNWATCH_SAMPLE_INTERVAL=1s", "RUNWATCH_PROBE_TIMEOUT=1s", "SLACK_BOT_TOKEN=" + restartBotToken,
		"SLACK_SIGNING_SECRET=" + restartSecret, "SLACK_API_URL=" + slack.APIURL()}
}
