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
