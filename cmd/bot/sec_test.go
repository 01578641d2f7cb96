package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runwatch/internal/testkit"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

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

// secAlerts is what the test reads back from alerts.json.
type secAlerts struct {
	Active map[string]struct {
		Ref string `json:"ref"`
	} `json:"active"`
	Pending map[string]json.RawMessage `json:"pending"`
}

func secReadAlerts(stateDir string) secAlerts {
	var a secAlerts
	b, err := os.ReadFile(filepath.Join(stateDir, "alerts.json"))
	if err == nil {
		json.Unmarshal(b, &a)
	}
	return a
}

// TestServeKill9MidPostPostsOnce: Slack takes a chat.postMessage until the test lets it (the message is
// in the channel once Slack answers), and `bot serve` is killed with SIGKILL three times: the first time
// while its warning is in flight, then twice as it asks Slack whether that post landed. The intent recorded
// before the post, looked up only once the post's call would have timed out (a look-up made while Slack is
// still taking it finds nothing), and the message metadata read back through conversations.history leave
// exactly one copy of the warning (4 copies before the wait).
func TestServeKill9MidPostPostsOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the bot")
	}
	bin := buildBot(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(dir, "runwatch.yaml")
	stateDir := filepath.Join(dir, "state")
	runFile := "runs:\n  - name: down\n    channel: CWARN\n    metrics: [\"http://" + closed + "/metrics\"]\n    schedule: \"@every 24h\"\n"
	if err := os.WriteFile(cfg, []byte(runFile), 0o644); err != nil {
		t.Fatal(err)
	}
	slack := testkit.NewSlack(t)
	release := holdPosts(t, slack)
	env := serveEnv(dir, cfg, stateDir, slack)
	copies := func(from int) int {
		n := 0
		for _, c := range slack.Calls("")[from:] {
			if c.Method == "chat.postMessage" && c.Form.Get("thread_ts") == "" && strings.Contains(c.Form.Get("text"), "source down") {
				n++
			}
		}
		return n
	}
	settled := func() bool {
		a := secReadAlerts(stateDir)
		for _, al := range a.Active {
			if al.Ref != "" && len(a.Pending) == 0 {
				return true
			}
		}
		return false
	}
	lookups := func(from int) int { return len(slack.Calls("conversations.history")) - from }
	midPost, midLookup := 0, 0
	for i := range 3 {
		from, fromLookups := len(slack.Calls("")), len(slack.Calls("conversations.history"))
		bot := startRestartBot(t, bin, dir, env)
		// A look-up waits until the post's call would have timed out (posts.DeliverTimeout and a margin,
		// 35 s): up to 60 samples.
		waitServe(t, slack, bot, 60, "a warning or a look-up in flight", func() bool {
			return copies(from) > 0 || lookups(fromLookups) > 0
		})
		if copies(from) > 0 {
			midPost++
		}
		if lookups(fromLookups) > 0 {
			midLookup++
		}
		if err := bot.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-bot.exited
		if i == 0 {
			release() // Slack finishes taking the post the kill interrupted: it is in the channel from now on
		}
	}
	final := startRestartBot(t, bin, dir, env)
	waitServe(t, slack, final, 60, "the warning settled and 4 samples after the last restart", func() bool {
		return settled() && botSamples(final.addr) >= 4
	})
	if n := copies(0); n != 1 {
		t.Errorf("copies of the warning after 3 kills (%d mid-post, %d mid-look-up) = %d; want exactly 1", midPost, midLookup, n)
	}
	if midPost != 1 {
		t.Errorf("kills mid-post = %d; want the first (the test proves nothing without it)", midPost)
	}
	t.Logf("figure: kill -9 of bot serve 3 times (%d mid chat.postMessage, %d at a conversations.history look-up): %d copy of the warning; %d look-ups",
		midPost, midLookup, copies(0), len(slack.Calls("conversations.history")))
}

// holdPosts makes the fake Slack take each chat.postMessage until release (or the test's end): the call is
// recorded as it arrives, the message is in the channel once Slack answers. A test kills a bot while its
// post is in flight this way, knowing it is.
func holdPosts(t *testing.T, slack *testkit.Slack) (release func()) {
	gate := make(chan struct{})
	release = sync.OnceFunc(func() { close(gate) })
	slack.Hold = func() { <-gate }
	// The fake reads Hold under its lock: taking the lock once orders this write before any call.
	slack.Calls("")
	// Released before the fake closes, which waits for the calls it holds.
	t.Cleanup(release)
	return release
}

