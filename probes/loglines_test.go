package probes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestSplitLastLines(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		partial bool
		n, max  int
		want    []string
	}{
		{"last two", "a\nb\nc\n", false, 2, 0, []string{"b", "c"}},
		{"fewer than asked", "only\n", false, 5, 0, []string{"only"}},
		{"partial head dropped", "tail of a line\nfull\n", true, 5, 0, []string{"full"}},
		{"tqdm redraws", "10%|#  \r20%|## \r30%|###\n", false, 3, 0, []string{"30%|###"}},
		{"cut on a character", "ééééé\n", false, 1, 5, []string{"éé…"}},
		{"invalid UTF-8", "a\xffb\n", false, 1, 0, []string{"a\uFFFDb"}},
		{"empty", "\n\n", false, 3, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := splitLastLines([]byte(tt.in), tt.partial, tt.n, tt.max); !slices.Equal(got, tt.want) {
				t.Errorf("splitLastLines(%q) = %q; want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestLastLinesReadsOnlyTheEnd(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.log")
	var b strings.Builder
	for i := range 20000 {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString("\n")
	}
	b.WriteString("Progress: 9/10 (0 errors)\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := NewGuard().LastLines(context.Background(), path, 3, 300)
	if err != nil || len(got) != 3 || got[2] != "Progress: 9/10 (0 errors)" {
		t.Fatalf("LastLines = %q, %v; want 3 lines ending with the progress line", got, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if _, err := NewGuard().LastLines(context.Background(), fifo, 3, 300); !errors.Is(err, ErrNotRegular) {
		t.Errorf("LastLines(fifo) = %v; want ErrNotRegular", err)
	}
}
