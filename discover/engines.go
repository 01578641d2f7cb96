package discover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"runwatch/probes"
)

// This file finds the engines: each listening socket is sent one GET for /metrics, with a short
// deadline, and kept when the answer is a known engine's metrics (probes' engine table decides).

// Engine is an inference server found listening on this host.
type Engine struct {
	Kind    string // probes.Engine.Kind: "vllm", "sglang", "tgi", "llamacpp", "trtllm", ...
	Port    int
	URL     string // the /metrics URL it answered on
	PID     int    // 0 when its process could not be inspected
	Command string // its command line, shortened
	// Unseen counts the connections to it from processes that could not be inspected.
	Unseen int
}

// endpoint is one address to probe: a listening port of this host.
type endpoint struct {
	host string
	port int
	pid  int // the owner, 0 when unknown
}

// notHTTP are ports whose servers are known to speak something else: a GET sent there is noise in a
// database's security log (Redis logs "Possible SECURITY ATTACK"), never an engine.
var notHTTP = map[int]bool{22: true, 25: true, 53: true, 111: true, 389: true, 445: true, 2049: true,
	3306: true, 5432: true, 6379: true, 11211: true, 27017: true}

// endpoints are the listening sockets to probe, one per port (a server listening on 0.0.0.0 and :: is
// probed once, over IPv4), owned by a process in scope (in == nil: any, and unknown owners too).
func endpoints(socks []socket, owner map[uint64]int, in map[int]bool) []endpoint {
	byPort := map[int]endpoint{}
	for _, s := range socks {
		if s.state != tcpListen || notHTTP[s.localPort] {
			continue
		}
		pid := owner[s.inode]
		if in != nil && !in[pid] {
			continue
		}
		e := endpoint{host: probeHost(s), port: s.localPort, pid: pid}
		if prev, ok := byPort[s.localPort]; ok && (prev.pid != 0 || pid == 0) && net.ParseIP(prev.host).To4() != nil {
			continue
		}
		byPort[s.localPort] = e
	}
	out := make([]endpoint, 0, len(byPort))
	for _, e := range byPort {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].port < out[j].port })
	return out
}

// errOneGET is what the probe's transport answers to any request after its one GET for /metrics: a
// redirect is never followed, wherever it points.
var errOneGET = errors.New("discovery sends one GET for /metrics and follows no redirect")

// oneGET is a probe's transport: it lets exactly one request through, a GET for the URL it was made
// for, so that whatever the server answers (a redirect, a retry) nothing else is ever sent.
type oneGET struct {
	base http.RoundTripper
	want string
	mu   sync.Mutex
	used bool
}

func (o *oneGET) RoundTrip(req *http.Request) (*http.Response, error) {
	o.mu.Lock()
	ok := !o.used && req.Method == http.MethodGet && req.URL.String() == o.want
	o.used = true
	o.mu.Unlock()
	if !ok {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errOneGET
	}
	return o.base.RoundTrip(req)
}

// newProbeTransport is the transport every probe's oneGET wraps: no proxy (a probe of this host's ports
// must not leave it), no connection kept (discovery would find itself a client of the engine), small
// headers.
func newProbeTransport(timeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            (&net.Dialer{Timeout: timeout}).DialContext,
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
		ResponseHeaderTimeout:  timeout,
	}
}

// probeMaxBody caps one probe's body: a vLLM with many models and histograms stays well under it.
const probeMaxBody = 4 << 20

// probeEngines sends each endpoint one GET for /metrics, at most maxInFlight at a time, each under its
// own timeout (which covers parsing), and returns those that serve a known engine's metrics, and those that
// did not answer in time.
func probeEngines(ctx context.Context, eps []endpoint, timeout time.Duration, maxInFlight int, tr http.RoundTripper) ([]Engine, []endpoint) {
	found := make([]*Engine, len(eps))
	late := make([]bool, len(eps))
	slots := make(chan struct{}, max(1, maxInFlight))
	var wg sync.WaitGroup
	for i, ep := range eps {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			found[i], late[i] = probeOne(ctx, ep, timeout, tr)
		}()
	}
	wg.Wait()
	var out []Engine
	var slow []endpoint
	for i, e := range found {
		if e != nil {
			out = append(out, *e)
		} else if late[i] {
			slow = append(slow, eps[i])
		}
	}
	return out, slow
}

// probeOne probes one endpoint; nil when it is no engine, with late when it did not answer in time.
func probeOne(ctx context.Context, ep endpoint, timeout time.Duration, tr http.RoundTripper) (e *Engine, late bool) {
	u := (&url.URL{Scheme: "http", Host: net.JoinHostPort(ep.host, strconv.Itoa(ep.port)), Path: "/metrics"}).String()
	client := &http.Client{Transport: &oneGET{base: tr, want: u}}
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got, err := probes.NewMetrics(client, probeMaxBody).Scrape(c, u)
	if err != nil || got.Kind == "" {
		var ne net.Error
		return nil, c.Err() != nil || (errors.As(err, &ne) && ne.Timeout())
	}
	return &Engine{Kind: got.Kind, Port: ep.port, URL: u, PID: ep.pid}, false
}

// engineNames are words in a command line that name an inference server: a listener of such a process
// that does not answer the quick probe is worth a second, patient one.
var engineNames = []string{"vllm", "sglang", "text-generation", "llama-server", "llama.cpp", "trtllm", "tritonserver", "inference"}

// busy keeps the endpoints that deserve the patient probe: the process holds connections accepted on the
// port (it serves clients, and is slow because it is busy), or its command line names an engine.
func busy(eps []endpoint, socks []socket, owner map[uint64]int, t processTable) []endpoint {
	var out []endpoint
	for _, ep := range eps {
		serving := slices.ContainsFunc(socks, func(s socket) bool {
			return s.state == tcpEstablished && s.localPort == ep.port && owner[s.inode] == ep.pid
		})
		named := false
		if p := t.procs[ep.pid]; p != nil {
			cmd := strings.ToLower(strings.Join(p.cmdline, " "))
			named = slices.ContainsFunc(engineNames, func(w string) bool { return strings.Contains(cmd, w) })
		}
		if serving || named {
			out = append(out, ep)
		}
	}
	return out
}

// String names the engine as the found line does: "vLLM on :8000 (pid 1234)".
func (e Engine) String() string {
	if e.PID == 0 {
		return fmt.Sprintf("%s on :%d (its process could not be inspected)", probes.KindName(e.Kind), e.Port)
	}
	return fmt.Sprintf("%s on :%d (pid %d)", probes.KindName(e.Kind), e.Port, e.PID)
}
