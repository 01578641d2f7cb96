package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestParseExampleFile(t *testing.T) {
	b, err := os.ReadFile("../runwatch.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(b, env(map[string]string{"HOME": "/home/ml"}))
	if err != nil {
		t.Fatalf("Parse(runwatch.example.yaml) = %v; want it to parse", err)
	}
	if len(f.Runs) != 1 {
		t.Fatalf("runs = %d; want 1", len(f.Runs))
	}
	r := f.Runs[0]
	if r.Name != "synth-25k" || r.Line == 0 {
		t.Errorf("run = %q at line %d; want synth-25k with a line", r.Name, r.Line)
	}
	if got := r.Outputs[1]; got != "/home/ml/runs/synth-25k/samples" {
		t.Errorf("outputs[1] = %q; want ${HOME} expanded", got)
	}
	if !r.Plans[0].Tokens.Auto || len(r.Plans[0].Layers.List) != 3 {
		t.Errorf("plans[0] = %+v; want tokens auto and 3 layers", r.Plans[0])
	}
	if r.Plans[1].Tokens.N != 25e6 || !r.Plans[1].Layers.All {
		t.Errorf("plans[1] = %+v; want 25M tokens, all layers", r.Plans[1])
	}
	if r.StallAfter.Duration != 10*time.Minute {
		t.Errorf("stall_after = %v; want 10m", r.StallAfter)
	}
	if len(r.Stages) != 7 || r.Stages[4].Op != ">" || r.Stages[4].Value != 0.5 {
		t.Errorf("stages = %+v", r.Stages)
	}
	if r.Prometheus == nil || r.Prometheus.Selector != `{job="vllm",run="synth-25k"}` {
		t.Errorf("prometheus = %+v", r.Prometheus)
	}
	// Every key of the schema appears in the example file, so it really shows every key.
	for _, key := range append(append(append(knownList(t, File{}), knownList(t, Run{})...), knownList(t, Plan{})...), knownList(t, Stage{})...) {
		if !strings.Contains(string(b), key+":") {
			t.Errorf("runwatch.example.yaml does not show key %q", key)
		}
	}
}

func knownList(t *testing.T, v any) []string {
	t.Helper()
	return strings.Split(knownKeys(reflectType(v)), ", ")
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{"empty", "", []string{"empty"}},
		// "runs: the run file lists no runs" named neither the line nor what to write there.
		{"no runs", "runs: []\n", []string{"line 1: runs lists no runs: add one under it", `"- name: "`}},
		{"runs empty", "# runs\nruns:\n\n", []string{"line 2: runs lists no runs"}},
		{"no runs key", "admins: [U1]\n", []string{"the run file lists no runs: give it a runs: list"}},
		{"unknown top key", "runs:\n  - name: a\nrunz: 1\n", []string{"line 3", `unknown key "runz"`}},
		{"unknown run key", "runs:\n  - name: a\n    outptus: [/x]\n", []string{"line 3", `"outptus"`, "runs[0]", "outputs"}},
		{"misspelt key", "runs:\n  - name: a\n    totl: 25000\n", []string{"line 3", `unknown key "totl" in runs[0]: did you mean "total"?`}},
		{"misspelt plan key", "runs:\n  - name: a\n    plans:\n      - name: p\n        target: /d\n        tokens: 5\n        num_layer: 61\n",
			[]string{"line 7", `did you mean "num_layers"?`}},
		{"unknown plan key", "runs:\n  - name: a\n    plans:\n      - name: p\n        target: /d\n        tokens: 5\n        layer: all\n", []string{"line 7", `"layer"`}},
		{"missing name", "runs:\n  - outputs: [/x]\n", []string{"line 2", "name is missing"}},
		{"bad name", "runs:\n  - name: 'a b'\n", []string{"line 2", "not a valid name"}},
		{"duplicate", "runs:\n  - name: a\n  - name: a\n", []string{"line 3", "already used", "line 2"}},
		{"relative output", "runs:\n  - name: a\n    outputs: [data/out]\n", []string{"outputs", "not an absolute path"}},
		{"bad duration", "runs:\n  - name: a\n    stall_after: soon\n", []string{"line 3", "not a duration"}},
		{"negative duration", "runs:\n  - name: a\n    stall_after: -5m\n", []string{"line 3", `"-5m" is negative`}},
		{"bad tokens", "runs:\n  - name: a\n    plans:\n      - name: p\n        target: /d\n        tokens: lots\n        num_layers: 2\n        hidden_size: 8\n        dtype: bf16\n", []string{"line 6", "tokens"}},
		{"tokens in a list", "runs:\n  - name: a\n    plans:\n      - {name: p, target: /d, tokens: [25M], num_layers: 4, hidden_size: 8, dtype: bf16}\n",
			[]string{"line 4: runs[0].plans[0].tokens: must be a single value, not a list", "or auto"}},
		{"bad layers", "runs:\n  - name: a\n    plans:\n      - {name: p, target: /d, tokens: 5, layers: [1, x], num_layers: 4, hidden_size: 8, dtype: bf16}\n", []string{"line 4", `"x" is not a layer index`}},
		{"layer out of range", "runs:\n  - name: a\n    plans:\n      - {name: p, target: /d, tokens: 5, layers: [9], num_layers: 4, hidden_size: 8, dtype: bf16}\n", []string{"line 4", "out of range"}},
		{"no shape", "runs:\n  - name: a\n    plans:\n      - {name: p, target: /d, tokens: 5}\n", []string{"line 4", "model_config"}},
		{"bad dtype", "runs:\n  - name: a\n    plans:\n      - {name: p, target: /d, tokens: 5, num_layers: 4, hidden_size: 8, dtype: int3}\n", []string{"dtype", "int3"}},
		{"bad post mode", "runs:\n  - name: a\n    post_mode: sometimes\n", []string{"post_mode", "new, update, thread"}},
		{"bad metrics url", "runs:\n  - name: a\n    metrics: [localhost:8000]\n", []string{"metrics", "not an http(s) URL"}},
		// "127.0.0.1:8000/metrics" fails to parse at all (a colon in the first segment): it wants the hint most.
		{"metrics url without a scheme", "runs:\n  - name: a\n    metrics: ['127.0.0.1:8000/metrics']\n",
			[]string{"line 3: runs[0].metrics[0]", "start it with http:// or https://"}},
		// Every refused URL says what to change, not only that it is not one.
		{"metrics url with a space", "runs:\n  - name: a\n    metrics: ['http://gpu 3:8000/metrics']\n",
			[]string{"line 3: runs[0].metrics[0]", "it has a space in it, and a URL has none"}},
		{"metrics url with a bad port", "runs:\n  - name: a\n    metrics: ['http://gpu3:80a0/metrics']\n",
			[]string{"line 3: runs[0].metrics[0]", "the port after the host's colon is not a number"}},
		{"metrics url without a host", "runs:\n  - name: a\n    metrics: ['http://']\n",
			[]string{"line 3: runs[0].metrics[0]", "(write it like http://host:port/path)"}},
		// One run's keys at the top of the file, without runs: around them.
		{"a run without runs:", "name: a\nlog: /x/gen.log\n",
			[]string{`line 1: "name" is a run's key: runs go in a list under runs:`, `line 2: "log" is a run's key too`}},
		{"bad regex", "runs:\n  - name: a\n    log_pattern: '('\n", []string{"log_pattern"}},
		{"regex groups", "runs:\n  - name: a\n    log_pattern: 'x (\\d+)'\n", []string{"named groups"}},
		{"regex unknown group", "runs:\n  - name: a\n    log_pattern: '(?P<done>\\d+)/(?P<total>\\d+) (?P<eta>\\S+)'\n", []string{"log_pattern", "unknown group (?P<eta>)"}},
		{"bad stage", "runs:\n  - name: a\n    stages:\n      - {name: s, check: vibes}\n", []string{"line 4", "vibes"}},
		{"wrong type", "runs:\n  - name: a\n    total: many\n", []string{"line 3"}},
		{"runs not a list", "runs: {name: a}\n", []string{"line 1", "runs must be a list"}},
		{"unset var", "runs:\n  - name: a\n    outputs:\n      - ${NOPE}/x\n", []string{"line 4", "runs[0].outputs[0]: ${NOPE} is not set"}},
		{"unset var, a scalar key", "runs:\n  - name: a\n    total: ${TOTAL}\n", []string{"line 3", "runs[0].total: ${TOTAL} is not set"}},
		{"prometheus url without a host", "runs:\n  - name: a\n    prometheus: {url: 'http://'}\n", []string{"prometheus.url", "with a host"}},
		{"prometheus token and password", "runs:\n  - name: a\n    prometheus: {url: 'http://p:9090', bearer_token_env: T, username_env: U, password_env: P}\n", []string{"prometheus", "not both"}},
		{"prometheus url with the API path", "runs:\n  - name: a\n    prometheus:\n      url: 'http://p:9090/api/v1'\n", []string{"line 4", "prometheus.url", "without /api/v1"}},
		{"bad selector", "runs:\n  - name: a\n    prometheus: {url: 'http://p:9090', selector: 'job=x'}\n", []string{"selector", "braces"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), env(nil))
			if err == nil {
				t.Fatalf("Parse(%q) = nil error; want one mentioning %q", tt.yaml, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse(%q) = %v; want it to mention %q", tt.yaml, err, w)
				}
			}
		})
	}
}

