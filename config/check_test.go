package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

// TestConfigErrorTable gives every key of the run file a value of the wrong type or an invalid one and
// checks the error names the key and the key's own line. The table must cover every key: a key added to
// the run file without a row here fails the test.
func TestConfigErrorTable(t *testing.T) {
	run := func(lines ...string) string { return "runs:\n  - name: a\n" + strings.Join(lines, "\n") + "\n" }
	plan := func(lines ...string) string {
		return run(append([]string{"    plans:", "      - name: p", "        target: /d", "        tokens: 5",
			"        num_layers: 4", "        hidden_size: 8", "        dtype: bf16"}, lines...)...)
	}
	stage := func(lines ...string) string {
		return run(append([]string{"    stages:", "      - name: s"}, lines...)...)
	}
	prom := func(lines ...string) string {
		return run(append([]string{"    prometheus:", "      url: http://127.0.0.1:9090"}, lines...)...)
	}
	tests := []struct {
		key, yaml string
		want      string // the error's start: "line N: key"
		also      string // and something it says about the value
	}{
		{"runs", "runs: 5\n", "line 1: runs must be a list", ""},
		{"log", run("    log: [oops", "    total: 5"), "line 3: the list [ opened on this line is never closed", "did not find expected"},
		{"log", run("    outputs: [/a,", "      /b]", "    total: 5", "    watch: {x: 1"), "line 6: the mapping { opened on this line is never closed", ""},
		{"discover", run() + "discover: maybe\n", "line 4: discover", "true or false"},
		{"page", run() + "page:\n  critical: [U0ONCALL, alice]\n", "line 5: page.critical[1]", `"alice" is not a user id (U0123ABCD)`},
		{"page", run("    page:", "      disk_full: ['@alice']"), "line 4: runs[0].page.disk_full[0]", "is a name: Slack pages people by id"},
		{"page", run("    page: [U0ONCALL]"), "line 3: runs[0].page must be a mapping", ""},
		{"critical", run("    page:", "      critical: {a: 1}"), "line 4: runs[0].page.critical must be a list", ""},
		{"protected_write", run("    page:", "      protected_write: [[U1]]"), "line 4: runs[0].page.protected_write[0]", "must be a single value"},
		{"disk_full", run("    page:", "      disk_full: [C0CHANNEL]"), "line 4: runs[0].page.disk_full[0]", "not a user id"},
		{"stall", run("    page:", "      stall: [\"#oncall\"]"), "line 4: runs[0].page.stall[0]", "is a name"},
		{"probe_down", run("    page:", "      probe_down: U1"), "line 4: runs[0].page.probe_down must be a list", ""},
		{"commands", run() + "commands: /eta-b200\n", "line 4: commands must be a mapping", ""},
		{"prefix", run() + "commands:\n  prefix: B200\n", "line 5: commands.prefix", "lower case letters"},
		{"suffix", run() + "commands:\n  suffix: \"-b 200\"\n", "line 5: commands.suffix", "lower case letters"},
		{"eta", run() + "commands:\n  eta: eta-b200\n", "line 5: commands.eta", "not a slash command name"},
		{"storage", run() + "commands:\n  storage: /eta\n", "line 5: commands.storage", "the eta command's name too"},
		{"runwatch", run() + "commands:\n  runwatch: /Runwatch\n", "line 5: commands.runwatch", "not a slash command name"},
		{"allowed_channels", run() + "allowed_channels: {a: 1}\n", "line 4: allowed_channels must be a list", ""},
		{"admins", run() + "admins: [[U1]]\n", "line 4: admins[0] must be a single value, not a list", ""},
		{"name", "runs:\n  - name: 'a b'\n", "line 2: runs[0].name", "not a valid name"},
		{"channel", run("    channel: {x: 1}"), "line 3: runs[0].channel must be a single value, not a mapping", "quote"},
		{"outputs", run("    outputs:", "      - /ok", "      - relative/out"), "line 5: runs[0].outputs[1]", "not an absolute path"},
		{"protected", run("    protected: [shared]"), "line 3: runs[0].protected[0]", "not an absolute path"},
		{"watch", run("    watch: /x"), "line 3: runs[0].watch must be a list", "in brackets, [like this]"},
		{"plans", run("    plans: yes"), "line 3: runs[0].plans must be a list", ""},
		{"log", run("    log: gen.log"), "line 3: runs[0].log", "not an absolute path"},
		{"log_pattern", run("    outputs: [/x]", "    log_pattern: '('"), "line 4: runs[0].log_pattern", "named groups"},
		{"metrics", run("    outputs: [/x]", "    metrics:", "      - http://127.0.0.1:8000/metrics", "      - localhost:8001"), "line 6: runs[0].metrics[1]", "http://"},
		// url.Parse takes any digits for a port; a scrape of :99999 then failed on every answer.
		{"metrics port", run("    metrics:", "      - http://127.0.0.1:99999/metrics"), "line 4: runs[0].metrics[0]", "port 99999 is out of range: a TCP port is 1 to 65535"},
		{"metrics port 0", run("    metrics: [http://127.0.0.1:0/metrics]"), "line 3: runs[0].metrics[0]", "port 0 is out of range"},
		{"prometheus port", run("    prometheus:", "      url: http://127.0.0.1:70000"), "line 4: runs[0].prometheus.url", "port 70000 is out of range"},
		{"stage url port", stage("        check: http", "        url: http://h:123456/health"), "line 6: runs[0].stages[0].url", "port 123456 is out of range"},
		{"metrics_max_body", run("    outputs: [/x]", "    metrics_max_body: 1KiB"), "line 4: runs[0].metrics_max_body", "64KiB..256MiB"},
		{"total", run("    total: lots"), "line 3: runs[0].total", `"lots" is not a whole number`},
		{"total", run("    outputs: [/x]", "    total: -5"), "line 4: runs[0].total", "must not be negative"},
		{"stall_after", run("    stall_after: soon"), "line 3: runs[0].stall_after", "not a duration"},
		{"stall_after", run("    stall_after: 600"), "line 3: runs[0].stall_after", "a number needs its unit (600s for seconds, 600m for minutes)"},
		{"max_tokens", run("    max_tokens: 1.5"), "line 3: runs[0].max_tokens", "1.5 is not a whole number"},
		{"max_tokens", run("    outputs: [/x]", "    max_tokens: -1"), "line 4: runs[0].max_tokens", "must not be negative"},
		{"schedule", run("    outputs: [/x]", `    schedule: "99 * * * *"`), "line 4: runs[0].schedule", "cron spec"},
		{"post_mode", run("    outputs: [/x]", "    post_mode: sometimes"), "line 4: runs[0].post_mode", "new, update, thread"},
		{"broadcast_resolved", run("    outputs: [/x]", "    broadcast_resolved: sometimes"), "line 4: runs[0].broadcast_resolved", "true or false"},
		{"stages", run("    stages: {name: s}"), "line 3: runs[0].stages must be a list", ""},
		{"prometheus", run("    prometheus: [http://p]"), "line 3: runs[0].prometheus must be a mapping", ""},
		{"url", prom("      selector: '{job=\"x\"}'") + "", "", ""}, // placeholder replaced below
		{"selector", prom("      selector: job=x"), "line 5: runs[0].prometheus.selector", "braces"},
		{"bearer_token_env", prom("      bearer_token_env: [T]"), "line 5: runs[0].prometheus.bearer_token_env must be a single value", ""},
		{"username_env", prom("      username_env: {u: 1}"), "line 5: runs[0].prometheus.username_env must be a single value", ""},
		{"password_env", prom("      password_env: [P]"), "line 5: runs[0].prometheus.password_env must be a single value", ""},
		{"target", plan("        model_config: /m/config.json") + "", "", ""}, // placeholder replaced below
		{"tokens", plan("        layers: all") + "", "", ""},                  // placeholder replaced below
		{"layers", plan("        layers: [1, x]"), "line 10: runs[0].plans[0].layers", `"x" is not a layer index`},
		{"model_config", plan("        model_config: config.json"), "line 10: runs[0].plans[0].model_config", "absolute path"},
		{"num_layers", run("    plans:", "      - name: p", "        target: /d", "        tokens: 5", "        num_layers: lots"), "line 7: runs[0].plans[0].num_layers", "not a whole number"},
		{"hidden_size", run("    plans:", "      - name: p", "        target: /d", "        tokens: 5", "        num_layers: 4", "        hidden_size: -8", "        dtype: bf16"), "line 8: runs[0].plans[0].hidden_size", "give model_config"},
		{"dtype", run("    plans:", "      - name: p", "        target: /d", "        tokens: 5", "        num_layers: 4", "        hidden_size: 8", "        dtype: int3"), "line 9: runs[0].plans[0].dtype", `"int3" is not known`},
		{"check", stage("        check: vibes"), "line 5: runs[0].stages[0].check", "use one of"},
		// A value a letter or a swap away from one it takes: named, as an unknown key's likely spelling is.
		{"check", stage("        check: progres"), "line 5: runs[0].stages[0].check", `"progres": did you mean "progress"? (use one of http,`},
		{"post_mode", run("    outputs: [/x]", "    post_mode: thred"), "line 4: runs[0].post_mode", `did you mean "thread"?`},
		{"dtype", run("    plans:", "      - name: p", "        target: /d", "        tokens: 5", "        num_layers: 4", "        hidden_size: 8", "        dtype: bfloat61"), "line 9: runs[0].plans[0].dtype", `did you mean "bfloat16"?`},
		// "bfloat" cut short is bfloat16 (2 bytes), not float (one edit away, but float32: twice the size).
		{"dtype", run("    plans:", "      - name: p", "        target: /d", "        tokens: 5", "        num_layers: 4", "        hidden_size: 8", "        dtype: bfloat"), "line 9: runs[0].plans[0].dtype", `did you mean "bfloat16"?`},
		{"path", stage("        check: exists", "        path: rel"), "line 6: runs[0].stages[0].path", "absolute path"},
		{"metric", stage("        check: metric", "        metric: [a]"), "line 6: runs[0].stages[0].metric must be a single value", ""},
		{"metric name", stage("        check: metric", "        metric: 'http://h:9/metrics'", "        op: '>'", "        value: 1"), "line 6: runs[0].stages[0].metric", "is not a metric name"},
		{"metric selector", stage("        check: metric", "        metric: 'vllm:x{a=b}'", "        op: '>'", "        value: 1"), "line 6: runs[0].stages[0].metric", `like vllm:num_requests_running or vllm:request_success_total{finished_reason="length"}`},
		{"op", stage("        check: metric", "        metric: vllm:num_requests_running", "        op: '~'", "        value: 1"), "line 7: runs[0].stages[0].op", "use one of"},
		{"value", stage("        check: metric", "        metric: m", "        op: '>'", "        value: high"), "line 8: runs[0].stages[0].value", `"high" is not a number`},
		{"query", stage("        check: promql", "        query: {a: 1}"), "line 6: runs[0].stages[0].query must be a single value", ""},
	}
	// Rows whose YAML is easier to write out whole.
	for i := range tests {
		switch tests[i].key {
		case "url":
			tests[i].yaml = run("    prometheus:", "      url: ftp://p:9090")
			tests[i].want, tests[i].also = "line 4: runs[0].prometheus.url", "http"
		case "target":
			tests[i].yaml = run("    plans:", "      - name: p", "        target: data/hs", "        tokens: 5")
			tests[i].want, tests[i].also = "line 5: runs[0].plans[0].target", "absolute path"
		case "tokens":
			tests[i].yaml = run("    plans:", "      - name: p", "        target: /d", "        tokens: lots")
			tests[i].want, tests[i].also = "line 6: runs[0].plans[0].tokens", "positive number"
		}
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.key] = true
		t.Run(tt.key+"/"+tt.want, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), env(nil))
			if err == nil {
				t.Fatalf("Parse(%q) = nil; want %q", tt.yaml, tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.also) {
				t.Errorf("Parse(%q) = %q; want it to start with %q and say %q", tt.yaml, err, tt.want, tt.also)
			}
			if strings.Contains(err.Error(), "cannot unmarshal") || strings.Contains(err.Error(), "!!") {
				t.Errorf("Parse(%q) = %q; want no YAML decoder jargon", tt.yaml, err)
			}
		})
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[File](), reflect.TypeFor[Run](), reflect.TypeFor[Plan](), reflect.TypeFor[Stage](), reflect.TypeFor[Prometheus](),
		reflect.TypeFor[Page](), reflect.TypeFor[Commands]()} {
		for key := range yamlFields(typ) {
			if !covered[key] {
				t.Errorf("key %q of %s has no row in the error table", key, typ.Name())
			}
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct{ name, yaml, want, also string }{
		{"indent under an item", "runs:\n  - name: a\n   outputs: [/x]\n", "line 3: bad indentation", "at 4"},
		{"indent back to no level", "runs:\n  - name: a\n    plans:\n      - name: p\n     target: /d\n", "line 5: bad indentation", ""},
		{"unquoted var in a list", "runs:\n  - name: a\n    metrics: [${URL}]\n", "line 3:", "quote values that start with ${"},
		{"tab", "runs:\n\t- name: a\n", "line 2:", "tab"},
		{"one space short of its siblings", "runs:\n  - name: a\n    log: /x\n   total: 5\n", "line 4: bad indentation", "indented 3 spaces, between the levels above it: 4 (line 3) and 2"},
		{"unclosed double quote", "runs:\n  - name: a\n    channel: \"#synth\n    log: /x\n", "line 3: the value opened with \" on this line is never closed", ""},
		{"unclosed single quote", "runs:\n  - name: a\n    outputs:\n      - '/data/out\n    log: /x\n", "line 4: the value opened with ' on this line is never closed", ""},
		{"short indent after an escaped quote", "runs:\n  - name: a\n    log_pattern: \"say \\\"(?P<done>\\\\d+)\"\n   total: 5\n", "line 4: bad indentation", "between the levels above it"},
		{"unclosed after an escaped quote", "runs:\n  - name: a\n    log_pattern: \"say \\\"(?P<done>\\\\d+)\"\n    channel: \"#synth\n", "line 4: the value opened with \" on this line is never closed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), env(map[string]string{"URL": "http://127.0.0.1:8000/metrics"}))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.also) {
				t.Errorf("Parse(%q) = %v; want %q ... %q", tt.yaml, err, tt.want, tt.also)
			}
		})
	}
	// Valid files are not flagged: the example, lists at the key's column, block scalars, quoted ${VAR}.
	for _, y := range []string{
		"runs:\n- name: a\n  outputs:\n  - /x\n",
		"runs:\n  - name: a\n    log_pattern: |\n      (?P<done>\\d+)/(?P<total>\\d+)\n    outputs: [\"${OUT:-/x}\"]\n",
		"runs:\n  - name: a   # the run\n    metrics: [\n      \"http://127.0.0.1:1/metrics\",\n    ]\n",
	} {
		if _, err := Parse([]byte(y), env(nil)); err != nil {
			t.Errorf("Parse(%q) = %v; want it to load", y, err)
		}
	}
}

