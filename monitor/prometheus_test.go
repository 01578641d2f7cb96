package monitor

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"runwatch/config"
	"runwatch/internal/testkit/fake"
	"runwatch/probes"
	"runwatch/reports"
)

// promFakeJob is a linear job behind a fake Prometheus: every instance of a run generates rate
// tokens/s and finishes items items/s since start, and every host's /data loses fill bytes/s.
type promFakeJob struct {
	prefix    string // of the host names
	instances int
	start     float64 // unix seconds the servers started
	rate      float64 // tokens/s per instance
	items     float64 // items/s per instance
	fill      float64 // bytes/s /data shrinks by, per host
	dataAvail float64 // /data free at start
	restartAt float64 // when instance 0 restarts (0: never)
	down      int     // instance index Prometheus cannot scrape (-1: none)
}

const promFakeDataSize = 10e12

func (j promFakeJob) instance(i int) string { return fmt.Sprintf("%sgpu-node-%d:8000", j.prefix, i) }
func (j promFakeJob) node(i int) string     { return fmt.Sprintf("%sgpu-node-%d:9100", j.prefix, i) }

// engineSeries are one instance's vLLM series at t, as Prometheus would return them. Label sets
// come from cache (keyed by run, instance and series), so that the fake's work stays small.
func (j promFakeJob) engineSeries(cache *sync.Map, run string, i int, t float64) model.Vector {
	if t < j.start {
		return nil
	}
	since := j.start
	if i == 0 && j.restartAt > 0 && t >= j.restartAt {
		since = j.restartAt
	}
	ts := model.TimeFromUnixNano(int64(t * 1e9))
	up := 1.0
	if i == j.down {
		up = 0
	}
	with := func(name string, extra ...string) model.Metric {
		key := run + "\x00" + strconv.Itoa(i) + "\x00" + name + "\x00" + strings.Join(extra, "\x00")
		if m, ok := cache.Load(key); ok {
			return m.(model.Metric)
		}
		m := model.Metric{"__name__": model.LabelValue(name), "instance": model.LabelValue(j.instance(i)), "job": "vllm", "run": model.LabelValue(run)}
		for k := 0; k+1 < len(extra); k += 2 {
			m[model.LabelName(extra[k])] = model.LabelValue(extra[k+1])
		}
		cache.Store(key, m)
		return m
	}
	v := model.Vector{{Metric: with("up"), Value: model.SampleValue(up), Timestamp: ts}}
	if up == 0 {
		return v
	}
	for _, eng := range []string{"0", "1"} {
		v = append(v,
			&model.Sample{Metric: with("vllm:num_requests_running", "engine", eng), Value: 32, Timestamp: ts},
			&model.Sample{Metric: with("vllm:num_requests_waiting", "engine", eng), Value: 4, Timestamp: ts},
			&model.Sample{Metric: with("vllm:generation_tokens_total", "engine", eng), Value: model.SampleValue(math.Floor(j.rate / 2 * (t - since))), Timestamp: ts},
			&model.Sample{Metric: with("vllm:request_success_total", "engine", eng, "finished_reason", "stop"), Value: model.SampleValue(math.Floor(j.items / 2 * (t - since))), Timestamp: ts},
		)
	}
	v = append(v, &model.Sample{Metric: with("process_start_time_seconds"), Value: model.SampleValue(since), Timestamp: ts})
	return v
}

