package reports

import (
	"strings"
	"testing"
)

// TestMoveBreakdownLeavesOutNoise checks that a part that barely changed (under half a percent, "+0%") gets no
// bullet, and one that changed does.
func TestMoveBreakdownLeavesOutNoise(t *testing.T) {
	sh := Shift{FromFinish: 1000, ToFinish: 4600, TokensPerItemShare: 0.98, ThroughputShare: -0.01, OtherShare: 0.03,
		From: ShiftParts{TokensPerItem: 652, TokensPerS: 1352, ItemsLeft: 22596},
		To:   ShiftParts{TokensPerItem: 903, TokensPerS: 1355, ItemsLeft: 19623}}
	got := strings.Join(moveBreakdown(sh), "\n")
	if strings.Contains(got, "throughput") || !strings.Contains(got, "completions grew 652 → 903") {
		t.Errorf("moveBreakdown = %q; want the completions and no throughput bullet (1,352 → 1,355 tok/s, +0%%)", got)
	}
	sh.To.TokensPerS = 1200
	if got := strings.Join(moveBreakdown(sh), "\n"); !strings.Contains(got, "throughput fell") {
		t.Errorf("moveBreakdown = %q; want a throughput bullet for 1,352 → 1,200 tok/s", got)
	}
}