func TestExpansion(t *testing.T) {
	vars := env(map[string]string{"ROOT": "/data", "N": "25000", "TRICKY": "x: [y] # z"})
	y := `runs:
  - name: a
    outputs: ["${ROOT}/out", "${MISSING:-/fallback}/out"]
    total: ${N}
    log_pattern: 'done (?P<done>\d+) of (?P<total>\d+)$'
    channel: ${TRICKY}
`
	f, err := Parse([]byte(y), vars)
	if err != nil {
		t.Fatal(err)
	}
	r := f.Runs[0]
	if r.Outputs[0] != "/data/out" || r.Outputs[1] != "/fallback/out" {
		t.Errorf("outputs = %v; want expanded with default", r.Outputs)
	}
	if r.Total != 25000 {
		t.Errorf("total = %d; want 25000 from ${N}", r.Total)
	}
	if !strings.HasSuffix(r.LogPattern, "$") {
		t.Errorf("log_pattern = %q; a lone $ must stay", r.LogPattern)
	}
	if r.Channel != "x: [y] # z" {
		t.Errorf("channel = %q; a variable's content must not change the file's structure", r.Channel)
	}
}

func TestLoadEnv(t *testing.T) {
	e, err := LoadEnv(env(map[string]string{"HOME": "/home/u", "SLACK_BOT_TOKEN": "xoxb-secret", "RUNWATCH_ADMINS": "U1, U2", "SLACK_API_URL": "http://127.0.0.1:9/api"}))
	if err != nil {
		t.Fatal(err)
	}
	if e.ProcRoot != "/proc" || e.SampleInterval != 30*time.Second || e.StateDir != "/home/u/.local/state/runwatch" {
		t.Errorf("defaults = %+v", e)
	}
	if len(e.Admins) != 2 || e.Admins[1] != "U2" {
		t.Errorf("admins = %v", e.Admins)
	}
	if e.SlackAPIURL != "http://127.0.0.1:9/api/" {
		t.Errorf("SlackAPIURL = %q; want a trailing slash", e.SlackAPIURL)
	}
	for _, s := range []string{e.SlackBotToken.String(), strings.TrimSpace(fmtAll(e))} {
		if strings.Contains(s, "xoxb-secret") {
			t.Errorf("token leaked in %q", s)
		}
	}
	if e.SlackBotToken.Reveal() != "xoxb-secret" {
		t.Errorf("Reveal() = %q", e.SlackBotToken.Reveal())
	}
	if _, err := LoadEnv(env(map[string]string{"RUNWATCH_SAMPLE_INTERVAL": "often"})); err == nil || !strings.Contains(err.Error(), "RUNWATCH_SAMPLE_INTERVAL") {
		t.Errorf("LoadEnv(bad interval) = %v; want an error naming the variable", err)
	}
}