// historySeries is what promHistoryQuery gets for one instance from start to end: its series
// summed by name, and its start time marked with a label of its own.
func (j promFakeJob) historySeries(run string, i int, start, end, step float64) model.Matrix {
	inst := model.LabelValue(j.instance(i))
	names := []string{"up", "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:generation_tokens_total", "vllm:request_success_total", "process_start_time_seconds"}
	mat := make(model.Matrix, len(names))
	for k, n := range names {
		mat[k] = &model.SampleStream{Metric: model.Metric{"__name__": model.LabelValue(n), "instance": inst}}
	}
	mat[5].Metric["runwatch"] = "start"
	for t := start; t <= end+1e-9; t += step {
		if t < j.start {
			continue
		}
		since := j.start
		if i == 0 && j.restartAt > 0 && t >= j.restartAt {
			since = j.restartAt
		}
		ts := model.TimeFromUnixNano(int64(t * 1e9))
		up := 1.0
		if i == j.down {
			up = 0
		}
		vals := []float64{up, 64, 8, 2 * math.Floor(j.rate/2*(t-since)), 2 * math.Floor(j.items/2*(t-since)), since}
		for k, v := range vals {
			if k > 0 && up == 0 {
				break
			}
			mat[k].Values = append(mat[k].Values, model.SamplePair{Timestamp: ts, Value: model.SampleValue(v)})
		}
	}
	out := mat[:0]
	for _, s := range mat {
		if len(s.Values) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func (j promFakeJob) dataAvailAt(t float64) float64 { return j.dataAvail - j.fill*(t-j.start) }

// fsSeries are one host's node_exporter filesystems at t.
func (j promFakeJob) fsSeries(i int, t float64) model.Vector {
	ts := model.TimeFromUnixNano(int64(t * 1e9))
	var v model.Vector
	for _, fs := range []struct {
		mp, dev     string
		avail, size float64
	}{{"/", "/dev/nvme0n1p2", 50e9, 200e9}, {"/data", "/dev/nvme1n1", j.dataAvailAt(t), promFakeDataSize}} {
		for _, n := range []struct {
			name string
			v    float64
		}{{"node_filesystem_avail_bytes", fs.avail}, {"node_filesystem_size_bytes", fs.size}, {"node_filesystem_free_bytes", fs.avail + 1e9}, {"node_filesystem_device_error", 0}} {
			v = append(v, &model.Sample{Metric: model.Metric{"__name__": model.LabelValue(n.name), "instance": model.LabelValue(j.node(i)), "job": "node",
				"host": model.LabelValue(promFakeHost(j.node(i))), "mountpoint": model.LabelValue(fs.mp), "device": model.LabelValue(fs.dev), "fstype": "xfs"},
				Value: model.SampleValue(n.v), Timestamp: ts})
		}
	}
	return v
}

// promFakeResetsName is the series name the engine query gives resets() of the token counters.
const promFakeResetsName = "runwatch_resets_1h"

// promFakeHost is an instance without its port, as the filesystem query's host label has it.
func promFakeHost(instance string) string {
	if h, _, err := net.SplitHostPort(instance); err == nil {
		return h
	}
	return instance
}

// promFake answers the queries the monitor sends, for runs named in their selectors.
type promFake struct {
	*httptest.Server
	jobs     map[string]promFakeJob
	latency  time.Duration
	stages   map[string]float64 // promql check query -> value (absent: no series)
	queries  atomic.Int64
	inFlight atomic.Int64
	most     atomic.Int64
	series   int // series the engine query returns instead, when > 0
	labels   sync.Map
}

var (
	promFakeRunRE      = regexp.MustCompile(`run="([^"]+)"`)
	promFakeRunsRE     = regexp.MustCompile(`run=~"([^"]+)"`)
	promFakeInstanceRE = regexp.MustCompile(`instance=~"([^"]*)"`)
)

// promFakeInstances lists the instances an instance=~"a|b" matcher names.
func promFakeInstances(q string) []string {
	m := promFakeInstanceRE.FindStringSubmatch(q)
	if m == nil {
		return nil
	}
	return strings.Split(strings.ReplaceAll(m[1], `\\`, ""), "|")
}

// node finds the job and index of a node_exporter instance.
func (f *promFake) node(name string) (promFakeJob, int, bool) {
	for _, jb := range f.jobs {
		if !strings.HasPrefix(name, jb.prefix) {
			continue
		}
		for i := range jb.instances {
			if jb.node(i) == name {
				return jb, i, true
			}
		}
	}
	return promFakeJob{}, 0, false
}

func newPromFake(t testing.TB, jobs map[string]promFakeJob) *promFake {
	f := &promFake{jobs: jobs, stages: map[string]float64{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *promFake) serve(w http.ResponseWriter, r *http.Request) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.most.Load()
		if n <= m || f.most.CompareAndSwap(m, n) {
			break
		}
	}
	f.queries.Add(1)
	// Read the form first: the server notices a client that hung up only once the body is read.
	r.ParseForm()
	if f.latency > 0 {
		select {
		case <-time.After(f.latency):
		case <-r.Context().Done():
			return
		}
	}
	q := r.Form.Get("query")
	at := float64(time.Now().UnixNano()) / 1e9
	if s := r.Form.Get("time"); s != "" {
		at, _ = strconv.ParseFloat(s, 64)
	}
	run := ""
	if m := promFakeRunRE.FindStringSubmatch(q); m != nil {
		run = m[1]
	}
	job, ok := f.jobs[run]
	var result model.Value
	resultType := "vector"
	switch {
	case strings.HasSuffix(r.URL.Path, "/query_range") && (strings.Contains(q, `"runwatch_part"`) || strings.Contains(q, `run=~"`)):
		resultType = "matrix"
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		mat := model.Matrix{}
		runs, tag := f.parts(q)
		for i, run := range runs {
			jb := f.jobs[run]
			for k := 0; k < jb.instances; k++ {
				for _, ss := range jb.historySeries(run, k, start, end, step) {
					ss.Metric = tag(ss.Metric, i)
					mat = append(mat, ss)
				}
			}
		}
		result = mat
	case strings.Contains(q, `"runwatch_part"`), strings.Contains(q, `run=~"`):
		result = f.grouped(q, at)
	case strings.HasSuffix(r.URL.Path, "/query_range"):
		resultType = "matrix"
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		mat := model.Matrix{}
		for i := 0; ok && i < job.instances; i++ {
			mat = append(mat, job.historySeries(run, i, start, end, step)...)
		}
		result = mat
	case strings.Contains(q, promFakeResetsName):
		v := model.Vector{}
		for i := range job.instances {
			v = append(v, job.engineSeries(&f.labels, run, i, at)...)
		}
		for k := 0; k < f.series; k++ {
			v = append(v, &model.Sample{Metric: model.Metric{"__name__": "vllm:num_requests_running", "instance": model.LabelValue(fmt.Sprint("x", k))}, Timestamp: model.TimeFromUnixNano(int64(at * 1e9))})
		}
		if ok && job.restartAt > 0 && at >= job.restartAt {
			v = append(v, &model.Sample{Metric: model.Metric{"__name__": promFakeResetsName, "instance": model.LabelValue(job.instance(0))}, Value: 1, Timestamp: model.TimeFromUnixNano(int64(at * 1e9))})
		}
		result = v
	case strings.Contains(q, " and on(host) "):
		v := model.Vector{}
		for i := range job.instances {
			v = append(v, job.fsSeries(i, at)...)
		}
		result = v
	case strings.HasPrefix(q, "node_filesystem_avail_bytes{"), strings.HasPrefix(q, "node_disk_written_bytes_total{"):
		resultType = "matrix"
		mat := model.Matrix{}
		for _, node := range promFakeInstances(q) {
			jb, i, found := f.node(node)
			if !found {
				continue
			}
			if strings.HasPrefix(q, "node_filesystem_avail_bytes{") {
				s := &model.SampleStream{Metric: model.Metric{"__name__": "node_filesystem_avail_bytes", "instance": model.LabelValue(jb.node(i)), "mountpoint": "/data"}}
				for t := math.Max(jb.start, at-1800); t <= at; t += 15 {
					s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(int64(t * 1e9)), Value: model.SampleValue(jb.dataAvailAt(t))})
				}
				mat = append(mat, s)
				continue
			}
			s := &model.SampleStream{Metric: model.Metric{"__name__": "node_disk_written_bytes_total", "instance": model.LabelValue(jb.node(i)), "device": "nvme1n1"}}
			for t := math.Max(jb.start, at-300); t <= at; t += 15 {
				s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(int64(t * 1e9)), Value: model.SampleValue(jb.fill * (t - jb.start))})
			}
			mat = append(mat, s)
		}
		result = mat
	default:
		v := model.Vector{}
		if val, ok := f.stages[q]; ok {
			v = append(v, &model.Sample{Metric: model.Metric{"run": model.LabelValue(run)}, Value: model.SampleValue(val), Timestamp: model.TimeFromUnixNano(int64(at * 1e9))})
		}
		result = v
	}
	w.Header().Set("Content-Type", "application/json")
	// Encoded by hand: the benchmark should measure the monitor, not encoding/json's reflection.
	b := append(make([]byte, 0, 64<<10), `{"status":"success","data":{"resultType":"`+resultType+`","result":[`...)
	switch res := result.(type) {
	case model.Vector:
		for i, smp := range res {
			if i > 0 {
				b = append(b, ',')
			}
			b = promFakeMetric(b, smp.Metric)
			b = append(b, `,"value":`...)
			b = promFakePair(b, smp.Timestamp, smp.Value)
			b = append(b, '}')
		}
	case model.Matrix:
		for i, ss := range res {
			if i > 0 {
				b = append(b, ',')
			}
			b = promFakeMetric(b, ss.Metric)
			b = append(b, `,"values":[`...)
			for k, sp := range ss.Values {
				if k > 0 {
					b = append(b, ',')
				}
				b = promFakePair(b, sp.Timestamp, sp.Value)
			}
			b = append(b, "]}"...)
		}
	}
	b = append(b, "]}}\n"...)
	w.Write(b)
}

