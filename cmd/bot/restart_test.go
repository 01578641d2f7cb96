package main

import (
	"context"
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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/racequiet"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/sim"
	"runwatch/state"
)

const (
	restartBotToken = "xoxb-1111111111-2222222222-AbCdEfGhIjKlMnOpQrStUvWx"
	// restartSecondToken is the token a restarted bot is given: the fake Slack tells the calls of the
	// killed process (some may reach it after the kill) from those of the new one by it.
	restartSecondToken = "xoxb-1111111111-2222222222-SeCoNdPrOcEsSrEsTaRtEd"
	restartSecret      = "8f742231b10e8888abcd99yyyzzz85a5"
	// restartPostTimeout is the bots' RUNWATCH_POST_TIMEOUT: a post a kill interrupted is looked up this long
	// and 5 s after it was sent (35 s by default). The fake Slack answers in milliseconds, and holds a post
	// only where a test makes it.
	restartPostTimeout = "4s"
)

// restartStatus reports whether c is a scheduled status of run (its title).
func restartStatus(c testkit.Call, run string) bool {
	return (c.Method == "chat.postMessage" || c.Method == "chat.update") && strings.Contains(c.Form.Get("text"), "*"+run+" · status")
}

// asOf is the time a status says it was drawn ("as of <!date^unix^…>"), read by the bot's clock while it
// built the post: no earlier than its decision to post, no later than the post's end.
var asOf = regexp.MustCompile(`as of <!date\^(\d+)\^`)

