package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// load writes a run file and loads it the way every command does.
func load(t *testing.T, yaml string) (*File, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "runwatch.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(p, env(nil))
}

// TestRunFileCountBounds loads run files whose counts are past any real job or model: each is refused at
// load naming the key and its line, and says the value is too large and what the bound is. Before the
// bounds, total: 9223372036854775807 answered "300 / -9,223,372,036,854,775,808 done" and a plan of 10^8
// layers × 10^8 × 10^30 tokens "40000000000000000 QB".
func TestRunFileCountBounds(t *testing.T) {
	run := func(lines ...string) string {
		return "runs:\n  - name: a\n    outputs: [/x]\n" + strings.Join(lines, "\n") + "\n"
	}
	plan := func(fields string) string {
		return run("    plans:", "      - {name: p, target: /d, "+fields+"}")
	}
	tests := []struct {
		name, yaml string
		want, also string
	}{
		{"total past int64's reach", run("    total: 99999999999999999999999999"),
			"line 4: runs[0].total: 99999999999999999999999999 is too large (at most 1,000,000,000,000 items)", ""},
		{"total math.MaxInt64", run("    total: 9223372036854775807"),
			"line 4: runs[0].total: 9223372036854775807 is too large (at most 1,000,000,000,000 items)", ""},
		{"total 1e13", run("    total: 1e13"), "line 4: runs[0].total: 1e13 is too large", ""},
		{"total hugely negative", run("    total: -99999999999999999999999999"), "line 4: runs[0].total", "must not be negative"},
		{"total 0", run("    total: 0"), "line 4: runs[0].total: 0 is not a number of items", "leave total out"},
		{"max_tokens", run("    max_tokens: 1_000_000_000"), "line 4: runs[0].max_tokens: 1_000_000_000 is too large (at most 100,000,000 tokens)", ""},
		{"num_layers", plan("tokens: 25M, num_layers: 100000000, hidden_size: 7168, dtype: bf16"),
			"line 5: runs[0].plans[0].num_layers: 100000000 is too large (at most 10,000 layers)", ""},
		{"num_layers past int64", plan("tokens: 25M, num_layers: 99999999999999999999, hidden_size: 7168, dtype: bf16"),
			"line 5: runs[0].plans[0].num_layers: 99999999999999999999 is too large (at most 10,000 layers)", ""},
		{"hidden_size", plan("tokens: 25M, num_layers: 61, hidden_size: 100000000, dtype: bf16"),
			"line 5: runs[0].plans[0].hidden_size: 100000000 is too large (at most 1,000,000)", ""},
		{"tokens", plan("tokens: 1e30, num_layers: 61, hidden_size: 7168, dtype: bf16"),
			"line 5: runs[0].plans[0].tokens: 1e+30 is too large (at most 1,000,000,000,000,000 tokens)", ""},
		{"layer index", plan("tokens: 25M, layers: [2, 100000], model_config: /m/config.json"),
			"line 5: runs[0].plans[0].layers: index 100000 is out of range", "10,000 layers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.yaml)
			if err == nil {
				t.Fatalf("Load(%q) = nil; want %q", tt.yaml, tt.want)
			}
			msg := err.Error()[strings.Index(err.Error(), "line "):]
			if !strings.HasPrefix(msg, tt.want) || !strings.Contains(msg, tt.also) {
				t.Errorf("Load(%q) = %q; want it to start with %q and say %q", tt.yaml, err, tt.want, tt.also)
			}
			if strings.Contains(msg, "not a whole number") {
				t.Errorf("Load(%q) = %q; a whole number too large is not %q", tt.yaml, err, "not a whole number")
			}
		})
	}
	// At the bounds, the files load.
	f, err := load(t, run("    total: 1_000_000_000_000", "    max_tokens: 100000000", "    plans:",
		"      - {name: p, target: /d, tokens: 1e15, layers: [9999], num_layers: 10000, hidden_size: 1000000, dtype: float64}"))
	if err != nil {
		t.Fatalf("Load(a run file at the bounds) = %v; want it to load", err)
	}
	if r := f.Runs[0]; r.Total != 1e12 || r.MaxTokens != 1e8 || r.Plans[0].NumLayers != 1e4 || r.Plans[0].Tokens.N != 1e15 {
		t.Errorf("run at the bounds = %+v", r)
	}
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
