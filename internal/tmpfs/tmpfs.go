// Package tmpfs mounts small tmpfs filesystems for tests that need a disk that is really full or
// really read-only (the state directory's fault tests). It owns nothing else.
package tmpfs

import (
	"os/exec"
	"strings"
	"testing"
)

// Mount mounts a tmpfs of size (mount's syntax: "64k") on a fresh temporary directory and
// unmounts it when the test ends. It skips the test when mounting is not allowed (not root, or no
// CAP_SYS_ADMIN): no other way gives a filesystem that is really full.
func Mount(t testing.TB, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a small tmpfs needs mount privileges (root with CAP_SYS_ADMIN): %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Remount remounts dir with how ("ro" or "rw").
func Remount(t testing.TB, dir, how string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,"+how, dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s %s: %v: %s", dir, how, err, out)
	}
}
