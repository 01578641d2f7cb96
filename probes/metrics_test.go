package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runwatch/internal/testkit/fake"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func metricsTestFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// metricsTestSame compares two Engines, treating NaN as equal to NaN.
func metricsTestSame(got, want Engine) bool {
	eq := func(a, b float64) bool {
		return (math.IsNaN(a) && math.IsNaN(b)) || math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
	}
	return got.Kind == want.Kind && got.Engines == want.Engines &&
		eq(got.Running, want.Running) && eq(got.Waiting, want.Waiting) &&
		eq(got.KVCacheUsage, want.KVCacheUsage) && eq(got.GenerationTokens, want.GenerationTokens) &&
		eq(got.PromptTokens, want.PromptTokens) && eq(got.RequestsFinished, want.RequestsFinished) &&
		maps.Equal(got.FinishedByReason, want.FinishedByReason) &&
		eq(got.FinishedLenSum, want.FinishedLenSum) && eq(got.FinishedLenCount, want.FinishedLenCount) &&
		eq(got.Preemptions, want.Preemptions) && eq(got.GenThroughput, want.GenThroughput) &&
		eq(got.StartTime, want.StartTime) && len(got.Skipped) == len(want.Skipped)
}

func TestParseMetricsFixtures(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		file string
		want Engine
	}{
		{"vllm_v1_metrics_docs_design_example.txt", Engine{
			Kind: "vllm", Engines: 1, Running: 8, KVCacheUsage: nan,
			GenerationTokens: 27453, PromptTokens: nan, RequestsFinished: 132,
			FinishedByReason: map[string]float64{"stop": 1, "length": 131, "abort": 0},
			FinishedLenSum:   nan, FinishedLenCount: nan, GenThroughput: nan,
			Skipped: make([]string, 3), // the docs' "..." elisions
		}},
		{"vllm_v0_metrics_opt125m_datadog.txt", Engine{
			Kind: "vllm-v0", Engines: 1, KVCacheUsage: 0,
			GenerationTokens: 7, PromptTokens: 5, RequestsFinished: 1,
			FinishedByReason: map[string]float64{"length": 1},
			FinishedLenSum:   7, FinishedLenCount: 1, GenThroughput: 0, StartTime: 1.7181405583e+09,
		}},
		{"vllm_v1_metrics_dp2_constructed.txt", Engine{
			Kind: "vllm", Engines: 2, Running: 256 + 251, Waiting: 581 + 575, KVCacheUsage: (0.9125 + 0.8875) / 2,
			GenerationTokens: 3.1002437e+07 + 3.0876112e+07, PromptTokens: 1.2034567e+07 + 1.1987654e+07,
			RequestsFinished: 15216 + 15178,
			FinishedByReason: map[string]float64{"stop": 14010 + 13987, "length": 1203 + 1190, "abort": 3 + 1},
			FinishedLenSum:   3.1002437e7 - 2.0e5 + 3.0876112e7 - 1.9e5, FinishedLenCount: 15216 + 15178,
			Preemptions: 12 + 7, GenThroughput: nan, StartTime: 1.7644201231873221e+09,
		}},
		{"sglang_metrics_llama31_8b_docs.txt", Engine{
			Kind: "sglang", Engines: 1, Running: 162, Waiting: 2826, KVCacheUsage: 0.28,
			GenerationTokens: 7.557572e+06, PromptTokens: 8.128902e+06, RequestsFinished: 11228,
			FinishedLenSum: nan, FinishedLenCount: nan, GenThroughput: 86.50814177726902,
		}},
		{"tgi_metrics_datadog_payload_excerpt.txt", Engine{
			Kind: "tgi", Engines: 1, KVCacheUsage: nan,
			GenerationTokens: 3423, PromptTokens: 662, RequestsFinished: 109,
			FinishedLenSum: 3423, FinishedLenCount: 109, GenThroughput: nan,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ParseMetrics(bytes.NewReader(metricsTestFixture(t, tt.file)))
			if err != nil || !metricsTestSame(got, tt.want) {
				t.Errorf("ParseMetrics(%s) = %+v, %v;\nwant %+v", tt.file, got, err, tt.want)
			}
		})
	}
}

