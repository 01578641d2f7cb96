package probes

import (
	"bytes"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestParseMetricsMoreEngines(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		file string
		want Engine
	}{
		{"llamacpp_server_metrics_ik_llama_pr695.txt", Engine{
			Kind: "llamacpp", Engines: 1, Running: 0, Waiting: 0, KVCacheUsage: 0.491063,
			GenerationTokens: 3469, PromptTokens: 6886, RequestsFinished: nan,
			FinishedLenSum: nan, FinishedLenCount: nan, GenThroughput: 0.978764,
		}},
		{"trtllm_serve_metrics_dynamo_docs.txt", Engine{
			Kind: "trtllm", Engines: 1, KVCacheUsage: nan, GenerationTokens: nan, PromptTokens: nan,
			RequestsFinished: 155, FinishedByReason: map[string]float64{"stop": 150, "length": 5},
			FinishedLenSum: nan, FinishedLenCount: nan, GenThroughput: nan,
		}},
		{"triton_trtllm_backend_metrics_readme.txt", Engine{
			Kind: "trtllm-triton", Engines: 1, Running: 0, Waiting: 0, KVCacheUsage: 1.0 / 6239,
			GenerationTokens: nan, PromptTokens: nan, RequestsFinished: 0,
			FinishedLenSum: nan, FinishedLenCount: nan, GenThroughput: nan,
		}},
		// llm-d's simulator labels the reason finish_reason, not vLLM's finished_reason.
		{"llmd_sim_vllm_finish_reason_batch1.txt", Engine{
			Kind: "vllm", Engines: 1, KVCacheUsage: 0, GenerationTokens: 1225, PromptTokens: 280,
			RequestsFinished: 40, FinishedByReason: map[string]float64{"stop": 38, "length": 2},
			FinishedLenSum: 1225, FinishedLenCount: 40, GenThroughput: nan,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ParseMetrics(bytes.NewReader(metricsTestFixture(t, tt.file)))
			if err != nil {
				t.Fatal(err)
			}
			if !metricsTestSame(got, tt.want) {
				t.Errorf("ParseMetrics(%s) =\n %+v\nwant\n %+v", tt.file, got, tt.want)
			}
			if len(got.Missing) != 0 {
				t.Errorf("Missing = %q; want none", got.Missing)
			}
		})
	}
}

func TestParseMetricsRespelledPrefixes(t *testing.T) {
	// The same real expositions, as they arrive through a pipeline that writes ':' as '_'
	// (the simulator itself advertises `escaping=underscores`) or through SGLang's router.
	tests := []struct {
		file, from, to, kind string
	}{
		{"llmd_sim_vllm_finish_reason_batch1.txt", "vllm:", "vllm_", "vllm"},
		{"sglang_metrics_llama31_8b_docs.txt", "sglang:", "sglang_", "sglang"},
		{"llamacpp_server_metrics_ik_llama_pr695.txt", "llamacpp:", "llamacpp_", "llamacpp"},
		{"trtllm_serve_metrics_dynamo_docs.txt", "trtllm_", "trtllm:", "trtllm"},
	}
	for _, tt := range tests {
		t.Run(tt.to, func(t *testing.T) {
			orig := metricsTestFixture(t, tt.file)
			want, err := ParseMetrics(bytes.NewReader(orig))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseMetrics(bytes.NewReader(bytes.ReplaceAll(orig, []byte(tt.from), []byte(tt.to))))
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tt.kind || !metricsTestSame(got, want) {
				t.Errorf("with %s for %s: %+v\nwant %+v", tt.to, tt.from, got, want)
			}
		})
	}
}

