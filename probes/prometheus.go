package probes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

// Prometheus asks a Prometheus server's HTTP API (v1 query and query_range) through client_golang's
// api package. Every answer is bounded: the response body, the number of series and the number of
// samples, so that a careless selector cannot exhaust the bot's memory. A query waits for a free
// slot (at most MaxConcurrent in flight per server) and gives up when its ctx does.
type Prometheus struct {
	api    promv1.API
	where  string // the URL without its password
	limits PrometheusOptions
	slots  chan struct{}
	// secrets are the credentials sent with every request: a server or a proxy in front of it may
	// name them in the error it answers with, and an error never shows them.
	secrets []string
}

// PrometheusOptions configure a Prometheus client. Zero limits take their defaults.
type PrometheusOptions struct {
	URL string
	// Client carries the requests (http.DefaultClient's transport when nil). Deadlines come from the
	// ctx of each query.
	Client *http.Client
	// BearerToken, or Username and Password, authenticate every request to URL's host (never a
	// redirect elsewhere). They never appear in an error.
	BearerToken        string
	Username, Password string

	MaxSeries     int   // series in one answer (default 2,000)
	MaxSamples    int   // samples in one answer, all series together (default 200,000)
	MaxBody       int64 // bytes of one response body (default 16 MiB)
	MaxConcurrent int   // queries in flight at once (default 8)
}

// Prometheus defaults.
const (
	PromDefaultMaxSeries     = 2000
	PromDefaultMaxSamples    = 200_000
	PromDefaultMaxBody       = 16 << 20
	PromDefaultMaxConcurrent = 8
)

// PromSeries is one series of an answer: its labels (the metric name under "__name__") and its
// samples, oldest first. An instant query gives one sample per series.
type PromSeries struct {
	Labels  map[string]string
	Samples []PromSample
}

// PromSample is one value at a unix time in seconds.
type PromSample struct {
	T float64
	V float64
}

// PromResult is the answer to a query.
type PromResult struct {
	Series []PromSeries
	// Truncated says what was left out when the answer had more series or samples than the limits
	// allow (the kept series are then the first in label order); empty when nothing was.
	Truncated string
	// Warnings are the server's own warnings about the query.
	Warnings []string
}

// ErrPromTooLarge marks an answer whose body was larger than MaxBody.
var ErrPromTooLarge = errors.New("answer too large")

// NewPrometheus returns a client for the server at o.URL.
func NewPrometheus(o PrometheusOptions) (*Prometheus, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus url %q is not an http(s) URL", RedactURL(o.URL))
	}
	if o.BearerToken != "" && (o.Username != "" || o.Password != "") {
		return nil, errors.New("prometheus: give a bearer token or a username and password, not both")
	}
	if o.MaxSeries <= 0 {
		o.MaxSeries = PromDefaultMaxSeries
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = PromDefaultMaxSamples
	}
	if o.MaxBody <= 0 {
		o.MaxBody = PromDefaultMaxBody
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = PromDefaultMaxConcurrent
	}
	base := http.DefaultClient
	if o.Client != nil {
		base = o.Client
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	client := &http.Client{
		Transport: &promTransport{
			base: rt, host: u.Host, maxBody: o.MaxBody,
			bearer: o.BearerToken, user: o.Username, pass: o.Password,
		},
		CheckRedirect: SameHostRedirects,
		Jar:           base.Jar,
	}
	c, err := api.NewClient(api.Config{Address: o.URL, Client: client})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", RedactURL(o.URL), err)
	}
	secrets := append([]string{o.BearerToken, o.Password}, urlSecrets(o.URL)...)
	if o.Username != "" || o.Password != "" {
		secrets = append(secrets, basicAuthSecret(o.Username, o.Password))
	}
	return &Prometheus{
		api:     promv1.NewAPI(c),
		where:   RedactURL(o.URL),
		limits:  o,
		slots:   make(chan struct{}, o.MaxConcurrent),
		secrets: secrets,
	}, nil
}

// URL is the server's address without its password.
func (p *Prometheus) URL() string { return p.where }

// Query evaluates an instant query at time at (the server's now when zero). A range selector
// (`x[5m]`) gives every raw sample in the range, with its own timestamp.
func (p *Prometheus) Query(ctx context.Context, query string, at time.Time) (PromResult, error) {
	return p.queryParts(ctx, query, at, 1)
}

