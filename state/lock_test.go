package state

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLockHelper is not a test: run by TestLockHeldByAnotherProcess, it takes the lock and waits
// for its standard input to close.
func TestLockHelper(t *testing.T) {
	dir := os.Getenv("RUNWATCH_LOCK_HELPER")
	if dir == "" {
		t.Skip("helper process for TestLockHeldByAnotherProcess")
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lock(); err != nil {
		t.Fatal(err)
	}
	fmt.Println("locked")
	var b [1]byte
	os.Stdin.Read(b[:])
}

// A directory another process holds is refused with its pid; when that process dies (kill -9
// included) the directory is free again.
func TestLockHeldByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelper$")
	cmd.Env = append(os.Environ(), "RUNWATCH_LOCK_HELPER="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var b [6]byte
	if _, err := out.Read(b[:]); err != nil || string(b[:]) != "locked" {
		t.Fatalf("helper said %q, %v; want locked", b, err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Lock()
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Fatalf("Lock with another process holding it = %v; want ErrLocked naming pid %d", err, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := d.Lock()
	if err != nil {
		t.Fatalf("Lock after the holder was killed = %v; want it free", err)
	}
	l.Release()
}
