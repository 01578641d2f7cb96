package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Engine is what one inference server's /metrics says, summed over its
// data-parallel `engine` labels.
type Engine struct {
	URL              string             // the scraped address, any password removed
	Kind             string             // "vllm", "vllm-v0", "sglang", "tgi", "llamacpp", "trtllm", "trtllm-triton" or "" when no known metric was found
	Engines          int                // number of distinct `engine` label values (1 when unlabelled, 0 when Kind is "")
	Running, Waiting float64            // requests; 0 when absent
	KVCacheUsage     float64            // fraction 0..1 (mean over engines); vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc, sglang:token_usage; NaN when absent
	GenerationTokens float64            // cumulative generated tokens (counter); for TGI, which has no counter, the sum of its per-request histogram; NaN when absent
	PromptTokens     float64            // cumulative prompt tokens, same sources as GenerationTokens; NaN when absent
	RequestsFinished float64            // sum of vllm:request_success_total over finished_reason (sglang:num_requests_total or the e2e latency histogram count, tgi_request_success); NaN when absent
	FinishedByReason map[string]float64 // finished_reason (or finish_reason) -> count ("stop", "length", "abort"; at most 8, the rest as "other"); vLLM and TensorRT-LLM, nil otherwise

	// FinishedLenSum and FinishedLenCount are the histogram of generated
	// tokens per finished request (vllm:request_generation_tokens,
	// tgi_request_generated_tokens); NaN when absent.
	FinishedLenSum, FinishedLenCount float64

	Preemptions   float64 // cumulative; 0 when absent
	GenThroughput float64 // a gauge of tokens/s where the engine exports one (vllm:avg_generation_throughput_toks_per_s, sglang:gen_throughput); NaN when absent
	StartTime     float64 // unix seconds: max of process_start_time_seconds and the generation counter's _created sample; 0 when unknown (a change means the server restarted)

	// Signals are the data-quality and drafter counters (signals.go).
	Signals Signals
	// Missing says, when the endpoint answered, which names runwatch reads it lacks and what it
	// exports instead (drift.go), and which it exports with impossible values (NaN, ±Inf,
	// negative), left out (metricsvalues.go); nil when nothing is missing.
	Missing []string

	// Skipped lists exposition lines that were not valid and were left out,
	// as "line N: reason: text". A scrape with a few bad lines still yields
	// numbers; the report can say what was dropped.
	Skipped []string
}

// ErrNotMetrics is in the chain of a scrape error whose server answered, but not with metrics: an HTTP
// error status, a page of another type, a body too large or not Prometheus text, a redirect refused.
// The server is up and something else is wrong. A scrape error without it is a server that did not
// answer: the connection refused, the host unreachable or unknown, no answer before the deadline.
var ErrNotMetrics = errors.New("answers, but not with metrics")

// notMetrics marks err as an answer that is not metrics (ErrNotMetrics) without changing its text.
type notMetrics struct{ err error }

func (n notMetrics) Error() string   { return n.err.Error() }
func (n notMetrics) Unwrap() []error { return []error{ErrNotMetrics, n.err} }

// Metrics scrapes engine endpoints.
type Metrics struct {
	client  *http.Client
	maxBody int64
}

const (
	metricsDefaultMaxBody = 8 << 20
	metricsMaxSkipped     = 20 // beyond this the body is not an exposition with a few bad lines
	metricsHeadLines      = 16 // always parsed, to tell an exposition from other text
	metricsAccept         = "text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1"
)

// NewMetrics returns a scraper that uses client (http.DefaultClient when nil),
// never following a redirect to another host, and refuses bodies larger than
// maxBody bytes (0 means 8 MiB). Deadlines come from the ctx given to Scrape.
func NewMetrics(client *http.Client, maxBody int64) *Metrics {
	if maxBody <= 0 {
		maxBody = metricsDefaultMaxBody
	}
	return &Metrics{client: WithProbeRedirects(client), maxBody: maxBody}
}

// Scrape fetches url and parses it with ParseMetrics. Errors name the
// address (without its password) and what went wrong: the HTTP status, an
// unexpected content type, an oversized body, or a body that is not
// Prometheus text. Errors from a server that answered wrap ErrNotMetrics.
func (m *Metrics) Scrape(ctx context.Context, rawURL string) (Engine, error) {
	e, err := m.scrape(ctx, rawURL)
	// A server may echo the URL's key or password (in its status line, say); the error never does.
	return e, withoutSecrets(err, urlSecrets(rawURL))
}