// grouped answers a query grouped over several runs (probes' promTagged): each run's part, in the
// order the runs first appear in the query, tagged with its index. Engine parts are the run's
// engine series; a storage or writers query gives every run's filesystems once and, for each part,
// the hosts of its run.
func (f *promFake) grouped(q string, at float64) model.Vector {
	runs, tag := f.parts(q)
	ts := model.TimeFromUnixNano(int64(at * 1e9))
	v := model.Vector{}
	seen := map[string]bool{}
	for i, run := range runs {
		job, ok := f.jobs[run]
		if !ok {
			continue
		}
		for k := range job.instances {
			if strings.Contains(q, promFakeResetsName) {
				for _, smp := range job.engineSeries(&f.labels, run, k, at) {
					v = append(v, &model.Sample{Metric: tag(smp.Metric, i), Value: smp.Value, Timestamp: smp.Timestamp})
				}
				continue
			}
			host := model.LabelValue(promFakeHost(job.instance(k)))
			v = append(v, &model.Sample{Metric: tag(model.Metric{"instance": model.LabelValue(job.instance(k)), "host": host}, i), Value: 1, Timestamp: ts})
			for _, smp := range job.fsSeries(k, at) {
				if key := smp.Metric.String(); !seen[key] {
					seen[key] = true
					v = append(v, smp)
				}
			}
		}
		if strings.Contains(q, promFakeResetsName) && job.restartAt > 0 && at >= job.restartAt {
			v = append(v, &model.Sample{Metric: tag(model.Metric{"__name__": promFakeResetsName, "instance": model.LabelValue(job.instance(0))}, i), Value: 1, Timestamp: ts})
		}
	}
	return v
}

