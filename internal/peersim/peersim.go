// Package peersim runs the third-party vLLM simulator (llm-d-inference-sim, which nobody here wrote) for
// tests and scripts: it finds the gzipped binary beside the repository (../shared/peers/, where CI puts it
// too), unpacks it, and starts it on a free port. It owns nothing else.
package peersim

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Rel is where the simulator lives relative to the directory that holds the repository's clone.
const Rel = "shared/peers/llm-d-inference-sim/llm-d-inference-sim.gz"

// Find returns the gzipped simulator: Rel in the directory above the repository (the clone's
// sibling ../shared/, as on CI) or above that (a worktree one level further down), searched upwards
// from dir.
func Find(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, Rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s in %s or any directory above it", Rel, dir)
		}
	}
}

// Unpack writes the gzipped simulator binary at gz to an executable file in dir and returns its path. It
// uses gzip(1) where there is one (20 MB through compress/flate takes 15 s under the race detector) and
// compress/gzip otherwise.
func Unpack(gz, dir string) (string, error) {
	f, err := os.Open(gz)
	if err != nil {
		return "", fmt.Errorf("open simulator: %w", err)
	}
	defer f.Close()
	path := filepath.Join(dir, "llm-d-inference-sim")
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return "", fmt.Errorf("unpack %s: %w", gz, err)
	}
	if gzip1, err := exec.LookPath("gzip"); err == nil {
		cmd := exec.Command(gzip1, "-dc")
		cmd.Stdin, cmd.Stdout = f, out
		if err := cmd.Run(); err != nil {
			out.Close()
			return "", fmt.Errorf("unpack %s: gzip: %w", gz, err)
		}
		if err := out.Close(); err != nil {
			return "", fmt.Errorf("unpack %s: %w", gz, err)
		}
		return path, nil
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		out.Close()
		return "", fmt.Errorf("unpack %s: %w", gz, err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		out.Close()
		return "", fmt.Errorf("unpack %s: %w", gz, err)
	}
	if err := out.Close(); err != nil {
		return "", fmt.Errorf("unpack %s: %w", gz, err)
	}
	return path, nil
}

// Required says whether a test that needs the simulator (or python3) must fail rather than skip
// without it: RUNWATCH_REQUIRE_PEERS=1, which .ci/run sets, so CI never passes by skipping.
func Required() bool { return os.Getenv("RUNWATCH_REQUIRE_PEERS") == "1" }

// Missing skips t, or fails it where the peers are required, saying what is missing.
func Missing(t testing.TB, what string, err error) {
	t.Helper()
	if Required() {
		t.Fatalf("%s: %v (RUNWATCH_REQUIRE_PEERS=1)", what, err)
	}
	t.Skipf("%s: %v", what, err)
}

// Sim is a running simulator.
type Sim struct {
	Port int
	PID  int
	URL  string // http://127.0.0.1:PORT
}

// Start unpacks the simulator found from the working directory (call it before a test changes it) into a temporary directory and starts it
// on a free port of 127.0.0.1 with flags (--port and --model are set here), waits until it serves /metrics,
// and stops it when the test ends. It skips the test when the simulator is not beside the repository
// (fails, where Required).
func Start(t testing.TB, flags ...string) Sim {
	t.Helper()
	gz, err := Find(".")
	if err != nil {
		Missing(t, "the third-party simulator", err)
	}
	bin, err := Unpack(gz, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for range 3 { // a free port can be taken between the look and the start: try another
		s, err := start(t, bin, flags)
		if err == nil {
			return s
		}
		last = err
	}
	t.Fatalf("start the simulator: %v", last)
	return Sim{}
}

func start(t testing.TB, bin string, flags []string) (Sim, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Sim{}, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := append([]string{"--port", strconv.Itoa(port), "--model", "fake-model"}, flags...)
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(t.TempDir(), "sim.log"))
	if err != nil {
		return Sim{}, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return Sim{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	s := Sim{Port: port, PID: cmd.Process.Pid, URL: "http://127.0.0.1:" + strconv.Itoa(port)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/metrics", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(stop)
				return s, nil
			}
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logf.Name())
			return Sim{}, fmt.Errorf("the simulator exited (%v): %s", err, b)
		case <-ctx.Done():
			stop()
			return Sim{}, errors.New("the simulator did not serve /metrics within a minute")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
