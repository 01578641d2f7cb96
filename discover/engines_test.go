package discover

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// recorder is a server that records every request it gets.
type recorder struct {
	mu   sync.Mutex
	seen []string
	srv  *httptest.Server
}

func newRecorder(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Method+" "+r.URL.RequestURI())
		rec.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

func (r *recorder) endpoint() endpoint {
	a := r.srv.Listener.Addr().(*net.TCPAddr)
	return endpoint{host: a.IP.String(), port: a.Port}
}

// TestProbeSendsOneGETAndFollowsNoRedirect: whatever a listener answers (a redirect to its own login page,
// to another host, to /metrics again), it gets one GET for /metrics and nothing else, and nothing is sent
// anywhere else.
func TestProbeSendsOneGETAndFollowsNoRedirect(t *testing.T) {
	metrics, err := os.ReadFile(filepath.Join("..", "probes", "testdata", "vllm_v1_metrics_docs_design_example.txt"))
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.Write(metrics) })
	tests := []struct {
		name   string
		handle func(w http.ResponseWriter, r *http.Request)
	}{
		{"to its login page", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/login", http.StatusFound) }},
		{"to another host", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.srv.URL+"/metrics", http.StatusTemporaryRedirect)
		}},
		{"to itself", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/metrics", http.StatusMovedPermanently)
		}},
		{"an HTML page", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>vllm:num_requests_running 1</html>")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder(t, tt.handle)
			got, _ := probeEngines(t.Context(), []endpoint{rec.endpoint()}, 5*time.Second, 4, newProbeTransport(5*time.Second))
			if len(got) != 0 {
				t.Errorf("engines %+v; want none", got)
			}
			if seen := rec.requests(); !slices.Equal(seen, []string{"GET /metrics"}) {
				t.Errorf("the listener got %q; want one GET /metrics", seen)
			}
		})
	}
	if seen := elsewhere.requests(); len(seen) > 0 {
		t.Errorf("another host got %q; want nothing", seen)
	}
}

// TestProbeKeepsKnownEngines: each engine kind's recorded exposition is kept as that kind; a 404, a page
// that is not metrics, Prometheus text of no engine, and a listener that never answers are not.
func TestProbeKeepsKnownEngines(t *testing.T) {
	var eps []endpoint
	want := map[int]string{}
	for file, kind := range map[string]string{
		"vllm_v1_metrics_docs_design_example.txt":    "vllm",
		"vllm_v0_metrics_opt125m_datadog.txt":        "vllm-v0",
		"sglang_metrics_llama31_8b_docs.txt":         "sglang",
		"tgi_metrics_datadog_payload_excerpt.txt":    "tgi",
		"llamacpp_server_metrics_ik_llama_pr695.txt": "llamacpp",
		"trtllm_serve_metrics_dynamo_docs.txt":       "trtllm",
		"triton_trtllm_backend_metrics_readme.txt":   "trtllm-triton",
	} {
		port := serve(t, file, 0, "")
		eps = append(eps, endpoint{host: "127.0.0.1", port: port})
		want[port] = kind
	}
	for _, s := range []struct {
		code int
		body string
	}{{404, "404 page not found"}, {200, "go_goroutines 12\nprocess_start_time_seconds 1.7e9\n"}} {
		eps = append(eps, endpoint{host: "127.0.0.1", port: serve(t, "", s.code, s.body)})
	}
	eps = append(eps, endpoint{host: "127.0.0.1", port: silent(t)})

	got, late := probeEngines(t.Context(), eps, 2*time.Second, 16, newProbeTransport(2*time.Second))
	if len(late) != 1 || late[0] != eps[len(eps)-1] {
		t.Errorf("late %+v; want only the silent listener", late)
	}
	kinds := map[int]string{}
	for _, e := range got {
		kinds[e.Port] = e.Kind
		if e.URL != "http://127.0.0.1:"+strconv.Itoa(e.Port)+"/metrics" {
			t.Errorf("engine %+v: URL; want http://127.0.0.1:%d/metrics", e, e.Port)
		}
	}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("engines by port %v; want %v", kinds, want)
	}
}

// silent is a listener that accepts and never answers; its port.
func silent(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return l.Addr().(*net.TCPAddr).Port
}

func TestEndpoints(t *testing.T) {
	ip := net.ParseIP
	socks := []socket{
		{local: ip("0.0.0.0").To4(), localPort: 8000, state: tcpListen, inode: 1},
		{local: ip("::"), localPort: 8000, state: tcpListen, inode: 2},
		{local: ip("::"), localPort: 9000, state: tcpListen, inode: 3},
		{local: ip("10.1.2.3").To4(), localPort: 8001, state: tcpListen, inode: 4},
		{local: ip("127.0.0.1").To4(), localPort: 6379, state: tcpListen, inode: 5}, // Redis: never sent a GET
		{local: ip("127.0.0.1").To4(), localPort: 43000, remote: ip("127.0.0.1").To4(), remotePort: 8000, state: tcpEstablished, inode: 6},
		{local: ip("127.0.0.1").To4(), localPort: 7000, state: tcpListen, inode: 7}, // its process is hidden
	}
	owner := map[uint64]int{1: 100, 2: 100, 3: 200, 4: 300, 5: 400, 6: 500}
	var got []string
	for _, e := range endpoints(socks, owner, nil) {
		got = append(got, fmt.Sprintf("%s %d %d", e.host, e.port, e.pid))
	}
	want := []string{"127.0.0.1 7000 0", "127.0.0.1 8000 100", "10.1.2.3 8001 300", "::1 9000 200"}
	if !slices.Equal(got, want) {
		t.Errorf("endpoints = %q; want %q", got, want)
	}
	got = nil
	for _, e := range endpoints(socks, owner, map[int]bool{200: true}) {
		got = append(got, fmt.Sprintf("%s %d %d", e.host, e.port, e.pid))
	}
	if want := []string{"::1 9000 200"}; !slices.Equal(got, want) {
		t.Errorf("endpoints in scope of pid 200 = %q; want %q", got, want)
	}
}

