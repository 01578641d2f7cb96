package monitor

// Many runs over many hosts against the real Prometheus (and the real node_exporter on every
// host): the queries of a sample grow with the kinds asked, not with the runs, and the benchmark
// of what a status and a sample cost at 1, 10 and 50 runs × 16 hosts.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/promtest"
	"runwatch/probes"
)

// scaleFarm is hosts on loopback (127.0.0.2, .3, …), each with a vLLM-like /metrics that answers
// for any run (?run=name: that run's server on that host) and a node_exporter, scraped by the real
// Prometheus: each run's job lists its hosts and labels their series run="name".
type scaleFarm struct {
	prom  *promtest.Server
	hosts []string // vLLM addresses, one per host
	runs  []config.Run
}

// scaleRunHosts are the hosts of run i among n: all of them when all is set, else two, the run's
// own neighbours, so that runs overlap on some hosts and not on others.
func scaleRunHosts(i, n int, all bool) []int {
	if all || n < 2 {
		out := make([]int, n)
		for k := range out {
			out[k] = k
		}
		return out
	}
	return []int{i % n, (i + 1) % n}
}

// startScaleFarm starts hosts hosts and Prometheus scraping runs runs over them every scrape; the
// runs' outputs and protected paths are dir and its shared/ (on a filesystem node_exporter reports).
func startScaleFarm(tb testing.TB, hosts, runs int, allHosts bool, scrape time.Duration, dir string) *scaleFarm {
	tb.Helper()
	nodeBin := promtest.NodeExporterBinary(tb)
	start := time.Now()
	f := &scaleFarm{}
	var nodes []string
	for h := range hosts {
		ip := fmt.Sprintf("127.0.0.%d", h+2)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			tb.Fatalf("listen on %s: %v", ip, err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			run := r.URL.Query().Get("run")
			n, _ := strconv.Atoi(strings.TrimPrefix(run, "r"))
			rate := float64(1000 + 100*n + 10*h) // tokens per second of this run's server on this host
			s := time.Since(start).Seconds()
			fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"m\"} %.0f\n"+
				"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 32\n"+
				"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 4\n"+
				"# TYPE vllm:request_success_total counter\nvllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} %.0f\n",
				rate*s, rate*s/500)
		})}
		go srv.Serve(ln)
		tb.Cleanup(func() { srv.Close() })
		f.hosts = append(f.hosts, ln.Addr().String())
		addr := promtest.FreeAddr(tb, ip)
		promtest.Start(tb, exec.Command(nodeBin, "--web.listen-address="+addr, "--collector.disable-defaults",
			"--collector.filesystem", "--collector.diskstats"))
		nodes = append(nodes, addr)
	}
	var cfg strings.Builder
	quote := func(addrs []string) string {
		q := make([]string, len(addrs))
		for i, a := range addrs {
			q[i] = strconv.Quote(a)
		}
		return strings.Join(q, ", ")
	}
	interval := fmt.Sprintf("%ds", int(scrape.Seconds()))
	fmt.Fprintf(&cfg, "  - job_name: node\n    scrape_interval: %s\n    static_configs:\n      - targets: [%s]\n", interval, quote(nodes))
	shared := filepath.Join(dir, "shared")
	for i := range runs {
		name := fmt.Sprintf("r%d", i)
		var targets []string
		for _, h := range scaleRunHosts(i, hosts, allHosts) {
			targets = append(targets, f.hosts[h])
		}
		fmt.Fprintf(&cfg, "  - job_name: vllm-%s\n    scrape_interval: %s\n    params: {run: [%s]}\n    static_configs:\n      - targets: [%s]\n        labels: {run: %s}\n",
			name, interval, name, quote(targets), name)
		f.runs = append(f.runs, config.Run{Name: name, Total: 1 << 40, Outputs: []string{dir}, Protected: []string{shared}})
	}
	f.prom = promtest.StartServer(tb, cfg.String())
	for i := range f.runs {
		f.runs[i].Prometheus = &config.Prometheus{URL: f.prom.URL, Selector: fmt.Sprintf(`{run="%s"}`, f.runs[i].Name)}
	}
	want := 0
	for i := range runs {
		want += len(scaleRunHosts(i, hosts, allHosts))
	}
	f.prom.WaitFor(tb, "every target scraped", `count(up == 1)`, 5*time.Minute, func(r probes.PromResult) bool {
		v, ok := promtest.Value(r)
		return ok && int(v) == want+hosts
	})
	return f
}

