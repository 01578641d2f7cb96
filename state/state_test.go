package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"runwatch/internal/tmpfs"
)

type doc struct {
	Points []int          `json:"points"`
	Names  map[string]int `json:"names"`
}

func TestSaveLoadRoundTrip(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	want := doc{Points: []int{1, 2, 3}, Names: map[string]int{"a": 1}}
	if err := d.Save("run-a.json", want); err != nil {
		t.Fatal(err)
	}
	var got doc
	if err := d.Load("run-a.json", &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Points) != 3 || got.Names["a"] != 1 {
		t.Errorf("Load = %+v; want %+v", got, want)
	}
	// No temporary files are left behind.
	ents, _ := os.ReadDir(d.Path())
	if len(ents) != 1 {
		t.Errorf("state dir holds %d entries; want only run-a.json", len(ents))
	}
}

func TestLoadMissing(t *testing.T) {
	d, _ := Open(t.TempDir())
	var v doc
	if err := d.Load("nothing.json", &v); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v; want fs.ErrNotExist", err)
	}
}

func TestCorruptFileIsSetAsideNotLost(t *testing.T) {
	d, _ := Open(t.TempDir())
	bad := []byte(`{"points": [1, 2,`)
	os.WriteFile(filepath.Join(d.Path(), "run-a.json"), bad, 0o600)
	var v doc
	err := d.Load("run-a.json", &v)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load(corrupt) = %v; want ErrCorrupt", err)
	}
	if !strings.Contains(err.Error(), "kept as") {
		t.Errorf("error %q does not say where the file went", err)
	}
	matches, _ := filepath.Glob(filepath.Join(d.Path(), "run-a.json.corrupt-*"))
	if len(matches) != 1 {
		t.Fatalf("corrupt copies = %v; want one", matches)
	}
	if b, _ := os.ReadFile(matches[0]); string(b) != string(bad) {
		t.Errorf("corrupt copy = %q; want the original bytes", b)
	}
	// A fresh save works afterwards.
	if err := d.Save("run-a.json", doc{Points: []int{9}}); err != nil {
		t.Fatal(err)
	}
}

func TestSaveFailsCleanlyOnReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		// root ignores directory permissions; use a path that cannot be a directory instead.
		d := &Dir{path: filepath.Join(t.TempDir(), "file")}
		os.WriteFile(d.path, []byte("x"), 0o600)
		if err := d.Save("a.json", doc{}); err == nil {
			t.Fatal("Save into a non-directory = nil; want an error")
		}
		return
	}
	dir := t.TempDir()
	d, _ := Open(dir)
	d.Save("a.json", doc{Points: []int{1}})
	os.Chmod(dir, 0o500)
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	if err := d.Save("a.json", doc{Points: []int{2}}); err == nil {
		t.Fatal("Save on a read-only dir = nil; want an error")
	}
	var v doc
	if err := d.Load("a.json", &v); err != nil || v.Points[0] != 1 {
		t.Errorf("after a failed save Load = %+v, %v; want the old content", v, err)
	}
}

func TestNamesAreConfined(t *testing.T) {
	d, _ := Open(t.TempDir())
	for _, name := range []string{"../escape.json", "a/b.json", "", ".hidden"} {
		if err := d.Save(name, doc{}); err == nil {
			t.Errorf("Save(%q) = nil; want a refusal", name)
		}
	}
}

// TestOpenTightensTheDirectory: a state directory other users can read or write (0777, made by hand or by an
// older runwatch) is made the bot user's alone (0700), and Open says it did; a new one is 0700 from the start.
func TestOpenTightensTheDirectory(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "new")
	d, err := Open(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(fresh); info.Mode().Perm() != 0o700 || d.Tightened != 0 {
		t.Errorf("new state dir mode %04o, tightened %04o; want 0700, not tightened", info.Mode().Perm(), d.Tightened)
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777) // past the umask
	d, err = Open(open)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(open); info.Mode().Perm() != 0o700 || d.Tightened != 0o777 {
		t.Errorf("0777 state dir after Open: mode %04o, tightened %04o; want 0700, tightened from 0777", info.Mode().Perm(), d.Tightened)
	}
}

// TestOpenRefusesADirectoryItCannotTighten: on a read-only filesystem, a state directory open to others
// cannot be tightened: Open refuses it, saying what to do.
func TestOpenRefusesADirectoryItCannotTighten(t *testing.T) {
	mnt := tmpfs.Mount(t, "64k")
	dir := filepath.Join(mnt, "state")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	tmpfs.Remount(t, mnt, "ro")
	_, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), "mode 0777") || !strings.Contains(err.Error(), "chmod 700") {
		t.Errorf("Open(0777 dir on a read-only filesystem) = %v; want a refusal naming the mode and the fix", err)
	}
}
