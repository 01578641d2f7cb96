// Package loopfs mounts a small ext4 filesystem on a loop device for tests that need a mount with a
// block device of its own, whose /proc/diskstats counters are that filesystem's writes alone (the
// device-level evidence of "are we writing to /shared?"). It owns nothing else.
package loopfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Mount makes an ext4 filesystem of size (truncate's syntax: "16M") in a file, attaches it to a free loop
// device, mounts it on a fresh temporary directory (mode 0755) and undoes all three when the test ends.
// It returns the mount point and the device (/dev/loopN). Inode tables and the journal are initialised at
// once, so the kernel does not write to the device in the background after the mount. It skips the test
// when this is not allowed (not root, no loop devices).
func Mount(t testing.TB, size string) (dir, device string) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "fs.img")
	run := func(name string, args ...string) (string, error) {
		out, err := exec.Command(name, args...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run("truncate", "-s", size, img); err != nil {
		t.Fatalf("truncate %s: %v: %s", img, err, out)
	}
	if out, err := run("mkfs.ext4", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", img); err != nil {
		t.Skipf("a filesystem on its own device needs mkfs.ext4: %v: %s", err, out)
	}
	device, err := run("losetup", "--find", "--show", img)
	if err != nil {
		t.Skipf("a filesystem on its own device needs a loop device (root): %v: %s", err, device)
	}
	t.Cleanup(func() {
		if out, err := run("losetup", "-d", device); err != nil {
			t.Errorf("losetup -d %s: %v: %s", device, err, out)
		}
	})
	dir = t.TempDir()
	if out, err := run("mount", "-t", "ext4", device, dir); err != nil {
		t.Skipf("mount %s needs mount privileges: %v: %s", device, err, out)
	}
	t.Cleanup(func() {
		if out, err := run("umount", dir); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, device
}
