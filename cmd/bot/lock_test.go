package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runwatch/internal/racequiet"
	"runwatch/internal/testkit"
	"strings"
	"testing"
	"time"
)

// A second `bot serve` over the state directory a first one uses is refused, naming the first's
// pid: both posted every scheduled status (each read "not posted yet" from the same file) and
// overwrote each other's history. A console started beside it only reads the directory.
func TestSecondServeOverOneStateDirRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the bot")
	}
	dir, bin, env, _ := lockSetup(t, "    schedule: \"@every 1s\"\n")
	first := startRestartBot(t, bin, dir, env)

	addr := restartFreeAddr(t)
	second := exec.Command(bin, "serve")
	second.Dir = dir
	second.Env = append(env, "RUNWATCH_HTTP_ADDR="+addr)
	out := &testkit.LogBuffer{}
	second.Stdout, second.Stderr = out, out
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- second.Wait() }()
	t.Cleanup(func() { second.Process.Kill() })
	for {
		select {
		case err := <-exited:
			if err == nil {
				t.Fatalf("second bot serve exited 0:\n%s", out)
			}
			want := fmt.Sprintf("pid %d", first.cmd.Process.Pid)
			if s := out.String(); !strings.Contains(s, want) || !strings.Contains(s, "RUNWATCH_STATE_DIR") {
				t.Errorf("second bot serve said:\n%s\nwant the state directory named, held by %s", s, want)
			}
			// A console beside it answers, reading the directory without writing it.
			console := exec.Command(bin, "console", "--no-sample")
			console.Dir, console.Env = dir, env
			console.Stdin = strings.NewReader("status\n")
			got, err := console.CombinedOutput()
			if err != nil || !strings.Contains(string(got), "synth · status") || !strings.Contains(string(got), "reading it, not writing it") {
				t.Errorf("bot console beside bot serve = %v:\n%s\nwant the status, and that it only reads the state directory", err, got)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
		if d, ok := t.Deadline(); ok && time.Until(d) < 30*time.Second {
			t.Fatalf("second bot serve neither refused nor served:\n%s", out)
		}
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			t.Fatalf("a second bot serve runs over the state directory the first (pid %d) uses; it posts every status again", first.cmd.Process.Pid)
		}
	}
}