func TestLoadEnvDiscover(t *testing.T) {
	tests := []struct {
		value string
		off   bool
		only  []int
		err   string
	}{
		{"", false, nil, ""},
		{"on", false, nil, ""},
		{"OFF", true, nil, ""},
		{"1234, 4242", false, []int{1234, 4242}, ""},
		{"4242,me", false, nil, `RUNWATCH_DISCOVER="4242,me": give on, off, or the PIDs`},
		{"-1", false, nil, "RUNWATCH_DISCOVER"},
	}
	for _, tt := range tests {
		e, err := LoadEnv(env(map[string]string{"RUNWATCH_DISCOVER": tt.value}))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("LoadEnv(RUNWATCH_DISCOVER=%q) = %v; want %q", tt.value, err, tt.err)
			}
			continue
		}
		if err != nil || e.DiscoverOff != tt.off || fmt.Sprint(e.DiscoverOnly) != fmt.Sprint(tt.only) {
			t.Errorf("LoadEnv(RUNWATCH_DISCOVER=%q) = off %v, only %v, %v; want %v, %v", tt.value, e.DiscoverOff, e.DiscoverOnly, err, tt.off, tt.only)
		}
	}
}

func TestEnvExampleDocumentsEveryVariable(t *testing.T) {
	b, err := os.ReadFile("../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range EnvVars {
		if slices.Contains(EnvOnly, v) {
			// From the environment only: the example says so, and shows no line a .env could copy.
			if !strings.Contains(string(b), "# "+v) || strings.Contains(string(b), "\n"+v+"=") {
				t.Errorf(".env.example shows %s as a line to set, or does not say it is taken from the environment only", v)
			}
			continue
		}
		if !strings.Contains(string(b), "\n"+v+"=") {
			t.Errorf(".env.example does not document %s", v)
		}
	}
}