// A plan's keys keep their lines past loading, so a problem found later names the line to fix, the way a
// load error does; a plan built in code (the demo) says where in words.
func TestPlanKeyAt(t *testing.T) {
	f, err := Parse([]byte("runs:\n  - name: a\n  - name: b\n    plans:\n      - {name: p, target: /d, tokens: 5, num_layers: 4, hidden_size: 8, dtype: bf16}\n      - name: hs\n        target: /d\n        tokens: auto\n        model_config: /m/config.json\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.Runs[1].Plans[1].KeyAt("model_config"), "line 9: runs[1].plans[1].model_config"; got != want {
		t.Errorf("KeyAt(model_config) = %q; want %q", got, want)
	}
	if got, want := f.Runs[1].Plans[0].KeyAt("target"), "line 5: runs[1].plans[0].target"; got != want {
		t.Errorf("KeyAt(target) = %q; want %q", got, want)
	}
	if got, want := (Plan{Name: "hs"}).KeyAt("model_config"), "model_config in the run file"; got != want {
		t.Errorf("KeyAt of a plan not from a file = %q; want %q", got, want)
	}
}

// TestPrometheusEnvKeysNeverQuoteACredential: the *_env keys take a variable's name. Written as
// ${PROM_TOKEN}, or with the token pasted in, the value is the credential itself: the run file is
// refused with an error that names the key and the variable, never the value (before, the token
// became the "name" of a variable that "is not set", in every status answer and Slack post).
func TestPrometheusEnvKeysNeverQuoteACredential(t *testing.T) {
	const token = "glsa-Secr3tTokenValue.abc"
	lookup := func(k string) (string, bool) {
		if k == "PROM_TOKEN" {
			return token, true
		}
		return "", false
	}
	run := func(line string) string {
		return "runs:\n  - name: a\n    prometheus:\n      url: http://127.0.0.1:9090\n" + line + "\n"
	}
	tests := []struct {
		yaml, want string
	}{
		{run("      bearer_token_env: ${PROM_TOKEN}"), "line 5: runs[0].prometheus.bearer_token_env takes the name of an environment variable: write PROM_TOKEN, not ${PROM_TOKEN}"},
		{run("      password_env: 'x${PROM_TOKEN:-none}'"), "line 5: runs[0].prometheus.password_env takes the name of an environment variable: write PROM_TOKEN"},
		{run("      bearer_token_env: " + token), "line 5: runs[0].prometheus.bearer_token_env is not the name of an environment variable"},
		{run("      username_env: 'admin user'"), "line 5: runs[0].prometheus.username_env is not the name of an environment variable"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.yaml), lookup)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "Secr3t") {
			t.Errorf("Parse(%q) = %v; want %q..., without the token", tt.yaml, err, tt.want)
		}
	}
	if _, err := Parse([]byte(run("      bearer_token_env: PROM_TOKEN")), lookup); err != nil {
		t.Errorf("Parse(bearer_token_env: PROM_TOKEN) = %v; want it accepted", err)
	}
}

