package main

import (
	"strings"
	"testing"
)

// The demo starts where questions have answers: a one-shot ask finds progress and an estimate, and the
// README's own examples name paths the demo has.
func TestAskDemoAnswers(t *testing.T) {
	setEnv(t)
	tests := []struct {
		q, want string
	}{
		{"ETA?", "done around"},
		// The output symlinked into shared, nothing writing there yet: (!) in every answer that says so.
		{"are we writing to /shared?", "(!) Not yet — no writes seen"},
		{"where does the output go?", "(!) 1 output lands on a protected mount"},
		{"storage", "Storage: (!) 1 output resolves inside protected"},
		{"how much space is left on /data?", "free of"},
		{"is shared safe?", "(!) Not yet, but"},
		{"will the hidden states fit?", "all-layers"},
	}
	for _, tt := range tests {
		code, out, errb := run(t, "", "ask", "--demo", tt.q)
		if code != 0 || !strings.Contains(out, tt.want) || strings.Contains(out, "too early") || strings.Contains(out, "isn't one of them") {
			t.Errorf("ask --demo %q = %d %q %s; want an answer with %q", tt.q, code, out, errb, tt.want)
		}
	}
}
