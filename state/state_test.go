package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// stateEntries lists a directory's names.
func stateEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestSaveOnFullDisk(t *testing.T) {
	dir := tmpfs.Mount(t, "64k")
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	small := doc{Points: []int{1, 2, 3}}
	if err := d.Save("run-a.json", small); err != nil {
		t.Fatal(err)
	}
	big := doc{Points: make([]int, 40000)} // about 80 KB of JSON: more than the disk holds
	err = d.Save("run-a.json", big)
	if !errors.Is(err, syscall.ENOSPC) || !strings.HasPrefix(err.Error(), "save state run-a.json: ") {
		t.Fatalf("Save(80 KB) on a 64 KiB disk = %v; want ENOSPC naming the file", err)
	}
	// The old file is whole and no temporary file is left to take the space.
	var got doc
	if err := d.Load("run-a.json", &got); err != nil || len(got.Points) != 3 {
		t.Errorf("Load after the failed save = %+v, %v; want the old three points", got, err)
	}
	if names := stateEntries(t, dir); len(names) != 1 {
		t.Errorf("state dir after the failed save = %v; want only run-a.json", names)
	}
	// When space comes back, the same save works.
	big.Points = big.Points[:8000]
	if err := d.Save("run-a.json", big); err != nil {
		t.Fatalf("Save(16 KB) once it fits = %v", err)
	}
	if err := d.Load("run-a.json", &got); err != nil || len(got.Points) != 8000 {
		t.Errorf("Load after recovery = %d points, %v; want 8000", len(got.Points), err)
	}
	t.Logf("figure: 64 KiB tmpfs full: save fails with ENOSPC naming the file, the old file whole, no temporary file left; the next save that fits works")
}

func TestSaveOnReadOnlyMount(t *testing.T) {
	dir := tmpfs.Mount(t, "64k")
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Save("run-a.json", doc{Points: []int{1}}); err != nil {
		t.Fatal(err)
	}
	tmpfs.Remount(t, dir, "ro")
	err = d.Save("run-a.json", doc{Points: []int{2}})
	if !errors.Is(err, syscall.EROFS) {
		t.Fatalf("Save on a read-only mount = %v; want EROFS", err)
	}
	var got doc
	if err := d.Load("run-a.json", &got); err != nil || got.Points[0] != 1 {
		t.Errorf("Load on the read-only mount = %+v, %v; want the saved point 1", got, err)
	}
	tmpfs.Remount(t, dir, "rw")
	if err := d.Save("run-a.json", doc{Points: []int{3}}); err != nil {
		t.Fatalf("Save after remounting read-write = %v", err)
	}
	if err := d.Load("run-a.json", &got); err != nil || got.Points[0] != 3 {
		t.Errorf("Load after recovery = %+v, %v; want point 3", got, err)
	}
	t.Logf("figure: tmpfs remounted read-only: save fails with EROFS, the saved file still loads; saves work again after remount rw")
}

func TestUnreadableFileIsSetAsideNotLost(t *testing.T) {
	tests := []struct {
		name  string
		make  func(t *testing.T, p string)
		cause string
	}{
		{"a directory in its place", func(t *testing.T, p string) {
			if err := os.MkdirAll(filepath.Join(p, "inner"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "is a directory"},
		{"no read permission", func(t *testing.T, p string) {
			if os.Geteuid() == 0 {
				t.Skip("root reads files regardless of their mode; the directory case covers the same path")
			}
			if err := os.WriteFile(p, []byte(`{"points":[7]}`), 0); err != nil {
				t.Fatal(err)
			}
		}, "permission denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := Open(t.TempDir())
			p := filepath.Join(d.Path(), "run-a.json")
			tc.make(t, p)
			var v doc
			err := d.Load("run-a.json", &v)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.cause) || !strings.Contains(err.Error(), "kept as "+p+".unreadable-") {
				t.Fatalf("Load(unreadable) = %v; want ErrCorrupt saying %q and where the file went", err, tc.cause)
			}
			aside, _ := filepath.Glob(p + ".unreadable-*")
			if len(aside) != 1 {
				t.Fatalf("files set aside = %v; want one", aside)
			}
			// The next save starts afresh without replacing what was set aside.
			if err := d.Save("run-a.json", doc{Points: []int{9}}); err != nil {
				t.Fatalf("Save after setting aside = %v", err)
			}
			if _, err := os.Lstat(aside[0]); err != nil {
				t.Errorf("the file set aside is gone: %v", err)
			}
			t.Logf("figure: unreadable state file (%s): set aside as %s, not overwritten by the next save", tc.name, filepath.Base(aside[0]))
		})
	}
}

func TestCorruptTwiceKeepsBoth(t *testing.T) {
	d, _ := Open(t.TempDir())
	p := filepath.Join(d.Path(), "run-a.json")
	for _, body := range []string{"{first", "{second"} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		var v doc
		if err := d.Load("run-a.json", &v); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Load(%q) = %v; want ErrCorrupt", body, err)
		}
	}
	aside, _ := filepath.Glob(p + ".corrupt-*")
	if len(aside) != 2 {
		t.Fatalf("corrupt copies = %v; want both kept (two files set aside within a second must not replace each other)", aside)
	}
	seen := map[string]bool{}
	for _, a := range aside {
		b, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		seen[string(b)] = true
	}
	if !seen["{first"] || !seen["{second"] {
		t.Errorf("corrupt copies hold %v; want both originals", seen)
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(%s) = %v; want it moved aside", p, err)
	}
	t.Logf("figure: two corrupt files within a second: both kept, as %s and %s", filepath.Base(aside[0]), filepath.Base(aside[1]))
}

func TestOpenRemovesTempFilesLeftByACrash(t *testing.T) {
	root := t.TempDir()
	stale := filepath.Join(root, ".run-a.json.tmp-1234")
	fresh := filepath.Join(root, ".run-a.json.tmp-5678")
	kept := filepath.Join(root, "run-a.json")
	for _, p := range []string{stale, fresh, kept} {
		if err := os.WriteFile(p, []byte(`{"points":[1]}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleTemp)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(kept, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(stateEntries(t, root), " ")
	if want := ".run-a.json.tmp-5678 run-a.json"; got != want {
		t.Errorf("after Open the state dir holds %q; want %q (a save in progress and the state kept, the crash's leftover gone)", got, want)
	}
	t.Logf("figure: temporary file left by a kill mid-save: removed at the next start once a minute old; a save in progress untouched")
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