func TestLoadDotEnvDoesNotOverride(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".env")
	os.WriteFile(p, []byte("RW_TEST_A=from-file\nRW_TEST_B=from-file\n"), 0o600)
	t.Setenv("RW_TEST_A", "from-env")
	os.Unsetenv("RW_TEST_B")
	t.Cleanup(func() { os.Unsetenv("RW_TEST_B") })
	if _, err := LoadDotEnv(p); err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv("RW_TEST_A"); got != "from-env" {
		t.Errorf("RW_TEST_A = %q; want the environment to win", got)
	}
	if got := os.Getenv("RW_TEST_B"); got != "from-file" {
		t.Errorf("RW_TEST_B = %q; want from-file", got)
	}
	if _, err := LoadDotEnv(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("LoadDotEnv(missing) = %v; want nil", err)
	}
}

func TestLocate(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	os.Chdir(dir)
	if p, _ := Locate("", ""); p != "" {
		t.Errorf("Locate with nothing = %q; want the built-in default", p)
	}
	os.WriteFile("runwatch.yaml", []byte("runs: [{name: a}]\n"), 0o600)
	if p, _ := Locate("", ""); p != "runwatch.yaml" {
		t.Errorf("Locate = %q; want ./runwatch.yaml", p)
	}
	if p, _ := Locate("", "/etc/rw.yaml"); p != "/etc/rw.yaml" {
		t.Errorf("Locate(env) = %q", p)
	}
	if p, _ := Locate("/x.yaml", "/etc/rw.yaml"); p != "/x.yaml" {
		t.Errorf("Locate(flag) = %q; want the flag to win", p)
	}
	d := Default("/work")
	if d.Runs[0].Name != "local" || d.Runs[0].Watch[0] != "/work" || d.Runs[0].Watch[1] != "/" {
		t.Errorf("Default = %+v", d.Runs[0])
	}
}

func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../runwatch.example.yaml"); err == nil {
		f.Add(string(b))
	}
	f.Add("runs:\n  - name: a\n    outputs: [/x]\n")
	f.Add("runs: [{name: a, plans: [{name: p, target: /d, tokens: auto, layers: all, num_layers: 2, hidden_size: 4, dtype: bf16}]}]")
	f.Fuzz(func(t *testing.T, s string) {
		f, err := Parse([]byte(s), env(map[string]string{"HOME": "/h"}))
		if err == nil && len(f.Runs) == 0 {
			t.Errorf("Parse(%q) accepted a file with no runs", s)
		}
	})
}

func reflectType(v any) reflect.Type { return reflect.TypeOf(v) }

func fmtAll(e Env) string { return fmt.Sprintf("%v %+v %#v", e, e, e) }

