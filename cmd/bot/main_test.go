package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit/fake"
	"runwatch/monitor"
	"runwatch/state"
)

// run calls the real entry point with a clean environment rooted in a temp dir.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = realMain(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// botVariables are the environment variables the bot reads (config.LoadEnv and main).
var botVariables = []string{"RUNWATCH_ADMINS", "RUNWATCH_ALLOWED_CHANNELS", "RUNWATCH_CONFIG", "RUNWATCH_DISCOVER",
	"RUNWATCH_HTTP_ADDR", "RUNWATCH_PROBE_TIMEOUT", "RUNWATCH_PROC_ROOT", "RUNWATCH_SAMPLE_INTERVAL", "RUNWATCH_STATE_DIR",
	"SLACK_API_URL", "SLACK_APP_TOKEN", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"}

// setEnv gives realMain an environment of the test's own: a state directory in a fresh directory it
// changes to, a probe timeout of 2 s, no discovery, and none of the bot's variables from the caller's
// environment (a user of runwatch running the tests may have them set: RUNWATCH_PROC_ROOT or a bot
// token would change what every answer sees).
func setEnv(t *testing.T) string {
	t.Helper()
	for _, k := range botVariables {
		t.Setenv(k, "") // restored when the test ends
		os.Unsetenv(k)
	}
	dir := t.TempDir()
	t.Setenv("RUNWATCH_STATE_DIR", filepath.Join(dir, "state"))
	t.Setenv("RUNWATCH_CONFIG", "")
	t.Setenv("RUNWATCH_PROBE_TIMEOUT", "2s")
	// Discovery would find whatever else runs on this machine: a test that wants it names its own processes.
	t.Setenv("RUNWATCH_DISCOVER", "off")
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	os.Chdir(dir) // no runwatch.yaml, no .env here
	return dir
}

func writeRunFile(t *testing.T, dir string, metricsURL string) string {
	t.Helper()
	out := filepath.Join(dir, "out")
	shared := filepath.Join(dir, "shared")
	os.MkdirAll(out, 0o755)
	os.MkdirAll(shared, 0o755)
	logPath := filepath.Join(dir, "gen.log")
	os.WriteFile(logPath, []byte("Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n"), 0o644)
	cfg := fmt.Sprintf(`runs:
  - name: synth
    channel: "#synth"
    outputs: [%q]
    protected: [%q]
    watch: [%q]
    log: %q
    metrics: [%q]
    plans:
      - {name: hidden-states, target: %q, tokens: 25M, layers: [2, 30, 58], num_layers: 61, hidden_size: 7168, dtype: bfloat16}
`, out, shared, dir, logPath, metricsURL, out)
	p := filepath.Join(dir, "runwatch.yaml")
	os.WriteFile(p, []byte(cfg), 0o644)
	return p
}

// metricsServer is a busy vLLM server's /metrics URL (fake.VLLM, a real engine's recording).
func metricsServer(t *testing.T) string {
	t.Helper()
	return fake.NewVLLM(t, fake.VLLMOptions{}).MetricsURL()
}

func TestUsage(t *testing.T) {
	setEnv(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "console"},
		{[]string{"help"}, 0, "replay"},
		{nil, 2, "usage: bot"},
		{[]string{"launch"}, 2, `unknown command "launch"`},
		{[]string{"ask"}, 2, "give the question"},
		{[]string{"ask", "--help"}, 0, "--json"},
		{[]string{"status", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"replay"}, 2, "--trace FILE is required"},
		// JSON is replay's default: its usage offers the text, not a --json that changes nothing.
		{[]string{"replay", "--help"}, 0, "usage: bot replay --trace FILE [--json=false]"},
		{[]string{"console", "extra"}, 2, "takes no arguments"},
		{[]string{"help", "status"}, 0, "--run"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errb := run(t, "", tt.args...)
			if code != tt.code || !strings.Contains(out+errb, tt.want) {
				t.Errorf("bot %v = %d, %q %q; want %d and %q", tt.args, code, out, errb, tt.code, tt.want)
			}
		})
	}
}

