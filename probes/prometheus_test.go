package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// promTestServer answers every query with a fixture file and a status code, recording the
// requests it saw.
type promTestServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
	forms    []map[string][]string
}

func newPromTestServer(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *promTestServer {
	t.Helper()
	s := &promTestServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		s.mu.Lock()
		s.requests = append(s.requests, r)
		s.forms = append(s.forms, r.Form)
		s.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func promServeFixture(tb testing.TB, name string, code int) func(http.ResponseWriter, *http.Request) {
	body := metricsTestFixture(tb, name)
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(name, ".json") {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		w.WriteHeader(code)
		w.Write(body)
	}
}

func newTestPrometheus(t *testing.T, o PrometheusOptions) *Prometheus {
	t.Helper()
	p, err := NewPrometheus(o)
	if err != nil {
		t.Fatalf("NewPrometheus(%q) = %v", o.URL, err)
	}
	return p
}

func TestPrometheusQueryFixtures(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		code    int
		rangeQ  bool
		series  int
		check   func(t *testing.T, r PromResult)
		wantErr string
	}{
		{name: "instant vector of two DP servers", fixture: "prom_query_vector_vllm_dp2.json", code: 200, series: 48,
			check: func(t *testing.T, r PromResult) {
				s := r.Series[0]
				if len(s.Samples) != 1 || s.Samples[0].T != 1795968503.833 {
					t.Errorf("first series samples = %v; want one sample at 1795968503.833", s.Samples)
				}
			}},
		{name: "query_range matrix", fixture: "prom_query_range_matrix_vllm.json", code: 200, rangeQ: true, series: 9,
			check: func(t *testing.T, r PromResult) {
				for _, s := range r.Series {
					if len(s.Samples) != 6 {
						t.Errorf("%v has %d samples; want 6", s.Labels, len(s.Samples))
					}
				}
			}},
		{name: "range selector gives raw samples", fixture: "prom_query_rangevector_node_disk.json", code: 200, series: 1,
			check: func(t *testing.T, r PromResult) {
				s := r.Series[0]
				if s.Labels["device"] != "vda" || len(s.Samples) != 10 || s.Samples[0].T != 1795968494.122 {
					t.Errorf("disk series = %v with %d samples; want device vda, 10 samples from 1795968494.122", s.Labels, len(s.Samples))
				}
			}},
		{name: "node_exporter filesystems", fixture: "prom_query_vector_node_filesystem.json", code: 200, series: 4},
		{name: "scalar", fixture: "prom_query_scalar.json", code: 200, series: 1,
			check: func(t *testing.T, r PromResult) {
				if v := r.Series[0].Samples[0].V; v != 400 {
					t.Errorf("scalar = %g; want 400", v)
				}
			}},
		{name: "string result", fixture: "prom_query_string.json", code: 200, wantErr: `unexpected value type "string"`},
		{name: "bad query", fixture: "prom_query_error_bad_data.json", code: 400, wantErr: "bad query sum(rate(vllm:generation_tokens_total{run=\"synth-25k\"}[5m]): invalid parameter"},
		{name: "unauthorized", fixture: "prom_unauthorized_basic_auth.txt", code: 401, wantErr: "client error: 401: check the credentials"},
		{name: "wrong path", fixture: "prom_unauthorized_basic_auth.txt", code: 404, wantErr: "is this the Prometheus base URL"},
		{name: "server error", fixture: "prom_unauthorized_basic_auth.txt", code: 503, wantErr: "server error: 503: Unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newPromTestServer(t, promServeFixture(t, tt.fixture, tt.code))
			p := newTestPrometheus(t, PrometheusOptions{URL: srv.URL})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			const q = `sum(rate(vllm:generation_tokens_total{run="synth-25k"}[5m])`
			var r PromResult
			var err error
			if tt.rangeQ {
				end := time.Unix(1795968503, 0)
				r, err = p.QueryRange(ctx, q, end.Add(-10*time.Second), end, 2*time.Second)
			} else {
				r, err = p.Query(ctx, q, time.Time{})
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Query(%s) = %v; want an error containing %q", tt.fixture, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), srv.URL) {
					t.Errorf("error %q does not name the server %s", err, srv.URL)
				}
				return
			}
			if err != nil {
				t.Fatalf("Query(%s) = %v", tt.fixture, err)
			}
			if len(r.Series) != tt.series || r.Truncated != "" {
				t.Fatalf("Query(%s) = %d series (truncated %q); want %d", tt.fixture, len(r.Series), r.Truncated, tt.series)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

var promTestDuration = regexp.MustCompile(`^([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?$`)

func TestPrometheusSendsQueryAndDeadline(t *testing.T) {
	srv := newPromTestServer(t, promServeFixture(t, "prom_query_scalar.json", 200))
	p := newTestPrometheus(t, PrometheusOptions{URL: srv.URL + "/prom/", MaxSeries: 50})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	at := time.Unix(1795968503, 500_000_000)
	if _, err := p.Query(ctx, "up", at); err != nil {
		t.Fatal(err)
	}
	if _, err := p.QueryRange(ctx, "up", at.Add(-time.Minute), at, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	want := []struct{ path, query, time, step string }{
		{"/prom/api/v1/query", "up", "1795968503.5", ""},
		{"/prom/api/v1/query_range", "up", "", "15"},
	}
	for i, w := range want {
		r, f := srv.requests[i], srv.forms[i]
		get := func(k string) string {
			if len(f[k]) == 0 {
				return ""
			}
			return f[k][0]
		}
		if r.URL.Path != w.path || get("query") != w.query || get("time") != w.time || get("step") != w.step {
			t.Errorf("request %d = %s query=%q time=%q step=%q; want %s %q %q %q", i, r.URL.Path, get("query"), get("time"), get("step"), w.path, w.query, w.time, w.step)
		}
		if get("limit") != "51" {
			t.Errorf("request %d limit = %q; want 51 (MaxSeries+1)", i, get("limit"))
		}
		// Prometheus parses whole numbers of units only (model.ParseDuration); "2.999s" is a bad query.
		if to := get("timeout"); !promTestDuration.MatchString(to) {
			t.Errorf("request %d timeout = %q; want a duration Prometheus parses, so the server stops when we stop waiting", i, to)
		}
	}
}

func TestPrometheusCredentials(t *testing.T) {
	const token, user, pass = "tok-s3cret", "runwatch", "pa55-s3cret"
	tests := []struct {
		name string
		o    PrometheusOptions
		want string
	}{
		{"bearer", PrometheusOptions{BearerToken: token}, "Bearer " + token},
		{"basic", PrometheusOptions{Username: user, Password: pass}, "Basic cnVud2F0Y2g6cGE1NS1zM2NyZXQ="},
		{"none", PrometheusOptions{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			srv := newPromTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				got = r.Header.Get("Authorization")
				if got != tt.want {
					promServeFixture(t, "prom_unauthorized_basic_auth.txt", 401)(w, r)
					return
				}
				promServeFixture(t, "prom_query_scalar.json", 200)(w, r)
			})
			o := tt.o
			o.URL = srv.URL
			p := newTestPrometheus(t, o)
			if _, err := p.Query(context.Background(), "up", time.Time{}); err != nil {
				t.Fatalf("Query with %s credentials = %v (Authorization %q)", tt.name, err, got)
			}
			if got != tt.want {
				t.Errorf("Authorization = %q; want %q", got, tt.want)
			}
		})
	}

	t.Run("wrong credentials never show in the error", func(t *testing.T) {
		srv := newPromTestServer(t, promServeFixture(t, "prom_unauthorized_basic_auth.txt", 401))
		u := strings.Replace(srv.URL, "http://", "http://"+user+":"+pass+"@", 1)
		for _, o := range []PrometheusOptions{{URL: srv.URL, BearerToken: token}, {URL: u}} {
			p := newTestPrometheus(t, o)
			_, err := p.Query(context.Background(), "up", time.Time{})
			if err == nil {
				t.Fatal("Query with wrong credentials = nil; want an error")
			}
			for _, secret := range []string{token, pass} {
				if strings.Contains(err.Error(), secret) || strings.Contains(p.URL(), secret) {
					t.Errorf("error %q or URL %q shows a secret", err, p.URL())
				}
			}
		}
	})

	t.Run("never shown when the server echoes them", func(t *testing.T) {
		// A proxy in front of Prometheus that names the credential it refused, in a short plain
		// body or in an API error: either is quoted in the error, and the credential must not be.
		echo := func(w http.ResponseWriter, r *http.Request) string {
			if _, p, ok := r.BasicAuth(); ok {
				return p
			}
			return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		bodies := map[string]func(w http.ResponseWriter, r *http.Request){
			"plain 400": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, "bad credential "+echo(w, r))
			},
			"API error": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnprocessableEntity)
				fmt.Fprintf(w, `{"status":"error","errorType":"execution","error":"tenant for %s not found"}`, echo(w, r))
			},
		}
		for name, h := range bodies {
			srv := newPromTestServer(t, h)
			inURL := strings.Replace(srv.URL, "http://", "http://"+user+":"+pass+"@", 1)
			for _, o := range []PrometheusOptions{{URL: srv.URL, BearerToken: token}, {URL: srv.URL, Username: user, Password: pass}, {URL: inURL}} {
				_, err := newTestPrometheus(t, o).Query(context.Background(), "up", time.Time{})
				if err == nil {
					t.Fatalf("%s: Query = nil; want an error", name)
				}
				if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), pass) {
					t.Errorf("%s: Query = %q; want the credential redacted", name, err)
				}
			}
		}
	})

	t.Run("not sent to another host on redirect", func(t *testing.T) {
		var leaked string
		other := newPromTestServer(t, func(w http.ResponseWriter, r *http.Request) {
			leaked = r.Header.Get("Authorization")
			promServeFixture(t, "prom_query_scalar.json", 200)(w, r)
		})
		srv := newPromTestServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path+"?"+r.Form.Encode(), http.StatusFound)
		})
		p := newTestPrometheus(t, PrometheusOptions{URL: srv.URL, BearerToken: token})
		p.Query(context.Background(), "up", time.Time{})
		if leaked != "" {
			t.Errorf("the redirect target got Authorization %q", leaked)
		}
	})

	t.Run("both kinds", func(t *testing.T) {
		_, err := NewPrometheus(PrometheusOptions{URL: "http://127.0.0.1:9090", BearerToken: token, Username: user})
		if err == nil {
			t.Error("NewPrometheus with a token and a username = nil error; want one")
		}
	})
}

func TestNewPrometheusRejectsURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:9090", "ftp://x", "http://"} {
		if _, err := NewPrometheus(PrometheusOptions{URL: u}); err == nil {
			t.Errorf("NewPrometheus(%q) = nil error; want one", u)
		}
	}
}

func TestPrometheusDeadOrSlow(t *testing.T) {
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()

	release := make(chan struct{})
	slow := newPromTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)

	tests := []struct {
		name     string
		url      string
		deadline bool
	}{
		{"dead", dead, false},
		{"slow", slow.URL, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestPrometheus(t, PrometheusOptions{URL: tt.url})
			// Only the slow server meets the deadline; a refused connection must not race it.
			deadline := time.Minute
			if tt.deadline {
				deadline = 200 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			_, err := p.Query(ctx, "up", time.Time{})
			if err == nil || !strings.Contains(err.Error(), tt.url) {
				t.Fatalf("Query(%s) = %v; want an error naming %s", tt.name, err, tt.url)
			}
			if errors.Is(err, context.DeadlineExceeded) != tt.deadline {
				t.Errorf("Query(%s) = %v; errors.Is(DeadlineExceeded) = %v, want %v", tt.name, err, !tt.deadline, tt.deadline)
			}
		})
	}
}

func TestPrometheusBodyLimit(t *testing.T) {
	srv := newPromTestServer(t, promServeFixture(t, "prom_query_vector_vllm_dp2.json", 200))
	tests := []struct {
		max     int64
		wantErr bool
	}{
		{1 << 10, true},
		{1 << 20, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			p := newTestPrometheus(t, PrometheusOptions{URL: srv.URL, MaxBody: tt.max})
			_, err := p.Query(context.Background(), "up", time.Time{})
			if got := errors.Is(err, ErrPromTooLarge); got != tt.wantErr {
				t.Errorf("Query with MaxBody %d = %v; want ErrPromTooLarge %v", tt.max, err, tt.wantErr)
			}
		})
	}
}