// A log_pattern without its groups is told what it needs once: the hint the check adds to a regex that does
// not compile said it a second time, word for word.
func TestLogPatternGroupsSaidOnce(t *testing.T) {
	y := "runs:\n  - name: a\n    log_pattern: 'step (\\d+)/(\\d+)'\n"
	_, err := Parse([]byte(y), env(nil))
	if err == nil {
		t.Fatalf("Parse(%q) = nil; want the missing groups named", y)
	}
	if n := strings.Count(err.Error(), "(?P<done>...)"); n != 1 || !strings.HasPrefix(err.Error(), "line 3: runs[0].log_pattern") {
		t.Errorf("Parse(%q) = %q; want line 3 and (?P<done>...) named once, not %d times", y, err, n)
	}
}

// TestErrorsNeverQuoteAVariablesValue: a value that came from ${VAR} and is wrong is said as the reference.
// `max_tokens: ${PROM_PASS}` (a variable put in the wrong key) quoted the password in the error, which the
// bot prints and logs at start-up.
func TestErrorsNeverQuoteAVariablesValue(t *testing.T) {
	const pass = "hunter2-Secr3t"
	lookup := func(k string) (string, bool) {
		switch k {
		case "PROM_PASS":
			return pass, true
		case "TOTAL":
			return "25000", true
		}
		return "", false
	}
	head := "runs:\n  - name: a\n    log: /tmp/gen.log\n"
	for _, tt := range []struct{ yaml, want string }{
		{head + "    max_tokens: ${PROM_PASS}\n", "line 4"},
		{head + "    total: ${PROM_PASS}\n", "line 4"},
		{head + "    metrics: ['http://x:${PROM_PASS}@[::1']\n", "line 4"},
		{head + "    stall_after: ${PROM_PASS}\n", "line 4"},
		{head + "    schedule: ${PROM_PASS}\n", "line 4"},
	} {
		_, err := Parse([]byte(tt.yaml), lookup)
		if err == nil {
			t.Errorf("Parse(%q) accepted it; want an error", tt.yaml)
			continue
		}
		if strings.Contains(err.Error(), "Secr3t") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v; want %q and no part of the variable's value", tt.yaml, err, tt.want)
		}
	}
	// A value the error quotes with %q is escaped there: `"hunter2\"Secr3t"` did not contain the value and was
	// shown. A variable whose value holds another's: replaced first, the shorter left the rest of the longer.
	quoted := func(k string) (string, bool) {
		switch k {
		case "PROM_PASS":
			return `hunter2"Secr3t\x`, true
		case "PROM_USER":
			return "admin1", true
		case "ADMIN_PASS":
			return "admin1-Secr3t", true
		}
		return "", false
	}
	for _, y := range []string{head + "    schedule: ${PROM_PASS}\n",
		"runs:\n  - name: a\n    log: /tmp/${PROM_USER}.log\n    schedule: ${ADMIN_PASS}\n"} {
		if _, err := Parse([]byte(y), quoted); err == nil || strings.Contains(err.Error(), "Secr3t") || !strings.Contains(err.Error(), "line 4") {
			t.Errorf("Parse(%q) = %v; want the error at line 4 and no part of the variable's value", y, err)
		}
	}
	// A number from a variable stays in the message: line numbers read the same.
	if _, err := Parse([]byte(head+"    total: ${TOTAL}\n    done_when: nonsense\n"), lookup); err == nil || !strings.Contains(err.Error(), "line 5") {
		t.Errorf("Parse(done_when: nonsense) = %v; want the error at line 5", err)
	}
}