// parts are the runs of a grouped query in part order, and how a series of part i is told apart.
func (f *promFake) parts(q string) ([]string, func(model.Metric, int) model.Metric) {
	var runs []string
	// Runs told apart by their run label are one selector, run=~"a|b", and a part is its run's name;
	// else each run's part is tagged with its index.
	collapsed := promFakeRunsRE.FindStringSubmatch(q)
	if collapsed != nil {
		runs = strings.Split(collapsed[1], "|")
	} else {
		for _, m := range promFakeRunRE.FindAllStringSubmatch(q, -1) {
			if !slices.Contains(runs, m[1]) {
				runs = append(runs, m[1])
			}
		}
	}
	tag := func(m model.Metric, i int) model.Metric {
		c := m.Clone()
		if collapsed != nil {
			if _, ok := c["run"]; ok {
				return c // the engines' own series carry it
			}
			c["run"] = model.LabelValue(runs[i])
			c["runwatch_part"] = model.LabelValue(runs[i])
			return c
		}
		c["runwatch_part"] = model.LabelValue(strconv.Itoa(i))
		return c
	}
	return runs, tag
}

func promFakeMetric(b []byte, m model.Metric) []byte {
	b = append(b, `{"metric":{`...)
	first := true
	for k, v := range m {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendQuote(b, string(k))
		b = append(b, ':')
		b = strconv.AppendQuote(b, string(v))
	}
	return append(b, '}')
}

func promFakePair(b []byte, t model.Time, v model.SampleValue) []byte {
	b = append(b, '[')
	b = strconv.AppendFloat(b, float64(t)/1000, 'f', 3, 64)
	b = append(b, `,"`...)
	b = strconv.AppendFloat(b, float64(v), 'f', -1, 64)
	return append(b, `"]`...)
}

func promTestRun(name, url string, total int64) config.Run {
	return config.Run{Name: name, Total: total, Outputs: []string{"/data/" + name + "/out"}, Protected: []string{"/shared"},
		Prometheus: &config.Prometheus{URL: url, Selector: `{run="` + name + `"}`}}
}

