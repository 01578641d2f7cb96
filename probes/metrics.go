package probes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Engine is what one inference server's /metrics says, summed over its
// data-parallel `engine` labels.
type Engine struct {
	URL              string             // the scraped address, any password removed
	Kind             string             // "vllm", "vllm-v0", "sglang", "tgi" or "" when no known metric was found
	Engines          int                // number of distinct `engine` label values (1 when unlabelled, 0 when Kind is "")
	Running, Waiting float64            // requests; 0 when absent
	KVCacheUsage     float64            // fraction 0..1 (mean over engines); vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc, sglang:token_usage; NaN when absent
	GenerationTokens float64            // cumulative generated tokens (counter); for TGI, which has no counter, the sum of its per-request histogram; NaN when absent
	PromptTokens     float64            // cumulative prompt tokens, same sources as GenerationTokens; NaN when absent
	RequestsFinished float64            // sum of vllm:request_success_total over finished_reason (sglang:num_requests_total or the e2e latency histogram count, tgi_request_success); NaN when absent
	FinishedByReason map[string]float64 // finished_reason -> count ("stop", "length", "abort"); vLLM only, nil otherwise

	// FinishedLenSum and FinishedLenCount are the histogram of generated
	// tokens per finished request (vllm:request_generation_tokens,
	// tgi_request_generated_tokens); NaN when absent.
	FinishedLenSum, FinishedLenCount float64

	Preemptions   float64 // cumulative; 0 when absent
	GenThroughput float64 // a gauge of tokens/s where the engine exports one (vllm:avg_generation_throughput_toks_per_s, sglang:gen_throughput); NaN when absent
	StartTime     float64 // unix seconds: max of process_start_time_seconds and the generation counter's _created sample; 0 when unknown (a change means the server restarted)

	// Skipped lists exposition lines that were not valid and were left out,
	// as "line N: reason: text". A scrape with a few bad lines still yields
	// numbers; the report can say what was dropped.
	Skipped []string
}

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

// NewMetrics returns a scraper that uses client (http.DefaultClient when nil)
// and refuses bodies larger than maxBody bytes (0 means 8 MiB). Deadlines
// come from the ctx given to Scrape.
func NewMetrics(client *http.Client, maxBody int64) *Metrics {
	if client == nil {
		client = http.DefaultClient
	}
	if maxBody <= 0 {
		maxBody = metricsDefaultMaxBody
	}
	return &Metrics{client: client, maxBody: maxBody}
}