// load writes a run file and loads it the way every command does.
func load(t *testing.T, yaml string) (*File, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "runwatch.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(p, env(nil))
}

// TestRunFileMessagesReadAsSentences loads run files with the mistakes a reviewer made and checks each
// error is one line naming the key and the fix, with no Go list syntax and no YAML decoder report.
func TestRunFileMessagesReadAsSentences(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"a key twice", "runs:\n  - name: a\n    outputs: [/x]\n    outputs: [/y]\n",
			[]string{`line 4: "outputs" is defined twice in runs[0] (first on line 3)`}},
		{"a regex in double quotes", "runs:\n  - name: a\n    log_pattern: \"(?P<done>\\d+)/(?P<total>\\d+)\"\n",
			[]string{"line 3: log_pattern: in double quotes a backslash must be doubled", `write \\d`, "single quotes"}},
		{"a regex in a double-quoted list item", "runs:\n  - name: a\n    outputs:\n      - /x\n    log_pattern: 'ok (?P<done>\\d+)/(?P<total>\\d+)'\n    watch:\n      - \"C:\\data\"\n",
			[]string{"line 7:", `\d is not an escape`}},
		{"a schedule in words", "runs:\n  - name: a\n    outputs: [/x]\n    schedule: \"every hour\"\n",
			[]string{`line 4: runs[0].schedule "every hour": it has 2 fields, where a cron spec has 5`, "@hourly"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.yaml)
			if err == nil {
				t.Fatalf("Load(%q) = nil; want %q", tt.yaml, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load(%q) = %q; want it to say %q", tt.yaml, err, w)
				}
			}
			msg := err.Error()[strings.Index(err.Error(), "line "):] // after the file's path
			for _, bad := range []string{"\n", "unmarshal errors", "yaml: ", "parse:", "found 2", "[every"} {
				if strings.Contains(msg, bad) {
					t.Errorf("Load(%q) = %q; want no %q in it", tt.yaml, err, bad)
				}
			}
		})
	}
}