func (m *Metrics) scrape(ctx context.Context, rawURL string) (Engine, error) {
	where := RedactURL(rawURL)
	// What the server says is quoted redacted, then cut to a line.
	said := func(s string) string { return clipLine(secretsRedacted(s, urlSecrets(rawURL))) }
	failed := metricsEmpty()
	failed.URL = where
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return failed, fmt.Errorf("scrape %s: %w", where, metricsUnwrapURL(err))
	}
	req.Header.Set("Accept", metricsAccept)
	resp, err := m.client.Do(req)
	if err != nil {
		err = fmt.Errorf("scrape %s: %w", where, metricsUnwrapURL(err))
		if errors.Is(err, ErrRedirectRefused) { // it answered, with a redirect elsewhere
			err = notMetrics{err}
		}
		return failed, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return failed, notMetrics{fmt.Errorf("scrape %s: HTTP %s", where, said(resp.Status))}
	}
	// A type that names something else (a login page's HTML, JSON) is refused before the body is read. A generic
	// binary type is what a plain file server (python -m http.server over a textfile collector's output, an
	// object store) sends for a file without an extension: the body decides, as for no type at all.
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "text/plain" && mt != "application/openmetrics-text" && mt != "application/octet-stream") {
			return failed, notMetrics{fmt.Errorf("scrape %s: content type %q is not Prometheus text (is this the metrics endpoint?)", where, said(ct))}
		}
	}
	kept, orig, n, err := metricsFilter(io.LimitReader(resp.Body, m.maxBody+1))
	if errors.Is(err, ErrAbsurdSeries) {
		return failed, notMetrics{fmt.Errorf("scrape %s: %w", where, err)}
	}
	if err != nil { // a line the filter refuses wraps ErrNotMetrics already; a connection lost mid-body does not
		return failed, fmt.Errorf("scrape %s: read body: %w", where, metricsUnwrapURL(err))
	}
	if n > m.maxBody {
		return failed, notMetrics{fmt.Errorf("scrape %s: body larger than %s", where, logTailSize(m.maxBody))}
	}
	// Parsing runs under the probe's deadline too: the parser reads through ctx (ctxReader).
	e, err := metricsParse(ctx, kept, orig)
	e.URL = where
	if err != nil {
		err = fmt.Errorf("scrape %s: %w", where, err)
		if ctx.Err() == nil { // the body is not metrics; a deadline that ran out while parsing is no answer
			err = notMetrics{err}
		}
		return e, err
	}
	return e, nil
}

// ParseMetrics parses Prometheus text exposition (OpenMetrics text is
// accepted too) into an Engine, using expfmt. Invalid lines are left out and
// listed in Engine.Skipped; it fails only when nothing valid remains or the
// body has too many bad lines to be an exposition at all. Only the families
// an Engine is built from are handed to the parser (see metricsFilter), so a
// bad line inside an unrelated family goes unnoticed.
func ParseMetrics(r io.Reader) (Engine, error) {
	kept, orig, _, err := metricsFilter(r)
	if err != nil {
		return metricsEmpty(), fmt.Errorf("read metrics: %w", err)
	}
	return metricsParse(context.Background(), kept, orig)
}

func metricsEmpty() Engine {
	nan := math.NaN()
	return Engine{
		KVCacheUsage: nan, GenerationTokens: nan, PromptTokens: nan, RequestsFinished: nan,
		FinishedLenSum: nan, FinishedLenCount: nan, GenThroughput: nan, Signals: metricsNoSignals(),
	}
}

// metricsEngine turns parsed families into an Engine.
func metricsEngine(fams map[string]*dto.MetricFamily) Engine {
	e := metricsEmpty()
	var src *metricsSource
	for i := range metricsSources {
		for name := range fams {
			if strings.HasPrefix(name, metricsSources[i].prefix) {
				src = &metricsSources[i]
				break
			}
		}
		if src != nil {
			break
		}
	}
	m := metricsFamilies(fams)
	bad, notes := metricsDropImpossible(fams)
	if src == nil {
		e.Missing = append(metricsDiagnose(m, nil, nil), notes...)
		return e
	}
	e.Kind = src.kind
	if src.kind == "vllm" {
		for _, name := range metricsV0Only {
			if m.family(name) != nil {
				e.Kind = "vllm-v0"
			}
		}
	}

	engines := map[string]bool{}
	for name, f := range fams {
		if !strings.HasPrefix(name, src.prefix) {
			continue
		}
		for _, mt := range f.GetMetric() {
			if v, ok := metricsLabel(mt, "engine"); ok {
				engines[v] = true
			}
		}
	}
	e.Engines = max(len(engines), 1)

	e.Running, _ = m.sum(src.running)
	e.Waiting, _ = m.sum(src.waiting)
	for _, name := range src.kvUsage {
		if v, ok := m.mean(name); ok {
			e.KVCacheUsage = v
			break
		}
	}
	if used, ok := m.sum(src.kvUsed); ok && math.IsNaN(e.KVCacheUsage) {
		if total, ok := m.sum(src.kvMax); ok && total > 0 {
			e.KVCacheUsage = used / total
		}
	}
	e.GenerationTokens = m.counterOrHist(src.generation, src.generationHist)
	e.PromptTokens = m.counterOrHist(src.prompt, src.promptHist)
	for _, name := range src.finished {
		if v, ok := m.sum(name); ok {
			e.RequestsFinished = v
			for _, label := range src.finishedReason {
				if by := m.byLabel(name, label); len(by) > 0 {
					e.FinishedByReason = metricsReasons(by)
					break
				}
			}
			break
		}
	}
	if math.IsNaN(e.RequestsFinished) && src.finishedHist != "" {
		if _, count, ok := m.hist(src.finishedHist); ok {
			e.RequestsFinished = count
		}
	}
	if sum, count, ok := m.hist(src.generationHist); ok {
		e.FinishedLenSum, e.FinishedLenCount = sum, count
	}
	e.Preemptions, _ = m.sum(src.preemptions)
	if v, ok := m.sum(src.genThroughput); ok {
		e.GenThroughput = v
	}
	for _, name := range []string{"process_start_time_seconds", src.created} {
		if v, ok := m.max(name); ok && v > e.StartTime {
			e.StartTime = v
		}
	}
	e.Signals = metricsSignals(m, src, e)
	e.Missing = append(metricsDiagnose(m, src, bad), notes...)
	return e
}

