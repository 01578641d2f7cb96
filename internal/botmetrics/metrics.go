// Package botmetrics is the bot's own Prometheus metrics, which `bot serve` serves on /metrics: its samples
// and probe failures, what it posted to Slack and the retries that took, the Slack requests it refused,
// the events it received and how long answers took. It is its own package because three others count
// into it (the Slack transport, the scheduled posts, the sampler's wiring) and none of them owns the
// registry.
package botmetrics

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"runwatch/internal/problemlog"
	"runwatch/monitor"
	"runwatch/reports"
)

// Metrics are the bot's own Prometheus metrics, served on /metrics: probe failures, Slack posts and
// retries, rejected requests, events and answer latency. Each Metrics has its own registry (no
// global state). A nil *Metrics records nothing, so tests and the console need not build one.
type Metrics struct {
	reg           *prometheus.Registry
	samples       prometheus.Counter
	probeFailures *prometheus.CounterVec
	posts         *prometheus.CounterVec
	retries       *prometheus.CounterVec
	rejected      *prometheus.CounterVec
	events        *prometheus.CounterVec
	answers       *prometheus.HistogramVec
	// failing logs the probe failures by their full names (a URL, an address, a path), which the
	// failures counter does not carry: its labels stay few.
	failing problemlog.Log
}

// New registers the bot's metrics, plus the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		samples: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runwatch_samples_total", Help: "Sampler ticks (every run probed once per tick)."}),
		probeFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runwatch_probe_failures_total", Help: "Probes that failed or timed out during sampling, by run and kind of probe (metrics, prometheus target, statfs...; which one, in the log)."},
			[]string{"run", "probe"}),
		posts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runwatch_slack_posts_total", Help: "Messages the bot sent to Slack, by kind and result (ok, error)."},
			[]string{"kind", "result"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runwatch_slack_api_retries_total", Help: "Slack Web API calls retried, by method and reason."},
			[]string{"method", "reason"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runwatch_slack_requests_rejected_total", Help: "HTTP-mode requests refused before any processing, by reason."},
			[]string{"reason"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runwatch_slack_events_total", Help: "Slack events received, by outcome (answered, duplicate, ignored; busy: refused, no room to remember it; panicked: an answer that failed with a panic)."},
			[]string{"result"}),
		answers: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "runwatch_answer_duration_seconds", Help: "Time from a question to its answer being ready, by source.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}},
			[]string{"source"}),
	}
	m.reg.MustRegister(m.samples, m.probeFailures, m.posts, m.retries, m.rejected, m.events, m.answers,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// LogFailures sends the probe failures, by their full names, to log: each when it starts or its
// error changes, and once when it ends.
func (m *Metrics) LogFailures(log *slog.Logger) {
	if m != nil {
		m.failing = problemlog.Log{Logger: log, What: "probe failing"}
	}
}

// ObserveEvaluations counts a sampler tick and the probes that failed in it, by kind: a probe's
// name holds a URL, an address or a path, one series each for as long as the bot runs (800 for
// 50 runs × 16 hosts), so the name goes to the log and the answers, and the label holds its kind.
func (m *Metrics) ObserveEvaluations(evs []monitor.Evaluation) {
	if m == nil {
		return
	}
	m.samples.Inc()
	byRun := map[string][]reports.Problem{}
	for _, ev := range evs {
		for _, p := range ev.Run.Problems {
			m.probeFailures.WithLabelValues(ev.Run.Name, p.Kind()).Inc()
		}
		byRun[ev.Run.Name] = ev.Run.Problems
	}
	m.failing.Observe(byRun)
}

func (m *Metrics) Posted(kind string, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.posts.WithLabelValues(kind, result).Inc()
}

func (m *Metrics) SlackRetry(method, reason string) {
	if m != nil {
		m.retries.WithLabelValues(method, reason).Inc()
	}
}

func (m *Metrics) Reject(reason string) {
	if m != nil {
		m.rejected.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) Event(result string) {
	if m != nil {
		m.events.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) Answered(source string, d time.Duration) {
	if m != nil {
		m.answers.WithLabelValues(source).Observe(d.Seconds())
	}
}