// A file with a mistake in two runs names both, each with its key and line: fixing the first must not
// only reveal the second.
func TestParseErrorsEveryRun(t *testing.T) {
	y := "runs:\n  - name: a\n    total: -3\n  - name: ok\n    total: 5\n  - name: b\n    schedule: every hour\n  - name: a\n"
	_, err := Parse([]byte(y), env(nil))
	if err == nil {
		t.Fatalf("Parse(%q) = nil error; want the problems of runs 0, 2 and 3", y)
	}
	for _, want := range []string{"line 3: runs[0].total", "line 7: runs[2].schedule", `line 8: runs[3].name "a" is already used by the run on line 2`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want it to name %q", y, err, want)
		}
	}
	if strings.Contains(err.Error(), "runs[1]") {
		t.Errorf("Parse(%q) = %v; want nothing about the good run", y, err)
	}
}

// TestParseReportsEveryKeyError: a misspelt key in one run and a value of the wrong type in another are both
// reported, each with its line, so that fixing the first does not only reveal the second.
func TestParseReportsEveryKeyError(t *testing.T) {
	src := "runs:\n  - name: a\n    ouputs: [/data]\n  - name: b\n    total: lots\n"
	_, err := Parse([]byte(src), func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatal("Parse = nil; want the two errors")
	}
	msg := err.Error()
	for _, want := range []string{`line 3: unknown key "ouputs" in runs[0]: did you mean "outputs"?`, "line 5: runs[1].total"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Parse error = %q; want it to contain %q", msg, want)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n != 2 {
		t.Errorf("Parse error has %d lines: %q; want one per mistake", n, msg)
	}
}

// Run names are looked up in any case (RunByName, "ETA for Synth-25k?"), so two runs whose names differ only
// in case are refused: the second could never be asked about.
func TestParseRefusesNamesDifferingInCase(t *testing.T) {
	y := "runs:\n  - name: synth\n    total: 5\n  - name: Synth\n    total: 6\n"
	_, err := Parse([]byte(y), env(nil))
	if err == nil {
		t.Fatalf("Parse(%q) = nil error; want runs[1].name refused as a duplicate of runs[0]", y)
	}
	if want := `line 4: runs[1].name "Synth" is already used by the run on line 2`; !strings.Contains(err.Error(), want) {
		t.Errorf("Parse(%q) = %v; want it to name %q", y, err, want)
	}
}

// TestLoadDotEnvQuotesNoValue: the .env parser's own error quotes the file from the bad line on (or
// a value's first line), secrets included. A .env that does not parse is named by its bad line only.
func TestLoadDotEnvQuotesNoValue(t *testing.T) {
	const secret = "Sekr3tSigningValue"
	tests := []struct {
		body string
		line int
	}{
		{"RUNWATCH_ADMINS=U1\nPROM_TOKEN glsa-" + secret + "\nDB_PASSWORD=" + secret + "\n", 2},
		{"RUNWATCH_ADMINS=U1\n\nSLACK_SIGNING_SECRET=\"" + secret + "\nRUNWATCH_HTTP_ADDR=:8080\n", 3},
		// A quoted value of several lines (a PEM key) before the bad line: the bad line is named, not the key's.
		{"RUNWATCH_ADMINS=U1\nGH_APP_KEY=\"-----BEGIN KEY-----\nMIIBOgIBAAJBAK\n-----END KEY-----\"\nPROM_TOKEN glsa-" + secret + "\n", 5},
	}
	for _, tt := range tests {
		p := filepath.Join(t.TempDir(), ".env")
		if err := os.WriteFile(p, []byte(tt.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadDotEnv(p)
		want := fmt.Sprintf("read %s: line %d ", p, tt.line)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "Sekr3t") {
			t.Errorf("LoadDotEnv(%q) = %v; want %q..., without any value", tt.body, err, want)
		}
	}
}

// TestParseNumberWithCommasInBraces: "{tokens: 25,000,000}" reads as tokens: 25 and two keys "000", which were
// two identical lines, `unknown key "000" in runs[0].plans[0]`, naming neither tokens nor the commas. Each such
// number is one line that names its key and the number to write; a block-style value keeps its own message.
func TestParseNumberWithCommasInBraces(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // each on a line of its own, and nothing else
	}{
		{"total", "runs:\n  - {name: a, total: 25,000}\n",
			[]string{`line 2: runs[0].total: 25,000 is written with commas, and inside { } a comma separates keys (it reads as total: 25 and a key "000"): write 25000`}},
		{"tokens and hidden_size", "runs:\n  - name: a\n    plans:\n      - {name: p, target: /d, tokens: 25,000,000, layers: all, num_layers: 61, hidden_size: 7,168, dtype: bf16}\n",
			[]string{"line 4: runs[0].plans[0].tokens: 25,000,000 is written with commas", "write 25000000",
				"line 4: runs[0].plans[0].hidden_size: 7,168 is written with commas", "write 7168"}},
		{"a real unknown key", "runs:\n  - {name: a, total: 5, 000: 1}\n", []string{`line 2: unknown key "000" in runs[0]`}},
		{"block style", "runs:\n  - name: a\n    total: 25,000\n", []string{`line 3: runs[0].total: "25,000" is not a whole number`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), env(nil))
			if err == nil {
				t.Fatalf("Parse(%q) = nil error; want %q", tt.yaml, tt.want)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Parse(%q) = %v; want it to say %q", tt.yaml, err, w)
				}
			}
			if lines, mistakes := strings.Count(msg, "\n")+1, strings.Count(msg, "line "); lines != mistakes || strings.Contains(tt.yaml, "7,168") && lines != 2 {
				t.Errorf("Parse(%q) = %q: %d lines; want one line per number", tt.yaml, msg, lines)
			}
		})
	}
}

