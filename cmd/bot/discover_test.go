package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"runwatch/config"
	"runwatch/internal/peersim"
)

// zeroConfigWorld is what the zero-configuration tests run a job with: python3, testdata/generate.py and
// the third-party simulator, started (8 sequences at once, quick tokens) until the test ends.
func zeroConfigWorld(t *testing.T) (python, script string, sim peersim.Sim) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		peersim.Missing(t, "python3", err)
	}
	if script, err = filepath.Abs(filepath.Join("testdata", "generate.py")); err != nil {
		t.Fatal(err)
	}
	return python, script, peersim.Start(t, "--max-num-seqs", "8", "--time-to-first-token", "10ms", "--inter-token-latency", "2ms")
}

// job is a running testdata/generate.py.
type job struct {
	pid      int
	log, out string // its log and its output file
}

// startJob starts testdata/generate.py against the server at url (listening on port), writing JSONL under
// data/synth: its progress to its redirected stdout, or with ownLog to a log it opens itself (stdout goes
// nowhere). It returns once the log holds a progress line with items done two seconds or more into the job
// (a one-shot ask divides the items by the elapsed time the line gives) and the job holds a connection to
// the server open (its threads keep theirs between requests, so discovery, looking after this, sees the
// job as the server's client), and kills the job when the test ends.
func startJob(t *testing.T, python, script, url string, port int, data string, ownLog bool) job {
	t.Helper()
	j := job{log: filepath.Join(data, "logs", "gen.log"), out: filepath.Join(data, "synth", "samples.jsonl")}
	for _, d := range []string{filepath.Dir(j.log), filepath.Dir(j.out)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-u", script, "--url", url, "--out", j.out}
	cmd := exec.Command(python, args...)
	if ownLog {
		cmd.Args = append(cmd.Args, "--log", j.log)
	} else {
		f, err := os.Create(j.log) // as `python3 generate.py > gen.log` does
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close() // the job has its own copy
		cmd.Stdout = f
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	j.pid = cmd.Process.Pid
	progress := regexp.MustCompile(`Progress: [1-9][0-9]*/.*elapsed: ([2-9]|[1-9][0-9]+)s`)
	deadline := time.Now().Add(time.Minute)
	for {
		b, err := os.ReadFile(j.log)
		if err == nil && progress.Match(b) && connectedTo(t, j.pid, port) {
			return j
		}
		select {
		case err := <-exited:
			t.Fatalf("the job exited before printing progress: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("within a minute the job printed no progress or held no connection to :%d open", port)
		}
	}
}

// connectedTo says whether process pid has an established TCP connection to port on this host, as its
// /proc shows it: one of its file descriptors is a socket /proc/net/tcp{,6} lists with that remote port.
func connectedTo(t *testing.T, pid, port int) bool {
	t.Helper()
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		t.Fatal(err)
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return false // exited: the caller's wait says so
	}
	targets, err := p.FileDescriptorTargets()
	if err != nil {
		return false
	}
	inodes := map[uint64]bool{}
	for _, target := range targets {
		var inode uint64
		if _, err := fmt.Sscanf(target, "socket:[%d]", &inode); err == nil {
			inodes[inode] = true
		}
	}
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		lines, err := read()
		if err != nil {
			continue // no IPv6
		}
		for _, l := range lines {
			if l.St == 1 && int(l.RemPort) == port && inodes[l.Inode] { // 1: TCP_ESTABLISHED
				return true
			}
		}
	}
	return false
}

var (
	etaLine = regexp.MustCompile(`(?m)^ETA (under )?\d`)
	tokPerS = regexp.MustCompile(`\d[\d,.]*K? tok/s`)
)

// TestZeroConfig is the new user's walk on the job's machine: the third-party vLLM simulator on a random
// port and a Python job sending it requests, no run file. From an empty directory `bot ask "ETA?"` gives a
// time and the tok/s it used, "where does the output go?" names the output's directory, and `bot init`
// prints a run file that loads and gives the same answers without discovery. Once with the job's stdout
// redirected to its log, once with the log opened by the script itself.
func TestZeroConfig(t *testing.T) {
	t.Parallel() // waits on the job and its server, mostly: beside the other tests that run processes
	python, script, sim := zeroConfigWorld(t)
	for _, tc := range []struct {
		name   string
		ownLog bool
	}{{"stdout redirected to the log", false}, {"log opened by the script", true}} {
		t.Run(tc.name, func(t *testing.T) {
			j := startJob(t, python, script, sim.URL, sim.Port, t.TempDir(), tc.ownLog)
			dir := t.TempDir()
			// Only this test's processes: the machine may run other simulators and jobs.
			env := processEnv(dir, fmt.Sprintf("RUNWATCH_DISCOVER=%d,%d", sim.PID, j.pid))
			from := "(its stdout)"
			if tc.ownLog {
				from = "(a file it writes)"
			}
			found := fmt.Sprintf("found: vLLM on :%d (pid %d), job python3 generate.py (pid %d) → log %s %s, writes %s.",
				sim.Port, sim.PID, j.pid, j.log, from, j.out)
			answers := func(how string, discovered bool) {
				t.Helper()
				code, out, errb := runBot(t, dir, env, "ask", "ETA?")
				if code != 0 || !etaLine.MatchString(out) || !tokPerS.MatchString(out) || !strings.Contains(out, "generate · ETA") {
					t.Errorf("%s: bot ask ETA? = %d, %q %q; want run generate, an ETA and the tok/s it used", how, code, out, errb)
				}
				if strings.Contains(out, found) != discovered {
					t.Errorf("%s: bot ask ETA? = %q; want %q said: %v", how, out, found, discovered)
					// What discovery could have seen: the job's open files now.
					fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", j.pid))
					for _, fd := range fds {
						target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", j.pid, fd.Name()))
						t.Logf("the job's fd %s -> %s", fd.Name(), target)
					}
				}
				code, out, errb = runBot(t, dir, env, "ask", "where does the output go?")
				if code != 0 || !strings.Contains(out, filepath.Dir(j.out)) {
					t.Errorf("%s: bot ask where does the output go? = %d, %q %q; want %s", how, code, out, errb, filepath.Dir(j.out))
				}
			}
			answers("no run file", true)

			code, text, errb := runBot(t, dir, env, "init")
			if code != 0 {
				t.Fatalf("bot init = %d, %q", code, errb)
			}
			for _, want := range []string{"log: " + j.log, fmt.Sprintf("- http://127.0.0.1:%d/metrics", sim.Port), "- " + filepath.Dir(j.out),
				fmt.Sprintf("vLLM on :%d (pid %d", sim.Port, sim.PID), "# protected:", "# channel:"} {
				if !strings.Contains(text, want) {
					t.Errorf("bot init does not say %q:\n%s", want, text)
				}
			}
			p := filepath.Join(dir, "runwatch.yaml")
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := config.Load(p, os.LookupEnv); err != nil {
				t.Fatalf("the run file bot init printed does not load: %v\n%s", err, text)
			}
			// The run file alone, discovery off: the same answers.
			env = processEnv(dir, "RUNWATCH_DISCOVER=off")
			answers("the run file bot init printed", false)
		})
	}
}

// TestInitWrite: `bot init --write` saves the run file as ./runwatch.yaml, and keeps one that is there.
func TestInitWrite(t *testing.T) {
	dir := setEnv(t)
	t.Setenv("RUNWATCH_DISCOVER", fmt.Sprint(os.Getpid())) // only this test: it serves no engine and writes nothing
	code, _, errb := run(t, "", "init", "--write")
	p := filepath.Join(dir, "runwatch.yaml")
	b, err := os.ReadFile(p)
	if code != 0 || err != nil || !strings.Contains(errb, "wrote runwatch.yaml") {
		t.Fatalf("bot init --write = %d, %q; file %v", code, errb, err)
	}
	if _, err := config.Load(p, os.LookupEnv); err != nil {
		t.Errorf("the written run file does not load: %v\n%s", err, b)
	}
	code, _, errb = run(t, "", "init", "--write")
	if code != 1 || !strings.Contains(errb, "runwatch.yaml exists and is kept") {
		t.Errorf("bot init --write over a run file = %d, %q; want a refusal", code, errb)
	}
	if after, _ := os.ReadFile(p); string(after) != string(b) {
		t.Error("bot init --write changed the run file that was there")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".runwatch-init-") {
			t.Errorf("left %s behind", e.Name())
		}
	}
	t.Setenv("RUNWATCH_DISCOVER", "off")
	if code, _, errb := run(t, "", "init"); code != 1 || !strings.Contains(errb, "discovery is off") {
		t.Errorf("bot init with RUNWATCH_DISCOVER=off = %d, %q; want it to say discovery is off", code, errb)
	}
}

