package spell

import (
	"testing"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"total", "total", 0},
		{"totl", "total", 1},
		{"statsu", "status", 1},
		{"sapce", "space", 1},
		{"ab", "ba", 1},
		{"ca", "abc", 3},
		{"", "eta", 3},
		{"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d; want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestNear(t *testing.T) {
	tests := []struct {
		word, known string
		want        bool
	}{
		{"etaa", "eta", true},
		{"data", "eta", false},
		{"statsu", "status", true},
		{"thruput", "throughput", false}, // three edits: past the bound for any word
		{"throughpt", "throughput", true},
		{"num_layer", "num_layers", true},
		{"plans", "name", false},
		{"sapce", "space", true},
	}
	for _, tt := range tests {
		if got := Near(tt.word, tt.known); got != tt.want {
			t.Errorf("Near(%q, %q) = %v; want %v", tt.word, tt.known, got, tt.want)
		}
	}
}