// queryParts is Query for a query that asks what parts separate queries would (a grouped query:
// one per run's selector): its answer may be as large as theirs together, parts times the limits.
func (p *Prometheus) queryParts(ctx context.Context, query string, at time.Time, parts int) (PromResult, error) {
	ctx = context.WithValue(ctx, promPartsKey{}, max(1, parts))
	return p.do(ctx, query, func(ctx context.Context, opts []promv1.Option) (model.Value, promv1.Warnings, error) {
		v, w, _, err := p.api.Query(ctx, query, at, opts...)
		return v, w, err
	})
}

// promPartsKey is the context key of how many queries' worth a query asks at once (default 1).
type promPartsKey struct{}

// promParts is the number of queries' worth ctx's query asks.
func promPartsOf(ctx context.Context) int {
	if n, ok := ctx.Value(promPartsKey{}).(int); ok && n > 1 {
		return n
	}
	return 1
}

// QueryRange evaluates query at every step from start to end.
func (p *Prometheus) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (PromResult, error) {
	return p.queryRangeParts(ctx, query, start, end, step, 1)
}

// queryRangeParts is QueryRange for a grouped query of parts parts (queryParts).
func (p *Prometheus) queryRangeParts(ctx context.Context, query string, start, end time.Time, step time.Duration, parts int) (PromResult, error) {
	ctx = context.WithValue(ctx, promPartsKey{}, max(1, parts))
	if step <= 0 || !end.After(start) {
		return PromResult{}, fmt.Errorf("query_range %s: empty range %s..%s step %s", p.where, start.Format(time.RFC3339), end.Format(time.RFC3339), step)
	}
	return p.do(ctx, query, func(ctx context.Context, opts []promv1.Option) (model.Value, promv1.Warnings, error) {
		v, w, _, err := p.api.QueryRange(ctx, query, promv1.Range{Start: start, End: end, Step: step}, opts...)
		return v, w, err
	})
}

func (p *Prometheus) do(ctx context.Context, query string, call func(context.Context, []promv1.Option) (model.Value, promv1.Warnings, error)) (PromResult, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return PromResult{}, fmt.Errorf("query %s: waiting for a free slot: %w", p.where, ctx.Err())
	}
	// Decoding an answer (up to MaxBody of JSON) and cutting it to the limits take their time after the
	// body is in, and neither watches ctx: they run apart, and the query returns when ctx ends even if
	// they go on. The slot is theirs until they finish, so abandoned parses stay within MaxConcurrent.
	type answer struct {
		res PromResult
		err error
	}
	out := make(chan answer, 1)
	received := &atomic.Bool{} // the server's answer is in; what is left is parsing it
	pctx := context.WithValue(ctx, promReceivedKey{}, received)
	go func() {
		defer func() { <-p.slots }()
		res, err := p.parse(pctx, query, call)
		out <- answer{res, err}
	}()
	select {
	case a := <-out:
		if a.err == nil && ctx.Err() != nil {
			// In by the deadline, parsed past it: a late answer is a failed probe, as a slow one is.
			a = answer{err: p.tooSlow(ctx)}
		}
		return a.res, a.err
	case <-ctx.Done():
		if !received.Load() {
			return PromResult{}, fmt.Errorf("query %s: %w", p.where, ctx.Err())
		}
		return PromResult{}, p.tooSlow(ctx)
	}
}

// tooSlow is the error of a query whose answer was not parsed within ctx.
func (p *Prometheus) tooSlow(ctx context.Context) error {
	return fmt.Errorf("query %s: %w before its answer was parsed: narrow the selector or the range", p.where, ctx.Err())
}

// parse runs the query and turns its answer into a PromResult within the limits.
func (p *Prometheus) parse(ctx context.Context, query string, call func(context.Context, []promv1.Option) (model.Value, promv1.Warnings, error)) (PromResult, error) {
	// Ask for one series more than we keep, so a server that honours limit (Prometheus 3) stops
	// early while we can still tell that something was cut; and tell it when we stop waiting.
	n := promPartsOf(ctx)
	maxSeries, maxSamples := p.limits.MaxSeries*n, p.limits.MaxSamples*n
	opts := []promv1.Option{promv1.WithLimit(uint64(maxSeries) + 1)}
	if dl, ok := ctx.Deadline(); ok {
		if left := promTimeout(time.Until(dl)); left > 0 {
			opts = append(opts, promv1.WithTimeout(left))
		}
	}
	v, warnings, err := call(ctx, opts)
	if err != nil {
		return PromResult{}, withoutSecrets(promError(ctx, p.where, query, err, p.secrets), p.secrets)
	}
	if ctx.Err() != nil {
		return PromResult{}, p.tooSlow(ctx)
	}
	res, err := PromConvert(v, maxSeries, maxSamples)
	if err != nil {
		return PromResult{}, withoutSecrets(fmt.Errorf("query %s: %w", p.where, err), p.secrets)
	}
	res.Warnings = warnings
	return res, nil
}

