// Package fake holds the test kit's stand-ins that import nothing of runwatch, so that the tests of
// every package use them, the probes' and the monitor's included: a clock the test moves (Clock) and a
// vLLM server's /metrics replaying a recording of a real engine under load (VLLM). Package testkit
// builds the rest of the kit on them.
package fake