func TestAskAndStatusJSON(t *testing.T) {
	dir := setEnv(t)
	writeRunFile(t, dir, metricsServer(t))
	code, out, errb := run(t, "", "ask", "--json", "are we writing to the protected mount?")
	if code != 0 {
		t.Fatalf("ask --json = %d, %s", code, errb)
	}
	var ask map[string]any
	if err := json.Unmarshal([]byte(out), &ask); err != nil {
		t.Fatalf("ask --json output is not JSON: %v\n%s", err, out)
	}
	if ask["intent"] != "writes" || ask["run"] != "synth" || !strings.Contains(ask["text"].(string), "synth · writes") {
		t.Errorf("ask --json = %v", ask)
	}
	if _, ok := ask["storage"].(map[string]any); !ok {
		t.Errorf("ask --json lacks the storage data behind the answer: %v", ask)
	}

	code, out, errb = run(t, "", "status", "--json")
	if code != 0 {
		t.Fatalf("status --json = %d, %s", code, errb)
	}
	var st struct {
		GeneratedAt string `json:"generated_at"`
		Runs        []map[string]json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.GeneratedAt == "" || len(st.Runs) != 1 {
		t.Fatalf("status --json = %v\n%s", err, out)
	}
	r := st.Runs[0]
	for _, k := range []string{"name", "storage", "plans", "problems", "progress", "throughput", "eta", "engines"} {
		if _, ok := r[k]; !ok {
			t.Errorf("status --json run lacks %q", k)
		}
	}
	var storage struct {
		Paths           []map[string]any `json:"paths"`
		Writers         []map[string]any `json:"writers"`
		ProtectedWrites *bool            `json:"protected_writes"`
		WriteRates      []map[string]any `json:"write_rates"`
	}
	json.Unmarshal(r["storage"], &storage)
	if len(storage.Paths) != 2 || storage.ProtectedWrites == nil || storage.WriteRates == nil || storage.Writers == nil {
		t.Fatalf("storage = %s", r["storage"])
	}
	for _, k := range []string{"path", "resolved", "mount", "device", "fstype", "free_bytes", "total_bytes", "used_bytes", "protected", "role"} {
		if _, ok := storage.Paths[0][k]; !ok {
			t.Errorf("storage.paths[0] lacks %q: %v", k, storage.Paths[0])
		}
	}
	var plans []map[string]any
	json.Unmarshal(r["plans"], &plans)
	if len(plans) != 1 || plans[0]["bytes_needed"].(float64) != 3*7168*2*25e6 {
		t.Errorf("plans = %s", r["plans"])
	}
	for _, k := range []string{"name", "bytes_needed", "target", "mount", "free_bytes", "fits", "max_tokens", "sentence"} {
		if _, ok := plans[0][k]; !ok {
			t.Errorf("plans[0] lacks %q", k)
		}
	}
	var eta map[string]any
	json.Unmarshal(r["eta"], &eta)
	for _, k := range []string{"state", "seconds", "low_s", "high_s", "finish_at", "reason"} {
		if _, ok := eta[k]; !ok {
			t.Errorf("eta lacks %q: %s", k, r["eta"])
		}
	}

	// Plain text status and a run that does not exist.
	if code, out, _ := run(t, "", "status"); code != 0 || !strings.Contains(out, "synth · status") {
		t.Errorf("status = %d %q", code, out)
	}
	if code, _, errb := run(t, "", "status", "--run", "nope"); code != 1 || !strings.Contains(errb, `no run named "nope" (runs: synth)`) {
		t.Errorf("status --run nope = %d %q", code, errb)
	}
	// A refused question exits 1; the reply says why, and stderr adds no bare "refused" after it.
	code, out, errb = run(t, "", "ask", "--run", "nope", "ETA?")
	if code != 1 || !strings.Contains(out, "I don't watch a run called nope. Runs: synth.") || errb != "" {
		t.Errorf("ask --run nope = %d, stdout %q, stderr %q; want 1, the reply naming the runs, nothing on stderr", code, out, errb)
	}
	code, out, _ = run(t, "", "ask", "--json", "--run", "nope", "ETA?")
	var refused struct {
		Refused bool `json:"refused"`
	}
	if err := json.Unmarshal([]byte(out), &refused); code != 1 || err != nil || !refused.Refused {
		t.Errorf("ask --json --run nope = %d, %v, %q; want 1 and \"refused\": true", code, err, out)
	}
}

// TestAskUnansweredExitsOne: a question the bot asks back about (which run, among several), one it does not
// understand and a command it cannot carry out (a stage the run does not have) exit 1 like a refusal, so that a script does not take the
// reply for an answer.
func TestAskUnansweredExitsOne(t *testing.T) {
	dir := setEnv(t)
	os.WriteFile(filepath.Join(dir, "runwatch.yaml"), []byte("runs:\n  - name: a\n    total: 100\n  - name: b\n    total: 100\n"), 0o644)
	if code, out, _ := run(t, "", "ask", "ETA?"); code != 1 || !strings.Contains(out, "Which run?") {
		t.Errorf("ask ETA? with two runs = %d %q; want 1 and the question back", code, out)
	}
	if code, out, _ := run(t, "", "ask", "--run", "a", "stage foo done"); code != 1 || !strings.Contains(out, `has no stage "foo"`) {
		t.Errorf("ask stage foo done on a run without stages = %d %q; want 1 and why", code, out)
	}
	if code, out, _ := run(t, "", "ask", "--run", "a", "ETA?"); code != 0 {
		t.Errorf("ask --run a ETA? = %d %q; want 0", code, out)
	}
	// A question it does not understand is no answer: before, "I don't know how to answer" exited 0.
	if code, out, _ := run(t, "", "ask", "--run", "a", "what's the weather?"); code != 1 || !strings.Contains(out, "I don't know how to answer") {
		t.Errorf("ask what's the weather? = %d %q; want 1 and the examples", code, out)
	}
	if code, _, errb := run(t, "", "ask", "  "); code != 2 || !strings.Contains(errb, "give the question") {
		t.Errorf("ask with a blank question = %d %q; want the usage error", code, errb)
	}
	// bot ask keeps no state: a snooze it said it made was gone at the next command.
	if code, out, _ := run(t, "", "ask", "--run", "a", "snooze 2h"); code != 1 || strings.Contains(out, "snoozed for") || !strings.Contains(out, "only reads") {
		t.Errorf("ask snooze 2h = %d %q; want 1, refused: bot ask only reads the state", code, out)
	}
}

func TestBadRunFileNamesKeyAndLine(t *testing.T) {
	dir := setEnv(t)
	os.WriteFile(filepath.Join(dir, "runwatch.yaml"), []byte("runs:\n  - name: a\n    outptus: [/x]\n"), 0o644)
	code, _, errb := run(t, "", "status")
	if code != 1 || !strings.Contains(errb, "line 3") || !strings.Contains(errb, `"outptus"`) {
		t.Errorf("status with a bad run file = %d %q; want exit 1 naming line 3 and the key", code, errb)
	}
}

// TestBadRunFileQuotesNoURLCredentials puts URLs with a password and a key where a number, a
// size or a name goes (and one expanded from the environment): the errors quote the value with
// neither, and still name the key and the line.
func TestBadRunFileQuotesNoURLCredentials(t *testing.T) {
	dir := setEnv(t)
	t.Setenv("PROM_URL", "http://bot:EnvPa55@prom:9090/?token=EnvT0ken")
	for _, tc := range []struct{ file, where string }{
		{"runs:\n  - name: a\n    total: \"http://admin:Pa55word@h:9000/metrics?api_key=K3y\"\n", "line 3"},
		{"runs:\n  - name: a\n    metrics_max_body: \"https://u:Pa55word@h/x?api_key=K3y\"\n", "line 3"},
		{"runs:\n  - name: \"http://admin:Pa55word@h/?api_key=K3y\"\n", "line 2"},
		{"runs:\n  - name: a\n    stall_after: ${PROM_URL}\n", "line 3"},
	} {
		os.WriteFile(filepath.Join(dir, "runwatch.yaml"), []byte(tc.file), 0o644)
		code, _, errb := run(t, "", "status")
		if code != 1 || !strings.Contains(errb, tc.where) {
			t.Errorf("status with %q = %d %q; want exit 1 naming %s", tc.file, code, errb, tc.where)
		}
		for _, leak := range []string{"Pa55word", "K3y", "EnvPa55", "EnvT0ken"} {
			if strings.Contains(errb, leak) {
				t.Errorf("status with %q says %q", tc.file, errb)
			}
		}
	}
}

func TestDefaultRunWithoutConfig(t *testing.T) {
	dir := setEnv(t)
	code, out, errb := run(t, "", "ask", "--json", "where does the output go?")
	if code != 0 {
		t.Fatalf("ask = %d %s", code, errb)
	}
	var ask map[string]any
	json.Unmarshal([]byte(out), &ask)
	if ask["run"] != "local" || !strings.Contains(ask["text"].(string), dir) {
		t.Errorf("default run answer = %v; want run local watching %s", ask, dir)
	}
}

func TestConsoleEOF(t *testing.T) {
	setEnv(t)
	code, out, errb := run(t, "help\nruns\n", "console", "--no-sample")
	if code != 0 || !strings.Contains(out, "runwatch help") || !strings.Contains(out, "local") {
		t.Errorf("console = %d %q %q", code, out, errb)
	}
}

// TestReplayText checks the text mode: times as the trace gives them (0.5 s steps, not rounded to 0, 2, 2)
// and each estimate with its range.
func TestReplayText(t *testing.T) {
	dir := setEnv(t)
	trace := filepath.Join(dir, "trace.jsonl")
	var b strings.Builder
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, `{"t": %g, "done": %d, "total": 10000, "gen_tokens": %d, "running": 200, "elapsed": %g}`+"\n",
			0.5*float64(i), i*80, i*80000+150000, 0.5*float64(i)+30)
	}
	os.WriteFile(trace, []byte(b.String()), 0o644)
	code, out, errb := run(t, "", "replay", "--trace", trace, "--json=false")
	if code != 0 {
		t.Fatalf("replay --json=false = %d, %q", code, errb)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 12 || !strings.HasPrefix(lines[1], "t=0.5 ") || !strings.HasPrefix(lines[5], "t=2.5 ") {
		t.Fatalf("replay --json=false printed %d lines; want 12, the second at t=0.5 and the sixth at t=2.5:\n%s",
			len(lines), out)
	}
	// A side of the range at the point is said in words (format.Range).
	rng := `\((\S+ \S+ – \S+ \S+|or later, up to \S+ \S+|or sooner, down to \S+ \S+)\)`
	if !regexp.MustCompile(`eta=\S+ \S+ ` + rng).MatchString(lines[len(lines)-1]) {
		t.Errorf("last line %q; want the estimate with its range, eta=N s (LOW – HIGH)", lines[len(lines)-1])
	}
}

