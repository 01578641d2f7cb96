package probes

import (
	"strings"
)

// This file is the engine alias table: which metric families each inference server exports, under
// which names, and the names that drifted. metrics.go reads an exposition with it.
//
// A name may carry one label selector, `family{label="value"}`, for engines that put several
// quantities in one gauge (Triton's nv_trt_llm_request_metrics{request_type="active"}).

// metricsSource names the families one engine kind exports.
type metricsSource struct {
	kind, prefix       string // prefix: every family of this engine has it
	running, waiting   string
	kvUsage            []string // first present wins
	kvUsed, kvMax      string   // block gauges whose ratio is the KV usage, when no fraction is exported
	generation, prompt string   // counters
	generationHist     string   // per-request histograms, fallback for the counters
	promptHist         string
	finished           []string // counters; first present wins
	finishedHist       string   // a histogram observed once per finished request, last resort
	finishedReason     []string // label of the finished counter that gives FinishedByReason; first present wins
	preemptions        string
	genThroughput      string
	created            string // the generation counter's creation time

	// Data-quality and drafter signals (signals.go).
	aborted, failed                           string // counters of requests that ended without an answer
	specDrafts, specDraftTokens, specAccepted string // speculative decoding counters
	specPerPos                                string // accepted tokens per draft position, by label "position"
	specAcceptRate, specAcceptLength          string // gauges, for engines that export no counters
}

// metricsReasonLabels are the labels engines put a request's finish reason in: vLLM and
// TensorRT-LLM say finished_reason; llm-d's vLLM simulator says finish_reason, as the OpenAI API does.
var metricsReasonLabels = []string{"finished_reason", "finish_reason"}

var metricsBaseSources = []metricsSource{{
	kind:            "vllm",
	prefix:          "vllm:",
	running:         "vllm:num_requests_running",
	waiting:         "vllm:num_requests_waiting",
	kvUsage:         []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
	generation:      "vllm:generation_tokens_total",
	prompt:          "vllm:prompt_tokens_total",
	generationHist:  "vllm:request_generation_tokens",
	promptHist:      "vllm:request_prompt_tokens",
	finished:        []string{"vllm:request_success_total"},
	finishedReason:  metricsReasonLabels,
	preemptions:     "vllm:num_preemptions_total",
	genThroughput:   "vllm:avg_generation_throughput_toks_per_s",
	created:         "vllm:generation_tokens_created",
	specDrafts:      "vllm:spec_decode_num_drafts_total",
	specDraftTokens: "vllm:spec_decode_num_draft_tokens_total",
	specAccepted:    "vllm:spec_decode_num_accepted_tokens_total",
	specPerPos:      "vllm:spec_decode_num_accepted_tokens_per_pos_total",
	specAcceptRate:  "vllm:spec_decode_draft_acceptance_rate", // V0 only
}, {
	kind:             "sglang",
	prefix:           "sglang:",
	running:          "sglang:num_running_reqs",
	waiting:          "sglang:num_queue_reqs",
	kvUsage:          []string{"sglang:token_usage"},
	generation:       "sglang:generation_tokens_total",
	prompt:           "sglang:prompt_tokens_total",
	finished:         []string{"sglang:num_requests_total"},
	finishedHist:     "sglang:e2e_request_latency_seconds",
	genThroughput:    "sglang:gen_throughput",
	created:          "sglang:generation_tokens_created",
	aborted:          "sglang:num_aborted_requests_total",
	specAcceptRate:   "sglang:spec_accept_rate",
	specAcceptLength: "sglang:spec_accept_length",
}, {
	kind:            "llamacpp",
	prefix:          "llamacpp:",
	running:         "llamacpp:requests_processing",
	waiting:         "llamacpp:requests_deferred",
	kvUsage:         []string{"llamacpp:kv_cache_usage_ratio"},
	generation:      "llamacpp:tokens_predicted_total",
	prompt:          "llamacpp:prompt_tokens_total",
	genThroughput:   "llamacpp:predicted_tokens_seconds",
	specDrafts:      "llamacpp:spec_decode_num_drafts_total",
	specDraftTokens: "llamacpp:spec_decode_num_draft_tokens_total",
	specAccepted:    "llamacpp:spec_decode_num_accepted_tokens_total",
	specPerPos:      "llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
}, {
	kind:           "tgi",
	prefix:         "tgi_",
	running:        "tgi_batch_current_size",
	waiting:        "tgi_queue_size",
	generationHist: "tgi_request_generated_tokens",
	promptHist:     "tgi_request_input_length",
	finished:       []string{"tgi_request_success"},
	failed:         "tgi_request_failure",
}, {
	// trtllm-serve's MetricsCollector, as Dynamo re-exports it with the trtllm_ prefix.
	kind:           "trtllm",
	prefix:         "trtllm_",
	finished:       []string{"trtllm_request_success_total"},
	finishedHist:   "trtllm_e2e_request_latency_seconds",
	finishedReason: metricsReasonLabels,
}, {
	// Triton's TensorRT-LLM backend: batch-manager gauges next to Triton's own request counters.
	kind:     "trtllm-triton",
	prefix:   "nv_trt_llm_",
	running:  `nv_trt_llm_request_metrics{request_type="active"}`,
	waiting:  "nv_inference_pending_request_count",
	kvUsed:   `nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="used"}`,
	kvMax:    `nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max"}`,
	finished: []string{"nv_inference_request_success"},
	failed:   "nv_inference_request_failure",
}}

