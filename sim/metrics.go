package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Metrics is the server's /metrics page now, in the Prometheus text format that vLLM V1 serves through the
// Python client: counters with their _created samples, gauges, the histogram of generated tokens per finished
// request, and process_start_time_seconds. With more than one engine every engine series carries an engine
// label. Counters restart from zero, and process_start_time_seconds moves, after a Restart event.
func (j *Job) Metrics() []byte {
	var b strings.Builder
	labels := make([]string, len(j.engines))
	for i := range j.engines {
		labels[i] = fmt.Sprintf("model_name=%q", j.s.Model)
		if len(j.engines) > 1 {
			labels[i] = fmt.Sprintf("engine=\"%d\",%s", i, labels[i])
		}
	}
	created := j.wall(j.serverStart)

	gauge := func(name, help string, value func(e engineCounters) float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
		for i, e := range j.engines {
			fmt.Fprintf(&b, "%s{%s} %s\n", name, labels[i], promFloat(value(e)))
		}
	}
	counter := func(name, help string, value func(e engineCounters) float64) {
		fmt.Fprintf(&b, "# HELP %s_total %s\n# TYPE %s_total counter\n", name, help, name)
		for i, e := range j.engines {
			fmt.Fprintf(&b, "%s_total{%s} %s\n", name, labels[i], promFloat(value(e)))
			fmt.Fprintf(&b, "%s_created{%s} %s\n", name, labels[i], promFloat(created))
		}
	}

	gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
		func(e engineCounters) float64 { return float64(e.running) })
	waiting := j.waiting()
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
		func(engineCounters) float64 { return float64(waiting) / float64(len(j.engines)) })
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", j.kvUsage)
	counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.",
		func(engineCounters) float64 { return 0 })
	counter("vllm:prompt_tokens", "Number of prefill tokens processed.",
		func(e engineCounters) float64 { return e.prompt })
	counter("vllm:generation_tokens", "Number of generation tokens processed.",
		func(e engineCounters) float64 { return math.Floor(e.gen) })

	const success = "vllm:request_success"
	fmt.Fprintf(&b, "# HELP %s_total Count of successfully processed requests.\n# TYPE %s_total counter\n", success, success)
	for i, e := range j.engines {
		for _, r := range []struct {
			reason string
			n      float64
		}{{"stop", e.stop}, {"length", e.capd}, {"abort", 0}} {
			fmt.Fprintf(&b, "%s_total{%s,finished_reason=%q} %s\n", success, labels[i], r.reason, promFloat(r.n))
			fmt.Fprintf(&b, "%s_created{%s,finished_reason=%q} %s\n", success, labels[i], r.reason, promFloat(created))
		}
	}

	const hist = "vllm:request_generation_tokens"
	fmt.Fprintf(&b, "# HELP %s Number of generation tokens processed.\n# TYPE %s histogram\n", hist, hist)
	for i, e := range j.engines {
		cum := 0.0
		for k, le := range genBuckets {
			cum += e.hist[k]
			fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %s\n", hist, labels[i], promFloat(le), promFloat(cum))
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %s\n", hist, labels[i], promFloat(e.histCount))
		fmt.Fprintf(&b, "%s_count{%s} %s\n", hist, labels[i], promFloat(e.histCount))
		fmt.Fprintf(&b, "%s_sum{%s} %s\n", hist, labels[i], promFloat(e.histSum))
		fmt.Fprintf(&b, "%s_created{%s} %s\n", hist, labels[i], promFloat(created))
	}

	b.WriteString("# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n")
	b.WriteString("# TYPE process_start_time_seconds gauge\n")
	fmt.Fprintf(&b, "process_start_time_seconds %s\n", promFloat(created))
	return []byte(b.String())
}

// kvUsage is the share of an engine's KV cache its running requests hold: prompt and decoded tokens over a
// capacity sized for its slots at twice the mean length.
func (j *Job) kvUsage(e engineCounters) float64 {
	slots := float64(j.s.Concurrency) / float64(len(j.engines))
	capacity := slots * (j.s.PromptTokens + 2*j.s.MeanTokens)
	used := float64(e.running)*(j.s.PromptTokens+j.v) - e.startVSum
	return math.Max(0, math.Min(1, used/capacity))
}

// wall converts a sim time to unix seconds.
func (j *Job) wall(simT float64) float64 {
	return j.epoch + simT
}

// promFloat formats a sample value the way the Python client does: 12.0, 0.25, 1.750000123e+09.
func promFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case v == math.Trunc(v) && math.Abs(v) < 1e6:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 1e6:
		return strconv.FormatFloat(v, 'e', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
