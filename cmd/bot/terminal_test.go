package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runwatch/internal/racequiet"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostile is what a process name or a log line can carry to a terminal: a screen clear, a clipboard write
// (OSC 52), a title change, a carriage return and an erase that hide what came before.
const hostile = "\x1b[2J\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07\r\x1b[K"

// TestTerminalOutputHasNoControlSequences runs a process whose name carries escape sequences, writing to a
// protected directory, beside a job whose log carries more: status, ask and the console print what they
// saw (the process named, the log's lines) with none of the sequences, and "(!!) Yes" is not erased.
func TestTerminalOutputHasNoControlSequences(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a process")
	}
	dir := setEnv(t)
	shared := filepath.Join(dir, "shared")
	os.MkdirAll(shared, 0o755)
	// A shell under a hostile name (its comm) holds a file in the protected directory open for writing.
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	named := filepath.Join(dir, "\x1b[2J\x1b]0;x\x07")
	b, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(named, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(named, "-c", "exec 3>>"+filepath.Join(shared, "part-0000.jsonl")+"; sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	logPath := filepath.Join(dir, "gen.log")
	// A carriage return in a log line is a progress bar's redraw to the log reader: the log's lines carry the
	// rest.
	inLog := strings.ReplaceAll(hostile, "\r", "")
	os.WriteFile(logPath, []byte("starting "+inLog+"\nERROR a model said "+inLog+"\nProgress: 300/25000 (0 errors), 0.7 req/s\n"), 0o644)
	runFile := filepath.Join(dir, "runwatch.yaml")
	os.WriteFile(runFile, []byte("runs:\n  - name: synth\n    log: "+logPath+"\n    protected: ["+shared+"]\n    outputs: ["+shared+"]\n"), 0o644)
	// The shell has opened its file before anything looks.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if fds, _ := os.ReadDir("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/fd"); len(fds) > 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	outs := map[string]string{}
	_, outs["status"], _ = run(t, "", "--config", runFile, "status")
	_, outs["ask writes"], _ = run(t, "", "--config", runFile, "ask", "are we writing to "+shared+"?")
	_, outs["ask logs"], _ = run(t, "", "--config", runFile, "ask", "show me the error log")
	_, outs["console"], _ = run(t, "status\nlast errors\n", "--config", runFile, "console", "--no-sample")
	for what, out := range outs {
		if i := strings.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 }); i >= 0 {
			t.Errorf("%s printed a control character %q at %d:\n%q", what, out[i], i, out)
		}
	}
	if !strings.Contains(outs["ask writes"], "(!!) Yes") || !strings.Contains(outs["ask writes"], "pid") {
		t.Errorf("ask = %q; want the write named, with its process", outs["ask writes"])
	}
	if !strings.Contains(outs["ask logs"], "a model said") {
		t.Errorf("ask logs = %q; want the log's error line, cleaned", outs["ask logs"])
	}
}

// TestDotEnvCannotRedirectTheToken: a .env in the working directory names an SLACK_API_URL of its own
// (whoever can write there could choose where the bot token goes). bot serve takes SLACK_API_URL from the
// environment only: the .env's server never hears from it, and the log says the .env's is ignored. Slack's
// own API is reached through a proxy of the test's, which refuses: nothing leaves the machine.
func TestDotEnvCannotRedirectTheToken(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the bot")
	}
	bin := buildBot(t)
	var stolen, proxied atomic.Int64
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true,"user_id":"U111","user":"runwatch","team":"T"}`)
	}))
	defer attacker.Close()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer proxy.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "runwatch.yaml")
	os.WriteFile(cfg, []byte("runs:\n  - name: a\n    watch: [\""+dir+"\"]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".env"), []byte("SLACK_API_URL="+attacker.URL+"/api/\n"), 0o600)
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), racequiet.ChildEnv(), "HOME=" + dir, "RUNWATCH_DISCOVER=off", "RUNWATCH_CONFIG=" + cfg,
		"RUNWATCH_STATE_DIR=" + filepath.Join(dir, "state"), "SLACK_BOT_TOKEN=" + restartBotToken, "SLACK_SIGNING_SECRET=" + restartSecret,
		"RUNWATCH_HTTP_ADDR=127.0.0.1:0", "HTTPS_PROXY=" + proxy.URL, "NO_PROXY="}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("bot serve with Slack unreachable exited 0:\n%s", out)
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("the .env's SLACK_API_URL got %d requests (the bot token with them); want none", n)
	}
	if proxied.Load() == 0 {
		t.Errorf("Slack's own API was not asked (through the proxy): the test proves nothing\n%s", out)
	}
	if !strings.Contains(string(out), "SLACK_API_URL in .env is ignored") {
		t.Errorf("output does not say the .env's SLACK_API_URL is ignored:\n%s", out)
	}
}