// BenchmarkDiscover200Listeners: a host with 200 listening ports (150 answering 404, 40 that never answer,
// 10 engines), each held by a process of its own, and a job connected to one engine: one whole discovery,
// the proc walk, the probes side by side and the job's files. The probes take about one probe timeout
// (200 ms), however many ports listen.
func BenchmarkDiscover200Listeners(b *testing.B) {
	tree := newProcTree(b)
	data := b.TempDir()
	var engine int
	for i := 0; i < 200; i++ {
		var port int
		switch {
		case i < 150:
			port = serve(b, "", 404, "not found")
		case i < 190:
			port = silent(b)
		default:
			port = serve(b, "vllm_v1_metrics_docs_design_example.txt", 0, "")
			engine = port
		}
		pid := 1000 + i
		tree.proc(pid, 1, "server", strconv.Itoa(i))
		tree.listen(pid, 3, fmt.Sprintf("127.0.0.1:%d", port))
	}
	log := writeFile(b, data, "gen.log", "Progress: 300/25000 (0 errors)\n")
	tree.proc(5000, 1, "python3", "generate.py")
	tree.fd(5000, 1, log, flagsAppend)
	tree.connect(5000, 3, "127.0.0.1:40000", fmt.Sprintf("127.0.0.1:%d", engine))
	// "probes": the probe budget, the looks for the engines' clients a millisecond apart; "whole": what
	// discovery takes, those looks spread over GrowWait (1 s) so that a job between requests is seen too.
	for _, bc := range []struct {
		name string
		wait time.Duration
	}{{"probes", time.Millisecond}, {"whole", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			d := New(Options{ProcRoot: tree.root, Self: -1, GrowWait: bc.wait})
			for b.Loop() {
				res, err := d.Discover(b.Context())
				if err != nil || len(res.Engines) != 10 || res.Probed != 200 || len(res.Jobs) != 1 {
					b.Fatalf("Discover = %d engines of %d probed, %d jobs, %v; want 10 of 200, 1 job", len(res.Engines), res.Probed, len(res.Jobs), err)
				}
			}
		})
	}
}

// TestPatientProbe: an engine that misses the quick probe (a loaded host) is probed again, patiently, when
// it serves clients or its command line names an engine; a listener that is neither is probed once.
func TestPatientProbe(t *testing.T) {
	metrics, err := os.ReadFile(filepath.Join("..", "probes", "testdata", "vllm_v1_metrics_docs_design_example.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// Each answers its first request only after the prober gave up on it, and the next at once.
	slowFirst := func() *recorder {
		var n sync.Mutex
		first := true
		return newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			n.Lock()
			wasFirst := first
			first = false
			n.Unlock()
			if wasFirst {
				<-r.Context().Done()
				return
			}
			w.Write(metrics)
		})
	}
	serving, named, idle := slowFirst(), slowFirst(), slowFirst()
	tree := newProcTree(t)
	tree.proc(10, 1, "/opt/llm-d-inference-sim", "--port", fmt.Sprint(serving.endpoint().port))
	tree.listen(10, 3, fmt.Sprintf("127.0.0.1:%d", serving.endpoint().port))
	tree.connect(10, 4, fmt.Sprintf("127.0.0.1:%d", serving.endpoint().port), "127.0.0.1:50000") // a client it accepted
	tree.proc(20, 1, "python3", "-m", "sglang.launch_server")
	tree.listen(20, 3, fmt.Sprintf("127.0.0.1:%d", named.endpoint().port))
	tree.proc(30, 1, "/usr/bin/some-daemon")
	tree.listen(30, 3, fmt.Sprintf("127.0.0.1:%d", idle.endpoint().port))

	res, err := New(Options{ProcRoot: tree.root, Self: -1, ProbeTimeout: 50 * time.Millisecond, PatientTimeout: 10 * time.Second}).Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ports []int
	for _, e := range res.Engines {
		ports = append(ports, e.Port)
	}
	want := []int{serving.endpoint().port, named.endpoint().port}
	slices.Sort(want)
	if !slices.Equal(ports, want) {
		t.Errorf("engines on %v; want %v (the engine serving clients and the one its command names)", ports, want)
	}
	for _, c := range []struct {
		name string
		rec  *recorder
		n    int
	}{{"serving", serving, 2}, {"named", named, 2}, {"idle", idle, 1}} {
		if got := len(c.rec.requests()); got != c.n {
			t.Errorf("%s listener got %d requests; want %d", c.name, got, c.n)
		}
	}
}
