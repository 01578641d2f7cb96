// Package goldenfile compares a test's output with a file in testdata/, or rewrites the file when the
// package's -update flag is set. It imports nothing of runwatch, so the tests of every package use it,
// reports' own included.
package goldenfile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Text compares got with the golden file at path (testdata/…), or writes it there when update is
// set (each package's -update flag).
func Text(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (-update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// JSON is Text for JSON (Block Kit), compared after unmarshalling so that formatting does not
// matter.
func JSON(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		Text(t, path, append(got, '\n'), true)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("golden %s: %v", path, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s differs from the golden file (-update rewrites it):\n--- got\n%s", path, strings.TrimSpace(string(got)))
	}
}