func TestParseMetricsNamesSkippedLines(t *testing.T) {
	got, err := ParseMetrics(bytes.NewReader(metricsTestFixture(t, "vllm_v1_metrics_docs_design_example.txt")))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`line 4: invalid metric name: "..."`, `line 8: invalid metric name: "..."`, `line 14: invalid metric name: "..."`}
	if strings.Join(got.Skipped, "\n") != strings.Join(want, "\n") {
		t.Errorf("ParseMetrics(docs example).Skipped = %q; want %q", got.Skipped, want)
	}
}

func TestParseMetricsVariants(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name    string
		body    string
		want    Engine
		wantErr string
	}{
		{
			name: "openmetrics counters and created",
			body: "# TYPE vllm:generation_tokens counter\n" +
				"# HELP vllm:generation_tokens Number of generation tokens processed.\n" +
				"vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 120.0\n" +
				"vllm:generation_tokens_created{engine=\"0\",model_name=\"m\"} 1.75e+09\n" +
				"# TYPE vllm:num_requests_running gauge\n" +
				"vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n" +
				"# TYPE vllm:request_success counter\n" +
				"vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"} 4.0\n" +
				"vllm:request_success_created{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"} 1.76e+09\n" +
				"# EOF\n",
			want: Engine{Kind: "vllm", Engines: 1, Running: 3, KVCacheUsage: nan, GenerationTokens: 120, PromptTokens: nan,
				RequestsFinished: 4, FinishedByReason: map[string]float64{"stop": 4},
				FinishedLenSum: nan, FinishedLenCount: nan, GenThroughput: nan, StartTime: 1.75e9},
		},
		{
			name: "openmetrics info type is skipped, not fatal",
			body: "# TYPE vllm:cache_config info\n" +
				"vllm:cache_config_info{block_size=\"16\"} 1\n" +
				"vllm:num_requests_waiting 2\n",
			want: Engine{Kind: "vllm", Engines: 1, Waiting: 2, KVCacheUsage: nan, GenerationTokens: nan, PromptTokens: nan,
				RequestsFinished: nan, FinishedLenSum: nan, FinishedLenCount: nan, GenThroughput: nan, Skipped: make([]string, 1)},
		},
		{
			name: "histogram without TYPE line",
			body: "vllm:request_generation_tokens_sum{model_name=\"m\"} 700\n" +
				"vllm:request_generation_tokens_count{model_name=\"m\"} 7\n" +
				"vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n",
			want: Engine{Kind: "vllm", Engines: 1, KVCacheUsage: 0.5, GenerationTokens: 700, PromptTokens: nan,
				RequestsFinished: nan, FinishedLenSum: 700, FinishedLenCount: 7, GenThroughput: nan},
		},
		{
			name: "no trailing newline",
			body: "sglang:num_running_reqs 4",
			want: Engine{Kind: "sglang", Engines: 1, Running: 4, KVCacheUsage: nan, GenerationTokens: nan, PromptTokens: nan,
				RequestsFinished: nan, FinishedLenSum: nan, FinishedLenCount: nan, GenThroughput: nan},
		},
		{
			name: "unknown exporter",
			body: "# TYPE node_load1 gauge\nnode_load1 0.5\n",
			want: Engine{KVCacheUsage: nan, GenerationTokens: nan, PromptTokens: nan,
				RequestsFinished: nan, FinishedLenSum: nan, FinishedLenCount: nan, GenThroughput: nan},
		},
		{
			name: "empty body",
			body: "",
			want: Engine{KVCacheUsage: nan, GenerationTokens: nan, PromptTokens: nan,
				RequestsFinished: nan, FinishedLenSum: nan, FinishedLenCount: nan, GenThroughput: nan},
		},
		{name: "garbage", body: "hello world\n", wantErr: `not Prometheus text: no valid metric (1 line invalid, the first at line 1;`},
		{name: "html page", body: strings.Repeat("<div>nope</div>\n", 40), wantErr: "not Prometheus text: more than 20 invalid lines, the first at line 1 "},
		{name: "json", body: `{"error": "not found"}`, wantErr: "not Prometheus text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMetrics(strings.NewReader(tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ParseMetrics(%q) = %+v, %v; want error containing %q", tt.body, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !metricsTestSame(got, tt.want) {
				t.Errorf("ParseMetrics(%q) = %+v, %v;\nwant %+v", tt.body, got, err, tt.want)
			}
		})
	}
}