// TestBotRunsNoProcesses holds "never run a shell on input from Slack" at the import graph: no
// package of the bot imports os/exec, plugin or syscall's exec, and the one dependency that does
// (godotenv, whose Exec runs a command) is called only for godotenv.Read.
func TestBotRunsNoProcesses(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{.Standard}}\t{{join .Imports \" \"}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{"github.com/joho/godotenv": true}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, rest, _ := strings.Cut(line, "\t")
		std, imports, _ := strings.Cut(rest, "\t")
		if std == "true" {
			continue // the standard library is not the bot's code
		}
		for _, imp := range strings.Fields(imports) {
			if (imp == "os/exec" || imp == "plugin") && !allowed[pkg] {
				t.Errorf("%s imports %s: the bot must start no process", pkg, imp)
			}
		}
	}
	// Within runwatch: no syscall.Exec or os.StartProcess, and godotenv only reads.
	files, _ := filepath.Glob("../../*/*.go")
	more, _ := filepath.Glob("../../*/*/*.go")
	for _, f := range append(files, more...) {
		if strings.HasSuffix(f, "_test.go") || strings.Contains(f, "/scripts/") || strings.Contains(f, "/testdata/") || strings.Contains(f, "/internal/tmpfs/") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		for _, bad := range []string{"syscall.Exec", "os.StartProcess", "syscall.ForkExec", "godotenv.Exec"} {
			if strings.Contains(src, bad) {
				t.Errorf("%s calls %s", f, bad)
			}
		}
	}
}

// TestServeKill9MidStatusPostPostsOnce is the scheduled status's kill -9 with the real binary: Slack
// takes the chat.postMessage until the test lets it, and `bot serve` is killed while its first status, the run's
// living message (post_mode: update), is in flight: Slack has it, the bot has no answer. The
// restarted bot asks Slack whether it landed and goes on editing that message; it never posts a
// second one.
func TestServeKill9MidStatusPostPostsOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the bot")
	}
	bin := buildBot(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "gen.log")
	if err := os.WriteFile(logPath, []byte("Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "runwatch.yaml")
	stateDir := filepath.Join(dir, "state")
	runFile := "runs:\n  - name: steady\n    channel: CSTATUS\n    log: " + strconv.Quote(logPath) + "\n    schedule: \"@every 1s\"\n    post_mode: update\n"
	if err := os.WriteFile(cfg, []byte(runFile), 0o644); err != nil {
		t.Fatal(err)
	}
	slack := testkit.NewSlack(t)
	release := holdPosts(t, slack)
	env := serveEnv(dir, cfg, stateDir, slack)
	count := func(method string) int {
		n := 0
		for _, c := range slack.Calls(method) {
			if restartStatus(c, "steady") {
				n++
			}
		}
		return n
	}
	bot := startRestartBot(t, bin, dir, env)
	waitServe(t, slack, bot, 20, "the first status in flight", func() bool { return count("chat.postMessage") > 0 })
	if err := bot.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-bot.exited
	release() // Slack finishes taking it: the living message is in the channel from now on
	again := startRestartBot(t, bin, dir, env)
	// The restarted bot looks the post up once its call would have timed out (35 s): up to 60 samples.
	waitServe(t, slack, again, 60, "two edits of the living message after the restart", func() bool { return count("chat.update") >= 2 })
	if n := count("chat.postMessage"); n != 1 {
		t.Errorf("living status messages after a kill mid-post = %d; want exactly 1", n)
	}
	landed := ""
	for _, c := range slack.Calls("") {
		switch {
		case c.Method == "chat.postMessage" && restartStatus(c, "steady") && landed == "":
			landed = c.TS
		case c.Method == "chat.update" && c.Form.Get("ts") != landed:
			t.Errorf("chat.update of %s; want the message that landed before the kill (%s)", c.Form.Get("ts"), landed)
		}
	}
	t.Logf("figure: kill -9 of bot serve while its living status was in flight (Slack holding the answer): %d living message, %d edits of it after the restart",
		count("chat.postMessage"), count("chat.update"))
}

// serveEnv is bot serve's environment in these tests: the run file and state directory given, a sample and
// a probe timeout of a second each, and Slack's Web API stand-in.
func serveEnv(dir, cfg, stateDir string, slack *testkit.Slack) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "RUNWATCH_DISCOVER=off", "RUNWATCH_CONFIG=" + cfg, "RUNWATCH_STATE_DIR=" + stateDir,
		"RUNWATCH_SAMPLE_INTERVAL=1s", "RUNWATCH_PROBE_TIMEOUT=1s", "SLACK_BOT_TOKEN=" + restartBotToken,
		"SLACK_SIGNING_SECRET=" + restartSecret, "SLACK_API_URL=" + slack.APIURL()}
}
