package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The one-shot commands over a run file (app.go): `bot ask --config FILE` and `bot status` with the run
// files a reviewer tried, each answer or refusal a sentence a person can act on, and a job whose log went
// quiet.

// askWith writes a run file ({dir} standing for the test's directory) and asks one question with it.
func askWith(t *testing.T, runFile, question string) (code int, out, errb string, dir string) {
	t.Helper()
	dir = setEnv(t)
	p := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(runFile, "{dir}", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errb = run(t, "", "ask", "--config", p, question)
	return code, out, errb, dir
}

func writeLog(t *testing.T, dir, line string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "gen.log"), []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAskRefusesCountsPastAnyJob: before, total: 9223372036854775807 answered
// "300 / -9,223,372,036,854,775,808 done (<1%)", and a plan of 10^8 layers "40000000000000000 QB".
func TestAskRefusesCountsPastAnyJob(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"total", "runs:\n  - name: a\n    log: {dir}/gen.log\n    total: 9223372036854775807\n",
			"line 4: runs[0].total: 9223372036854775807 is too large (at most 1,000,000,000,000 items)"},
		{"a total past int64", "runs:\n  - name: a\n    log: {dir}/gen.log\n    total: 99999999999999999999999999\n",
			"line 4: runs[0].total: 99999999999999999999999999 is too large (at most 1,000,000,000,000 items)"},
		{"total 0", "runs:\n  - name: a\n    log: {dir}/gen.log\n    total: 0\n",
			"line 4: runs[0].total: 0 is not a number of items"},
		{"layers", "runs:\n  - name: a\n    plans:\n      - {name: hs, target: {dir}/hs, tokens: 1e30, num_layers: 100000000, hidden_size: 100000000, dtype: float32}\n",
			"line 4: runs[0].plans[0].num_layers: 100000000 is too large (at most 10,000 layers)"},
		{"tokens", "runs:\n  - name: a\n    plans:\n      - {name: hs, target: {dir}/hs, tokens: 1e30, num_layers: 61, hidden_size: 7168, dtype: float32}\n",
			"line 4: runs[0].plans[0].tokens: 1e+30 is too large (at most 1,000,000,000,000,000 tokens)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errb, _ := askWith(t, tt.file, "ETA?")
			if code != 1 || !strings.Contains(errb, tt.want) {
				t.Errorf("bot ask with %q = %d, %q %q; want exit 1 and %q", tt.file, code, out, errb, tt.want)
			}
		})
	}
}

// TestAskHugeLogTotalIsNotNegative: a log may still report a total past int64's exact range, which the
// answer used to print as -9,223,372,036,854,775,808.
func TestAskHugeLogTotalIsNotNegative(t *testing.T) {
	dir := setEnv(t)
	writeLog(t, dir, "Progress: 300/9223372036854775807 (0 errors), elapsed: 60s")
	p := filepath.Join(dir, "run.yaml")
	os.WriteFile(p, []byte(fmt.Sprintf("runs:\n  - name: a\n    log: %s/gen.log\n", dir)), 0o644)
	code, out, errb := run(t, "", "ask", "--config", p, "ETA?")
	if code != 0 || strings.Contains(out, "-9,223") || !strings.Contains(out, "300 / 9,223,372,036,854,776,000 done") {
		t.Errorf("bot ask ETA? with a log total of 2^63-1 = %d, %q %q; want 300 / 9,223,372,036,854,776,000 and nothing negative", code, out, errb)
	}
}

// TestAskPlanAtTheBounds: the largest plan the run file allows reads with separators and a unit: before,
// the layer count had none and a size past Q ran to 17 digits.
func TestAskPlanAtTheBounds(t *testing.T) {
	code, out, errb, _ := askWith(t, "runs:\n  - name: a\n    plans:\n      - {name: hs, target: {dir}, tokens: 1e15, num_layers: 10000, hidden_size: 1000000, dtype: float64}\n", "will the hidden states fit?")
	if w := "all 10,000 layers × 1,000,000 × 8 B (float64) × 1,000T tokens (set in the run file) = 80.0 YB"; code != 0 || !strings.Contains(out, w) {
		t.Errorf("bot ask fit = %d, %q %q; want %q", code, out, errb, w)
	}
	// How many tokens fit is the test disk's free space over 80 GB: none on most, one on a disk with 80-160 GB
	// free (the sentence for each is reports' TestEvaluatePlanOneTokenFits).
	if fit := regexp.MustCompile(`Not one token fits \(80\.0 GB per token\)|At most [0-9,.]+[KMBT]? tokens? fits?\b`); !fit.MatchString(out) {
		t.Errorf("bot ask fit = %q; want how many tokens fit, matching %s", out, fit)
	}
	if strings.Contains(out, "QB") || strings.Contains(out, "At most 0 tokens") {
		t.Errorf("bot ask fit = %q; want no QB and no \"At most 0 tokens\"", out)
	}
}