// TestLoadRefusesWhatIsNoRunFile: --config pointed at a directory said "read d.yaml: is a directory", and at a
// binary "parse: control characters are not allowed", with no line and no hint that the path is wrong.
func TestLoadRefusesWhatIsNoRunFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	asDir := filepath.Join(dir, "runs.yaml")
	if err := os.Mkdir(asDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       []string
	}{
		{"directory", asDir, []string{"runs.yaml is a directory, not a run file", filepath.Join(asDir, "runwatch.yaml")}},
		{"binary", write("bot.yaml", []byte("\x7fELF\x02\x01\x01\x00\x00\x00")), []string{"line 1: column 1 holds the byte 0x7f", "a run file is YAML text: is this the right file?"}},
		{"NUL on line 3", write("nul.yaml", []byte("runs:\n  - name: a\n    log: /x\x00\n")), []string{"line 3: column 12 holds the byte 0x00"}},
		{"not UTF-8", write("latin1.yaml", []byte("runs:\n  - name: caf\xe9\n")), []string{"line 2: column 14 is not UTF-8 text"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.path, env(nil))
			if err == nil {
				t.Fatalf("Load(%s) = nil; want a refusal", tt.path)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load(%s) = %q; want it to say %q", tt.path, err, w)
				}
			}
		})
	}
	// Tabs, carriage returns and UTF-8 beyond ASCII are text.
	ok := write("ok.yaml", []byte("runs:\r\n  - name: a\r\n    channel: \"#café\"\t# a comment\r\n"))
	if _, err := Load(ok, env(nil)); err != nil {
		t.Errorf("Load(CRLF, tab, UTF-8) = %v; want it to load", err)
	}
}

// TestDotEnvLeavesEnvOnlyVariables: SLACK_API_URL in a .env is not set (the bot token is sent there), and
// LoadDotEnv says it left it; the file's other variables are set.
func TestDotEnvLeavesEnvOnlyVariables(t *testing.T) {
	t.Setenv("SLACK_API_URL", "")
	os.Unsetenv("SLACK_API_URL")
	t.Setenv("RUNWATCH_PROBE_TIMEOUT", "")
	os.Unsetenv("RUNWATCH_PROBE_TIMEOUT")
	p := filepath.Join(t.TempDir(), ".env")
	os.WriteFile(p, []byte("SLACK_API_URL=http://attacker.example/api/\nRUNWATCH_PROBE_TIMEOUT=3s\n"), 0o600)
	ignored, err := LoadDotEnv(p)
	if err != nil || !slices.Equal(ignored, []string{"SLACK_API_URL"}) {
		t.Fatalf("LoadDotEnv = %v, %v; want SLACK_API_URL ignored", ignored, err)
	}
	if v, set := os.LookupEnv("SLACK_API_URL"); set {
		t.Errorf("SLACK_API_URL = %q after LoadDotEnv; want it unset", v)
	}
	if v := os.Getenv("RUNWATCH_PROBE_TIMEOUT"); v != "3s" {
		t.Errorf("RUNWATCH_PROBE_TIMEOUT = %q; want the .env's 3s", v)
	}
}