// Scrape fetches url and parses it with ParseMetrics. Errors name the
// address (without its password) and what went wrong: the HTTP status, an
// unexpected content type, an oversized body, or a body that is not
// Prometheus text.
func (m *Metrics) Scrape(ctx context.Context, rawURL string) (Engine, error) {
	where := metricsRedact(rawURL)
	failed := metricsEmpty()
	failed.URL = where
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return failed, fmt.Errorf("scrape %s: %w", where, metricsUnwrapURL(err))
	}
	req.Header.Set("Accept", metricsAccept)
	resp, err := m.client.Do(req)
	if err != nil {
		return failed, fmt.Errorf("scrape %s: %w", where, metricsUnwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return failed, fmt.Errorf("scrape %s: HTTP %s", where, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "text/plain" && mt != "application/openmetrics-text") {
			return failed, fmt.Errorf("scrape %s: content type %q is not Prometheus text (is this the metrics endpoint?)", where, ct)
		}
	}
	kept, orig, n, err := metricsFilter(io.LimitReader(resp.Body, m.maxBody+1))
	if err != nil {
		return failed, fmt.Errorf("scrape %s: read body: %w", where, metricsUnwrapURL(err))
	}
	if n > m.maxBody {
		return failed, fmt.Errorf("scrape %s: body larger than %s", where, logTailSize(m.maxBody))
	}
	e, err := metricsParse(kept, orig)
	e.URL = where
	if err != nil {
		return e, fmt.Errorf("scrape %s: %w", where, err)
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
	return metricsParse(kept, orig)
}

func metricsParse(kept []byte, orig []int) (Engine, error) {
	fams, skipped, err := metricsDecode(kept, orig)
	if err != nil {
		e := metricsEmpty()
		e.Skipped = skipped
		return e, err
	}
	e := metricsEngine(fams)
	e.Skipped = skipped
	return e, nil
}

// metricsDecode runs expfmt's text parser over the lines metricsFilter
// keeps. The parser stops at the first bad line; each bad line is reported
// (by its number in the original body), dropped, and the parse rerun.
func metricsDecode(kept []byte, orig []int) (map[string]*dto.MetricFamily, []string, error) {
	var (
		removed []int // 1-based line numbers in kept, ascending
		skipped []string
	)
	for {
		p := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := p.TextToMetricFamilies(metricsWithout(kept, removed))
		if err == nil {
			if len(fams) == 0 && len(skipped) > 0 {
				return nil, skipped, fmt.Errorf("not Prometheus text: no valid metric (%s)", skipped[0])
			}
			return fams, skipped, nil
		}
		var pe expfmt.ParseError
		if !errors.As(err, &pe) {
			return nil, skipped, fmt.Errorf("parse metrics: %w", err)
		}
		line := pe.Line
		for _, r := range removed {
			if r <= line {
				line++
			}
		}
		text, ok := metricsLine(kept, line)
		if !ok || line > len(orig) {
			return nil, skipped, fmt.Errorf("parse metrics: %w", err)
		}
		skipped = append(skipped, fmt.Sprintf("line %d: %s: %q", orig[line-1], pe.Msg, logTailLine(metricsClip(text))))
		if len(skipped) > metricsMaxSkipped {
			return nil, skipped, fmt.Errorf("not Prometheus text: more than %d invalid lines, the first %s", metricsMaxSkipped, skipped[0])
		}
		i, _ := slices.BinarySearch(removed, line)
		removed = slices.Insert(removed, i, line)
	}
}

// metricsFilter keeps the lines the parser has to see: samples and
// HELP/TYPE lines of the families metricsEngine reads (minus histogram
// buckets, of which only _sum and _count are used), every line that does
// not start with a plain metric name, and the first metricsHeadLines lines
// whatever they are, so that a body that is not an exposition at all is
// still recognised and reported. The
// rest — most of a vLLM scrape is latency histograms — is dropped unparsed,
// which keeps a 1 MiB scrape well under 20 ms. orig maps each kept line to
// its 1-based number in body. The result always ends with a newline.
func metricsFilter(r io.Reader) (kept []byte, orig []int, n int64, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte // a line longer than br's buffer, being assembled
	for num := 1; ; num++ {
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			line, err = br.ReadSlice('\n')
			line = append(long, line...)
		}
		n += int64(len(line))
		if len(line) > 0 && (num <= metricsHeadLines || metricsWanted(line)) {
			kept = append(kept, line...)
			if line[len(line)-1] != '\n' {
				kept = append(kept, '\n') // the parser wants a final newline
			}
			orig = append(orig, num)
		}
		if err == io.EOF {
			return kept, orig, n, nil
		}
		if err != nil {
			return nil, nil, n, err
		}
	}
}

// metricsWanted reports whether a line must go to the parser.
func metricsWanted(line []byte) bool {
	rest := bytes.TrimLeft(line, " \t")
	if len(rest) > 0 && rest[0] == '#' {
		rest = bytes.TrimLeft(rest[1:], " \t")
		if !bytes.HasPrefix(rest, []byte("HELP")) && !bytes.HasPrefix(rest, []byte("TYPE")) {
			return false // other comments mean nothing to the parser
		}
		rest = bytes.TrimLeft(rest[4:], " \t")
	}
	end := 0
	for end < len(rest) && metricsNameByte(rest[end], end == 0) {
		end++
	}
	if end == 0 || (end < len(rest) && rest[end] == '"') {
		return true // not a plain sample: let the parser judge it
	}
	name := rest[:end]
	if bytes.HasSuffix(name, []byte("_bucket")) {
		return false
	}
	if metricsUsed[string(name)] {
		return true
	}
	for _, suffix := range []string{"_sum", "_count", "_total", "_created"} {
		if base, ok := bytes.CutSuffix(name, []byte(suffix)); ok && metricsUsed[string(base)] {
			return true
		}
	}
	return false
}

// metricsNameByte reports whether c may appear in a legacy metric name.
func metricsNameByte(c byte, first bool) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}

// metricsWithout returns body minus the given lines (1-based, ascending).
func metricsWithout(body []byte, removed []int) io.Reader {
	if len(removed) == 0 {
		return bytes.NewReader(body)
	}
	var parts []io.Reader
	line, start, pos := 1, 0, 0
	for _, r := range removed {
		for line < r {
			pos += bytes.IndexByte(body[pos:], '\n') + 1
			line++
		}
		parts = append(parts, bytes.NewReader(body[start:pos]))
		pos += bytes.IndexByte(body[pos:], '\n') + 1
		line++
		start = pos
	}
	parts = append(parts, bytes.NewReader(body[start:]))
	return io.MultiReader(parts...)
}

