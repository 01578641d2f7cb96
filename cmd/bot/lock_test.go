package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A second `bot serve` over the state directory a first one uses is refused, naming the first's
// pid: both posted every scheduled status (each read "not posted yet" from the same file) and
// overwrote each other's history. A console started beside it only reads the directory.
func TestSecondServeOverOneStateDirRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the bot")
	}
	dir := t.TempDir()
	bin := buildBot(t)
	log := filepath.Join(dir, "gen.log")
	if err := os.WriteFile(log, []byte("Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "runwatch.yaml")
	runFile := fmt.Sprintf("runs:\n  - name: synth\n    channel: \"#synth\"\n    log: %q\n    schedule: \"@every 1s\"\n", log)
	if err := os.WriteFile(cfg, []byte(runFile), 0o644); err != nil {
		t.Fatal(err)
	}
	slack := newRestartSlack(t)
	stateDir := filepath.Join(dir, "state")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "RUNWATCH_CONFIG=" + cfg, "RUNWATCH_STATE_DIR=" + stateDir,
		"RUNWATCH_SAMPLE_INTERVAL=1s", "SLACK_BOT_TOKEN=" + restartBotToken,
		"SLACK_SIGNING_SECRET=" + restartSecret, "SLACK_API_URL=" + slack.srv.GetAPIURL()}
	first := startRestartBot(t, bin, dir, env)

	addr := restartFreeAddr(t)
	second := exec.Command(bin, "serve")
	second.Dir = dir
	second.Env = append(env, "RUNWATCH_HTTP_ADDR="+addr)
	out := &restartBuffer{}
	second.Stdout, second.Stderr = out, out
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- second.Wait() }()
	t.Cleanup(func() { second.Process.Kill() })
	deadline := time.After(60 * time.Second)
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
		case <-deadline:
			t.Fatalf("second bot serve neither refused nor served:\n%s", out)
		case <-time.After(50 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			t.Fatalf("a second bot serve runs over the state directory the first (pid %d) uses; it posts every status again", first.cmd.Process.Pid)
		}
	}
}
