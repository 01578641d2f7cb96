package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/loopfs"
	"runwatch/probes"
	"runwatch/reports"
)

// ordinaryAnswer is what the child, running as an ordinary user beside the job, says.
type ordinaryAnswer struct {
	Writes, Status string
	Hidden         []int
	Invisible      int
}

// TestWritesAsAnOrdinaryUserBesideTheJob: runwatch runs as an ordinary user (nobody, in a child process
// when the test is root) beside a job of the same user writing to its output on /data; /shared is a
// filesystem on a device of its own (a loop device the test makes) that nothing writes to. The scan of
// the real /proc cannot inspect root's processes, and must not count kernel threads among them; the
// device's counters over five minutes (the clock injected: two readings five minutes apart) make the
// answer a plain "No", which says where the job does write; the advice fits who runs it.
func TestWritesAsAnOrdinaryUserBesideTheJob(t *testing.T) {
	if args := os.Getenv("RUNWATCH_TEST_ORDINARY_CHILD"); args != "" {
		ordinaryChild(args)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: to make a loop device, and to run the monitor as nobody beside a job of nobody's")
	}
	base, err := os.MkdirTemp("", "runwatch-ordinary-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	shared, device := loopfs.Mount(t, "16M")
	out := filepath.Join(base, "data", "out")
	os.MkdirAll(out, 0o755)
	os.Chown(filepath.Dir(out), 65534, 65534)
	os.Chown(out, 65534, 65534)
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}

	// The job: nobody's, writing its output.
	job := exec.Command("sh", "-c", `exec 3>>"$1"; exec sleep 600`, "sh", filepath.Join(out, "part-00001.jsonl"))
	job.SysProcAttr = nobody
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Process.Kill(); job.Wait() })
	comm := fmt.Sprintf("/proc/%d/comm", job.Process.Pid)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if b, err := os.ReadFile(comm); err == nil && strings.TrimSpace(string(b)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not become sleep", comm)
		}
	}

	// runwatch: this test binary again, as nobody (who cannot reach go's build directory: a copy beside the job).
	bin := filepath.Join(base, "monitor.test")
	faultCopy(t, os.Args[0], bin)
	cmd := exec.Command(bin, "-test.run=^TestWritesAsAnOrdinaryUserBesideTheJob$")
	cmd.Env = append(os.Environ(), "RUNWATCH_TEST_ORDINARY_CHILD="+shared+"\n"+out)
	cmd.SysProcAttr, cmd.Dir = nobody, base
	stdout, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("child: %v\n%s%s", err, stdout, stderr)
	}
	_, js, ok := strings.Cut(string(stdout), "ANSWER ")
	if !ok {
		t.Fatalf("child printed no answer:\n%s", stdout)
	}
	js, _, _ = strings.Cut(js, "\n")
	var a ordinaryAnswer
	if err := json.Unmarshal([]byte(js), &a); err != nil {
		t.Fatalf("child answer %q: %v", js, err)
	}
	t.Logf("as nobody, beside nobody's job: %d processes could not be inspected\n%s\nstatus: %s", a.Invisible, a.Writes, a.Status)

	for _, pid := range a.Hidden {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && kernelThreadStat(string(b)) {
			t.Errorf("the answer names pid %d, a kernel thread (%s), among the processes it could not inspect", pid, strings.TrimSpace(string(b)))
		}
	}
	verdict := strings.SplitN(a.Writes, "\n", 3)[1]
	if want := fmt.Sprintf("(ok) No — %s's device (%s) wrote 0 B in the last 5 min", shared, device); !strings.HasPrefix(verdict, want) {
		t.Errorf("verdict = %q; want it to start %q", verdict, want)
	}
	if want := fmt.Sprintf("The job writes to %s: sleep (pid %d) → %s", mountOf(t, out), job.Process.Pid, filepath.Join(out, "part-00001.jsonl")); !strings.Contains(verdict, want) {
		t.Errorf("verdict = %q; want it to say where the job writes: %q", verdict, want)
	}
	if strings.Contains(a.Writes, "as the job's user") {
		t.Errorf("the answer tells nobody, who runs as the job's user, to run as the job's user:\n%s", a.Writes)
	}
	if !strings.Contains(a.Status, "(ok) no writes to "+shared) {
		t.Errorf("status = %q; want the same plain no", a.Status)
	}
}

// kernelThreadStat reports whether a /proc/PID/stat line is a kernel thread's (PF_KTHREAD in its flags).
func kernelThreadStat(stat string) bool {
	_, rest, ok := strings.Cut(stat[strings.LastIndexByte(stat, ')')+1:], " ")
	if !ok {
		return false
	}
	f := strings.Fields(rest)
	if len(f) < 7 {
		return false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err == nil && flags&0x00200000 != 0
}

// mountOf is the mount point that holds path, from this process's mount table.
func mountOf(t *testing.T, path string) string {
	t.Helper()
	table, err := probes.NewMounts("/proc").Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m, ok := table.Lookup(path)
	if !ok {
		t.Fatalf("no mount holds %s", path)
	}
	return m.MountPoint
}

// ordinaryChild is the child's side: the run's status twice, five minutes apart by its clock, and the
// writes answer and status line of the second, printed as JSON.
func ordinaryChild(args string) {
	shared, out, _ := strings.Cut(args, "\n")
	f := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Protected: []string{shared}, Outputs: []string{out}}}}
	now := time.Unix(1_800_000_000, 0)
	m, _, err := New(f, Options{ProbeTimeout: 10 * time.Second, RateWindow: -1, Now: func() time.Time { return now }})
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	m.RunStatus(context.Background(), "synth", Need{Storage: true})
	now = now.Add(5 * time.Minute)
	rs, _ := m.RunStatus(context.Background(), "synth", Need{Storage: true})
	a := ordinaryAnswer{Writes: reports.AnswerWrites("synth", rs.Storage, reports.Target{}).Text(), Status: reports.PlainText(reports.StorageVerdict(rs.Storage, nil)), Invisible: rs.Storage.Invisible}
	for _, h := range rs.Storage.Hidden {
		a.Hidden = append(a.Hidden, h.PID)
	}
	b, _ := json.Marshal(a)
	fmt.Printf("ANSWER %s\n", b)
}