// TestScrapeCountersAdvance scrapes a busy engine (fake.Replay: the third-party simulator's recorded
// /metrics, moving on by the recorded pace each scrape) under each Content-Type an endpoint may give.
func TestScrapeCountersAdvance(t *testing.T) {
	// The recording: 13,326 generated tokens and 145 finished requests at the first scrape, then
	// fake.RecordedTokensPerScrape tokens and 51 requests more at each.
	const tokens0, finished0, finishedStep = 13326, 145, 51
	for _, ct := range []string{"text/plain; version=0.0.4; charset=utf-8", "application/openmetrics-text; version=1.0.0; charset=utf-8", "application/octet-stream", ""} {
		t.Run(ct, func(t *testing.T) {
			engine := fake.NewReplay(t, fake.VLLMOptions{})
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", ct)
				w.Write(engine.Body(int(n.Add(1))))
			}))
			t.Cleanup(srv.Close)
			m := NewMetrics(srv.Client(), 0)
			var prev Engine
			for i := 1; i <= 3; i++ {
				e, err := m.Scrape(context.Background(), srv.URL+"/metrics")
				if err != nil {
					t.Fatalf("Scrape #%d: %v", i, err)
				}
				wantTokens, wantFinished := tokens0+float64(i-1)*fake.RecordedTokensPerScrape, float64(finished0+finishedStep*(i-1))
				if e.GenerationTokens != wantTokens || e.RequestsFinished != wantFinished || e.URL != srv.URL+"/metrics" || e.Kind != "vllm" {
					t.Fatalf("Scrape #%d = %+v; want %g tokens, %g finished", i, e, wantTokens, wantFinished)
				}
				if i > 1 && e.GenerationTokens <= prev.GenerationTokens {
					t.Errorf("Scrape #%d: counter went from %v to %v", i, prev.GenerationTokens, e.GenerationTokens)
				}
				prev = e
			}
		})
	}
}

