package fake

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

// scrape parses what the server at url serves with Prometheus's own text parser.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the body does not parse: %v\n%s", err, b)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch {
			case m.Counter != nil:
				out[name] += m.Counter.GetValue()
			case m.Gauge != nil:
				out[name] += m.Gauge.GetValue()
			case m.Untyped != nil:
				out[name] += m.Untyped.GetValue()
			case m.Histogram != nil:
				out[name+"_count"] += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

func TestVLLMReplaysTheRecordingAndMovesOn(t *testing.T) {
	v := NewVLLM(t, VLLMOptions{})
	first := scrape(t, v.MetricsURL())
	if first["vllm:generation_tokens_total"] != 13326 || first["vllm:num_requests_running"] != 16 || first["vllm:num_requests_waiting"] != 16 {
		t.Fatalf("first scrape = %v; want the first recording (13,326 tokens, 16 running, 16 waiting)", first)
	}
	second, third := scrape(t, v.MetricsURL()), scrape(t, v.MetricsURL())
	if d := third["vllm:generation_tokens_total"] - second["vllm:generation_tokens_total"]; d != RecordedTokensPerScrape {
		t.Errorf("tokens between two scrapes = %g; want the recorded pace %g", d, RecordedTokensPerScrape)
	}
	if third["vllm:generation_tokens_total"] != 20925 {
		t.Errorf("third scrape's tokens = %g; want the last recording's 20,925", third["vllm:generation_tokens_total"])
	}
	if third["vllm:request_success_total"] <= first["vllm:request_success_total"] || third["vllm:e2e_request_latency_seconds_count"] <= first["vllm:e2e_request_latency_seconds_count"] {
		t.Errorf("finished requests %v -> %v; want them growing with the tokens", first, third)
	}
	if third["vllm:num_requests_running"] != 16 {
		t.Errorf("running after three scrapes = %g; want the recorded 16", third["vllm:num_requests_running"])
	}
	v.Restart()
	if again := scrape(t, v.MetricsURL()); again["vllm:generation_tokens_total"] != 13326 {
		t.Errorf("after Restart, tokens = %g; want the first recording's", again["vllm:generation_tokens_total"])
	}
	if v.Scrapes() != 4 {
		t.Errorf("Scrapes = %d; want 4", v.Scrapes())
	}
}

func TestVLLMPace(t *testing.T) {
	v := NewVLLM(t, VLLMOptions{TokensPerScrape: 41580, Extra: func() string { return "process_start_time_seconds 1.7e+09\n" }})
	a, b := scrape(t, v.MetricsURL()), scrape(t, v.MetricsURL())
	if d := b["vllm:generation_tokens_total"] - a["vllm:generation_tokens_total"]; d != 41580 {
		t.Errorf("tokens between two scrapes = %g; want 41,580", d)
	}
	if b["process_start_time_seconds"] != 1.7e9 {
		t.Errorf("process_start_time_seconds = %g; want the extra line's", b["process_start_time_seconds"])
	}
}

func TestClockFiresWhatItReaches(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	c := NewClock(t0)
	soon, later := c.After(time.Second), c.After(time.Minute)
	c.AwaitAfter(t)
	c.Add(2 * time.Second)
	select {
	case got := <-soon:
		if !got.Equal(t0.Add(2 * time.Second)) {
			t.Errorf("After(1s) fired with %v; want the clock's time %v", got, t0.Add(2*time.Second))
		}
	default:
		t.Errorf("After(1s) did not fire when the clock moved 2 s")
	}
	select {
	case <-later:
		t.Errorf("After(1m) fired after 2 s")
	default:
	}
	c.Set(t0.Add(time.Hour))
	<-later
	if !c.Now().Equal(t0.Add(time.Hour)) {
		t.Errorf("Now = %v; want %v", c.Now(), t0.Add(time.Hour))
	}
}
