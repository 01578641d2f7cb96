package format

import (
	"math"
	"testing"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

func TestCount(t *testing.T) {
	tests := []struct {
		n    float64
		want string
	}{
		{0, "0"},
		{25000, "25,000"},
		{-1234.4, "-1,234"},
		{math.NaN(), "?"},
		{math.Inf(1), "?"},
		// A total of math.MaxInt64 converts to 2^63 as a float; int64(2^63) wraps to the most negative int64.
		{float64(math.MaxInt64), "9,223,372,036,854,776,000"},
		{-float64(math.MaxInt64), "-9,223,372,036,854,776,000"},
		{1e26, "100,000,000,000,000,000,000,000,000"},
	}
	for _, tt := range tests {
		if got := Count(tt.n); got != tt.want {
			t.Errorf("Count(%v) = %q; want %q", tt.n, got, tt.want)
		}
	}
}

func TestBytes(t *testing.T) {
	tests := []struct {
		n    float64
		want string
	}{
		{512, "512 B"},
		{21.9e12, "21.9 TB"},
		{1.08e12, "1.08 TB"},
		{3.58e22, "35.8 ZB"},
		{8e25, "80.0 YB"},
		{1e30, "1.00 QB"},
		{999e30, "999 QB"},
		// Past the largest prefix the count of Q gets separators, not 17 digits run together.
		{4e46, "40,000,000,000,000,000 QB"},
		{-4e33, "-4,000 QB"},
		{math.Inf(1), "?"},
	}
	for _, tt := range tests {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%v) = %q; want %q", tt.n, got, tt.want)
		}
	}
}

func TestTokens(t *testing.T) {
	tests := []struct {
		n    float64
		want string
	}{
		{9999, "9,999"},
		{565e3, "565K"},
		{25e6, "25M"},
		{1.08e9, "1.08B"},
		{15e12, "15T"},
		{999e12, "999T"},
		{1e15, "1,000T"},
		{1e30, "1,000,000,000,000,000,000T"},
	}
	for _, tt := range tests {
		if got := Tokens(tt.n); got != tt.want {
			t.Errorf("Tokens(%v) = %q; want %q", tt.n, got, tt.want)
		}
	}
}

// TestTokensRange: a plan's projection read "29M-41.3M tokens" and "23M-25.1M tokens", one end said to fewer
// places than the other.
func TestTokensRange(t *testing.T) {
	tests := []struct {
		low, high float64
		want      string
	}{
		{29.0e6, 41.3e6, "29.0M-41.3M"},
		{23.0e6, 25.1e6, "23.0M-25.1M"},
		{28.4e6, 33.1e6, "28.4M-33.1M"},
		{25e6, 30e6, "25M-30M"},
		{9.5e3 * 1000, 12.3e6, "9.5M-12.3M"},
		{1.08e9, 1.25e9, "1.08B-1.25B"},
		{950e3, 1.2e6, "950K-1.2M"},
		{5000, 12000, "5,000-12K"},
	}
	for _, tt := range tests {
		if got := TokensRange(tt.low, tt.high); got != tt.want {
			t.Errorf("TokensRange(%v, %v) = %q; want %q", tt.low, tt.high, got, tt.want)
		}
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		s    float64
		want string
	}{
		{45, "45 s"},
		{0, "0 s"}, {0.3, "under 1 s"}, {0.6, "1 s"}, {-0.3, "0 s"}, {-45, "-45 s"},
		{12 * 60, "12 min"},
		{3*3600 + 600, "3 h 10 min"},
		{52 * 3600, "2 d 4 h"},
		{999 * 86400, "999 d"},
		{1000 * 86400, "1,000 d"},
		// More hours than an int holds: int(hours) wrapped to a negative number of days.
		{3599, "1 h"},
		{1e30, "11,574,074,074,074,075,000,000,000 d"},
	}
	for _, tt := range tests {
		if got := Duration(tt.s); got != tt.want {
			t.Errorf("Duration(%v) = %q; want %q", tt.s, got, tt.want)
		}
	}
}

func TestRange(t *testing.T) {
	for _, c := range []struct {
		sec, low, high float64
		want           string
	}{
		{13000, 9060, 17040, " (2 h 31 min – 4 h 44 min)"},
		{10800, 10790, 21780, " (or later, up to 6 h 3 min)"},
		{4800, 2940, 4810, " (or sooner, down to 49 min)"},
		{600, 595, 605, ""},
		{12120, 11880, 24360, " (or later, up to 6 h 46 min)"}, // 3 h 22 min (3 h 18 min): 2% below
		{12120, 11870, 24360, " (3 h 18 min – 6 h 46 min)"},
	} {
		if got := Range(c.sec, c.low, c.high); got != c.want {
			t.Errorf("Range(%v, %v, %v) = %q, want %q", c.sec, c.low, c.high, got, c.want)
		}
	}
}

func TestSpan(t *testing.T) {
	tests := []struct {
		s    float64
		want string
	}{
		{45, "45 s"},
		{408, "6 min 48 s"},
		{120, "2 min"},
		// A window a hair short of a whole minute (a sampler's 60 s interval measured as 119.6 s) is that
		// minute, not the minute before it with its seconds dropped.
		{119.6, "2 min"},
		{59.6, "1 min"},
		{3599.6, "1 h"},
		{3*3600 + 600, "3 h 10 min"},
	}
	for _, tt := range tests {
		if got := Span(tt.s); got != tt.want {
			t.Errorf("Span(%v) = %q; want %q", tt.s, got, tt.want)
		}
	}
}
