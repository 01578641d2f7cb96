package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestMetricsSeriesLimits(t *testing.T) {
	labels := func(n int, value string) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf("l%d=%q", i, value))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	tests := []struct {
		name, body string
		refused    bool
	}{
		{"128 labels", "vllm:num_requests_running" + labels(128, "v") + " 1\n", false},
		{"129 labels", "vllm:num_requests_running" + labels(129, "v") + " 1\n", true},
		{"= and } inside values do not count", `vllm:num_requests_running{a="x=y}",b="\"=\""} 1` + "\n", false},
		{"a 64 KiB line", "# HELP x " + strings.Repeat("a", MetricsMaxLineBytes) + "\n", true},
		{"a long line in an unread family", "# HELP x y\nnode_thing{a=\"" + strings.Repeat("a", MetricsMaxLineBytes) + "\"} 1\n", true},
		{"many labels in an unread family are not parsed, so not refused", strings.Repeat("# c\n", 20) + "node_thing" + labels(500, "v") + " 1\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMetrics(strings.NewReader(tt.body))
			if got := errors.Is(err, ErrAbsurdSeries); got != tt.refused {
				t.Errorf("ParseMetrics(%.60q…) = %v; want refused %v", tt.body, err, tt.refused)
			}
		})
	}
}

// TestMetricsImpossibleValues serves counts that no engine can export (NaN, ±Inf, negative, 1e300): each
// is left out of the Engine, which names the metric and the value instead of carrying -Inf
// requests or a negative token count into answers, and the sound samples beside them still count.
func TestMetricsImpossibleValues(t *testing.T) {
	body := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0"} -Inf
vllm:num_requests_running{engine="1"} 4
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting -5
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total NaN
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop"} +Inf
vllm:request_success_total{finished_reason="length"} 7
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc 0.25
# TYPE vllm:request_generation_tokens histogram
vllm:request_generation_tokens_sum -100
vllm:request_generation_tokens_count 3
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total 1e300
`
	e, err := ParseMetrics(strings.NewReader(body))
	if err != nil {
		t.Fatalf("ParseMetrics = %v", err)
	}
	if e.Running != 4 || e.Preemptions != 0 || e.Waiting != 0 || !math.IsNaN(e.GenerationTokens) || e.RequestsFinished != 7 || e.KVCacheUsage != 0.25 {
		t.Errorf("ParseMetrics = running %v, waiting %v, generated %v, finished %v, kv %v; want 4, 0, NaN, 7, 0.25",
			e.Running, e.Waiting, e.GenerationTokens, e.RequestsFinished, e.KVCacheUsage)
	}
	if _, ok := e.FinishedByReason["stop"]; ok {
		t.Errorf("FinishedByReason = %v; want the +Inf stop series left out", e.FinishedByReason)
	}
	if !math.IsNaN(e.FinishedLenSum) {
		t.Errorf("FinishedLenSum = %v; want NaN (the histogram's negative sum left out)", e.FinishedLenSum)
	}
	missing := strings.Join(e.Missing, "\n")
	for _, want := range []string{"vllm:num_requests_running is -Inf", "vllm:num_requests_waiting is -5", "vllm:generation_tokens_total is NaN",
		"vllm:request_success_total is +Inf", "vllm:request_generation_tokens is -100",
		"vllm:num_preemptions_total is 1e+300"} {
		if !strings.Contains(missing, want) {
			t.Errorf("Missing = %q; want it to say %q", e.Missing, want)
		}
	}
	if strings.Contains(missing, "no vllm:generation_tokens_total") {
		t.Errorf("Missing = %q; want the NaN counter named as NaN, not as absent", e.Missing)
	}
}

// TestMetricsFinishReasonsBounded serves 60 finish reasons of 60 KB each (a 3.6 MB status answer
// before) and 10 short ones more frequent than length: the reasons are kept short and few, the rest counted under "other", so the answer stays
// an answer and the totals stay whole.
func TestMetricsFinishReasonsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("# TYPE vllm:request_success_total counter\n")
	b.WriteString("vllm:request_success_total{finished_reason=\"stop\"} 100\nvllm:request_success_total{finished_reason=\"length\"} 10\n")
	for i := range 60 {
		fmt.Fprintf(&b, "vllm:request_success_total{finished_reason=\"%d%s\"} 1\n", i, strings.Repeat("<!channel>", 6000))
	}
	for i := range 10 { // short, and more frequent than length: length is still kept by name
		fmt.Fprintf(&b, "vllm:request_success_total{finished_reason=\"r%d\"} 20\n", i)
	}
	e, err := ParseMetrics(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("ParseMetrics = %v", err)
	}
	total, size := 0.0, 0
	for r, v := range e.FinishedByReason {
		total += v
		size += len(r)
		if len(r) > MetricsMaxReasonBytes {
			t.Errorf("FinishedByReason has a %d-byte reason %.40q…; want at most %d bytes", len(r), r, MetricsMaxReasonBytes)
		}
	}
	if len(e.FinishedByReason) > MetricsMaxReasons+1 {
		t.Errorf("FinishedByReason has %d reasons; want at most %d and other", len(e.FinishedByReason), MetricsMaxReasons)
	}
	if total != 370 || e.FinishedByReason["stop"] != 100 || e.FinishedByReason["length"] != 10 || e.FinishedByReason["other"] == 0 {
		t.Errorf("FinishedByReason = %d reasons, %v in all, stop %v, length %v, other %v; want 370, 100, 10 and the rest under other",
			len(e.FinishedByReason), total, e.FinishedByReason["stop"], e.FinishedByReason["length"], e.FinishedByReason["other"])
	}
	t.Logf("figure: 72 finish reasons, 3.6 MB of label values: %d kept, %d bytes of names", len(e.FinishedByReason), size)
}

// TestScrapeParseEndsAtTheDeadline is the red team's: 128 labels a series is within MetricsMaxLabels, and
// 8 MiB of such series is within the default body limit, yet one uncancellable parse pass of them took 3.7 s
// of CPU on this machine, past a 2 s probe timeout, and the scrape came back as a success. Here the deadline
// falls 50 ms after the whole body is in, in the middle of the parse: the scrape fails with the deadline, its
// URL named, instead of answering when the parse is done.
func TestScrapeParseEndsAtTheDeadline(t *testing.T) {
	var body bytes.Buffer
	for i := 0; body.Len() < 4<<20; i++ {
		body.WriteString("vllm:num_requests_running{")
		for j := range MetricsMaxLabels - 1 {
			fmt.Fprintf(&body, "l%d=\"\",", j)
		}
		fmt.Fprintf(&body, "series=\"%d\"} 1\n", i)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body.Bytes())
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Transport: cancelAfterBody{rt: srv.Client().Transport, after: 50 * time.Millisecond, cancel: cancel}}
	start := time.Now()
	e, err := NewMetrics(client, 0).Scrape(ctx, srv.URL+"/metrics")
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotMetrics) || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("Scrape(4 MiB of 128-label series, deadline mid-parse) = %s engine, %v; want the deadline's error naming %s", e.Kind, err, srv.URL)
	}
	t.Logf("figure: %d KiB of %d-label series, cancelled 50 ms after the body was in: the scrape returned after %v",
		body.Len()>>10, MetricsMaxLabels, time.Since(start).Round(time.Millisecond))
}

// cancelAfterBody calls cancel a while after a response's body has been read to its end: a deadline that
// falls while what was read is being parsed.
type cancelAfterBody struct {
	rt     http.RoundTripper
	after  time.Duration
	cancel context.CancelFunc
}

func (c cancelAfterBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil {
		resp.Body = &eofHook{ReadCloser: resp.Body, at: func() { time.AfterFunc(c.after, c.cancel) }}
	}
	return resp, err
}

type eofHook struct {
	io.ReadCloser
	at   func()
	done bool
}

func (h *eofHook) Read(p []byte) (int, error) {
	n, err := h.ReadCloser.Read(p)
	if err == io.EOF && !h.done {
		h.done = true
		h.at()
	}
	return n, err
}
