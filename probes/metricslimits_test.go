package probes

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestMetricsSeriesLimits(t *testing.T) {
	labels := func(n int, value string) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf("l%d=%q", i, value))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	tests := []struct {
		name, body string
		refused    bool
	}{
		{"128 labels", "vllm:num_requests_running" + labels(128, "v") + " 1\n", false},
		{"129 labels", "vllm:num_requests_running" + labels(129, "v") + " 1\n", true},
		{"= and } inside values do not count", `vllm:num_requests_running{a="x=y}",b="\"=\""} 1` + "\n", false},
		{"a 64 KiB line", "# HELP x " + strings.Repeat("a", MetricsMaxLineBytes) + "\n", true},
		{"a long line in an unread family", "# HELP x y\nnode_thing{a=\"" + strings.Repeat("a", MetricsMaxLineBytes) + "\"} 1\n", true},
		{"many labels in an unread family are not parsed, so not refused", strings.Repeat("# c\n", 20) + "node_thing" + labels(500, "v") + " 1\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMetrics(strings.NewReader(tt.body))
			if got := errors.Is(err, ErrAbsurdSeries); got != tt.refused {
				t.Errorf("ParseMetrics(%.60q…) = %v; want refused %v", tt.body, err, tt.refused)
			}
		})
	}
}