func TestReplay(t *testing.T) {
	t.Parallel() // as a process: replaying the committed trace takes seconds under -race
	dir := t.TempDir()
	env := processEnv(dir)
	trace := filepath.Join(dir, "trace.jsonl")
	var b strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, `{"t": %d, "done": %d, "total": 10000, "gen_tokens": %d, "running": 200}`+"\n", i*60, i*80, i*80000+150000)
	}
	b.WriteString("not json\n")
	os.WriteFile(trace, []byte(b.String()), 0o644)
	code, out, errb := runBot(t, dir, env, "replay", "--trace", trace, "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 21 {
		t.Fatalf("replay printed %d lines; want 21 (one per input line)\n%s", len(lines), out)
	}
	var last map[string]any
	json.Unmarshal([]byte(lines[19]), &last)
	for _, k := range []string{"t", "eta_s", "eta_low_s", "eta_high_s", "state", "shift", "reason"} {
		if _, ok := last[k]; !ok {
			t.Errorf("replay line lacks %q: %s", k, lines[19])
		}
	}
	if last["state"] != "running" {
		t.Errorf("replay state = %v; want running", last["state"])
	}
	if !strings.Contains(lines[20], `"line":21`) || code != 1 || !strings.Contains(errb, "1 of 21 trace lines") {
		t.Errorf("bad trace line: %q, exit %d, %q", lines[20], code, errb)
	}
	// The committed example trace replays cleanly.
	code, out, errb = runBot(t, dir, env, "replay", "--trace", filepath.Join(mustWD(t), "..", "..", "reports", "testdata", "trace_length_drift.jsonl"))
	if code != 0 || !strings.Contains(out, `"shift":true`) {
		t.Errorf("replay of the drift trace = %d, shift seen %v, %q", code, strings.Contains(out, `"shift":true`), errb)
	}
}