// promTimeout rounds a timeout down to what Prometheus can parse: its durations are whole numbers
// of a unit ("2s", "1m30s", "850ms"), and Prometheus 2 rejects Go's "1.5s" as a bad query.
func promTimeout(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Truncate(time.Second)
	}
	return d.Truncate(time.Millisecond)
}

// promError names what went wrong in words a person can act on. Context errors stay wrapped so a
// caller can tell a timeout with errors.Is.
func promError(ctx context.Context, where, query string, err error, secrets []string) error {
	var apiErr *promv1.Error
	// The message is the server's text: redacted, then cut to a line.
	msg := func() string { return clipLine(secretsRedacted(apiErr.Msg, secrets)) }
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("query %s: %w", where, ctx.Err())
	case errors.Is(err, ErrPromTooLarge):
		return fmt.Errorf("query %s: %w: narrow the selector", where, err)
	case errors.As(err, &apiErr):
		switch apiErr.Type {
		case promv1.ErrBadData:
			return fmt.Errorf("query %s: bad query %s: %s", where, clipLine(query), msg())
		case promv1.ErrTimeout, promv1.ErrCanceled:
			return fmt.Errorf("query %s: the server gave up: %s", where, msg())
		case promv1.ErrExec:
			return fmt.Errorf("query %s: %s", where, msg())
		}
		detail := strings.TrimSpace(apiErr.Detail)
		switch {
		case strings.Contains(apiErr.Msg, ": 401"), strings.Contains(apiErr.Msg, ": 403"):
			return fmt.Errorf("query %s: %s: check the credentials the run names (bearer_token_env, username_env, password_env)", where, msg())
		case strings.Contains(apiErr.Msg, ": 404"):
			return fmt.Errorf("query %s: %s: is this the Prometheus base URL (without /api/v1)?", where, msg())
		case promPlainWords(detail):
			return fmt.Errorf("query %s: %s: %s", where, msg(), detail)
		case detail != "":
			// Any other body that is not an API answer (a proxy's error page, a login page, JSON
			// from something else) is never quoted: it may hold anything.
			return fmt.Errorf("query %s: %s, with %d bytes of body that are not a Prometheus API answer (is a proxy or a login page in front of it?)",
				where, msg(), len(detail))
		}
		return fmt.Errorf("query %s: %s", where, msg())
	}
	return fmt.Errorf("query %s: %w", where, metricsUnwrapURL(err))
}

