// Package sim owns the simulated job: a deterministic model of a vLLM batch-generation run (continuous
// batching over a fixed number of slots, long-tailed completion lengths capped at max_tokens, decode speed that
// falls as the batch grows, the drain at the end) with injectable restarts, stalls, slowdowns and length drift.
//
// It produces what the bot watches in a real run: reports.Observation traces for replay and the accuracy
// benchmark, vLLM V1 Prometheus text, the generation script's progress lines, and, for `--demo`, a live
// job at accelerated time with an HTTP /metrics endpoint, a progress log and an output directory.
package sim