func TestPrometheusConcurrencyBound(t *testing.T) {
	var mu sync.Mutex
	inFlight, most := 0, 0
	srv := newPromTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		promServeFixture(t, "prom_query_scalar.json", 200)(w, r)
	})
	p := newTestPrometheus(t, PrometheusOptions{URL: srv.URL, MaxConcurrent: 2})
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Query(context.Background(), "up", time.Time{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if most > 2 {
		t.Errorf("%d queries were in flight at once; want at most 2", most)
	}
}

func TestPromConvertLimits(t *testing.T) {
	stream := func(name string, n int) *model.SampleStream {
		s := &model.SampleStream{Metric: model.Metric{"__name__": model.LabelValue(name)}}
		for i := range n {
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.Time(i * 1000), Value: model.SampleValue(i)})
		}
		return s
	}
	vec := model.Vector{
		{Metric: model.Metric{"__name__": "c"}, Value: 3, Timestamp: 1000},
		{Metric: model.Metric{"__name__": "a"}, Value: 1, Timestamp: 1000},
		{Metric: model.Metric{"__name__": "b"}, Value: 2, Timestamp: 1000},
	}
	tests := []struct {
		name                  string
		v                     model.Value
		maxSeries, maxSamples int
		wantNames             string
		wantTruncated         bool
	}{
		{"vector within limits keeps the server's order", vec, 10, 10, "c a b", false},
		{"vector over series limit keeps the first by labels", vec, 2, 10, "a b", true},
		{"vector over sample limit", vec, 10, 1, "a", true},
		{"matrix within limits", model.Matrix{stream("b", 5), stream("a", 5)}, 10, 10, "b a", false},
		{"matrix over sample limit keeps whole series", model.Matrix{stream("b", 5), stream("a", 5), stream("c", 1)}, 10, 7, "a", true},
		{"matrix over series limit", model.Matrix{stream("b", 1), stream("a", 1)}, 1, 10, "a", true},
		{"no result", nil, 10, 10, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := PromConvert(tt.v, tt.maxSeries, tt.maxSamples)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range r.Series {
				names = append(names, s.Labels["__name__"])
			}
			if got := strings.Join(names, " "); got != tt.wantNames || (r.Truncated != "") != tt.wantTruncated {
				t.Errorf("PromConvert(%s, %d, %d) = %q truncated %q; want %q truncated %v", tt.v, tt.maxSeries, tt.maxSamples, got, r.Truncated, tt.wantNames, tt.wantTruncated)
			}
		})
	}
}

