package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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

func TestExporterCommand(t *testing.T) {
	dir := setEnv(t)
	for _, args := range [][]string{{"exporter"}, {"exporter", "--listen", "127.0.0.1:0", "extra"}} {
		if code, out, errb := run(t, "", args...); code != 2 || !strings.Contains(out+errb, "usage: bot exporter --listen ADDR") {
			t.Errorf("bot %v = %d, %q %q; want usage", args, code, out, errb)
		}
	}

	shared := filepath.Join(dir, "shared")
	os.MkdirAll(shared, 0o755)
	cfg := filepath.Join(dir, "runwatch.yaml")
	if err := os.WriteFile(cfg, []byte("runs:\n  - name: synth\n    protected: ["+shared+"]\n    outputs: ["+dir+"]\n"), 0o644); err != nil {
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
	cancel()
	if err := <-done; err != nil {
		t.Errorf("exporter after cancel = %v; want a clean shutdown", err)
	}
}
