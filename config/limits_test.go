package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunFileLimits is the red team's finding 8: a 60 MB channel value and 1,000 runs were
// accepted (a status then took 8.2 s and 1.2 GB). Load refuses them at once, naming key and line.
func TestRunFileLimits(t *testing.T) {
	var many strings.Builder
	many.WriteString("runs:\n")
	for i := range 1000 {
		fmt.Fprintf(&many, "  - name: r%d\n", i)
	}
	manyItems := "runs:\n  - name: a\n    metrics:\n" + strings.Repeat("      - http://h/metrics\n", 101)
	dir := t.TempDir()
	tests := []struct {
		name, yaml string
		env        map[string]string
		want       []string
	}{
		{"a 60 MB channel in the file", "runs:\n  - name: a\n    channel: " + strings.Repeat("x", 60<<20) + "\n", nil, []string{"limit of 1048576 bytes"}},
		{"a 60 MB channel through ${VAR}", "runs:\n  - name: a\n    channel: ${CH}\n", map[string]string{"CH": strings.Repeat("x", 60<<20)}, []string{"line 3", "runs[0].channel", "62914560 bytes", "limit for one value is 4096"}},
		{"1,000 runs", many.String(), nil, []string{"line 2", "runs lists 1000 runs", "limit is 100", "line 102"}},
		{"101 metrics endpoints", manyItems, nil, []string{"line 4", "runs[0].metrics lists 101 items", "limit is 100"}},
		{"metrics_max_body too small", "runs:\n  - name: a\n    metrics_max_body: 1KiB\n", nil, []string{"line 3", "metrics_max_body", "64KiB..256MiB"}},
		{"metrics_max_body not a size", "runs:\n  - name: a\n    metrics_max_body: lots\n", nil, []string{"line 3", "not a size"}},
		{"unquoted ${VAR} in a flow list", "runs:\n  - name: a\n    channel: '#a'\n\n    outputs: [${T}/out]\n", map[string]string{"T": "/data"}, []string{"line 5:", "quote values that start with ${"}},
		{"unquoted ${VAR} after a comma", "runs:\n  - name: a\n    watch: [/x, ${T}/y]\n", map[string]string{"T": "/data"}, []string{"line 3:", "quote values that start with ${"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, "runwatch.yaml")
			if err := os.WriteFile(p, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := Load(p, env(tt.env))
			if err == nil {
				t.Fatalf("Load(%s) = nil error; want one mentioning %q", tt.name, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load(%s) = %.300v; want it to mention %q", tt.name, err, w)
				}
			}
			if len(err.Error()) > 500 {
				t.Errorf("Load(%s) error is %d bytes; want it short, not the value", tt.name, len(err.Error()))
			}
			t.Logf("figure: %s: refused in %v: %.200s", tt.name, time.Since(start).Round(time.Millisecond), err)
		})
	}
	f, err := Parse([]byte("runs:\n  - name: a\n    metrics: ['http://h/m']\n    metrics_max_body: 16MiB\n"), env(nil))
	if err != nil || f.Runs[0].MetricsMaxBody != 16<<20 {
		t.Errorf("metrics_max_body: 16MiB = %v, %v; want 16777216", f, err)
	}
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