func TestParseMetricsSignals(t *testing.T) {
	t.Run("vllm finish reasons", func(t *testing.T) {
		e, err := ParseMetrics(bytes.NewReader(metricsTestFixture(t, "vllm_v1_metrics_dp2_constructed.txt")))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{"stop": 14010 + 13987, "length": 1203 + 1190, "abort": 3 + 1}
		if !mapsEqual(e.Signals.Finished, want) {
			t.Errorf("Finished = %v; want %v", e.Signals.Finished, want)
		}
		if e.Signals.Drafting() {
			t.Errorf("Drafting() = true for a server without spec decode metrics: %+v", e.Signals)
		}
	})
	t.Run("tgi failures", func(t *testing.T) {
		e, err := ParseMetrics(bytes.NewReader(metricsTestFixture(t, "tgi_metrics_datadog_payload_excerpt.txt")))
		if err != nil {
			t.Fatal(err)
		}
		if e.Signals.Finished["error"] <= 0 || e.Signals.Finished["stop"] != 109 {
			t.Errorf("Finished = %v; want 109 stop and the tgi_request_failure count as error", e.Signals.Finished)
		}
	})
	t.Run("sglang aborts", func(t *testing.T) {
		body := string(metricsTestFixture(t, "sglang_metrics_llama31_8b_docs.txt"))
		if e, _ := ParseMetrics(strings.NewReader(body)); e.Signals.Finished != nil {
			t.Errorf("without sglang:num_aborted_requests_total, Finished = %v; want nil (nothing said about why)", e.Signals.Finished)
		}
		body += "# HELP sglang:num_aborted_requests_total Number of requests aborted.\n# TYPE sglang:num_aborted_requests_total counter\n" +
			`sglang:num_aborted_requests_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 228.0` + "\n"
		e, err := ParseMetrics(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]float64{"stop": 11000, "abort": 228}; !mapsEqual(e.Signals.Finished, want) {
			t.Errorf("Finished = %v; want %v", e.Signals.Finished, want)
		}
	})
	t.Run("vllm drafter", func(t *testing.T) {
		e, err := ParseMetrics(bytes.NewReader(metricsTestFixture(t, "vllm_v1_spec_decode_opt125m_ngram_pr24127_constructed.txt")))
		if err != nil {
			t.Fatal(err)
		}
		s := e.Signals
		if s.Drafts != 59 || s.DraftTokens != 295 || s.Accepted != 262 || !slices.Equal(s.AcceptedPerPos, []float64{58, 56, 54, 52, 42}) {
			t.Errorf("Signals = %+v; want 59 drafts, 295 draft tokens, 262 accepted, per position 58 56 54 52 42", s)
		}
	})
	t.Run("vllm drafter excerpt", func(t *testing.T) {
		e, err := ParseMetrics(bytes.NewReader(metricsTestFixture(t, "vllm_v1_spec_decode_pr41916_excerpt.txt")))
		if err != nil {
			t.Fatal(err)
		}
		s := e.Signals
		// The _created gauges beside the counters must not be added in (vLLM PR #41916's bug).
		if s.Drafts != 6.491797e+06 || s.DraftTokens != 6.491797e+06 || !math.IsNaN(s.Accepted) || !s.Drafting() {
			t.Errorf("Signals = %+v; want 6491797 drafts and draft tokens, accepted unknown", s)
		}
	})
	t.Run("sglang idle gauges are no drafter", func(t *testing.T) {
		body := "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 0\n# TYPE sglang:spec_accept_rate gauge\nsglang:spec_accept_rate 0\n# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length 0\n"
		e, err := ParseMetrics(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if e.Signals.Drafting() {
			t.Errorf("Drafting() = true for SGLang's zero gauges: %+v", e.Signals)
		}
	})
}

func mapsEqual(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || math.Abs(v-w) > 1e-9 {
			return false
		}
	}
	return true
}

func TestParseMetricsMissing(t *testing.T) {
	sim := string(metricsTestFixture(t, "llmd_sim_vllm_finish_reason_batch1.txt"))
	coreLine := regexp.MustCompile(`(?m)^.*(num_requests_|generation_tokens_total).*\n`)
	tests := []struct {
		name, body string
		kind       string
		want       []string // substrings of the one Missing line, in order
	}{
		{"proxy prefix", strings.ReplaceAll(sim, "vllm:", "fleet_"), "",
			[]string{"none of the engine metrics runwatch reads are here", "vllm:num_requests_running",
				"fleet_num_requests_running looks like vllm:num_requests_running under another prefix"}},
		{"nothing like an engine", strings.ReplaceAll(coreLine.ReplaceAllString(sim, ""), "vllm:", "fleet_"), "",
			[]string{"none of the engine metrics runwatch reads are here", "the first families it exports are fleet_cache_config_info, "}},
		{"old names only", "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc 0.5\n# TYPE vllm:avg_generation_throughput_toks_per_s gauge\nvllm:avg_generation_throughput_toks_per_s 12\n", "vllm-v0",
			[]string{"no vllm:num_requests_running (requests in the batch)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseMetrics(strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind != tt.kind || len(e.Missing) == 0 {
				t.Fatalf("Kind = %q, Missing = %q; want kind %q and a reason", e.Kind, e.Missing, tt.kind)
			}
			line, at := e.Missing[0], 0
			for _, w := range tt.want {
				i := strings.Index(line[at:], w)
				if i < 0 {
					t.Fatalf("Missing[0] = %q; want %q after position %d", line, w, at)
				}
				at += i + len(w)
			}
		})
	}
	t.Run("renamed", func(t *testing.T) {
		// vLLM V1 with the V0 name for KV usage only: runwatch reads both, so nothing is missing.
		e, _ := ParseMetrics(bytes.NewReader(metricsTestFixture(t, "vllm_v0_metrics_opt125m_datadog.txt")))
		if len(e.Missing) != 0 {
			t.Errorf("Missing = %q; want none (vllm:gpu_cache_usage_perc is read)", e.Missing)
		}
	})
}