// TestAskWithoutTotalSaysWhatToDo: before, "ETA: unknown — the total number of items is unknown (the
// progress source gives no total)" and no word of what would give one.
func TestAskWithoutTotalSaysWhatToDo(t *testing.T) {
	dir := setEnv(t)
	writeLog(t, dir, "Progress: 300/0 (0 errors), elapsed: 60s")
	p := filepath.Join(dir, "run.yaml")
	os.WriteFile(p, []byte(fmt.Sprintf("runs:\n  - name: a\n    log: %s/gen.log\n", dir)), 0o644)
	code, out, errb := run(t, "", "ask", "--config", p, "ETA?")
	if code != 0 || !strings.Contains(out, "ETA: unknown — the total number of items is unknown") || !strings.Contains(out, "add total: with the job's item count") {
		t.Errorf("bot ask ETA? without a total = %d, %q %q; want it to say to add total: to the run file", code, out, errb)
	}
}

// TestAskAnswersWithoutGoInternals: what used to leak Go's list syntax and raw errors.
func TestAskAnswersWithoutGoInternals(t *testing.T) {
	tests := []struct {
		name, file, question string
		want                 []string
		not                  []string
	}{
		{"an unknown stage", "runs:\n  - name: a\n    stages:\n      - {name: vllm-server, check: manual}\n      - {name: generate, check: progress}\n      - {name: review-samples, check: manual}\n",
			"stage foo done", []string{`run a has no stage "foo" (stages: vllm-server, generate, review-samples)`}, []string{"["}},
		{"a plan target not written yet", "runs:\n  - name: a\n    plans:\n      - {name: hs, target: {dir}/out, tokens: 25M, num_layers: 61, hidden_size: 7168, dtype: bf16}\n",
			"will the hidden states fit?", []string{"/out: nothing — it does not exist yet."}, []string{"lstat", "(!) written", "no such file"}},
		// Said once, with the key's line: it was also repeated below as "(!) plan hs: ...", neither naming a line.
		{"a model config that is not there", "runs:\n  - name: a\n    plans:\n      - name: hs\n        target: {dir}\n        tokens: 25M\n        model_config: /nonexist.json\n",
			"will the hidden states fit?", []string{"hs: cannot read the model config: line 7: runs[0].plans[0].model_config: /nonexist.json does not exist"},
			[]string{"read model config:", "open /nonexist.json", "no such file", "plan hs:"}},
		{"a schedule in words", "runs:\n  - name: a\n    outputs: [{dir}]\n    schedule: \"every hour\"\n",
			"ETA?", []string{`line 4: runs[0].schedule "every hour": it has 2 fields, where a cron spec has 5`}, []string{"[every", "found 2"}},
		{"a key twice", "runs:\n  - name: a\n    outputs: [{dir}]\n    outputs: [{dir}/b]\n",
			"ETA?", []string{`line 4: "outputs" is defined twice in runs[0] (first on line 3)`}, []string{"unmarshal errors", "\n  line"}},
		{"a regex in double quotes", "runs:\n  - name: a\n    log_pattern: \"(?P<done>\\d+\"\n",
			"ETA?", []string{"line 3: log_pattern: in double quotes a backslash must be doubled", `write \\d`, "single quotes"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, out, errb, _ := askWith(t, tt.file, tt.question)
			for _, w := range tt.want {
				if !strings.Contains(out+errb, w) {
					t.Errorf("bot ask %q = %q %q; want %q", tt.question, out, errb, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out+errb, n) {
					t.Errorf("bot ask %q = %q %q; want no %q", tt.question, out, errb, n)
				}
			}
		})
	}
}

// TestAskModelConfigPastTheBounds: a config.json is held to the bounds the run file's num_layers and
// hidden_size have; before, 10^8 layers were priced at "35.8 EB ... At most 0 tokens fit".
func TestAskModelConfigPastTheBounds(t *testing.T) {
	dir := setEnv(t)
	cfg := filepath.Join(dir, "config.json")
	os.WriteFile(cfg, []byte(`{"num_hidden_layers": 100000000, "hidden_size": 7168, "torch_dtype": "bfloat16"}`), 0o644)
	p := filepath.Join(dir, "run.yaml")
	os.WriteFile(p, []byte(fmt.Sprintf("runs:\n  - name: a\n    plans:\n      - {name: hs, target: %s, tokens: 25M, model_config: %s}\n", dir, cfg)), 0o644)
	code, out, errb := run(t, "", "ask", "--config", p, "will the hidden states fit?")
	want := "hs: line 4: runs[0].plans[0].model_config: " + cfg + " gives 100,000,000 layers, more than any model has (at most 10,000)."
	if code != 0 || !strings.Contains(out, want) || strings.Contains(out, "EB") {
		t.Errorf("bot ask fit with a config.json of 10^8 layers = %d, %q %q; want %q", code, out, errb, want)
	}
}

// TestMissingRunFileSaysWhoNamedIt: a run file that is not there was "read run file: open x.yaml: no such file
// or directory", whether --config was mistyped or RUNWATCH_CONFIG (perhaps from a forgotten .env) was stale.
func TestMissingRunFileSaysWhoNamedIt(t *testing.T) {
	dir := setEnv(t)
	missing := filepath.Join(dir, "runwatch.yml")
	code, _, errb := run(t, "", "ask", "--config", missing, "ETA?")
	if want := "the run file " + missing + " named by --config does not exist: fix the path"; code != 1 || !strings.Contains(errb, want) {
		t.Errorf("ask --config %s = %d, %q; want exit 1 and %q", missing, code, errb, want)
	}
	os.WriteFile(filepath.Join(dir, ".env"), []byte("RUNWATCH_CONFIG="+missing+"\n"), 0o644)
	t.Setenv("RUNWATCH_CONFIG", "")
	os.Unsetenv("RUNWATCH_CONFIG")
	code, _, errb = run(t, "", "status")
	if want := "named by RUNWATCH_CONFIG (in the environment or .env) does not exist"; code != 1 || !strings.Contains(errb, want) {
		t.Errorf("status with RUNWATCH_CONFIG=%s in .env = %d, %q; want exit 1 and %q", missing, code, errb, want)
	}
}

// TestStatusWithoutRunFileSaysSo: `bot status` with no run file anywhere said "No progress source configured
// (add log:, metrics: or prometheus: to the run file)", sending a new user to look for a file that is not there.
func TestStatusWithoutRunFileSaysSo(t *testing.T) {
	setEnv(t)
	code, out, errb := run(t, "", "status")
	if want := "No progress source — no run file was found"; code != 0 || !strings.Contains(out, want) || strings.Contains(out, "to the run file") {
		t.Errorf("status without a run file = %d, %q %q; want %q and no run file to add to", code, out, errb, want)
	}
}

// TestStaleLogIsStalled: `bot ask` two hours after the job died (its log untouched since, stall_after 10 min,
// no engines to say otherwise) read the last progress line as the job's pace: "No, it's moving. 0.74 items/s",
// "ETA 9 h 20 min". It must say the job is stalled since the log last changed; a log written now is moving.
func TestStaleLogIsStalled(t *testing.T) {
	dir := setEnv(t)
	logPath := filepath.Join(dir, "gen.log")
	if err := os.WriteFile(logPath, []byte("Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "runs:\n  - name: synth\n    log: " + logPath + "\n    watch: [" + dir + "]\n    stall_after: 10m\n"
	if err := os.WriteFile(filepath.Join(dir, "runwatch.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	died := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(logPath, died, died); err != nil {
		t.Fatal(err)
	}
	code, out, errb := run(t, "", "ask", "is it stuck?")
	if code != 0 || !strings.Contains(out, "Stalled since") || !strings.Contains(out, "the job log has not changed since then") || strings.Contains(out, "moving") {
		t.Errorf("is it stuck? with the log untouched for 2 h = %d:\n%s%s\nwant a stall since the log last changed", code, out, errb)
	}
	code, out, _ = run(t, "", "ask", "--json", "ETA?")
	var ans struct {
		ETA struct {
			State string `json:"state"`
		} `json:"eta"`
	}
	if err := json.Unmarshal([]byte(out), &ans); err != nil || code != 0 || ans.ETA.State != "stalled" {
		t.Errorf("ETA? --json with the log untouched for 2 h: state %q (exit %d, %v); want stalled", ans.ETA.State, code, err)
	}
	now := time.Now()
	if err := os.Chtimes(logPath, now, now); err != nil {
		t.Fatal(err)
	}
	if _, out, _ = run(t, "", "ask", "is it stuck?"); !strings.Contains(out, "moving") {
		t.Errorf("is it stuck? with the log written now:\n%s\nwant it moving", out)
	}
}