// queries is how many queries Prometheus has answered (instant and range), from its own /metrics.
func (f *scaleFarm) queries(tb testing.TB) int {
	tb.Helper()
	resp, err := http.Get(f.prom.URL + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "prometheus_http_requests_total{") ||
			!(strings.Contains(line, `handler="/api/v1/query"`) || strings.Contains(line, `handler="/api/v1/query_range"`)) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			n += int(v)
		}
	}
	return n
}

// samplesQueries is what the steady samples of a monitor over runs ask Prometheus: the queries of
// the third sample (the first two fill the histories from query_range).
func (f *scaleFarm) samplesQueries(tb testing.TB, runs []config.Run) (int, []Evaluation) {
	tb.Helper()
	m, _, err := New(&config.File{Source: "test", Runs: runs}, Options{ProbeTimeout: 10 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	m.Sample(ctx)
	m.Sample(ctx)
	before := f.queries(tb)
	evs := m.Sample(ctx)
	return f.queries(tb) - before, evs
}

// The queries of a sample grow with what is asked, not with the runs: eight runs with eight
// selectors over four hosts ask Prometheus what one run does, one query per kind (engines,
// filesystems, free-space trends, disk writes, writers); before, eight times as many. Each run
// still gets its own engines and hosts.
func TestQueriesPerSampleGrowWithSelectorsNotRuns(t *testing.T) {
	// Waits on a real Prometheus's scrapes: beside the monitor's other tests.
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "shared"), 0o755)
	farm := startScaleFarm(t, 4, 8, false, time.Second, dir)
	one, _ := farm.samplesQueries(t, farm.runs[:1])
	eight, evs := farm.samplesQueries(t, farm.runs)
	// Selectors of other shapes, which are not one selector apart: each its own part of the query.
	mixed := slices.Clone(farm.runs)
	for i := range mixed {
		if i%2 == 1 {
			p := *mixed[i].Prometheus
			p.Selector = fmt.Sprintf(`{job="vllm-%s"}`, mixed[i].Name)
			mixed[i].Prometheus = &p
		}
	}
	tagged, evsMixed := farm.samplesQueries(t, mixed)
	t.Logf("figure: queries per sample: %d for 1 run, %d for 8 runs with 8 selectors over 4 hosts (%d with selectors of two shapes)", one, eight, tagged)
	if one == 0 || one > 5 || eight != one || tagged != one {
		t.Errorf("queries per sample: %d for one run, %d for eight, %d for eight of two shapes; want the same, at most 5 (one per kind)", one, eight, tagged)
	}
	for i, ev := range append(evs, evsMixed...) {
		i %= len(evs)
		rs := ev.Run
		want := map[string]bool{}
		for _, h := range scaleRunHosts(i, 4, false) {
			want[farm.hosts[h]] = true
		}
		got := map[string]bool{}
		for _, e := range rs.Engines {
			got[e.Host] = e.OK
		}
		if len(got) != len(want) || rs.Progress == nil {
			t.Errorf("run %s: engines %+v, progress %+v, problems %+v; want its %d hosts' engines and progress", rs.Name, rs.Engines, rs.Progress, rs.Problems, len(want))
			continue
		}
		for h := range want {
			if !got[h] {
				t.Errorf("run %s: no engine on %s (engines %+v)", rs.Name, h, rs.Engines)
			}
		}
		remote := map[string]bool{}
		for _, p := range rs.Storage.Paths {
			if p.Host != "" && p.FreeBytes != nil {
				remote[p.Host] = true
			}
		}
		if len(remote) != len(want) {
			t.Errorf("run %s: storage on hosts %v; want its %d hosts (problems %+v)", rs.Name, remote, len(want), rs.Problems)
		}
	}
}

