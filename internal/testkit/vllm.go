package testkit

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runwatch/internal/testkit/fake"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// VLLM is a busy vLLM server (fake.VLLM: a recording of a real engine under load) whose generated
// tokens grow by 41,580 a scrape (1,386 tokens/s at a sample every 30 s).
func VLLM(t testing.TB) *httptest.Server {
	t.Helper()
	return fake.NewVLLM(t, fake.VLLMOptions{TokensPerScrape: 41580}).Server
}

// FaultEndpoint is a vLLM /metrics endpoint (fake.Replay's recording, with the server's start time) that
// a test breaks the ways real ones break: down (connection refused), slow, garbage, a 50 MiB body,
// counters that start over.
type FaultEndpoint struct {
	t      testing.TB
	addr   string
	replay *fake.Replay
	mode   atomic.Value // "ok", "slow", "garbage", "error" (HTTP 500) or "huge"
	n      atomic.Int64 // scrapes since the (simulated) server started
	start  atomic.Int64 // its process_start_time_seconds

	mu  sync.Mutex
	srv *http.Server
}

// NewFaultEndpoint serves healthy metrics on a port of its own until the test ends.
func NewFaultEndpoint(t testing.TB) *FaultEndpoint {
	t.Helper()
	f := &FaultEndpoint{t: t}
	f.replay = fake.NewReplay(t, fake.VLLMOptions{TokensPerScrape: 41580, Extra: func() string {
		return fmt.Sprintf("# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %d\n", f.start.Load())
	}})
	f.mode.Store("ok")
	f.start.Store(1_700_000_000)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	f.serve(ln)
	t.Cleanup(f.Down)
	return f
}

// URL is the endpoint's /metrics URL.
func (f *FaultEndpoint) URL() string { return "http://" + f.addr + "/metrics" }

func (f *FaultEndpoint) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(f.handle)}
	f.mu.Lock()
	f.srv = srv
	f.mu.Unlock()
	go srv.Serve(ln)
}

// Down stops the server: connections are refused until Up.
func (f *FaultEndpoint) Down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		f.srv.Close()
		f.srv = nil
	}
}

// Up serves again on the same address.
func (f *FaultEndpoint) Up() {
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", f.addr); err == nil {
			f.serve(ln)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.t.Fatalf("listen again on %s: %v", f.addr, err)
}

// Set returns a function that puts the endpoint in mode: "ok", "slow", "garbage", "error" or "huge".
func (f *FaultEndpoint) Set(mode string) func() { return func() { f.mode.Store(mode) } }

// Restart makes the counters start over, as a restarted vLLM server's do.
func (f *FaultEndpoint) Restart() {
	f.n.Store(0)
	f.start.Add(3600)
}

func (f *FaultEndpoint) handle(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", fake.ContentType)
	switch f.mode.Load() {
	case "slow":
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
		return
	case "garbage":
		w.Write([]byte("\x00\x01\x02\xff binary junk where metrics should be\n"))
		return
	case "error":
		http.Error(w, "engine core died", http.StatusInternalServerError)
		return
	case "huge":
		// A router's exposition gone wild: histogram buckets without end.
		line := []byte(`http_request_duration_seconds_bucket{handler="/v1/completions",method="POST",le="0.5"} 123456` + "\n")
		for sent := 0; sent < 50<<20; sent += len(line) {
			if _, err := w.Write(line); err != nil {
				return // the client stopped reading, as it should
			}
		}
		return
	}
	w.Write(f.replay.Body(int(f.n.Add(1))))
}