var startWD, _ = os.Getwd()

func mustWD(t *testing.T) string { return startWD }

func TestExportThenReplay(t *testing.T) {
	dir := setEnv(t)
	cfgPath := writeRunFile(t, dir, metricsServer(t))
	if code, _, errb := run(t, "", "export"); code != 1 || !strings.Contains(errb, "no sampled history") {
		t.Errorf("export before any sampling = %d %q; want a clear error", code, errb)
	}
	// Sample like `bot serve` would, with a clock 30 s apart (and a wall clock's jitter), into the same state
	// directory.
	f, err := config.Load(cfgPath, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	dirState, _ := state.Open(os.Getenv("RUNWATCH_STATE_DIR"))
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m, _, err := monitor.New(f, monitor.Options{State: dirState, Now: func() time.Time { return now }, RateWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "gen.log")
	for i := range 6 {
		now = now.Add(30*time.Second + 123456789)
		fh, _ := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
		fmt.Fprintf(fh, "Progress: %d/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: %ds\n", 320+20*i, 438+30*i)
		fh.Close()
		m.Sample(context.Background())
	}
	trace := filepath.Join(dir, "exported.jsonl")
	code, _, errb := run(t, "", "export", "--out", trace)
	if code != 0 || !strings.Contains(errb, "wrote 6 observations") {
		t.Fatalf("export = %d %q", code, errb)
	}
	b, _ := os.ReadFile(trace)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], `{"t":0,`) || !strings.HasPrefix(lines[1], `{"t":30.123,`) {
		t.Fatalf("exported trace = %q; want 6 lines starting at t=0, the second at t=30.123 (to the millisecond)", b)
	}
	code, out, errb := run(t, "", "replay", "--trace", trace)
	if code != 0 || strings.Count(out, "\n") != 6 {
		t.Errorf("replay of the export = %d %q %q", code, out, errb)
	}
}