func TestScrapeErrors(t *testing.T) {
	const limit = 1 << 10
	handler := func(status int, contentType, body string, delay time.Duration) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if delay > 0 {
				select {
				case <-time.After(delay):
				case <-r.Context().Done():
					return
				}
			}
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		})
	}
	// Answers at once, then drips a comment line every 10 ms for ever: only the deadline ends it.
	trickle := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("vllm:num_requests_running 1\n"))
		for {
			if _, err := w.Write([]byte("# .\n")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(10 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	tests := []struct {
		name    string
		h       http.Handler
		ctx     time.Duration
		want    string
		wantErr error
		answers bool // the server answered, not with metrics (ErrNotMetrics): up, unlike a refusal or a deadline
	}{
		{"body that never ends", trickle, 100 * time.Millisecond, "read body: context deadline exceeded", context.DeadlineExceeded, false},
		{"server error", handler(500, "text/plain", "engine dead", 0), 0, "HTTP 500 Internal Server Error", nil, true},
		{"not found", handler(404, "text/plain", "404 page not found", 0), 0, "HTTP 404 Not Found", nil, true},
		{"slow server", handler(200, "text/plain", "vllm:num_requests_running 1\n", 5*time.Second), 50 * time.Millisecond, "context deadline exceeded", context.DeadlineExceeded, false},
		{"garbage body", handler(200, "text/plain", "\x00\x01\x02 binary junk\n", 0), 0, "not Prometheus text", nil, true},
		{"html", handler(200, "text/html; charset=utf-8", "<html></html>", 0), 0, `content type "text/html; charset=utf-8" is not Prometheus text`, nil, true},
		{"json", handler(200, "application/json", `{"running": 1}`, 0), 0, `content type "application/json" is not Prometheus text`, nil, true},
		{"binary junk served as a file", handler(200, "application/octet-stream", "\x00\x01\x02 binary junk\n", 0), 0, "not Prometheus text", nil, true},
		{"oversized body", handler(200, "text/plain", strings.Repeat("vllm:num_requests_running 1\n", limit), 0), 0, "body larger than 1 KiB", nil, true},
		{"redirect to another host", http.RedirectHandler("http://login.example.invalid/", http.StatusFound), 0, "redirected to", ErrRedirectRefused, true},
		{"bad label value", handler(200, "text/plain", "vllm:num_requests_running{engine=\"0\\q\"} 1\n", 0), 0, "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.h)
			defer srv.Close()
			ctx := context.Background()
			if tt.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctx)
				defer cancel()
			}
			url := srv.URL + "/metrics"
			_, err := NewMetrics(srv.Client(), limit).Scrape(ctx, url)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "scrape "+url+": ") {
				t.Errorf("Scrape(%s) = %v; want an error naming the URL and %q", tt.name, err, tt.want)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Scrape(%s) = %v; want errors.Is %v", tt.name, err, tt.wantErr)
			}
			if got := errors.Is(err, ErrNotMetrics); got != tt.answers {
				t.Errorf("Scrape(%s) = %v; errors.Is(err, ErrNotMetrics) = %v, want %v", tt.name, err, got, tt.answers)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(handler(200, "text/plain", "", 0))
		url := srv.URL + "/metrics"
		srv.Close()
		_, err := NewMetrics(nil, limit).Scrape(context.Background(), url)
		if err == nil || errors.Is(err, ErrNotMetrics) {
			t.Errorf("Scrape(closed server) = %v; want an error that is not ErrNotMetrics", err)
		}
	})
}

func TestScrapeHidesPassword(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "http://bot:s3cret@", 1) + "/metrics"
	e, err := NewMetrics(srv.Client(), 0).Scrape(context.Background(), url)
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(e.URL, "s3cret") || !strings.Contains(err.Error(), "401") {
		t.Errorf("Scrape(url with password) = %q, %v; want a 401 error without the password", e.URL, err)
	}
}

func TestScrapeDefaultLimit(t *testing.T) {
	big := strings.Repeat("# padding comment line to grow the body past eight mebibytes\n", (8<<20)/60+10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, big)
	}))
	defer srv.Close()
	_, err := NewMetrics(srv.Client(), 0).Scrape(context.Background(), srv.URL)
	if err == nil || !strings.HasSuffix(err.Error(), "body larger than 8 MiB") {
		t.Errorf("Scrape(9 MiB body) = %v; want body larger than 8 MiB", err)
	}
}

// metricsTestBig builds an exposition of at least size bytes from the real
// vLLM V0 sample, repeating its vllm: series under many model_name values
// (as a router in front of many models would show).
func metricsTestBig(tb testing.TB, size int) []byte {
	tb.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(metricsTestFixture(tb, "vllm_v0_metrics_opt125m_datadog.txt")))
	if err != nil {
		tb.Fatal(err)
	}
	for len(fams["vllm:num_requests_running"].Metric) < 10000 {
		var buf bytes.Buffer
		for _, f := range fams {
			if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
				tb.Fatal(err)
			}
		}
		if buf.Len() >= size {
			return buf.Bytes()
		}
		for name, f := range fams {
			if !strings.HasPrefix(name, "vllm:") {
				continue
			}
			n := len(f.Metric)
			for i := range n {
				c := metricsTestClone(f.Metric[i])
				for _, lp := range c.Label {
					if lp.GetName() == "model_name" {
						v := fmt.Sprintf("%s-%d", lp.GetValue(), len(f.Metric))
						lp.Value = &v
					}
				}
				f.Metric = append(f.Metric, c)
			}
		}
	}
	tb.Fatal("could not grow the exposition")
	return nil
}