// procCPU is the CPU a process has used (user and system), from /proc/<pid>/stat.
func procCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The command may hold spaces: the fields after it start past its closing parenthesis.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// BenchmarkPrometheusManyRuns is runwatch against the real Prometheus for 1, 10 and 50 runs, each
// on the same 16 hosts (a simulated vLLM server per run and host, and the real node_exporter on
// every host), scraped every 15 s. Each iteration is one sample of every run, as `bot serve` takes
// it; besides the time per sample it reports:
//
//	queries-per-sample  what a steady sample asks Prometheus (instant and range queries)
//	status-s        a fresh one-shot status of every run (`bot status`: the 6 h history read first)
//	%core@30s       runwatch's CPU per sample as a share of one core at 30 s sampling, the work of
//	                serving the simulated servers to Prometheus taken out
//	prom%core@30s   the CPU Prometheus spends answering a sample, at 30 s sampling (its scraping,
//	                measured while runwatch is idle, taken out)
//	heap-MiB        the heap runwatch keeps in use after the samples
//	rss-MiB         this process's resident memory then (the simulated servers' included)
func BenchmarkPrometheusManyRuns(b *testing.B) {
	for _, runs := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("runs=%d/hosts=16", runs), func(b *testing.B) {
			dir := b.TempDir()
			os.MkdirAll(filepath.Join(dir, "shared"), 0o755)
			farm := startScaleFarm(b, 16, runs, true, 15*time.Second, dir)
			promPid := farm.prom.Cmd.Process.Pid
			ctx := context.Background()

			fresh, _, err := New(&config.File{Source: "bench", Runs: farm.runs}, Options{ProbeTimeout: 10 * time.Second, ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			st := fresh.Status(ctx, All)
			status := time.Since(start)
			for _, rs := range st.Runs {
				if len(rs.Engines) != 16 || rs.Progress == nil {
					b.Fatalf("run %s: %d engines, progress %+v, problems %+v; want 16 and progress", rs.Name, len(rs.Engines), rs.Progress, rs.Problems)
				}
			}

			m, _, err := New(&config.File{Source: "bench", Runs: farm.runs}, Options{ProbeTimeout: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			m.Sample(ctx) // fills the histories from query_range
			// Idle: what Prometheus and this process spend without runwatch asking anything.
			idle := 15 * time.Second // one scrape interval: every target scraped once
			self0, prom0 := cpuTime(b), procCPU(b, promPid)
			time.Sleep(idle)
			selfIdle, promIdle := cpuTime(b)-self0, procCPU(b, promPid)-prom0

			q0, self0, prom0 := farm.queries(b), cpuTime(b), procCPU(b, promPid)
			t0 := time.Now()
			for b.Loop() {
				m.Sample(ctx)
			}
			wall := time.Since(t0)
			n := float64(b.N)
			queries := float64(farm.queries(b)-q0) / n
			self := (cpuTime(b) - self0).Seconds() - selfIdle.Seconds()*wall.Seconds()/idle.Seconds()
			prom := (procCPU(b, promPid) - prom0).Seconds() - promIdle.Seconds()*wall.Seconds()/idle.Seconds()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(queries, "queries-per-sample")
			b.ReportMetric(status.Seconds(), "status-s")
			b.ReportMetric(100*max(self, 0)/n/30, "%core@30s")
			b.ReportMetric(100*max(prom, 0)/n/30, "prom%core@30s")
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
			b.ReportMetric(rssMiB(b), "rss-MiB")
			b.Logf("runs=%d: Prometheus idle %.2f%% of a core (scraping %d targets every 15 s)", runs, 100*promIdle.Seconds()/idle.Seconds(), 16*runs+16)
			runtime.KeepAlive(m)
		})
	}
}

// rssMiB is this process's resident memory.
func rssMiB(tb testing.TB) float64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