// PromConvert turns a decoded answer into series, keeping at most maxSeries series and maxSamples
// samples in all. What it leaves out is said in Truncated; what it keeps when it must cut is the
// first series in label order, so the cut is the same every time. A scalar becomes one series
// without labels; a string is an error.
func PromConvert(v model.Value, maxSeries, maxSamples int) (PromResult, error) {
	var res PromResult
	if err := promCheckLabels(v); err != nil {
		return res, err
	}
	switch v := v.(type) {
	case nil:
		return res, nil
	case *model.Scalar:
		res.Series = []PromSeries{{Labels: map[string]string{}, Samples: []PromSample{{promTime(v.Timestamp), float64(v.Value)}}}}
		return res, nil
	case *model.String:
		return res, fmt.Errorf("the query gives a string (%q), not numbers", clipLine(v.Value))
	case model.Vector:
		total := len(v)
		if total > maxSeries || total > maxSamples {
			promSort(len(v), func(i int) model.Metric { return v[i].Metric }, func(i, j int) { v[i], v[j] = v[j], v[i] })
			v = v[:min(maxSeries, maxSamples)]
		}
		res.Series = make([]PromSeries, 0, len(v))
		for _, s := range v {
			res.Series = append(res.Series, PromSeries{Labels: promLabels(s.Metric), Samples: []PromSample{{promTime(s.Timestamp), float64(s.Value)}}})
		}
		if len(v) < total {
			res.Truncated = fmt.Sprintf("kept %d of %d series (limit %d series, %d samples): narrow the selector", len(v), total, maxSeries, maxSamples)
		}
		return res, nil
	case model.Matrix:
		total, samples := len(v), 0
		for _, s := range v {
			samples += len(s.Values)
		}
		if total > maxSeries || samples > maxSamples {
			promSort(len(v), func(i int) model.Metric { return v[i].Metric }, func(i, j int) { v[i], v[j] = v[j], v[i] })
		}
		kept := 0
		for _, s := range v {
			if len(res.Series) == maxSeries || kept+len(s.Values) > maxSamples {
				break
			}
			ps := PromSeries{Labels: promLabels(s.Metric), Samples: make([]PromSample, len(s.Values))}
			for i, sp := range s.Values {
				ps.Samples[i] = PromSample{promTime(sp.Timestamp), float64(sp.Value)}
			}
			kept += len(s.Values)
			res.Series = append(res.Series, ps)
		}
		if len(res.Series) < total {
			res.Truncated = fmt.Sprintf("kept %d of %d series, %d of %d samples (limit %d series, %d samples): narrow the selector or the range",
				len(res.Series), total, kept, samples, maxSeries, maxSamples)
		}
		return res, nil
	}
	return res, fmt.Errorf("unexpected result type %s", v.Type())
}

// promSort orders n series by their labels, computing each one's key once.
func promSort(n int, metric func(int) model.Metric, swap func(i, j int)) {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = metric(i).String()
	}
	sort.Sort(promByKey{keys, swap})
}

type promByKey struct {
	keys []string
	swap func(i, j int)
}

func (p promByKey) Len() int           { return len(p.keys) }
func (p promByKey) Less(i, j int) bool { return p.keys[i] < p.keys[j] }
func (p promByKey) Swap(i, j int) {
	p.keys[i], p.keys[j] = p.keys[j], p.keys[i]
	p.swap(i, j)
}

func promLabels(m model.Metric) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[string(k)] = string(v)
	}
	return out
}

func promTime(t model.Time) float64 { return float64(t) / 1000 }

