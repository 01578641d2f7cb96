package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncBuffer is a log sink the test reads while the exporter writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	// listening is closed once the exporter has logged its address.
	listening chan struct{}
	once      sync.Once
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if strings.Contains(s.b.String(), "exporter listening") {
		s.once.Do(func() { close(s.listening) })
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The exporter speaks for its own node: given the central run file, whose run names a Prometheus
// server, it never asks that server, so no other host's writers come back as this node's.
func TestExporterCommand(t *testing.T) {
	dir := setEnv(t)
	for _, args := range [][]string{{"exporter", "--listen", "127.0.0.1:0", "extra"}} {
		if code, out, errb := run(t, "", args...); code != 2 || !strings.Contains(out+errb, "usage: bot exporter [--listen ADDR]") {
			t.Errorf("bot %v = %d, %q %q; want usage", args, code, out, errb)
		}
	}
	if host, port, _ := net.SplitHostPort(defaultExporterListen); !net.ParseIP(host).IsLoopback() || port == "9464" {
		t.Errorf("default --listen = %s; want loopback, and not OpenTelemetry's 9464", defaultExporterListen)
	}

	// A Prometheus that would report a writer on another host, and counts who asks.
	var asked atomic.Int32
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"runwatch_protected_writer_processes",`+
			`"instance":"gpu-node-9:19464","path":"/shared","mount":"/shared","command":"phantom"},"value":[1800000000,"1"]}]}}`)
	}))
	defer prom.Close()
	shared := filepath.Join(dir, "shared")
	os.MkdirAll(shared, 0o755)
	cfg := filepath.Join(dir, "runwatch.yaml")
	if err := os.WriteFile(cfg, []byte("runs:\n  - name: synth\n    protected: ["+shared+"]\n    outputs: ["+dir+"]\n"+
		"    prometheus: {url: "+prom.URL+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{listening: make(chan struct{})}
	var cmd *command
	for i := range commands {
		if commands[i].name == "exporter" {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		t.Fatal("no exporter command")
	}
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: logs, configPath: cfg, cmd: cmd}
	a.log = slog.New(slog.NewTextHandler(logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runExporter(ctx, a, []string{"--listen", "127.0.0.1:0"}) }()
	select {
	case <-logs.listening:
	case err := <-done:
		t.Fatalf("exporter ended before listening: %v\n%s", err, logs.String())
	}
	addr := regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`).FindStringSubmatch(logs.String())
	if addr == nil {
		t.Fatalf("no address in the log: %s", logs.String())
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://" + addr[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`runwatch_run_path_info{mount=`, `path="` + shared + `",protected="true",role="protected",run="synth"} 1`, "runwatch_invisible_processes "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if n := asked.Load(); n != 0 || strings.Contains(string(body), "phantom") {
		t.Errorf("the exporter asked the run's Prometheus %d times (its /metrics: %s); want never, and no other host's writer", n, body)
	}
	if !strings.Contains(logs.String(), "prometheus: is not read here") {
		t.Errorf("log = %s; want a line saying the run's prometheus: is not read", logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("exporter after cancel = %v; want a clean shutdown", err)
	}
}