// metricsSources is the table metricsEngine matches against: the engines' own spellings first, then
// each with its prefix's ':' written '_'. Those are what arrives through a pipeline that escapes
// names for legacy Prometheus (OpenTelemetry, `escaping=underscores`), and SGLang's router and
// Dynamo's TensorRT-LLM pass-through spell them so (sglang_num_running_reqs, trtllm_...); the
// older Dynamo docs spell TensorRT-LLM's with ':' (trtllm:request_success_total).
var metricsSources = func() []metricsSource {
	out := append([]metricsSource(nil), metricsBaseSources...)
	for _, s := range metricsBaseSources {
		switch {
		case strings.HasSuffix(s.prefix, ":"):
			out = append(out, metricsRespell(s, strings.TrimSuffix(s.prefix, ":")+"_"))
		case s.kind == "trtllm":
			out = append(out, metricsRespell(s, "trtllm:"))
		}
	}
	return out
}()

// metricsRespell returns src with its prefix replaced by prefix in every name.
func metricsRespell(src metricsSource, prefix string) metricsSource {
	re := func(n string) string {
		if rest, ok := strings.CutPrefix(n, src.prefix); ok {
			return prefix + rest
		}
		return n
	}
	list := func(ns []string) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = re(n)
		}
		return out
	}
	s := src
	s.prefix = prefix
	for _, p := range []*string{&s.running, &s.waiting, &s.kvUsed, &s.kvMax, &s.generation, &s.prompt,
		&s.generationHist, &s.promptHist, &s.finishedHist, &s.preemptions, &s.genThroughput, &s.created,
		&s.aborted, &s.failed, &s.specDrafts, &s.specDraftTokens, &s.specAccepted, &s.specPerPos,
		&s.specAcceptRate, &s.specAcceptLength} {
		*p = re(*p)
	}
	s.kvUsage, s.finished = list(s.kvUsage), list(s.finished)
	return s
}

// MetricAlias names the summed value a sample keeps (running, waiting, kv_cache_usage,
// generation_tokens, prompt_tokens, requests_finished, preemptions, gen_throughput) for a raw
// engine metric name, so a stage check may use either.
func MetricAlias(name string) (string, bool) {
	for _, src := range metricsSources {
		pairs := [][2]string{{src.running, "running"}, {src.waiting, "waiting"}, {src.generation, "generation_tokens"},
			{src.prompt, "prompt_tokens"}, {src.preemptions, "preemptions"}, {src.genThroughput, "gen_throughput"}}
		for _, k := range src.kvUsage {
			pairs = append(pairs, [2]string{k, "kv_cache_usage"})
		}
		for _, f := range src.finished {
			pairs = append(pairs, [2]string{f, "requests_finished"})
		}
		for _, p := range pairs {
			if p[0] != "" && p[0] == name {
				return p[1], true
			}
		}
	}
	return "", false
}