// PromEngineNames lists the series an engine status is built from: the families ParseMetrics
// reads, with histograms as their _sum and _count series, as Prometheus stores them.
func PromEngineNames() []string {
	hists := map[string]bool{}
	for _, s := range metricsSources {
		for _, h := range []string{s.generationHist, s.promptHist, s.finishedHist} {
			if h != "" {
				hists[h] = true
			}
		}
	}
	var names []string
	for n := range metricsUsed {
		switch {
		case hists[n]:
			names = append(names, n+"_sum", n+"_count")
		case metricsUsed[n+"_total"]:
			// The OpenMetrics spelling of a counter: Prometheus stores it under its _total name.
		default:
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// PromProgressNames lists the series a run's progress is counted from: the batch gauges, the
// generated-token and finished-request counters (or the histograms that stand in for them) and
// the start times that reveal a restart. It is PromEngineNames without the KV cache, prompt,
// preemption and throughput series, for replaying long histories.
func PromProgressNames() []string {
	keep := map[string]bool{"process_start_time_seconds": true}
	for _, s := range metricsSources {
		for _, n := range append([]string{s.running, s.waiting, s.generation, s.created}, s.finished...) {
			keep[n] = true
		}
		for _, h := range []string{s.generationHist, s.finishedHist} {
			if h != "" {
				keep[h+"_sum"], keep[h+"_count"] = true, true
			}
		}
	}
	var names []string
	for _, n := range PromEngineNames() {
		if keep[n] {
			names = append(names, n)
		}
	}
	return names
}

// PromEnginesByInstance builds one Engine per `instance` label from the series of an instant query over
// PromEngineNames, with the same rules as ParseMetrics (sums over data-parallel engines, the mean
// of the KV-cache gauges, histogram sums where an engine has no counter). Series without an
// instance label count under "". Instances whose series name no known engine have Kind "".
func PromEnginesByInstance(series []PromSeries) map[string]Engine {
	byInstance := map[string]map[string]*dto.MetricFamily{}
	for _, s := range series {
		name := s.Labels["__name__"]
		if name == "" || len(s.Samples) == 0 {
			continue
		}
		v := s.Samples[len(s.Samples)-1].V
		inst := s.Labels["instance"]
		fams := byInstance[inst]
		if fams == nil {
			fams = map[string]*dto.MetricFamily{}
			byInstance[inst] = fams
		}
		f := fams[name]
		if f == nil {
			f = &dto.MetricFamily{Name: &name, Type: dto.MetricType_UNTYPED.Enum()}
			fams[name] = f
		}
		mt := &dto.Metric{Untyped: &dto.Untyped{Value: &v}}
		// Only the labels metricsEngine reads: the data-parallel engine and why a request ended.
		for _, k := range promEngineLabels {
			if lv, ok := s.Labels[k]; ok {
				mt.Label = append(mt.Label, &dto.LabelPair{Name: promPtr(k), Value: &lv})
			}
		}
		f.Metric = append(f.Metric, mt)
	}
	out := make(map[string]Engine, len(byInstance))
	for inst, fams := range byInstance {
		e := metricsEngine(fams)
		e.URL = inst
		out[inst] = e
	}
	return out
}

func promPtr[T any](v T) *T { return &v }

// PromEngineReplay builds one instance's Engine from the same series at moment after moment (a
// query_range answer replayed step by step), reusing what it built, with the rules of PromEnginesByInstance.
type PromEngineReplay struct {
	names   []string
	metrics []*dto.Metric
	all     map[string]*dto.MetricFamily
	present map[string]*dto.MetricFamily
}

// NewPromEngineReplay prepares the series of one instance; their samples are not read.
func NewPromEngineReplay(series []PromSeries) *PromEngineReplay {
	r := &PromEngineReplay{all: map[string]*dto.MetricFamily{}, present: map[string]*dto.MetricFamily{}}
	for _, s := range series {
		name := s.Labels["__name__"]
		mt := &dto.Metric{Untyped: &dto.Untyped{Value: new(float64)}}
		for _, k := range promEngineLabels {
			if lv, ok := s.Labels[k]; ok {
				mt.Label = append(mt.Label, &dto.LabelPair{Name: promPtr(k), Value: &lv})
			}
		}
		if r.all[name] == nil {
			r.all[name] = &dto.MetricFamily{Name: promPtr(name), Type: dto.MetricType_UNTYPED.Enum()}
		}
		r.names = append(r.names, name)
		r.metrics = append(r.metrics, mt)
	}
	return r
}

// At builds the Engine from values, one per series in the order given to NewPromEngineReplay; a
// NaN leaves its series out (no sample at that moment).
func (r *PromEngineReplay) At(values []float64) Engine {
	clear(r.present)
	for _, f := range r.all {
		f.Metric = f.Metric[:0]
	}
	for i, v := range values {
		if math.IsNaN(v) {
			continue
		}
		*r.metrics[i].Untyped.Value = v
		f := r.all[r.names[i]]
		f.Metric = append(f.Metric, r.metrics[i])
		r.present[r.names[i]] = f
	}
	return metricsEngine(r.present)
}

// promEngineLabels are the labels metricsEngine reads.
var promEngineLabels = []string{"engine", "finished_reason", "finish_reason", "position", "request_type", "kv_cache_block_type"}

// PromRate is the per-second increase of a counter from its raw samples, counter resets included:
// the increase divided by the time the samples span, not by the window they were asked for, so a
// series younger than the window is not under-reported as rate() would. ok is false with fewer
// than two samples.
func PromRate(samples []PromSample) (rate float64, ok bool) {
	if len(samples) < 2 {
		return 0, false
	}
	span := samples[len(samples)-1].T - samples[0].T
	if span <= 0 {
		return 0, false
	}
	var inc float64
	for i := 1; i < len(samples); i++ {
		d := samples[i].V - samples[i-1].V
		if d < 0 {
			d = samples[i].V // the counter restarted from zero
		}
		if !math.IsNaN(d) {
			inc += d
		}
	}
	return inc / span, true
}

// promPlainWords reports whether an error body is a short phrase such as Prometheus's own
// "Unauthorized": one line of at most 64 bytes of letters, digits, spaces and sentence
// punctuation. Markup, JSON, key=value pairs and paths are not, and are never quoted.
func promPlainWords(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(" .,:;!?'()-", r):
		default:
			return false
		}
	}
	return true
}
