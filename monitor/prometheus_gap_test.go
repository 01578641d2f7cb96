package monitor

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/promtest"
	"runwatch/probes"
)

// A gap in Prometheus's data (Prometheus paused for 6 s: no scrapes, no answers) does not bias the
// rate: every point of the history, sampled live around the gap or read back from query_range by a
// fresh monitor, is put at the time its values are from. Before, a sample taken just after the gap
// carried the values from before it at the time it was asked, and query_range's steps inside the gap
// repeated them: a stall then a burst, and the ETA read early for minutes after a real restart.
func TestPrometheusGapDoesNotBiasTheRate(t *testing.T) {
	// Waits on a real Prometheus's scrapes: beside the monitor's other tests.
	t.Parallel()
	const rate = 10_000.0 // generated tokens per second, steady
	t0 := time.Now()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := time.Since(t0).Seconds()
		fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"m\"} %.1f\n"+
			"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 64\n"+
			"# TYPE vllm:request_success_total counter\nvllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} %.0f\n",
			rate*s, rate*s/100)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	prom := promtest.StartServer(t, fmt.Sprintf("  - job_name: vllm\n    static_configs:\n      - targets: [%q]\n        labels: {run: gap}\n", ln.Addr().String()))
	prom.WaitFor(t, "the first scrapes", `count_over_time(vllm:generation_tokens_total{run="gap"}[1m])`, 60*time.Second,
		func(r probes.PromResult) bool { v, ok := promtest.Value(r); return ok && v >= 3 })

	run := config.Run{Name: "gap", Total: 1e9, Prometheus: &config.Prometheus{URL: prom.URL, Selector: `{run="gap"}`}}
	f := &config.File{Source: "test", Runs: []config.Run{run}}
	// The tokens the server had generated at unix time T, and how far a point is from that.
	off := func(T, tokens float64) float64 {
		return math.Abs(tokens - rate*(T-probes.UnixSeconds(t0)))
	}
	// The server counts at the moment it is scraped, Prometheus stamps the scrape's start: a few
	// milliseconds apart, more on a loaded machine. A point put at the time it was asked is off by
	// up to a scrape interval (1 s) in steady state, and by the whole gap after it.
	const tol = 0.3 * rate
	check := func(what string, m *Monitor) int {
		t.Helper()
		n := 0
		for _, o := range m.History("gap") {
			if o.GenTokens == nil {
				continue
			}
			n++
			if d := off(o.T, *o.GenTokens); d > tol {
				t.Errorf("%s: point at %.2f s has %.0f tokens: %.0f tokens (%.2f s of generation) off the server's count then; want within %.0f",
					what, o.T-probes.UnixSeconds(t0), *o.GenTokens, d, d/rate, tol)
			}
		}
		return n
	}

	m, _, err := New(f, Options{ProbeTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sample := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
			m.Sample(ctx)
			time.Sleep(300 * time.Millisecond)
		}
	}
	sample(3 * time.Second)
	prom.Pause(t)
	time.Sleep(6 * time.Second)
	prom.Resume(t)
	sample(4 * time.Second)
	if n := check("live samples", m); n < 8 {
		t.Errorf("live samples: %d points with tokens; want at least 8", n)
	}

	// A fresh monitor reads the same span back from query_range.
	fresh, _, err := New(f, Options{ProbeTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fresh.Status(ctx, Need{Progress: true})
	if n := check("history from query_range", fresh); n < 8 {
		t.Errorf("history from query_range: %d points with tokens; want at least 8", n)
	}
}

// Figures Prometheus scraped longer ago than a sample interval are not now's: a sample built on them
// says how old they are, in the notices every answer about progress carries ("is it stuck?" among
// them). The real Prometheus scrapes every second; the monitor's clock runs 45 s ahead of it, as a
// bot asking a Prometheus whose last scrape of the servers was 45 s ago. Before, "(ok) No, it's
// moving. 10,000 tok/s" read as now.
func TestOldPrometheusFiguresSayTheirAge(t *testing.T) {
	// Waits on a real Prometheus's scrapes: beside the monitor's other tests.
	t.Parallel()
	t0 := time.Now()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := time.Since(t0).Seconds()
		fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"m\"} %.1f\n"+
			"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 64\n", 10_000*s)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	prom := promtest.StartServer(t, fmt.Sprintf("  - job_name: vllm\n    static_configs:\n      - targets: [%q]\n        labels: {run: old}\n", ln.Addr().String()))
	prom.WaitFor(t, "the first scrapes", `count_over_time(vllm:generation_tokens_total{run="old"}[1m])`, 60*time.Second,
		func(r probes.PromResult) bool { v, ok := promtest.Value(r); return ok && v >= 3 })

	f := &config.File{Source: "test", Runs: []config.Run{{Name: "old", Prometheus: &config.Prometheus{URL: prom.URL, Selector: `{run="old"}`}}}}
	notice := func(ahead time.Duration) string {
		t.Helper()
		m, _, err := New(f, Options{ProbeTimeout: 5 * time.Second, Fresh: 32 * time.Second, Now: func() time.Time { return time.Now().Add(ahead) }})
		if err != nil {
			t.Fatal(err)
		}
		rs, err := m.RunStatus(context.Background(), "old", Need{Progress: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range rs.Notices {
			if strings.Contains(n, "Prometheus's figures") {
				return n
			}
		}
		return ""
	}
	if n := notice(0); n != "" {
		t.Errorf("figures scraped a second ago: notice %q; want none", n)
	}
	n := notice(45 * time.Second)
	if !regexp.MustCompile(`^Prometheus's figures for the servers are 4[5-9] s old \(their last scrape\)$`).MatchString(n) {
		t.Errorf("figures scraped 45 s before the monitor's now: notice %q; want their age said", n)
	}
}