// metricsV0Only are families only vLLM's V0 engine exports.
var metricsV0Only = []string{
	"vllm:avg_generation_throughput_toks_per_s",
	"vllm:avg_prompt_throughput_toks_per_s",
	"vllm:num_requests_swapped",
	"vllm:cpu_cache_usage_perc",
}

// metricsRenames are names engines dropped or renamed, with what replaced them. When a name runwatch
// reads is missing, the report says which of these the server exports instead (drift.go).
var metricsRenames = []struct{ old, new, note string }{
	{"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc", "vLLM's V1 engine renamed it"},
	{"vllm:gpu_prefix_cache_queries", "vllm:prefix_cache_queries", "vLLM's V1 engine renamed it"},
	{"vllm:gpu_prefix_cache_hits", "vllm:prefix_cache_hits", "vLLM's V1 engine renamed it"},
	{"vllm:time_per_output_token_seconds", "vllm:inter_token_latency_seconds", "later vLLM V1 releases renamed it"},
	{"vllm:avg_generation_throughput_toks_per_s", "vllm:generation_tokens_total", "vLLM's V1 engine dropped the gauge; runwatch takes the rate of the counter"},
	{"vllm:spec_decode_draft_acceptance_rate", "vllm:spec_decode_num_accepted_tokens_total", "vLLM's V1 engine dropped the gauge; runwatch divides accepted by draft tokens"},
	{"vllm:spec_decode_efficiency", "vllm:spec_decode_num_drafts_total", "vLLM's V1 engine dropped the gauge; runwatch counts drafts instead"},
	{"llamacpp:kv_cache_usage_ratio", "", "newer llama-server builds no longer export it"},
	{"llamacpp:kv_cache_tokens", "", "newer llama-server builds no longer export it"},
	{"trtllm:request_success_total", "trtllm_request_success_total", "Dynamo's TensorRT-LLM pass-through changed the prefix"},
}

// metricsUsed holds every family name metricsEngine may read, in both the
// text-format spelling ("x_total") and the OpenMetrics one ("x").
var metricsUsed = func() map[string]bool {
	used := map[string]bool{"process_start_time_seconds": true}
	add := func(names ...string) {
		for _, n := range names {
			n, _, _ = strings.Cut(n, "{")
			if n != "" {
				used[n] = true
				used[strings.TrimSuffix(n, "_total")] = true
			}
		}
	}
	for _, s := range metricsSources {
		add(s.running, s.waiting, s.kvUsed, s.kvMax, s.generation, s.prompt, s.generationHist, s.promptHist,
			s.finishedHist, s.preemptions, s.genThroughput, s.created, s.aborted, s.failed,
			s.specDrafts, s.specDraftTokens, s.specAccepted, s.specPerPos, s.specAcceptRate, s.specAcceptLength)
		add(s.kvUsage...)
		add(s.finished...)
	}
	add(metricsV0Only...)
	for _, r := range metricsRenames {
		add(r.old, r.new)
	}
	return used
}()

// metricsSelector splits `family{label="value"}` into its parts; a plain name has no label.
func metricsSelector(name string) (family, label, value string) {
	family, sel, ok := strings.Cut(name, "{")
	if !ok {
		return name, "", ""
	}
	label, value, _ = strings.Cut(strings.TrimSuffix(sel, "}"), "=")
	return family, label, strings.Trim(value, `"`)
}

// KindName is how a person names an engine kind (Engine.Kind): "vllm" is vLLM, "llamacpp" llama.cpp.
func KindName(kind string) string {
	switch kind {
	case "vllm":
		return "vLLM"
	case "vllm-v0":
		return "vLLM (V0 engine)"
	case "sglang":
		return "SGLang"
	case "tgi":
		return "TGI"
	case "llamacpp":
		return "llama.cpp"
	case "trtllm":
		return "TensorRT-LLM"
	case "trtllm-triton":
		return "TensorRT-LLM (Triton)"
	}
	return kind
}
