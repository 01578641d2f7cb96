// Package promtest runs the real Prometheus server (the Debian package's /usr/bin/prometheus, which
// .ci/run installs) for tests that need one, and the processes around it: it writes the scrape
// config, starts the server on a free loopback port, waits on its answers (never a fixed sleep),
// pauses and resumes processes with SIGSTOP and SIGCONT, and stops everything when the test ends.
// It owns nothing else.
package promtest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"runwatch/probes"
)

// Process is a process a test started: a server, an exporter, a writer.
type Process struct {
	Cmd  *exec.Cmd
	out  *lockedBuffer
	once sync.Once
	// killAtEnd: the test's end kills it (SIGKILL) rather than asking it to stop. A Prometheus server
	// takes 1-2 s to stop gracefully, writing out a TSDB in the test's temporary directory that nothing
	// reads again.
	killAtEnd bool
}

type lockedBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.String()
}

// Start starts cmd, collects its output (logged when the test fails) and ends it when the test ends.
func Start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	p := &Process{Cmd: cmd, out: out}
	t.Cleanup(func() {
		if p.killAtEnd {
			p.end(syscall.SIGKILL)
		}
		p.Stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(cmd.Path), out.String())
		}
	})
	return p
}

// Output is what the process printed so far.
func (p *Process) Output() string { return p.out.String() }

// Pause stops the process with SIGSTOP: it keeps its sockets and answers nothing, as a hung one does.
func (p *Process) Pause(t testing.TB) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %d: %v", p.Cmd.Process.Pid, err)
	}
}

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume(t testing.TB) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT %d: %v", p.Cmd.Process.Pid, err)
	}
}

// Stop ends the process (SIGCONT first, so a paused one can take its SIGTERM) and waits for it; a
// process that ignores SIGTERM for 10 s is killed.
func (p *Process) Stop() { p.end(syscall.SIGTERM) }

// end sends sig (SIGCONT first) and waits for the process, once; one still running 10 s after is killed.
func (p *Process) end(sig syscall.Signal) {
	p.once.Do(func() {
		p.Cmd.Process.Signal(syscall.SIGCONT)
		p.Cmd.Process.Signal(sig)
		done := make(chan struct{})
		go func() { p.Cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.Cmd.Process.Kill()
			<-done
		}
	})
}

// FreeAddr is host:port of a port on host that nothing listens on (a server started right after takes it).
func FreeAddr(t testing.TB, host string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", host, err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Server is a running Prometheus server.
type Server struct {
	*Process
	URL    string
	Client *probes.Prometheus
}

// Binary is the Prometheus server's path; a missing one fails the test: CI must install it.
func Binary(t testing.TB) string {
	t.Helper()
	return binary(t, "prometheus")
}

// NodeExporterBinary is node_exporter's path (the Debian package's name); a missing one fails the test.
func NodeExporterBinary(t testing.TB) string {
	t.Helper()
	return binary(t, "prometheus-node-exporter")
}

func binary(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/" + name); err == nil {
		return "/usr/bin/" + name
	}
	t.Fatalf("%s is not installed: install the Debian package %s (.ci/run does)", name, name)
	return ""
}

// Serve serves h on host (a loopback address: 127.0.0.x stands for another machine) until the test ends,
// and says where.
func Serve(t testing.TB, host string, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", host, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// StartServer starts Prometheus scraping every second with scrapeConfigs (the YAML list under
// scrape_configs:, indented by two spaces) and waits until it answers queries.
func StartServer(t testing.TB, scrapeConfigs string) *Server {
	t.Helper()
	dir := t.TempDir()
	cfg := "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n" + scrapeConfigs
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddr(t, "127.0.0.1")
	p := Start(t, exec.Command(Binary(t), "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+addr, "--log.level=warn"))
	p.killAtEnd = true
	s := &Server{Process: p, URL: "http://" + addr}
	c, err := probes.NewPrometheus(probes.PrometheusOptions{URL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	s.Client = c
	s.WaitFor(t, "Prometheus to answer", "vector(1)", 60*time.Second, func(r probes.PromResult) bool { return len(r.Series) == 1 })
	return s
}

// WaitFor polls query until cond holds for its answer, or fails the test after timeout.
func (s *Server) WaitFor(t testing.TB, what, query string, timeout time.Duration, cond func(probes.PromResult) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r, err := s.Client.Query(ctx, query, time.Time{})
		cancel()
		if err == nil && cond(r) {
			return
		}
		last = fmt.Sprintf("%+v, error %v", r.Series, err)
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s (%s): last answer %s", timeout, what, query, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Value is the single value query gives, for WaitFor's conditions: false when the answer is not one series.
func Value(r probes.PromResult) (float64, bool) {
	if len(r.Series) != 1 || len(r.Series[0].Samples) == 0 {
		return 0, false
	}
	return r.Series[0].Samples[len(r.Series[0].Samples)-1].V, true
}

// RaiseParallel lets n of a package's parallel tests run at once unless -test.parallel was given. Tests
// that wait on Prometheus's scrapes and on the processes they start spend their time waiting, not
// computing; the default, GOMAXPROCS (2 on a small machine), runs them two at a time, each pair as long as
// its slower test. Call it from TestMain, after flag.Parse.
func RaiseParallel(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
	}
}