// metricsLine returns line n (1-based) of body.
func metricsLine(body []byte, n int) ([]byte, bool) {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(body, '\n')
		if j < 0 {
			return nil, false
		}
		body = body[j+1:]
	}
	if len(body) == 0 {
		return nil, false
	}
	if j := bytes.IndexByte(body, '\n'); j >= 0 {
		body = body[:j]
	}
	return body, true
}

func metricsClip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// metricsSource names the families one engine kind exports.
type metricsSource struct {
	kind, prefix       string // prefix: every family of this engine has it
	running, waiting   string
	kvUsage            []string // first present wins
	generation, prompt string   // counters
	generationHist     string   // per-request histograms, fallback for the counters
	promptHist         string
	finished           []string // counters; first present wins
	finishedHist       string   // a histogram observed once per finished request, last resort
	finishedReason     string   // label of the finished counter that gives FinishedByReason
	preemptions        string
	genThroughput      string
	created            string // the generation counter's creation time
}

var metricsSources = []metricsSource{{
	kind:           "vllm",
	prefix:         "vllm:",
	running:        "vllm:num_requests_running",
	waiting:        "vllm:num_requests_waiting",
	kvUsage:        []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
	generation:     "vllm:generation_tokens_total",
	prompt:         "vllm:prompt_tokens_total",
	generationHist: "vllm:request_generation_tokens",
	promptHist:     "vllm:request_prompt_tokens",
	finished:       []string{"vllm:request_success_total"},
	finishedReason: "finished_reason",
	preemptions:    "vllm:num_preemptions_total",
	genThroughput:  "vllm:avg_generation_throughput_toks_per_s",
	created:        "vllm:generation_tokens_created",
}, {
	kind:          "sglang",
	prefix:        "sglang:",
	running:       "sglang:num_running_reqs",
	waiting:       "sglang:num_queue_reqs",
	kvUsage:       []string{"sglang:token_usage"},
	generation:    "sglang:generation_tokens_total",
	prompt:        "sglang:prompt_tokens_total",
	finished:      []string{"sglang:num_requests_total"},
	finishedHist:  "sglang:e2e_request_latency_seconds",
	genThroughput: "sglang:gen_throughput",
	created:       "sglang:generation_tokens_created",
}, {
	kind:           "tgi",
	prefix:         "tgi_",
	running:        "tgi_batch_current_size",
	waiting:        "tgi_queue_size",
	generationHist: "tgi_request_generated_tokens",
	promptHist:     "tgi_request_input_length",
	finished:       []string{"tgi_request_success"},
}}

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

// metricsUsed holds every family name metricsEngine may read, in both the
// text-format spelling ("x_total") and the OpenMetrics one ("x").
var metricsUsed = func() map[string]bool {
	used := map[string]bool{"process_start_time_seconds": true}
	add := func(names ...string) {
		for _, n := range names {
			if n != "" {
				used[n] = true
				used[strings.TrimSuffix(n, "_total")] = true
			}
		}
	}
	for _, s := range metricsSources {
		add(s.running, s.waiting, s.generation, s.prompt, s.generationHist, s.promptHist,
			s.finishedHist, s.preemptions, s.genThroughput, s.created)
		add(s.kvUsage...)
		add(s.finished...)
	}
	add(metricsV0Only...)
	return used
}()

func metricsEmpty() Engine {
	nan := math.NaN()
	return Engine{
		KVCacheUsage: nan, GenerationTokens: nan, PromptTokens: nan, RequestsFinished: nan,
		FinishedLenSum: nan, FinishedLenCount: nan, GenThroughput: nan,
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
	if src == nil {
		return e
	}
	m := metricsFamilies(fams)
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
	e.GenerationTokens = m.counterOrHist(src.generation, src.generationHist)
	e.PromptTokens = m.counterOrHist(src.prompt, src.promptHist)
	for _, name := range src.finished {
		if v, ok := m.sum(name); ok {
			e.RequestsFinished = v
			if src.finishedReason != "" {
				e.FinishedByReason = m.byLabel(name, src.finishedReason)
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
	return e
}

// metricsRedact drops the password from a URL so errors and reports can
// show it.
func metricsRedact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
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
