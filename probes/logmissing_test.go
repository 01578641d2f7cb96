package probes

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestNearestName(t *testing.T) {
	tests := []struct {
		want  string
		names []string
		near  string
	}{
		{"generat.log", []string{"prompts.jsonl", "generate.log", "out"}, "generate.log"},
		{"genrate.log", []string{"generate.log"}, "generate.log"},
		{"gen.log", []string{"gen.log.1", "gen.lg"}, "gen.lg"},             // the closest wins
		{"run-02.log", []string{"run-03.log", "run-01.log"}, "run-01.log"}, // a tie: the first sorted
		{"generate.log", []string{"prompts.jsonl", "model.safetensors"}, ""},
		{"a.log", []string{"b.txt"}, ""},
		{"x.log", nil, ""},
	}
	for _, tt := range tests {
		if got := nearestName(tt.want, tt.names); got != tt.near {
			t.Errorf("nearestName(%q, %q) = %q; want %q", tt.want, tt.names, got, tt.near)
		}
	}
}

// A log path with a typo and a log not written yet both fail to open; what is beside the path tells them apart.
func TestLogMissingSaysWhatIsBeside(t *testing.T) {
	dir := t.TempDir()
	logTestWrite(t, filepath.Join(dir, "generate.log"), []byte("Progress: 1/2\n"))
	if err := os.Mkdir(filepath.Join(dir, "generat.logs"), 0o755); err != nil { // a directory is not a log
		t.Fatal(err)
	}
	tests := []struct {
		path  string
		near  string
		noDir bool
	}{
		{filepath.Join(dir, "generat.log"), "generate.log", false},
		{filepath.Join(dir, "extract.log"), "", false},
		{filepath.Join(dir, "logs", "generate.log"), "", true},
	}
	for _, tt := range tests {
		_, err := NewLog(tt.path, nil).Read(context.Background(), LogWant{})
		var m *LogMissing
		if !errors.As(err, &m) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Read(%s) = %v; want a LogMissing wrapping fs.ErrNotExist", tt.path, err)
		}
		if m.Near != tt.near || m.NoDir != tt.noDir {
			t.Errorf("Read(%s): Near %q, NoDir %v; want %q, %v", tt.path, m.Near, m.NoDir, tt.near, tt.noDir)
		}
	}
}