// TestFinalErrorRedacted: the error a command stops with is printed through the redactor, like the log: a
// URL's password and query key given where a file was expected do not reach the terminal (or the CI log
// that captures it).
func TestFinalErrorRedacted(t *testing.T) {
	t.Chdir(t.TempDir())
	var stdout, stderr strings.Builder
	code := realMain([]string{"replay", "--trace", "http://admin:Hunter2Pw@prom:9090/trace?api_key=K3yLeak"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitError {
		t.Errorf("replay of a trace that is not a file = exit %d; want %d", code, exitError)
	}
	if out := stderr.String(); strings.Contains(out, "Hunter2Pw") || strings.Contains(out, "K3yLeak") || !strings.Contains(out, "prom:9090") {
		t.Errorf("stderr = %q; want the error naming the URL, its password and key redacted", out)
	}
}

// Each command's usage line, and its row in the README's command table, name every flag its --help lists,
// and no command lists a flag it ignores: console's --no-sample was in neither, ask's and status's --demo
// not in the README, and replay listed a --config it never read.
func TestHelpListsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md") // before setEnv leaves the package directory
	if err != nil {
		t.Fatal(err)
	}
	setEnv(t)
	flagLine := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
	for _, c := range commands {
		_, _, help := run(t, "", c.name, "--help")
		row := regexp.MustCompile("(?m)^\\| `(bot " + c.name + "\\b[^`]*)` \\|").FindStringSubmatch(string(readme))
		if row == nil {
			t.Errorf("README's command table has no row for bot %s", c.name)
			continue
		}
		flags := flagLine.FindAllStringSubmatch(help, -1)
		if len(flags) == 0 {
			t.Errorf("bot %s --help = %q; want its flags", c.name, help)
		}
		for _, f := range flags {
			name := "--" + f[1]
			if !strings.Contains(c.usage, name) {
				t.Errorf("bot %s --help lists %s; its usage line %q does not", c.name, name, c.usage)
			}
			if name != "--config" && !strings.Contains(row[1], name) {
				t.Errorf("bot %s --help lists %s; the README's row %q does not", c.name, name, row[1])
			}
		}
	}
	if _, _, help := run(t, "", "replay", "--help"); strings.Contains(help, "-config") {
		t.Errorf("bot replay --help = %q; lists --config, which replay does not read", help)
	}
}

// TestBotRunsNoProcesses holds "never run a shell on input from Slack" at the import graph: no
// package of the bot imports os/exec, plugin or syscall's exec, and the one dependency that does
// (godotenv, whose Exec runs a command) is called only for godotenv.Read. The test-only packages that
// mount a tmpfs or restart a test binary (internal/tmpfs, internal/racequiet) are not linked into it.
func TestBotRunsNoProcesses(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{.Standard}}\t{{join .Imports \" \"}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{"github.com/joho/godotenv": true}
	// Packages for tests only, whose code does what the bot must not (their files are left out below).
	testOnly := map[string]bool{"runwatch/internal/tmpfs": true, "runwatch/internal/racequiet": true}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, rest, _ := strings.Cut(line, "\t")
		std, imports, _ := strings.Cut(rest, "\t")
		if std == "true" {
			continue // the standard library is not the bot's code
		}
		if testOnly[pkg] {
			t.Errorf("the bot links %s, a package for tests only (it mounts or restarts processes)", pkg)
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
		if strings.HasSuffix(f, "_test.go") || strings.Contains(f, "/scripts/") || strings.Contains(f, "/testdata/") || strings.Contains(f, "/internal/tmpfs/") ||
			strings.Contains(f, "/internal/racequiet/") {
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