func BenchmarkParseMetrics1MiB(b *testing.B) {
	body := metricsTestBig(b, 1<<20)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		e, err := ParseMetrics(bytes.NewReader(body))
		if err != nil || e.Kind != "vllm-v0" || len(e.Skipped) != 0 || e.Engines != 1 {
			b.Fatalf("ParseMetrics = %+v, %v", e, err)
		}
	}
	b.ReportMetric(float64(len(body)), "body-bytes")
}

func FuzzParseMetrics(f *testing.F) {
	for _, name := range []string{
		"vllm_v1_metrics_docs_design_example.txt",
		"vllm_v0_metrics_opt125m_datadog.txt",
		"vllm_v1_metrics_dp2_constructed.txt",
		"sglang_metrics_llama31_8b_docs.txt",
		"tgi_metrics_datadog_payload_excerpt.txt",
	} {
		f.Add(metricsTestFixture(f, name))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := ParseMetrics(bytes.NewReader(body))
		if err != nil {
			return
		}
		switch e.Kind {
		case "vllm", "vllm-v0", "sglang", "tgi", "llamacpp", "trtllm", "trtllm-triton":
			if e.Engines < 1 {
				t.Errorf("ParseMetrics(%q).Engines = %d; want at least 1", body, e.Engines)
			}
		case "":
			if e.Engines != 0 {
				t.Errorf("ParseMetrics(%q).Engines = %d for an unknown exporter", body, e.Engines)
			}
		default:
			t.Errorf("ParseMetrics(%q).Kind = %q", body, e.Kind)
		}
		if len(e.Skipped) > metricsMaxSkipped {
			t.Errorf("ParseMetrics(%q) skipped %d lines without failing", body, len(e.Skipped))
		}
	})
}

// metricsTestClone copies a sample with fresh labels; values are shared.
func metricsTestClone(m *dto.Metric) *dto.Metric {
	c := &dto.Metric{Gauge: m.Gauge, Counter: m.Counter, Untyped: m.Untyped, Histogram: m.Histogram, Summary: m.Summary}
	for _, lp := range m.GetLabel() {
		name, value := lp.GetName(), lp.GetValue()
		c.Label = append(c.Label, &dto.LabelPair{Name: &name, Value: &value})
	}
	return c
}

// TestParseMetricsSkippedLineNumbers checks that a bad line far into the
// body, past lines the parser never sees, is named by its real number.
func TestParseMetricsSkippedLineNumbers(t *testing.T) {
	var b strings.Builder
	b.WriteString("# TYPE python_gc_objects_collected_total counter\n")
	for i := range 30 {
		fmt.Fprintf(&b, "python_gc_objects_collected_total{generation=\"%d\"} 1.0\n", i)
	}
	b.WriteString("vllm:num_requests_running{model_name=\"m\" 3\n") // line 32: unterminated label set
	b.WriteString("vllm:num_requests_waiting{model_name=\"m\"} 5\n")
	got, err := ParseMetrics(strings.NewReader(b.String()))
	if err != nil || got.Waiting != 5 || len(got.Skipped) != 1 || !strings.HasPrefix(got.Skipped[0], "line 32: ") {
		t.Errorf("ParseMetrics(bad line 32) = %+v, %v; want Waiting 5 and line 32 skipped", got, err)
	}
}

func TestMetricAlias(t *testing.T) {
	for name, want := range map[string]string{
		"vllm:num_requests_running":      "running",
		"vllm:gpu_cache_usage_perc":      "kv_cache_usage",
		"vllm:request_success_total":     "requests_finished",
		"sglang:generation_tokens_total": "generation_tokens",
		"sglang:prompt_tokens_total":     "prompt_tokens",
		"sglang:num_requests_total":      "requests_finished",
		"tgi_request_success":            "requests_finished",
		"tgi_queue_size":                 "waiting",
	} {
		if got, ok := MetricAlias(name); !ok || got != want {
			t.Errorf("MetricAlias(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if got, ok := MetricAlias("vllm:request_generation_tokens"); ok {
		t.Errorf("MetricAlias(a histogram) = %q; want none", got)
	}
}