// A `bot serve` started while a `bot console` holds the state directory waits for the console to exit,
// saying so, and then starts: refusing made a terminal left open keep the service down, and under systemd
// fail on every restart. While it waits it answers Slack read-only, each answer saying why (it gave the
// channel no answer at all, and logged why only where the channel cannot see): no scheduled posts or
// warnings, and a snooze refused rather than kept where the console would not see it.
func TestServeWaitsForAConsole(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the bot")
	}
	dir, bin, env, slack := lockSetup(t, "    schedule: \"@every 1s\"\n")

	console := exec.Command(bin, "console")
	console.Dir, console.Env = dir, env
	stdin, err := console.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cout := &testkit.LogBuffer{}
	console.Stdout, console.Stderr = cout, cout
	if err := console.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { console.Process.Kill(); console.Wait() })
	// The console holds the directory once it answers.
	stdin.Write([]byte("status\n"))
	waitFor(t, "the console's first answer", func() bool { return strings.Contains(cout.String(), "synth · status") })

	rb := &restartBot{addr: restartFreeAddr(t)}
	serve := exec.Command(bin, "serve")
	// GOGC=off: a file the serve forgot to close is closed by its finalizer at some garbage collection, which
	// would hide a handle left open at the handover (checked at the end) for as long as no collection ran.
	serve.Dir, serve.Env = dir, append(env, "RUNWATCH_HTTP_ADDR="+rb.addr, "RUNWATCH_ADMINS=UADMIN", "GOGC=off")
	sout := &testkit.LogBuffer{}
	serve.Stdout, serve.Stderr = sout, sout
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	pid := fmt.Sprint(console.Process.Pid)
	waitFor(t, "serve saying it waits for the console", func() bool {
		return strings.Contains(sout.String(), "waiting for bot console to exit") && strings.Contains(sout.String(), pid)
	})
	healthy := func() bool {
		resp, err := http.Get("http://" + rb.addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	waitFor(t, "serve answering read-only while the console holds the state directory", healthy)
	if a := rb.slash(t, "eta synth"); !strings.Contains(a, "synth · ETA") || !strings.Contains(a, "answering read-only") || !strings.Contains(a, "pid "+pid) {
		t.Errorf("/runwatch eta while the console holds the state directory = %q; want the ETA, and that it answers read-only because console pid %s holds it", a, pid)
	}
	// A request the read-only serve answered, kept to be replayed to the full serve that takes over.
	replayed := signedSlashRequest(t, rb.addr, "status synth")
	if code := replayed(); code != http.StatusOK {
		t.Fatalf("a signed /runwatch status to the read-only serve = %d; want 200", code)
	}
	if a := rb.slash(t, "snooze 2h synth"); strings.Contains(a, "snoozed for") || !strings.Contains(a, "only reads") {
		t.Errorf("/runwatch snooze while the console holds the state directory = %q; want it refused, saying this bot only reads the state", a)
	}
	for _, c := range slack.Calls("") {
		if c.Method == "chat.postMessage" || c.Method == "chat.update" {
			t.Errorf("serve posted while the console held the state directory (%s): %s", c.Method, c.Form.Get("text"))
		}
	}
	stdin.Close() // the console exits at EOF
	waitFor(t, "the scheduled status once the console exited", func() bool {
		for _, c := range slack.Calls("") {
			if restartStatus(c, "synth") {
				return true
			}
		}
		return false
	})
	waitFor(t, "serve answering once the console exited", healthy)
	if a := rb.slash(t, "eta synth"); strings.Contains(a, "read-only") {
		t.Errorf("/runwatch eta once the console exited = %q; want no read-only notice", a)
	}
	// The full serve knows what the read-only one saw: the same signed request again is a replay.
	if code := replayed(); code != http.StatusUnauthorized {
		t.Errorf("a request the read-only serve answered, replayed to the serve that took over = %d; want 401 (a replay)", code)
	}
	// The read-only serve's journals were closed at the handover: each state file is open once, the full serve's.
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", serve.Process.Pid)); err == nil {
		open := map[string]int{}
		for _, fd := range fds {
			if p, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", serve.Process.Pid, fd.Name())); err == nil &&
				strings.HasPrefix(p, filepath.Join(dir, "state")+string(filepath.Separator)) {
				open[filepath.Base(p)]++
			}
		}
		for _, j := range []string{"slack-seen.log", "slack-replays.log"} {
			// A handle to the journal the full serve compacted on opening reads "slack-seen.log (deleted)".
			if open[j] != 1 || open[j+" (deleted)"] != 0 {
				t.Errorf("serve holds %s open %d times, and %d handles to a copy it replaced, after taking over (state files open: %v); want once, and none",
					j, open[j], open[j+" (deleted)"], open)
			}
		}
	}
}

// signedSlashRequest signs a /runwatch command once and returns a func that sends those same bytes, with the
// same timestamp and signature, and gives the status code: the first call is the request, later ones its replays.
func signedSlashRequest(t *testing.T, addr, text string) func() int {
	t.Helper()
	body, ts, sig := signSlash(text)
	return func() int {
		resp := postSlash(t, addr, body, ts, sig)
		resp.Body.Close()
		return resp.StatusCode
	}
}

// waitFor polls cond until it holds (waitUntil, bounded by the test's deadline).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitUntil(t, what, nil, cond, nil)
}

// lockSetup is a directory with a job log at the seed's moment, a run file watching it (the run's extra
// lines appended), the bot built, and the environment of a bot over that directory's state/ talking to a
// Slack stand-in.
func lockSetup(t *testing.T, runExtra string) (dir, bin string, env []string, slack *testkit.Slack) {
	t.Helper()
	dir = t.TempDir()
	bin = buildBot(t)
	log := filepath.Join(dir, "gen.log")
	if err := os.WriteFile(log, []byte("Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "runwatch.yaml")
	runFile := fmt.Sprintf("runs:\n  - name: synth\n    channel: \"#synth\"\n    log: %q\n", log) + runExtra
	if err := os.WriteFile(cfg, []byte(runFile), 0o644); err != nil {
		t.Fatal(err)
	}
	slack = testkit.NewSlack(t)
	env = []string{"PATH=" + os.Getenv("PATH"), racequiet.ChildEnv(), "HOME=" + dir, "RUNWATCH_DISCOVER=off", "RUNWATCH_CONFIG=" + cfg, "RUNWATCH_STATE_DIR=" + filepath.Join(dir, "state"),
		"RUNWATCH_SAMPLE_INTERVAL=1s", "SLACK_BOT_TOKEN=" + restartBotToken,
		"SLACK_SIGNING_SECRET=" + restartSecret, "SLACK_API_URL=" + slack.APIURL()}
	return dir, bin, env, slack
}
