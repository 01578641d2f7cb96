package tty

import (
	"bytes"
	"testing"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text\twith tab\n", "plain text\twith tab\n"},
		{"(!!) Yes\r\x1b[K(ok) No", "(!!) Yes(ok) No"},
		{"\x1b[2Jcleared", "cleared"},
		{"\x1b]52;c;ZXZpbA==\x07clipboard", "clipboard"},
		{"\x1b]0;title\x1b\\after", "after"},
		{"\x1bPq#0;2;0;0;0\x1b\\sixel", "sixel"},
		{"\x1b[38;5;196mred\x1b[0m", "red"},
		{"bell\x07 and del\x7f", "bell and del"},
		{"c1 \u009b31mcsi", "c1 csi"},
		{"trailing \x1b", "trailing "},
		{"unicode ✓ stays — “quoted”", "unicode ✓ stays — “quoted”"},
	}
	for _, tt := range tests {
		if got := Clean(tt.in); got != tt.want {
			t.Errorf("Clean(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
	var b bytes.Buffer
	n, err := Writer(&b).Write([]byte("a\x1b[2Jb\n"))
	if err != nil || n != 7 || b.String() != "ab\n" {
		t.Errorf("Writer wrote %q (n %d, err %v); want \"ab\\n\" reported as the 7 bytes written to it", b.String(), n, err)
	}
}
