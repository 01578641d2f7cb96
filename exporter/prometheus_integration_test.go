package exporter

// The exporter's integration test: two nodes' exporters on loopback (127.0.0.1 sees a process
// writing to /dev/shm, 127.0.0.2 sees nothing), the real Debian `prometheus` binary (.ci/run
// installs it) scraping both, and a central bot that has no local view of any writer answering
// "are we writing to /dev/shm?" from Prometheus alone.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/promtest"
	"runwatch/monitor"
	"runwatch/probes"
)

// itEmptyProc is a /proc with this machine's mount table and no processes: a node (or a central
// bot) that sees no writer at all.
func itEmptyProc(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	// self is a link to a pid directory, as in a real /proc; that process has exited (no fd/).
	os.MkdirAll(filepath.Join(root, "4242"), 0o755)
	if err := os.Symlink("4242", filepath.Join(root, "self")); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"4242/mountinfo": mi, "diskstats": nil} {
		if err := os.WriteFile(filepath.Join(root, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// itNode is one node's exporter over the run file's runs, reading procRoot ("" is the real /proc),
// built as `bot exporter` builds it.
func itNode(t *testing.T, host, procRoot string, file *config.File) string {
	t.Helper()
	m, err := NodeMonitor(file, procRoot, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return promtest.Serve(t, host, New(m, Options{}).Handler())
}

type itBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *itBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

func itPrometheus(t *testing.T, dir string, targets ...string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is not installed: install the Debian package prometheus (.ci/run does)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	// The scrape config docs/multi-host.md documents, with a one-second interval for the test.
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: runwatch-exporter
    static_configs:
      - targets: [%s]
`, strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr, "--log.level=warn")
	out := &itBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			out.mu.Lock()
			t.Logf("prometheus output:\n%s", out.String())
			out.mu.Unlock()
		}
	})
	return "http://" + addr
}

// TestExporterThroughPrometheus is hermetic: the protected path is the test's own directory, so
// whatever else writes on this machine (/dev/shm is PyTorch's and NCCL's) is not in its answers.
// A third node is given the central run file, prometheus: included, as the README once said to:
// it must report its own node only, so the writer is named on its host alone, and is gone from
// Prometheus once killed (re-exported, it outlived its process by minutes).
func TestExporterThroughPrometheus(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	writer, stop := holdOpenUntil(t, filepath.Join(shared, "hidden-00001.safetensors"))

	runs := func() *config.File {
		return &config.File{Source: "node", Runs: []config.Run{{Name: "hs", Protected: []string{shared}, Outputs: []string{dir}}}}
	}
	busy := itNode(t, "127.0.0.1", "", runs())             // sees the writer
	idle := itNode(t, "127.0.0.2", itEmptyProc(t), runs()) // sees no process at all
	// The central run file, whose Prometheus is only known once it runs: the third node reads it
	// through a handler that waits for the URL.
	var promURL string
	var central *config.File
	ready := make(chan struct{})
	third := promtest.Serve(t, "127.0.0.3", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-ready
		m, err := NodeMonitor(central, itEmptyProc(t), 10*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		New(m, Options{}).Handler().ServeHTTP(w, r)
	}))
	promURL = itPrometheus(t, dir, busy, idle, third)
	central = &config.File{Source: "central", Runs: []config.Run{{Name: "hs", Protected: []string{shared}, Outputs: []string{dir},
		Prometheus: &config.Prometheus{URL: promURL}}}}
	close(ready)

	client, err := probes.NewPrometheus(probes.PrometheusOptions{URL: promURL})
	if err != nil {
		t.Fatal(err)
	}
	query := func(q string) (float64, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := client.Query(ctx, q, time.Time{})
		if err != nil || len(r.Series) != 1 {
			return 0, false
		}
		return r.Series[0].Samples[0].V, true
	}
	// waitFor polls Prometheus's answers (not a fixed sleep) until ok says so.
	waitFor := func(what, q string, ok func(float64, bool) bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			v, found := query(q)
			if ok(v, found) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Prometheus never had %s (last: %v, %v)", what, v, found)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	waitFor("the three exporters' series and the writer", `count(runwatch_invisible_processes) + count(runwatch_protected_writer_processes{command="sleep"} > 0)`,
		func(v float64, ok bool) bool { return ok && v >= 4 })
	// A few more scrapes of the third node, which would re-export what Prometheus holds.
	waitFor("three more scrapes of the third node", `count_over_time(up{instance="`+third+`"}[1m])`, func(v float64, ok bool) bool { return ok && v >= 4 })

	// The central bot: same run with prometheus:, and an empty /proc, so whatever it says about
	// writers comes from the exporters through Prometheus.
	m, _, err := monitor.New(central, monitor.Options{ProcRoot: itEmptyProc(t), ProbeTimeout: 10 * time.Second, RateWindow: -1, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	bot := conversation.NewBot(m, time.UTC, config.Env{})
	reply := bot.Ask(context.Background(), conversation.Request{Text: "are we writing to " + shared + "?", Source: "cli"})
	text := reply.Message.Text()
	t.Logf("answer:\n%s", text)
	if !strings.Contains(text, "Yes — 1 process is writing") || !strings.Contains(text, "on host 127.0.0.1: sleep (1 process) → "+shared) {
		t.Errorf("answer = %q; want yes, 1 process, naming host 127.0.0.1 and the sleep that writes (pid %d there)", text, writer)
	}
	for _, other := range []string{"127.0.0.2", "127.0.0.3"} {
		if strings.Contains(text, other) {
			t.Errorf("answer names %s, whose exporter saw no writer: %q", other, text)
		}
	}
	rs, err := m.RunStatus(context.Background(), "hs", monitor.Need{Storage: true})
	if err != nil {
		t.Fatal(err)
	}
	var warned bool
	for _, w := range rs.Storage.Warnings {
		if w.Kind == "protected_write" && strings.Contains(w.Message, "On host `127.0.0.1`") {
			warned = true
		}
	}
	if !warned || !rs.Storage.ProtectedWrites {
		t.Errorf("storage = %+v; want a protected_write warning naming 127.0.0.1", rs.Storage)
	}

	// The writer ends: no node keeps it alive.
	stop()
	waitFor("the writer gone from every node", `sum(runwatch_protected_writer_processes) or vector(0)`, func(v float64, ok bool) bool { return ok && v == 0 })
}