// restartAsOf is the whole second c's status was drawn at.
func restartAsOf(t *testing.T, c testkit.Call) int64 {
	t.Helper()
	m := asOf.FindStringSubmatch(c.Form.Get("text"))
	if m == nil {
		t.Fatalf("a status without its time:\n%s", c.Form.Get("text"))
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// callsBy are the calls made with token: one process's.
func callsBy(calls []testkit.Call, token string) []testkit.Call {
	var out []testkit.Call
	for _, c := range calls {
		if c.Token == token {
			out = append(out, c)
		}
	}
	return out
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
	stderr *testkit.LogBuffer // its output
	exited chan struct{}      // closed when the process is gone; err says how it ended
	err    error
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

// servingOn is where a `bot serve` says it listens, on its output ("serving HTTP on 127.0.0.1:41234 (...)")
// and in its log.
var servingOn = regexp.MustCompile(`HTTP on (127\.0\.0\.1:[0-9]+) \(`)

// startRestartBot starts `bot serve` in dir with env, listening on a port of its own choosing (a port
// picked here and freed for it could be taken by another process's connection before it bound it:
// "bind: address already in use" on a loaded machine), and returns once it says where and answers
// /healthz there.
func startRestartBot(t *testing.T, bin, dir string, env []string) *restartBot {
	t.Helper()
	b := &restartBot{stderr: &testkit.LogBuffer{}, exited: make(chan struct{})}
	b.cmd = exec.Command(bin, "serve")
	b.cmd.Dir = dir
	b.cmd.Env = append(env, "RUNWATCH_HTTP_ADDR=127.0.0.1:0")
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
	why := func() string { return fmt.Sprintf("bot serve exited: %v\n%s", b.err, b.stderr) }
	waitUntil(t, "bot serve to say where it listens", b.exited, func() bool {
		m := servingOn.FindStringSubmatch(b.stderr.String())
		if m != nil {
			b.addr = m[1]
		}
		return m != nil
	}, why)
	waitUntil(t, "bot serve to answer /healthz", b.exited, func() bool {
		resp, err := http.Get("http://" + b.addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, why)
	return b
}

// waitUntil checks cond every 20 ms until it holds. It is bounded by the test's own deadline (go test
// -timeout), leaving time for the cleanups, not by a guess at how long a loaded machine takes; it fails
// at once when gone closes (a process the test waits on exited), saying why.
func waitUntil(t *testing.T, what string, gone <-chan struct{}, cond func() bool, why func() string) {
	t.Helper()
	for !cond() {
		if d, ok := t.Deadline(); ok && time.Until(d) < 30*time.Second {
			t.Fatalf("the test's deadline is near, still waiting for %s", what)
		}
		select {
		case <-gone:
			t.Fatalf("waiting for %s: %s", what, why())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitServe waits until cond holds, checking it at each call the fake Slack records (and every quarter
// second between calls). It is bounded by the bot's own pace, not the wall clock: it fails once bot has
// taken samples samples after the wait began without cond, or when the bot exits. A loaded machine slows
// the samples, and the wait with them, without failing it.
func waitServe(t *testing.T, slack *testkit.Slack, bot *restartBot, samples int, what string, cond func() bool) {
	t.Helper()
	from := botSamples(bot.addr)
	for !cond() {
		if n := botSamples(bot.addr); n-from >= samples {
			// Sample n is counted after sample n-1 delivered its posts: the calls now hold them all.
			if cond() {
				return
			}
			t.Fatalf("bot serve took %d samples without %s", n-from, what)
		}
		if d, ok := t.Deadline(); ok && time.Until(d) < 30*time.Second {
			t.Fatalf("the test's deadline is near, still waiting for %s (%d samples)", what, botSamples(bot.addr)-from)
		}
		select {
		case <-slack.Notify:
		case <-bot.exited:
			t.Fatalf("bot serve exited waiting for %s: %v\n%s", what, bot.err, bot.stderr)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// botSamples is runwatch_samples_total on a bot's /metrics (0 when it cannot be read).
func botSamples(addr string) int {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "runwatch_samples_total "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	return 0
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
	return body, ts, testkit.Sign(restartSecret, ts, []byte(body))
}

// restartPersisted is what the test reads back from a run's state file, as `bot serve` wrote it.
type restartPersisted struct {
	Shift struct {
		Announced   bool    `json:"announced"`
		FinishT     float64 `json:"finish_t"`
		AnnouncedAt float64 `json:"announced_at"`
		Shown       bool    `json:"shown"`
	} `json:"shift"`
	Moves struct {
		First *struct {
			At float64 `json:"at"`
		} `json:"first"`
	} `json:"moves"`
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

// restartSchedule is what the scheduler remembers of a run's posts (schedule.json), as the test reads it.
type restartSchedule struct {
	// LastPost is when the scheduler decided the run's last status, by the bot's clock: what its schedule
	// counts from.
	LastPost time.Time `json:"last_post"`
	// Pending and Intent mark a post that failed or that a kill interrupted: the next bot retries it at once.
	Pending bool            `json:"pending"`
	Intent  json.RawMessage `json:"intent"`
}

// restartSchedules reads schedule.json.
func restartSchedules(t *testing.T, stateDir string) map[string]restartSchedule {
	t.Helper()
	var f struct {
		Runs map[string]restartSchedule `json:"runs"`
	}
	b, err := os.ReadFile(filepath.Join(stateDir, "schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("schedule.json does not decode (a save was not atomic): %v", err)
	}
	return f.Runs
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
	t.Parallel()
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
	slack := testkit.NewSlack(t)
	env := []string{"PATH=" + os.Getenv("PATH"), racequiet.ChildEnv(), "HOME=" + dir, "RUNWATCH_DISCOVER=off", "RUNWATCH_CONFIG=" + cfg, "RUNWATCH_STATE_DIR=" + stateDir,
		"RUNWATCH_SAMPLE_INTERVAL=1s", "RUNWATCH_ADMINS=UADMIN", "RUNWATCH_POST_TIMEOUT=" + restartPostTimeout, "SLACK_BOT_TOKEN=" + restartBotToken,
		"SLACK_SIGNING_SECRET=" + restartSecret, "SLACK_API_URL=" + slack.APIURL()}

	first := startRestartBot(t, bin, dir, env)
	waitServe(t, slack, first, 30, "the first status posts", func() bool {
		var living, parent bool
		for _, c := range slack.Calls("chat.postMessage") {
			living = living || restartStatus(c, "synth")
			parent = parent || restartStatus(c, "synth-thread") && c.Form.Get("thread_ts") == ""
		}
		return living && parent
	})
	if a := first.slash(t, "snooze 2h synth"); !strings.Contains(a, "snoozed for 2 h") {
		t.Fatalf("snooze answer = %q", a)
	}
	if a := first.slash(t, "stage review done synth"); !strings.Contains(a, "marked done") {
		t.Fatalf("stage answer = %q", a)
	}
	marked := len(slack.Calls(""))
	waitServe(t, slack, first, 30, "an announced ETA, some history and a status showing the mark", func() bool {
		shown := false
		for _, c := range slack.Calls("")[marked:] {
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
	killed := restartSchedules(t, stateDir)
	var livingTS, parentTS string
	for _, c := range slack.Calls("chat.postMessage") {
		if restartStatus(c, "synth") && livingTS == "" {
			livingTS = c.TS
		}
		if restartStatus(c, "synth-thread") && c.Form.Get("thread_ts") == "" && parentTS == "" {
			parentTS = c.TS
		}
	}

	// The restarted bot has a token of its own: a call the killed one sent just before the kill may reach the
	// fake after it, and is still the killed one's.
	second := startRestartBot(t, bin, dir, append(env, "SLACK_BOT_TOKEN="+restartSecondToken))
	// A status the kill interrupted is looked up once its call would have timed out (restartPostTimeout and
	// 5 s): up to 60 samples.
	waitServe(t, slack, second, 60, "statuses and samples after the restart", func() bool {
		var living, thread int
		for _, c := range callsBy(slack.Calls(""), restartSecondToken) {
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
	// Announced ETA: the detector goes on from the announcement made before the kill, or from an ETA the
	// restarted bot gave since (its statuses); the first baseline estimate is the one from before the kill.
	if got := restartReadState(t, stateDir, "synth"); !got.Shift.Announced ||
		got.Shift.FinishT != announced.Shift.FinishT && !(got.Shift.Shown && got.Shift.AnnouncedAt > announced.Shift.AnnouncedAt) ||
		got.Moves.First == nil || announced.Moves.First == nil || got.Moves.First.At != announced.Moves.First.At {
		t.Errorf("announced finish after the restart = %+v, first %+v; want %v from before the kill or one given since, first %+v",
			got.Shift, got.Moves.First, announced.Shift.FinishT, announced.Moves.First)
	}
	restarted := callsBy(slack.Calls(""), restartSecondToken)
	for _, c := range restarted {
		text := c.Form.Get("text")
		switch {
		case restartStatus(c, "synth"):
			if c.Method != "chat.update" || c.Form.Get("ts") != livingTS {
				t.Errorf("status after the restart: %s ts %q; want chat.update of the living message %s", c.Method, c.Form.Get("ts"), livingTS)
			}
			if !strings.Contains(text, "warnings snoozed until") || !strings.Contains(text, ":white_check_mark: *review*") {
				t.Errorf("status after the restart lacks the snooze or the stage mark:\n%s", text)
			}
		case restartStatus(c, "synth-thread") && c.Method == "chat.update":
			if c.Form.Get("ts") != parentTS {
				t.Errorf("thread status after the restart: chat.update of %q; want only the day's parent %s brought up to date", c.Form.Get("ts"), parentTS)
			}
		case restartStatus(c, "synth-thread"):
			if c.Method != "chat.postMessage" || c.Form.Get("thread_ts") != parentTS {
				t.Errorf("thread status after the restart: %s in thread %q; want a reply under the day's parent %s", c.Method, c.Form.Get("thread_ts"), parentTS)
			}
		}
	}
	for _, c := range slack.Calls("") {
		if strings.Contains(c.Form.Get("text"), "ETA moved") {
			t.Errorf("an ETA shift was announced:\n%s", c.Form.Get("text"))
		}
	}
	// No run is posted more often than its schedule (@every 2s, which cron counts in whole seconds, less the
	// scheduler's second of slack) across the restart. Timed by the bot's clock, never by when a post reached
	// the fake, which carries however long it took to build and send on a loaded machine: the killed bot's
	// last post is the time it decided it (schedule.json), and each status after the restart says when it was
	// drawn, which is no earlier than the decision to post it and no later than that post's end.
	for _, run := range []string{"synth", "synth-thread"} {
		var drawn []int64
		for _, c := range restarted {
			if restartStatus(c, run) && !(run == "synth-thread" && c.Method == "chat.update") { // a parent's edit goes with its reply
				drawn = append(drawn, restartAsOf(t, c))
			}
		}
		if last := killed[run].LastPost; len(drawn) > 0 && drawn[0] < last.Unix()+1 {
			t.Errorf("%s: the restarted bot's first status was drawn at %d, the killed bot's last decided at %v; want it no sooner than the schedule's next second",
				run, drawn[0], last)
		}
		// Within one process, the next post is due two whole seconds after the second the last one ended in;
		// a post the kill interrupted is retried at once, beside the schedule.
		from := 1
		if killed[run].Pending || len(killed[run].Intent) > 0 && string(killed[run].Intent) != "null" {
			from = 2
		}
		for i := from; i < len(drawn); i++ {
			if drawn[i] < drawn[i-1]+2 {
				t.Errorf("%s: statuses drawn at %d and %d after the restart; want them at least 2 s apart on a 2 s schedule", run, drawn[i-1], drawn[i])
			}
		}
	}

	// A clean stop this time; the state directory holds only whole files.
	second.cmd.Process.Signal(syscall.SIGTERM)
	waitUntil(t, "bot serve to stop on SIGTERM", nil, func() bool {
		select {
		case <-second.exited:
			return true
		default:
			return false
		}
	}, nil)
	if second.err != nil {
		t.Errorf("bot serve after SIGTERM: %v\n%s", second.err, second.stderr)
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
		for _, secret := range []string{restartBotToken, restartSecondToken, restartSecret, "AbCdEfGh", "SeCoNdPr"} {
			if logs := b.stderr.String(); strings.Contains(logs, secret) {
				t.Errorf("a credential reached the bot's output:\n%s", logs)
			}
		}
	}
}

// alertsFile is what the test reads back from alerts.json.
type alertsFile struct {
	Active map[string]struct {
		Ref string `json:"ref"`
	} `json:"active"`
	Pending map[string]json.RawMessage `json:"pending"`
}

func readAlerts(stateDir string) alertsFile {
	var a alertsFile
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
	// Slack holds the look-ups too, until the last restart: a kill after a look-up was seen is a kill
	// mid-look-up, not one after the bot had its answer (and had settled the post, leaving the next
	// restart nothing to do).
	lookupsGate := make(chan struct{})
	releaseLookups := sync.OnceFunc(func() { close(lookupsGate) })
	slack.HoldHistory = func() { <-lookupsGate }
	t.Cleanup(releaseLookups)
	// Duty messages off: Slack holds every post here, a duty message's too, and which instance is on duty
	// after a kill -9 is TestDutyRestartResumes's.
	env := append(serveEnv(dir, cfg, stateDir, slack), "RUNWATCH_DUTY_CHANNEL=off", "RUNWATCH_POST_TIMEOUT="+restartPostTimeout)
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
		a := readAlerts(stateDir)
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
		// A look-up waits until the post's call would have timed out (restartPostTimeout and a 5 s margin):
		// up to 60 samples.
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
	releaseLookups()
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
	// Duty messages off: Slack holds every post here, a duty message's too, and which instance is on duty
	// after a kill -9 is TestDutyRestartResumes's.
	env := append(serveEnv(dir, cfg, stateDir, slack), "RUNWATCH_DUTY_CHANNEL=off", "RUNWATCH_POST_TIMEOUT="+restartPostTimeout)
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
	// The restarted bot looks the post up once its call would have timed out (restartPostTimeout and 5 s):
	// up to 60 samples.
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