// metricsFamilies looks families up by the sample name an engine emits,
// whichever way the exposition spelled counters: text format names the
// family "x_total", OpenMetrics names it "x" with "x_total" samples, and some
// exporters drop the suffix altogether.
type metricsFamilies map[string]*dto.MetricFamily

func (m metricsFamilies) family(name string) *dto.MetricFamily {
	if name == "" {
		return nil
	}
	if f := m[name]; f != nil {
		return f
	}
	if base, ok := strings.CutSuffix(name, "_total"); ok {
		if f := m[base]; f != nil && f.GetType() == dto.MetricType_COUNTER {
			return f
		}
		return nil
	}
	return m[name+"_total"]
}

// metricsValue is a sample's value for the scalar types.
func metricsValue(mt *dto.Metric) (float64, bool) {
	switch {
	case mt.GetCounter() != nil:
		return mt.GetCounter().GetValue(), true
	case mt.GetGauge() != nil:
		return mt.GetGauge().GetValue(), true
	case mt.GetUntyped() != nil:
		return mt.GetUntyped().GetValue(), true
	}
	return 0, false
}

// each calls fn for every scalar sample of the family name, which may end in one label
// selector: `family{label="value"}`.
func (m metricsFamilies) each(name string, fn func(mt *dto.Metric, v float64)) bool {
	name, label, want := metricsSelector(name)
	f := m.family(name)
	found := false
	for _, mt := range f.GetMetric() {
		if label != "" {
			if got, _ := metricsLabel(mt, label); got != want {
				continue
			}
		}
		if v, ok := metricsValue(mt); ok {
			fn(mt, v)
			found = true
		}
	}
	return found
}

func (m metricsFamilies) sum(name string) (float64, bool) {
	var s float64
	ok := m.each(name, func(_ *dto.Metric, v float64) { s += v })
	return s, ok
}

func (m metricsFamilies) mean(name string) (float64, bool) {
	var s float64
	n := 0
	m.each(name, func(_ *dto.Metric, v float64) { s += v; n++ })
	if n == 0 {
		return math.NaN(), false
	}
	return s / float64(n), true
}

func (m metricsFamilies) max(name string) (float64, bool) {
	best := math.Inf(-1)
	ok := m.each(name, func(_ *dto.Metric, v float64) { best = math.Max(best, v) })
	return best, ok
}

func (m metricsFamilies) byLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	m.each(name, func(mt *dto.Metric, v float64) {
		if l, ok := metricsLabel(mt, label); ok {
			out[l] += v
		}
	})
	return out
}

// hist sums a histogram (or summary) over its series. Without a TYPE line
// the parser leaves name_sum and name_count as plain samples; those count too.
func (m metricsFamilies) hist(name string) (sum, count float64, ok bool) {
	if name == "" {
		return 0, 0, false
	}
	for _, mt := range m[name].GetMetric() {
		switch {
		case mt.GetHistogram() != nil:
			h := mt.GetHistogram()
			sum += h.GetSampleSum()
			count += float64(h.GetSampleCount()) + h.GetSampleCountFloat()
			ok = true
		case mt.GetSummary() != nil:
			sum += mt.GetSummary().GetSampleSum()
			count += float64(mt.GetSummary().GetSampleCount())
			ok = true
		}
	}
	if ok {
		return sum, count, true
	}
	s, ok1 := m.sum(name + "_sum")
	c, ok2 := m.sum(name + "_count")
	if ok1 && ok2 {
		return s, c, true
	}
	return 0, 0, false
}

func (m metricsFamilies) counterOrHist(counter, hist string) float64 {
	if v, ok := m.sum(counter); ok {
		return v
	}
	if sum, _, ok := m.hist(hist); ok {
		return sum
	}
	return math.NaN()
}

func metricsLabel(mt *dto.Metric, name string) (string, bool) {
	for _, lp := range mt.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue(), true
		}
	}
	return "", false
}

// metricsUnwrapURL drops net/http's *url.Error layer, which would repeat the
// method and address already in our message.
func metricsUnwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