func TestPrometheusSourceStatus(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	job := promFakeJob{instances: 3, start: float64(now.Unix()) - 3600, rate: 1000, items: 2, fill: 10e6, dataAvail: 60e9, down: -1}
	fp := newPromFake(t, map[string]promFakeJob{"synth": job})
	fp.stages[`sum(vllm:num_requests_running{run="synth"}) > 0`] = 96
	run := promTestRun("synth", fp.URL, 50000)
	run.Stages = []config.Stage{
		{Name: "serving", Check: "promql", Query: `sum(vllm:num_requests_running{run="synth"}) > 0`},
		{Name: "absent", Check: "promql", Query: `vllm:num_requests_running{run="other"}`},
	}
	clock := fake.NewClock(now)
	m, _, err := New(&config.File{Runs: []config.Run{run}}, Options{ProbeTimeout: 2 * time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	rs := m.Status(context.Background(), All).Runs[0]
	for _, p := range rs.Problems {
		if strings.HasPrefix(p.Probe, "prometheus") {
			t.Errorf("problem %s: %s", p.Probe, p.Error)
		}
	}

	// A fresh monitor knows the last hour from query_range.
	hist := m.History("synth")
	if len(hist) < 55 || hist[0].T > job.start+60 {
		t.Errorf("history = %d points from %g; want the hour since %g", len(hist), hist[0].T, job.start)
	}
	if len(rs.Engines) != 3 {
		t.Fatalf("engines = %+v; want 3", rs.Engines)
	}
	for i, e := range rs.Engines {
		if e.Host != job.instance(i) || !e.OK || e.Engines != 2 || e.URL != fp.URL {
			t.Errorf("engine %d = %+v; want host %s, ok, 2 engines, url %s", i, e, job.instance(i), fp.URL)
		}
	}
	wantRate := 3 * job.rate
	if rs.Throughput == nil || math.Abs(rs.Throughput.TokensPerS-wantRate)/wantRate > 0.01 {
		t.Errorf("throughput = %+v; want %g tok/s", rs.Throughput, wantRate)
	}
	done := 3 * job.items * 3600
	if rs.Progress == nil || rs.Progress.Source != "prometheus" || math.Abs(float64(rs.Progress.Done)-done) > 6 {
		t.Errorf("progress = %+v; want about %g done, source prometheus", rs.Progress, done)
	}
	wantETA := (50000 - done) / (3 * job.items)
	if rs.ETA == nil || rs.ETA.Seconds == nil || math.Abs(*rs.ETA.Seconds-wantETA)/wantETA > 0.05 {
		t.Errorf("ETA = %+v; want about %g s", rs.ETA, wantETA)
	}

	// Storage: the output on /data of every host, filling at 10 MB/s.
	var remote []reports.PathInfo
	for _, p := range rs.Storage.Paths {
		if p.Host != "" {
			remote = append(remote, p)
		}
	}
	if len(remote) != 3 {
		t.Fatalf("remote paths = %+v; want the output on 3 hosts", remote)
	}
	for i, p := range remote {
		host := promFakeHost(job.node(i))
		avail := job.dataAvailAt(float64(now.Unix()))
		if p.Host != host || p.Mount != "/data" || p.Device != "/dev/nvme1n1" || p.FreeBytes == nil || float64(*p.FreeBytes) != avail {
			t.Errorf("remote path %d = %+v; want /data on %s with %g free", i, p, host, avail)
			continue
		}
		if p.FillsInS == nil || math.Abs(*p.FillsInS-avail/job.fill) > 1 {
			t.Errorf("/data on %s fills in %v; want %g s", host, p.FillsInS, avail/job.fill)
		}
	}
	if len(rs.Storage.ProtectedMounts) != 1 || rs.Storage.ProtectedMounts[0].Host != "" {
		t.Errorf("protected mounts = %+v; want only the local /shared (the writer scan speaks for this machine)", rs.Storage.ProtectedMounts)
	}
	rates := 0
	for _, w := range rs.Storage.WriteRates {
		if w.Host != "" {
			rates++
			if w.Mount != "/data" || math.Abs(w.BytesPerS-job.fill) > 1 || w.FromSource != "node_exporter" {
				t.Errorf("write rate %+v; want /data at %g B/s from node_exporter", w, job.fill)
			}
		}
	}
	if rates != 3 {
		t.Errorf("remote write rates = %d; want 3", rates)
	}
	// /data fills in 2,400 s, the job needs about 4,700: every host's disk is a warning naming it.
	warned := 0
	for _, w := range rs.Storage.Warnings {
		if w.Kind == "disk_full" && strings.Contains(w.Message, "/data` on gpu-node-") {
			warned++
		}
	}
	if warned != 3 {
		t.Errorf("disk_full warnings naming the host = %d; want 3: %+v", warned, rs.Storage.Warnings)
	}
	answer := reports.AnswerFree("synth", remote[2:], rs.Storage.WriteRates, rs.ETA.Seconds, nil).Text()
	for _, want := range []string{"/data on gpu-node-2", "free of 10.0 TB", "before the job ends"} {
		if !strings.Contains(answer, want) {
			t.Errorf("AnswerFree = %q; want it to say %q", answer, want)
		}
	}

	want := map[string]string{"serving": reports.StageDone, "absent": reports.StagePending}
	for _, s := range rs.Stages {
		if s.State != want[s.Name] {
			t.Errorf("stage %s = %s (%s); want %s", s.Name, s.State, s.Detail, want[s.Name])
		}
	}

	// The next status adds one live point to what the backfill left, without asking again.
	clock.Add(30 * time.Second)
	before := fp.queries.Load()
	m.Sample(context.Background())
	if got := len(m.History("synth")); got != len(hist)+1 {
		t.Errorf("after one sample the history has %d points; want %d", got, len(hist)+1)
	}
	// 7 since the exporters' writer facts are asked for too (runwatch_protected_writer_processes).
	if n := fp.queries.Load() - before; n > 7 {
		t.Errorf("one sample sent %d queries; want the engine, storage, writer and stage queries only (7)", n)
	}
}

func TestPrometheusRestartCarriesTotals(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	job := promFakeJob{instances: 2, start: float64(now.Unix()) - 1800, rate: 1000, items: 2, fill: 1, dataAvail: 1e12,
		restartAt: float64(now.Unix()) - 600, down: -1}
	fp := newPromFake(t, map[string]promFakeJob{"synth": job})
	m, _, err := New(&config.File{Runs: []config.Run{promTestRun("synth", fp.URL, 1e6)}}, Options{ProbeTimeout: 2 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	rs := m.Status(context.Background(), Need{Progress: true}).Runs[0]
	// Instance 0 restarted 10 minutes ago: its counters start over, yet what it counted before
	// counts. What it finished between the last step before the restart and the restart is lost
	// (Prometheus never saw it): at most one 30 s step.
	wantDone := 2 * job.items * 1800
	if rs.Progress == nil || math.Abs(float64(rs.Progress.Done)-wantDone) > job.items*30+4 {
		t.Fatalf("progress = %+v; want about %g done across the restart", rs.Progress, wantDone)
	}
	hist := m.History("synth")
	for i := 1; i < len(hist); i++ {
		if *hist[i].GenTokens < *hist[i-1].GenTokens || hist[i].Done < hist[i-1].Done {
			t.Fatalf("history goes backwards at %d: %+v after %+v", i, hist[i], hist[i-1])
		}
	}
	// Over the 15-minute window, less the step lost at the restart.
	lost := job.rate * 30 / 900
	if rs.Throughput == nil || math.Abs(rs.Throughput.TokensPerS-2*job.rate) > lost+1 {
		t.Errorf("throughput = %+v; want %g tok/s (less up to %g lost at the restart)", rs.Throughput, 2*job.rate, lost)
	}
	found := false
	for _, n := range rs.Notices {
		found = found || strings.Contains(n, "gpu-node-0:8000 restarted 1 time in the last hour")
	}
	if !found {
		t.Errorf("notices = %q; want the restart of gpu-node-0:8000 seen through resets()", rs.Notices)
	}
}

func TestPrometheusTargetDown(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	job := promFakeJob{instances: 2, start: float64(now.Unix()) - 600, rate: 1000, items: 2, fill: 1, dataAvail: 1e12, down: -1}
	jobs := map[string]promFakeJob{"synth": job}
	fp := newPromFake(t, jobs)
	clock := fake.NewClock(now)
	m, _, err := New(&config.File{Runs: []config.Run{promTestRun("synth", fp.URL, 1e6)}}, Options{ProbeTimeout: 2 * time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	last := func() float64 {
		h := m.History("synth")
		return *h[len(h)-1].GenTokens
	}
	m.Sample(context.Background())
	before := last()

	// Instance 1 goes down: its engine is not OK and the problem names it, and what it counted
	// still counts, so the totals grow by instance 0's tokens only.
	job.down = 1
	jobs["synth"] = job
	clock.Add(30 * time.Second)
	rs := m.Sample(context.Background())[0].Run
	if len(rs.Engines) != 2 || rs.Engines[1].OK || !strings.Contains(rs.Engines[1].Error, "up = 0") || rs.Engines[1].Host != "gpu-node-1:8000" {
		t.Errorf("engines = %+v; want gpu-node-1:8000 not OK (up = 0)", rs.Engines)
	}
	if !itHasProblem(rs, "prometheus target gpu-node-1:8000", "up = 0") {
		t.Errorf("problems = %+v; want prometheus target gpu-node-1:8000", rs.Problems)
	}
	if got, want := last(), before+30*job.rate; math.Abs(got-want) > 2 {
		t.Errorf("generated tokens after the target went down = %g; want %g (%g before + 30 s of the one still up)", got, want, before)
	}
}

func TestPrometheusNamedProblems(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	job := promFakeJob{instances: 1, start: float64(now.Unix()) - 600, rate: 1000, items: 2, fill: 1, dataAvail: 1e12, down: -1}
	tests := []struct {
		name  string
		setup func(fp *promFake, run *config.Run, env map[string]string)
		probe string
		want  string
	}{
		{"slow", func(fp *promFake, run *config.Run, env map[string]string) { fp.latency = time.Minute },
			"prometheus ", "no answer within 1s"},
		{"too many series", func(fp *promFake, run *config.Run, env map[string]string) { fp.series = probes.PromDefaultMaxSeries },
			"prometheus ", "engine series not used: kept 2000 of"},
		{"credential variable not set", func(fp *promFake, run *config.Run, env map[string]string) {
			run.Prometheus.BearerTokenEnv = "RUNWATCH_TEST_PROM_TOKEN"
		}, "prometheus", "prometheus.bearer_token_env names $RUNWATCH_TEST_PROM_TOKEN, which is not set"},
		{"no engine series", func(fp *promFake, run *config.Run, env map[string]string) { run.Prometheus.Selector = `{run="other"}` },
			"prometheus ", `no vLLM, SGLang, TGI, llama.cpp or TensorRT-LLM series match {run="other"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := newPromFake(t, map[string]promFakeJob{"synth": job})
			run := promTestRun("synth", fp.URL, 1e6)
			env := map[string]string{}
			tt.setup(fp, &run, env)
			// Only the slow server meets the timeout; the others do real work (2,000 series) and get
			// a timeout that work cannot reach.
			timeout := time.Minute
			if tt.name == "slow" {
				timeout = time.Second
			}
			m, _, err := New(&config.File{Runs: []config.Run{run}}, Options{ProbeTimeout: timeout, Now: func() time.Time { return now },
				LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
			if err != nil {
				t.Fatal(err)
			}
			rs := m.Status(context.Background(), Need{Progress: true}).Runs[0]
			found := false
			for _, p := range rs.Problems {
				found = found || strings.HasPrefix(p.Probe, tt.probe) && strings.Contains(p.Error, tt.want)
			}
			if !found {
				t.Errorf("problems = %+v; want %s…: …%s…", rs.Problems, tt.probe, tt.want)
			}
		})
	}
}

func TestPrometheusWithDirectMetrics(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	job := promFakeJob{instances: 2, start: float64(now.Unix()) - 600, rate: 1000, items: 2, fill: 1, dataAvail: 1e12, down: -1}
	fp := newPromFake(t, map[string]promFakeJob{"synth": job})
	srv := vllmServer(t, 1000)
	run := promTestRun("synth", fp.URL, 1e6)
	run.Metrics = []string{srv.URL + "/metrics"}
	m, _, err := New(&config.File{Runs: []config.Run{run}}, Options{ProbeTimeout: 2 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	rs := m.Status(context.Background(), Need{Progress: true, Storage: true}).Runs[0]
	// The engines the run lists win; Prometheus still gives the hosts' storage.
	if len(rs.Engines) != 1 || rs.Engines[0].URL != srv.URL+"/metrics" || rs.Engines[0].Host != "" {
		t.Errorf("engines = %+v; want only the direct %s", rs.Engines, srv.URL)
	}
	if rs.Progress == nil || rs.Progress.Source != "metrics" {
		t.Errorf("progress = %+v; want source metrics", rs.Progress)
	}
	hosts := 0
	for _, p := range rs.Storage.Paths {
		if p.Host != "" {
			hosts++
		}
	}
	if hosts != 2 {
		t.Errorf("storage = %+v; want the output on the 2 hosts from node_exporter", rs.Storage.Paths)
	}
}

// At most MaxConcurrentRuns runs are probed at once: twelve runs, each with its own slow metrics
// endpoint, never have more than three scrapes in flight.
func TestRunConcurrencyBound(t *testing.T) {
	var inFlight, most atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(10 * time.Millisecond)
		fmt.Fprint(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n# TYPE vllm:request_success_total counter\nvllm:request_success_total 7\n")
	}))
	t.Cleanup(srv.Close)
	var runs []config.Run
	for i := range 12 {
		runs = append(runs, config.Run{Name: fmt.Sprintf("r%d", i), Total: 100, Metrics: []string{fmt.Sprintf("%s/metrics/%d", srv.URL, i)}})
	}
	m, _, err := New(&config.File{Runs: runs}, Options{ProbeTimeout: 2 * time.Second, MaxConcurrentRuns: 3})
	if err != nil {
		t.Fatal(err)
	}
	st := m.Status(context.Background(), Need{Progress: true})
	for _, rs := range st.Runs {
		if rs.Progress == nil {
			t.Errorf("run %s: no progress (%+v)", rs.Name, rs.Problems)
		}
	}
	if n := most.Load(); n > 3 || n == 0 {
		t.Errorf("%d scrapes in flight at once; want at most 3 (MaxConcurrentRuns)", n)
	}
}

// BenchmarkStatusManyRuns answers a full status (engines, storage on every host, checks) of 100
// runs of 8 servers each from one Prometheus, with MaxConcurrentRuns at its default: "steady" is
// a running bot (histories filled), "fresh" a bot that just started (each status fills 100
// histories of six hours from query_range first, and takes the one-second disk-rate reading a
// first status takes). The fake Prometheus runs in the same process, so its own
// work is in the figures; "latency" adds a delay to each of its answers.
func BenchmarkStatusManyRuns(b *testing.B) {
	setup := func(b *testing.B, latency, age time.Duration) (*config.File, *promFake, *fake.Clock) {
		now := time.Unix(1_800_000_000, 0)
		jobs := map[string]promFakeJob{}
		fp := newPromFake(b, jobs)
		fp.latency = latency
		var runs []config.Run
		for i := range 100 {
			name := fmt.Sprintf("run-%03d", i)
			jobs[name] = promFakeJob{prefix: name + "-", instances: 8, start: float64(now.Add(-age).Unix()), rate: 1000, items: 2, fill: 1e6, dataAvail: 1e12, down: -1}
			runs = append(runs, promTestRun(name, fp.URL, 1e6))
		}
		return &config.File{Runs: runs}, fp, fake.NewClock(now)
	}
	check := func(b *testing.B, st reports.Status) {
		if rs := st.Runs[99]; len(rs.Engines) != 8 || rs.ETA == nil || rs.ETA.Seconds == nil {
			b.Fatalf("run 99: %d engines, ETA %+v; want 8 engines and an ETA (%+v)", len(rs.Engines), rs.ETA, rs.Problems)
		}
	}
	for _, latency := range []time.Duration{0, 5 * time.Millisecond} {
		b.Run(fmt.Sprintf("steady/latency=%s", latency), func(b *testing.B) {
			f, _, clock := setup(b, latency, time.Hour)
			m, _, err := New(f, Options{ProbeTimeout: 5 * time.Second, Now: clock.Now})
			if err != nil {
				b.Fatal(err)
			}
			m.Status(context.Background(), All)
			for b.Loop() {
				clock.Add(30 * time.Second)
				check(b, m.Status(context.Background(), All))
			}
		})
	}
	b.Run("fresh/6h", func(b *testing.B) {
		f, _, clock := setup(b, 0, promBackfillSpan)
		for b.Loop() {
			clock.Add(30 * time.Second)
			m, _, err := New(f, Options{ProbeTimeout: 5 * time.Second, Now: clock.Now})
			if err != nil {
				b.Fatal(err)
			}
			check(b, m.Status(context.Background(), All))
		}
	})
}
