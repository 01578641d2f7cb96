package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// ProcView is a /proc that shows only the given processes (links to their real /proc entries) and this
// machine's mount table: what a test inspects is its own processes, whatever else runs on the machine
// (PyTorch DataLoader workers and NCCL writing to /dev/shm, other users' jobs) and whatever the test's
// user may not read. Its diskstats is empty: the machine's disk counters move with everyone's writes.
// A process that exits leaves a dangling link, which a scan reads as a process gone.
func ProcView(t testing.TB, pids ...int) string {
	t.Helper()
	root := t.TempDir()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	// self is a link to a pid directory, as in a real /proc; that process has exited (no fd/).
	if err := os.MkdirAll(filepath.Join(root, "4242"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("4242", filepath.Join(root, "self")); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"4242/mountinfo": mi, "diskstats": nil} {
		if err := os.WriteFile(filepath.Join(root, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, pid := range pids {
		if err := os.Symlink(fmt.Sprintf("/proc/%d", pid), filepath.Join(root, fmt.Sprint(pid))); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