// TestZeroConfigTwoJobsOneServer: two jobs on one server, no run file. Each run read the server's counters
// as its own ("64.1K tokens in 15 s = 4,274 tok/s; completions 2,672-2,914 tokens" for a job whose
// completions stop at 512, while the server did 190 tok/s): now each is priced from its own log's items,
// quotes no token rate, and says the server is shared with the other job.
func TestZeroConfigTwoJobsOneServer(t *testing.T) {
	t.Parallel()
	python, script, sim := zeroConfigWorld(t)
	first := startJob(t, python, script, sim.URL, sim.Port, t.TempDir(), false)
	second := startJob(t, python, script, sim.URL, sim.Port, t.TempDir(), false)
	if first.pid > second.pid {
		first, second = second, first // runs are named in pid order (pids wrap)
	}
	dir := t.TempDir()
	env := processEnv(dir, fmt.Sprintf("RUNWATCH_DISCOVER=%d,%d,%d", sim.PID, first.pid, second.pid))
	for _, tt := range []struct {
		run   string
		other job
		name  string
	}{{"generate", second, "generate-2"}, {"generate-2", first, "generate"}} {
		code, out, errb := runBot(t, dir, env, "ask", "ETA for "+tt.run+"?")
		shared := fmt.Sprintf("vLLM on :%d is shared with job python3 generate.py (pid %d, run %s): its token and request counts are both jobs'",
			sim.Port, tt.other.pid, tt.name)
		if code != 0 || !etaLine.MatchString(out) || !strings.Contains(out, tt.run+" · ETA") || tokPerS.MatchString(out) || !strings.Contains(out, shared) {
			t.Errorf("bot ask ETA for %s? = %d, %q %q; want an ETA from its items, no tok/s (the server's are both jobs'), and %q",
				tt.run, code, out, errb, shared)
		}
	}
}
