package peersim

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

func TestUnpack(t *testing.T) {
	want := bytes.Repeat([]byte("#!/bin/sh\necho simulator\n"), 1000)
	gz := filepath.Join(t.TempDir(), "sim.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(want)
	zw.Close()
	if err := os.WriteFile(gz, buf.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path string }{{"gzip(1)", os.Getenv("PATH")}, {"compress/gzip", ""}} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("PATH", c.path)
			bin, err := Unpack(gz, t.TempDir())
			if err != nil {
				t.Fatalf("Unpack: %v", err)
			}
			got, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := os.Stat(bin)
			if !bytes.Equal(got, want) || fi.Mode().Perm()&0o100 == 0 {
				t.Errorf("Unpack wrote %d bytes, mode %v; want %d bytes, executable", len(got), fi.Mode(), len(want))
			}
		})
	}
	if _, err := Unpack(filepath.Join(t.TempDir(), "missing.gz"), t.TempDir()); err == nil {
		t.Error("Unpack(missing file) succeeded; want an error")
	}
}

// TestFind: the simulator beside the clone (CI: ../shared/) and beside a worktree's parent are both found,
// from anywhere inside the repository.
func TestFind(t *testing.T) {
	top := t.TempDir()
	gz := filepath.Join(top, Rel)
	os.MkdirAll(filepath.Dir(gz), 0o755)
	os.WriteFile(gz, []byte("x"), 0o644)
	for _, repo := range []string{filepath.Join(top, "runwatch"), filepath.Join(top, "wt", "discover")} {
		pkg := filepath.Join(repo, "cmd", "bot")
		os.MkdirAll(pkg, 0o755)
		if got, err := Find(pkg); err != nil || got != gz {
			t.Errorf("Find(%s) = %q, %v; want %s", pkg, got, err, gz)
		}
	}
	if _, err := Find(t.TempDir()); err == nil {
		t.Error("Find(a directory with no simulator above it) succeeded; want an error")
	}
}