func TestMetricAliasNewEngines(t *testing.T) {
	for name, want := range map[string]string{
		"llamacpp:requests_processing":       "running",
		"llamacpp:tokens_predicted_total":    "generation_tokens",
		"sglang_num_running_reqs":            "running",
		"vllm_num_requests_waiting":          "waiting",
		"trtllm_request_success_total":       "requests_finished",
		"nv_inference_request_success":       "requests_finished",
		"llamacpp:kv_cache_usage_ratio":      "kv_cache_usage",
		"vllm:spec_decode_num_drafts_total":  "",
		"sglang:num_aborted_requests_total":  "",
		"llamacpp:predicted_tokens_seconds":  "gen_throughput",
		"sglang_gen_throughput":              "gen_throughput",
		"trtllm:request_success_total":       "requests_finished",
		"vllm:request_success_total":         "requests_finished",
		"tgi_queue_size":                     "waiting",
		"nv_inference_pending_request_count": "waiting",
	} {
		got, ok := MetricAlias(name)
		if got != want || ok != (want != "") {
			t.Errorf("MetricAlias(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}

func TestPromEnginesNewEngines(t *testing.T) {
	s := func(name string, v float64, labels ...string) PromSeries {
		l := map[string]string{"__name__": name, "instance": "gpu-node-1:8000"}
		for i := 0; i+1 < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		return PromSeries{Labels: l, Samples: []PromSample{{T: 1, V: v}}}
	}
	got := PromEnginesByInstance([]PromSeries{
		s("nv_trt_llm_request_metrics", 7, "request_type", "active"),
		s("nv_trt_llm_request_metrics", 512, "request_type", "max"),
		s("nv_trt_llm_kv_cache_block_metrics", 100, "kv_cache_block_type", "used"),
		s("nv_trt_llm_kv_cache_block_metrics", 400, "kv_cache_block_type", "max"),
		s("nv_inference_request_success", 90),
		s("nv_inference_request_failure", 10),
	})["gpu-node-1:8000"]
	if got.Kind != "trtllm-triton" || got.Running != 7 || got.KVCacheUsage != 0.25 || got.Signals.Finished["error"] != 10 {
		t.Errorf("Triton through Prometheus = %+v; want 7 active, KV 25%%, 10 failed", got)
	}
	got = PromEnginesByInstance([]PromSeries{
		s("vllm:request_success_total", 38, "finish_reason", "stop"),
		s("vllm:request_success_total", 2, "finish_reason", "length"),
		s("vllm:spec_decode_num_drafts_total", 59),
		s("vllm:spec_decode_num_draft_tokens_total", 295),
		s("vllm:spec_decode_num_accepted_tokens_total", 262),
		s("vllm:spec_decode_num_accepted_tokens_per_pos_total", 58, "position", "0"),
		s("vllm:spec_decode_num_accepted_tokens_per_pos_total", 56, "position", "1"),
	})["gpu-node-1:8000"]
	if !mapsEqual(got.Signals.Finished, map[string]float64{"stop": 38, "length": 2}) || !slices.Equal(got.Signals.AcceptedPerPos, []float64{58, 56}) {
		t.Errorf("vLLM signals through Prometheus = %+v", got.Signals)
	}
	names := PromEngineNames()
	for _, want := range []string{"llamacpp:tokens_predicted_total", "sglang_num_running_reqs", "trtllm_request_success_total", "vllm:spec_decode_num_drafts_total", "nv_trt_llm_request_metrics"} {
		if !slices.Contains(names, want) {
			t.Errorf("PromEngineNames lacks %s", want)
		}
	}
}