func TestPromEngines(t *testing.T) {
	srv := newPromTestServer(t, promServeFixture(t, "prom_query_vector_vllm_dp2.json", 200))
	p := newTestPrometheus(t, PrometheusOptions{URL: srv.URL})
	r, err := p.Query(context.Background(), "x", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	got := PromEnginesByInstance(r.Series)
	nan := math.NaN()
	// The sums of the fixture's series per instance (two data-parallel engines each).
	want := map[string]Engine{
		"127.0.0.1:18000": {Kind: "vllm", Engines: 2, Running: 200, Waiting: 56, KVCacheUsage: 1.0113427466249152 / 2,
			GenerationTokens: 259520, PromptTokens: 208442, RequestsFinished: 383,
			FinishedByReason: map[string]float64{"stop": 383, "length": 0, "abort": 0},
			FinishedLenSum:   162649, FinishedLenCount: 383, GenThroughput: nan, StartTime: 1750000000},
		"127.0.0.1:18001": {Kind: "vllm", Engines: 2, Running: 200, Waiting: 56, KVCacheUsage: 1.01179200957989 / 2,
			GenerationTokens: 253510, PromptTokens: 191884, RequestsFinished: 350,
			FinishedByReason: map[string]float64{"stop": 350, "length": 0, "abort": 0},
			FinishedLenSum:   156565, FinishedLenCount: 350, GenThroughput: nan, StartTime: 1750000000},
	}
	if len(got) != len(want) {
		t.Fatalf("PromEngines = %d instances; want %d", len(got), len(want))
	}
	for inst, w := range want {
		w.URL = inst
		if g := got[inst]; !metricsTestSame(g, w) || g.URL != inst {
			t.Errorf("PromEngines[%s] = %+v; want %+v", inst, g, w)
		}
	}
}

func TestPromEngineNames(t *testing.T) {
	names := PromEngineNames()
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	for _, n := range []string{"vllm:generation_tokens_total", "vllm:request_success_total", "vllm:num_requests_running",
		"vllm:request_generation_tokens_sum", "vllm:request_generation_tokens_count", "sglang:num_running_reqs",
		"tgi_request_generated_tokens_sum", "tgi_request_success", "process_start_time_seconds"} {
		if !have[n] {
			t.Errorf("PromEngineNames() lacks %s", n)
		}
	}
	for _, n := range []string{"vllm:generation_tokens", "vllm:request_generation_tokens", "vllm:request_generation_tokens_bucket"} {
		if have[n] {
			t.Errorf("PromEngineNames() lists %s, which Prometheus does not store", n)
		}
	}
}

func TestPromProgressNames(t *testing.T) {
	got := strings.Join(PromProgressNames(), " ")
	for _, n := range []string{"vllm:generation_tokens_total", "vllm:request_success_total", "vllm:num_requests_running",
		"vllm:num_requests_waiting", "vllm:generation_tokens_created", "process_start_time_seconds",
		"tgi_request_generated_tokens_sum", "sglang:e2e_request_latency_seconds_count"} {
		if !strings.Contains(" "+got+" ", " "+n+" ") {
			t.Errorf("PromProgressNames() lacks %s", n)
		}
	}
	for _, n := range []string{"vllm:kv_cache_usage_perc", "vllm:prompt_tokens_total", "vllm:num_preemptions_total"} {
		if strings.Contains(" "+got+" ", " "+n+" ") {
			t.Errorf("PromProgressNames() lists %s, which progress does not need", n)
		}
	}
}

func TestPromRate(t *testing.T) {
	steady := func(from, to, every, perS float64) []PromSample {
		var s []PromSample
		for x := from; x <= to; x += every {
			s = append(s, PromSample{T: x, V: perS * x})
		}
		return s
	}
	tests := []struct {
		name    string
		samples []PromSample
		want    float64
		ok      bool
	}{
		{"steady over the whole window", steady(0, 300, 15, 100), 100, true},
		// A series 60 s old, asked for over 5 m: rate() would divide 60 s worth by 300 s.
		{"young series", steady(240, 300, 15, 100), 100, true},
		{"reset in between", []PromSample{{0, 1000}, {10, 2000}, {20, 500}, {30, 1500}}, (1000 + 500 + 1000) / 30.0, true},
		{"one sample", []PromSample{{0, 5}}, 0, false},
		{"no time between", []PromSample{{5, 5}, {5, 6}}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := PromRate(tt.samples)
			if ok != tt.ok || math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("PromRate(%v) = %g, %v; want %g, %v", tt.samples, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// promStubTransport answers every request with one body, without a network.
type promStubTransport struct {
	code int
	body []byte
}

func (s promStubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: s.code, Status: http.StatusText(s.code), Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(s.body)), Request: r}, nil
}

func FuzzPrometheusAnswer(f *testing.F) {
	for _, name := range []string{"prom_query_vector_vllm_dp2.json", "prom_query_range_matrix_vllm.json",
		"prom_query_rangevector_node_disk.json", "prom_query_scalar.json", "prom_query_string.json", "prom_query_error_bad_data.json"} {
		f.Add(metricsTestFixture(f, name))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := NewPrometheus(PrometheusOptions{URL: "http://prometheus.invalid", Client: &http.Client{Transport: promStubTransport{200, body}},
			MaxSeries: 5, MaxSamples: 20, MaxBody: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.Query(context.Background(), "up", time.Time{})
		if err != nil {
			return
		}
		samples := 0
		for _, s := range r.Series {
			samples += len(s.Samples)
		}
		if len(r.Series) > 5 || samples > 20 {
			t.Errorf("answer of %d series, %d samples exceeds the limits", len(r.Series), samples)
		}
		PromEnginesByInstance(r.Series)
	})
}

// TestPromConvertRefusesAbsurdLabels gives answers with a label value past PromMaxLabelBytes (a
// 1 MB instance name made a 1 MB status answer) or more than MetricsMaxLabels labels: the answer
// is refused with ErrAbsurdSeries, naming the label, as a direct scrape refuses such a line.
func TestPromConvertRefusesAbsurdLabels(t *testing.T) {
	big := model.LabelValue(strings.Repeat("<!channel>", PromMaxLabelBytes/10+1))
	many := model.Metric{"__name__": "up"}
	for i := range MetricsMaxLabels + 1 {
		many[model.LabelName(fmt.Sprintf("l%d", i))] = "v"
	}
	tests := []struct {
		name string
		v    model.Value
		want string
	}{
		{"vector, long instance", model.Vector{{Metric: model.Metric{"__name__": "up", "instance": big}, Value: 1}}, `label "instance"`},
		{"matrix, long instance", model.Matrix{{Metric: model.Metric{"__name__": "up", "instance": big}, Values: []model.SamplePair{{Value: 1}}}}, `label "instance"`},
		{"vector, many labels", model.Vector{{Metric: many, Value: 1}}, "labels (limit 128)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := PromConvert(tt.v, 10, 10)
			if !errors.Is(err, ErrAbsurdSeries) || !strings.Contains(err.Error(), tt.want) || len(err.Error()) > 300 {
				t.Errorf("PromConvert(%s) = %d series, %.300v; want ErrAbsurdSeries naming %s, in a short message", tt.name, len(r.Series), err, tt.want)
			}
		})
	}
	if _, err := PromConvert(model.Vector{{Metric: model.Metric{"__name__": "up", "instance": model.LabelValue(strings.Repeat("h", PromMaxLabelBytes))}, Value: 1}}, 10, 10); err != nil {
		t.Errorf("PromConvert(a %d-byte label) = %v; want it kept", PromMaxLabelBytes, err)
	}
}

// closeCancels is a transport whose response bodies end ctx when they are closed: the answer is in
// by the deadline, and the deadline passes while it is parsed.
type closeCancels struct{ cancel context.CancelFunc }

func (c closeCancels) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		resp.Body = cancelOnClose{resp.Body, c.cancel}
	}
	return resp, err
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// TestPrometheusParsedPastTheDeadline: decoding an answer and cutting it to the limits take their
// time after the body is in (a 15 MiB matrix of 118,000 series took 1.0-2.4 s on this machine past a
// 2 s probe timeout, and came back as a success). An answer whose deadline passes while it is parsed
// is the probe's failure, named as such, not a late answer.
func TestPrometheusParsedPastTheDeadline(t *testing.T) {
	srv := newPromTestServer(t, promServeFixture(t, "prom_query_vector_vllm_dp2.json", 200))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newTestPrometheus(t, PrometheusOptions{URL: srv.URL, Client: &http.Client{Transport: closeCancels{cancel}}})
	res, err := p.Query(ctx, "vllm:num_requests_running", time.Time{})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "before its answer was parsed") || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("Query(parsed past its deadline) = %d series, %v; want an error naming %s and the parse cut short", len(res.Series), err, srv.URL)
	}
	// The same answer within its deadline is an answer.
	p = newTestPrometheus(t, PrometheusOptions{URL: srv.URL})
	if res, err := p.Query(context.Background(), "vllm:num_requests_running", time.Time{}); err != nil || len(res.Series) == 0 {
		t.Errorf("Query = %d series, %v; want the fixture's series", len(res.Series), err)
	}
}
