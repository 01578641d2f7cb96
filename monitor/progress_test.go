package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/reports"
)

// progressRun is a monitor over a log-only run whose log the test writes, with the clock at *now.
func progressRun(t *testing.T, total int64, now *time.Time) (*Monitor, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "gen.log")
	f := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Log: log, Total: total}}}
	m, _, err := New(f, Options{ProbeTimeout: 5 * time.Second, RateWindow: -1, Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return m, log
}

// writeLog replaces the log's content, modified at mtime.
func writeLog(t *testing.T, path, content string, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// TestFinishNeedsASecondLook: a log line saying every item is done is not a finish until a second sample
// sees it too (or the log stood still on it): a reply echoing "Progress: 25000/25000" followed a moment
// later by 311/25,000 never finishes the run; a real last line does, one sample later.
func TestFinishNeedsASecondLook(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m, log := progressRun(t, 0, &now)
	sample := func() reports.RunStatus {
		t.Helper()
		ev := m.Sample(context.Background())
		return ev[0].Run
	}
	writeLog(t, log, "Progress: 300/25000\n", now)
	sample()

	now = now.Add(30 * time.Second)
	writeLog(t, log, "Progress: 300/25000\nProgress: 25000/25000\n", now)
	rs := sample()
	if rs.ETA != nil && rs.ETA.State == reports.StateDone || rs.Progress == nil || rs.Progress.Done != 300 {
		t.Errorf("after one line saying 25000/25000: progress %+v, ETA %+v; want 300 held, not done", rs.Progress, rs.ETA)
	}
	if !strings.Contains(strings.Join(rs.Notices, "\n"), "the finish counts once the next sample") {
		t.Errorf("notices = %q; want the held finish said", rs.Notices)
	}

	now = now.Add(time.Second)
	writeLog(t, log, "Progress: 300/25000\nProgress: 25000/25000\nProgress: 311/25000\n", now)
	if rs := sample(); rs.Progress == nil || rs.Progress.Done != 311 || rs.ETA == nil || rs.ETA.State == reports.StateDone {
		t.Errorf("after 311/25000: progress %+v, ETA %+v; want 311, running", rs.Progress, rs.ETA)
	}

	now = now.Add(30 * time.Second)
	writeLog(t, log, "Progress: 24999/25000\nProgress: 25000/25000\n", now)
	if rs := sample(); rs.Progress == nil || rs.Progress.Done != 311 {
		t.Errorf("the finish line, once: progress %+v; want 311 held", rs.Progress)
	}
	// An answer a second later is no second sample.
	now = now.Add(time.Second)
	if rs, _ := m.RunStatus(context.Background(), "synth", Need{Progress: true}); rs.Progress == nil || rs.Progress.Done != 311 {
		t.Errorf("an answer a second after: progress %+v; want 311 still held", rs.Progress)
	}
	// The next sample sees it still (the log written again a moment ago: only the second look confirms).
	now = now.Add(30 * time.Second)
	writeLog(t, log, "Progress: 24999/25000\nProgress: 25000/25000\n", now.Add(-time.Second))
	if rs := sample(); rs.Progress == nil || rs.Progress.Done != 25000 || rs.ETA == nil || rs.ETA.State != reports.StateDone {
		t.Errorf("a second sample at 25000/25000: progress %+v, ETA %+v; want done", rs.Progress, rs.ETA)
	}

	// A run first seen finished (a one-shot status after the job ended) has no arrival to doubt.
	first, log2 := progressRun(t, 0, &now)
	writeLog(t, log2, "Progress: 25000/25000\n", now)
	if rs, _ := first.RunStatus(context.Background(), "synth", Need{Progress: true}); rs.Progress == nil || rs.Progress.Done != 25000 {
		t.Errorf("first seen finished: progress %+v; want 25000", rs.Progress)
	}
}

// TestForeignBarsAreNamedOnce: an engine's batch bar after the job's own line is named in the first
// status's notices, not again, and never sets done/total.
func TestForeignBarsAreNamedOnce(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m, log := progressRun(t, 25000, &now)
	writeLog(t, log, "Progress: 300/25000\nProcessed prompts: 100%|##########| 200/200 [00:05<00:00, 38.10it/s]\n", now)
	var notices [][]string
	for range 2 {
		rs, err := m.RunStatus(context.Background(), "synth", Need{Progress: true})
		if err != nil {
			t.Fatal(err)
		}
		if rs.Progress == nil || rs.Progress.Done != 300 || rs.Progress.Total != 25000 {
			t.Errorf("progress = %+v; want 300/25000", rs.Progress)
		}
		notices = append(notices, rs.Notices)
		now = now.Add(30 * time.Second)
	}
	if first := strings.Join(notices[0], "\n"); !strings.Contains(first, `the log also shows "Processed prompts" (200/200), which is not the job's progress`) {
		t.Errorf("first notices = %q; want the batch bar named", first)
	}
	if second := strings.Join(notices[1], "\n"); strings.Contains(second, "Processed prompts") {
		t.Errorf("second notices = %q; want the bar named once", second)
	}
}

// TestFaultLogPermissionDenied reads a log the monitor's user may not read. chmod does not stop
// root, so as root the monitor runs in a child process (this test binary again) as nobody; the
// log is then made readable and the same child reads it.
func TestFaultLogPermissionDenied(t *testing.T) {
	if path := os.Getenv("RUNWATCH_TEST_PERMISSION_CHILD"); path != "" {
		faultPermissionChild(path)
		return
	}
	dir, err := os.MkdirTemp("", "runwatch-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "gen.log")
	if err := os.WriteFile(log, []byte("Progress: 300/25000 (0 errors), 0.7 req/s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	status := faultStatusAsOther(t, dir, log)
	if os.Geteuid() != 0 {
		if err := os.Chmod(log, 0); err != nil {
			t.Fatal(err)
		}
		status = faultStatusAsOther(t, dir, log)
	}
	p, ok := faultProblem(status, "log "+log)
	if !ok || !strings.Contains(p.Error, "permission denied") || !strings.Contains(p.Error, "run as the job's user") {
		t.Errorf("status of an unreadable log: problems = %+v; want the log named with what to do", status.Problems)
	}
	if status.Name != "synth" {
		t.Errorf("status = %+v; want run synth answered", status)
	}

	// The job's owner fixes the mode: the same user now reads it.
	if err := os.Chmod(log, 0o644); err != nil {
		t.Fatal(err)
	}
	status = faultStatusAsOther(t, dir, log)
	if len(status.Problems) > 0 || status.Progress == nil || status.Progress.Done != 300 {
		t.Errorf("status once readable = progress %+v, problems %+v; want 300 done and no problem", status.Progress, status.Problems)
	}
	who := "this user, mode 000"
	if os.Geteuid() == 0 {
		who = "nobody, in a child process"
	}
	t.Logf("figure: log unreadable (read as %s): status answered naming the log and what to do; read again once chmod 644", who)
}

// faultStatusAsOther runs the monitor over log in a child process: as nobody when this process is
// root (so file modes apply), else as this user. It returns the run's status.
func faultStatusAsOther(t *testing.T, dir, log string) reports.RunStatus {
	t.Helper()
	bin := os.Args[0]
	cmd := exec.Command(bin, "-test.run=^TestFaultLogPermissionDenied$")
	cmd.Env = append(os.Environ(), "RUNWATCH_TEST_PERMISSION_CHILD="+log)
	if os.Geteuid() == 0 {
		// nobody cannot reach the test binary in go's private build directory: copy it beside the log.
		bin = filepath.Join(dir, "monitor.test")
		if _, err := os.Stat(bin); err != nil {
			faultCopy(t, os.Args[0], bin)
		}
		cmd.Path, cmd.Args[0] = bin, bin
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Dir = dir
	}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("child status: %v\n%s%s", err, out, stderr)
	}
	_, js, ok := strings.Cut(string(out), "STATUS ")
	if !ok {
		t.Fatalf("child printed no status:\n%s", out)
	}
	js, _, _ = strings.Cut(js, "\n")
	var rs reports.RunStatus
	if err := json.Unmarshal([]byte(js), &rs); err != nil {
		t.Fatalf("child status %q: %v", js, err)
	}
	return rs
}

func faultCopy(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// faultPermissionChild is the child's side: one status of a run that reads log, printed as JSON.
func faultPermissionChild(log string) {
	f := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Log: log}}}
	m, _, err := New(f, Options{ProbeTimeout: 5 * time.Second, RateWindow: -1})
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	rs, _ := m.RunStatus(context.Background(), "synth", Need{Progress: true})
	b, _ := json.Marshal(rs)
	fmt.Printf("STATUS %s\n", b)
}
