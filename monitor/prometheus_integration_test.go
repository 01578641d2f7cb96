package monitor

// The integration test of the Prometheus source runs the real Debian `prometheus` and
// `prometheus-node-exporter` binaries (.ci/run installs them). It lives beside the code it tests,
// in package monitor, so `go test ./...` runs it like any other test and it can compare the
// Prometheus source with the direct one through the same Monitor API the bot uses.

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/promtest"
	"runwatch/probes"
	"runwatch/reports"
	"runwatch/sim"
)

// The test's Prometheus demands basic auth: user runwatch, password runwatch-test (bcrypt cost 4).
const (
	itUser   = "runwatch"
	itPass   = "runwatch-test"
	itBcrypt = "$2b$04$oUpVaLwv4lE55Eun/yNoH.w7r1wDH72cpSgUFawK1A1sFr/2vXJA6"
	itSpeed  = 10.0 // simulated seconds per real second
	itScrape = time.Second
	// itCollect is how much history Prometheus gathers before runwatch asks: more than the pace window (9
	// samples), so that the direct history's window and Prometheus's both leave out the job's first seconds.
	// At 8 s the windows spanned each whole history, and on a loaded machine, where Prometheus starts
	// scraping a second or two after the direct sampler, the direct one took in more of the start: tokens/s
	// 60,015 against 78,561 (1 failure in 9 runs beside two CPU hogs; 0 in 7 at 14 s).
	itCollect = 14 * time.Second
)

// Tolerances for "agrees with direct scraping". Prometheus's figures lag a scrape (1 s) behind
// the direct ones and its history starts a scrape later; both go through the same estimator.
const (
	itRateTol = 0.10 // throughput, relative
	itETATol  = 0.15 // ETA seconds, relative
)

// itScenario is a fast job: short completions, so that items finish within the first seconds.
func itScenario() sim.Scenario {
	return sim.Scenario{
		Name: "integration", Items: 30000, Concurrency: 64, QueueDepth: 16, MaxTokens: 2048,
		MeanTokens: 150, Sigma: 0.5, PromptTokens: 100, PeakTokensPerS: 3000, SingleTokensPerS: 200,
		Engines: 2, Model: "meta-llama/Llama-3.1-8B-Instruct",
	}
}

// itSimServer serves a simulated vLLM server's /metrics on host, its clock tied to the wall
// clock, so that Prometheus and a direct scrape read the same counters at the same moment.
func itSimServer(t *testing.T, host string, seed int64) string {
	t.Helper()
	job := sim.NewJob(itScenario(), seed)
	start := time.Now()
	var mu sync.Mutex
	return promtest.Serve(t, host, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if d := time.Since(start).Seconds()*itSpeed - job.Now(); d > 0 {
			job.Advance(d)
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(job.Metrics())
	}))
}

// itWaitFor polls query until cond holds for its answer, or fails the test after timeout.
func itWaitFor(t *testing.T, p *probes.Prometheus, what, query string, timeout time.Duration, cond func(probes.PromResult) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r, err := p.Query(ctx, query, time.Time{})
		cancel()
		if err == nil && cond(r) {
			return
		}
		last = fmt.Sprintf("%d series, error %v", len(r.Series), err)
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("waited %s for %s (%s): last answer %s", timeout, what, query, last)
}

func TestPrometheusIntegration(t *testing.T) {
	// Waits on a real Prometheus's scrapes: beside the monitor's other tests.
	t.Parallel()
	promBin := promtest.Binary(t)
	nodeBin := promtest.NodeExporterBinary(t)
	dir := t.TempDir()

	// Two "hosts" on loopback, each with a simulated vLLM server (two data-parallel engines) and
	// a node_exporter.
	hosts := []string{"127.0.0.1", "127.0.0.2"}
	var vllm, nodes []string
	for i, h := range hosts {
		vllm = append(vllm, itSimServer(t, h, int64(i+1)))
		addr := promtest.FreeAddr(t, h)
		promtest.Start(t, exec.Command(nodeBin, "--web.listen-address="+addr, "--collector.disable-defaults",
			"--collector.filesystem", "--collector.diskstats",
			// Report every real filesystem, overlay roots of containers included.
			"--collector.filesystem.fs-types-exclude=^(autofs|binfmt_misc|bpf|cgroup2?|configfs|debugfs|devpts|devtmpfs|fusectl|hugetlbfs|mqueue|nsfs|proc|procfs|pstore|rpc_pipefs|securityfs|selinuxfs|sysfs|tracefs)$"))
		nodes = append(nodes, addr)
	}
	promAddr := promtest.FreeAddr(t, "127.0.0.1")
	promCfg := fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: vllm
    static_configs:
      - targets: [%q, %q]
        labels: {run: itest}
  - job_name: node
    static_configs:
      - targets: [%q, %q]
`, itScrape, vllm[0], vllm[1], nodes[0], nodes[1])
	itWriteFile(t, filepath.Join(dir, "prometheus.yml"), promCfg)
	itWriteFile(t, filepath.Join(dir, "web.yml"), "basic_auth_users:\n  "+itUser+": "+itBcrypt+"\n")
	prom := promtest.Start(t, exec.Command(promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--web.config.file="+filepath.Join(dir, "web.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr, "--log.level=warn"))
	promURL := "http://" + promAddr

	// Direct scraping samples the same servers meanwhile, as a running bot would.
	out := filepath.Join(dir, "out")
	os.MkdirAll(out, 0o755)
	total := int64(2 * itScenario().Items)
	direct, _, err := New(&config.File{Source: "direct", Runs: []config.Run{{
		Name: "itest", Metrics: []string{"http://" + vllm[0] + "/metrics", "http://" + vllm[1] + "/metrics"},
		Total: total, Outputs: []string{out},
	}}}, Options{ProbeTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			direct.itSampleProgress(ctx)
			cancel()
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() {
		select {
		case <-stopSampling:
		default:
			close(stopSampling)
		}
		<-sampled
	}()

	client, err := probes.NewPrometheus(probes.PrometheusOptions{URL: promURL, Username: itUser, Password: itPass})
	if err != nil {
		t.Fatal(err)
	}
	itWaitFor(t, client, "both vLLM servers scraped for a while", `count(count_over_time(vllm:generation_tokens_total{run="itest"}[1m]) >= `+fmt.Sprint(int(itCollect/itScrape))+`)`,
		itCollect+15*time.Second, func(r probes.PromResult) bool {
			return len(r.Series) == 1 && r.Series[0].Samples[0].V == 4 // two servers x two engines
		})
	itWaitFor(t, client, "both node_exporters scraped", `count(node_filesystem_avail_bytes)`, 10*time.Second,
		func(r probes.PromResult) bool { return len(r.Series) == 1 && r.Series[0].Samples[0].V > 0 })
	close(stopSampling)
	<-sampled

	// A fresh monitor, the way `bot status` starts: its history comes from Prometheus.
	runFile := fmt.Sprintf(`runs:
  - name: itest
    total: %d
    outputs: [%q]
    prometheus:
      url: %s
      selector: '{run="itest"}'
      username_env: ITEST_PROM_USER
      password_env: ITEST_PROM_PASS
    stages:
      - {name: serving, check: promql, query: 'sum(vllm:num_requests_running{run="itest"}) > 0'}
      - {name: other-run, check: promql, query: 'vllm:num_requests_running{run="nope"}'}
`, total, out, promURL)
	env := map[string]string{"ITEST_PROM_USER": itUser, "ITEST_PROM_PASS": itPass}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	f, err := config.Parse([]byte(runFile), lookup)
	if err != nil {
		t.Fatalf("config.Parse = %v", err)
	}
	pm, _, err := New(f, Options{ProbeTimeout: 3 * time.Second, LookupEnv: lookup})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// Both at the same moment: the Prometheus status evaluates its queries at the time it starts.
	var viaProm, viaDirect reports.RunStatus
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); viaProm = pm.Status(ctx, All).Runs[0] }()
	go func() { defer both.Done(); viaDirect = direct.Status(ctx, Need{Progress: true}).Runs[0] }()
	both.Wait()
	t.Logf("via Prometheus: %s", itSummary(viaProm))
	t.Logf("direct:         %s", itSummary(viaDirect))
	for _, p := range viaProm.Problems {
		if strings.HasPrefix(p.Probe, "prometheus") {
			t.Errorf("problem %s: %s", p.Probe, p.Error)
		}
	}

	t.Run("history comes from query_range", func(t *testing.T) {
		if n := len(pm.History("itest")); n < int(itCollect/itScrape)-2 {
			t.Errorf("a fresh monitor has %d history points; want the %s Prometheus holds (at least %d)", n, itCollect, int(itCollect/itScrape)-2)
		}
	})

	t.Run("engines carry their host", func(t *testing.T) {
		if len(viaProm.Engines) != 2 {
			t.Fatalf("engines = %+v; want 2", viaProm.Engines)
		}
		for i, e := range viaProm.Engines {
			if e.Host != vllm[i] || e.URL != promURL || !e.OK || e.Kind != "vllm" || e.Engines != 2 {
				t.Errorf("engine %d = %+v; want host %s, url %s, ok, vllm with 2 engines", i, e, vllm[i], promURL)
			}
		}
	})

	t.Run("progress and throughput agree with direct scraping", func(t *testing.T) {
		if viaProm.Progress == nil || viaDirect.Progress == nil || viaProm.Throughput == nil || viaDirect.Throughput == nil {
			t.Fatalf("progress %+v / %+v, throughput %+v / %+v; want all", viaProm.Progress, viaDirect.Progress, viaProm.Throughput, viaDirect.Throughput)
		}
		if viaProm.Progress.Source != "prometheus" {
			t.Errorf("progress source = %q; want prometheus", viaProm.Progress.Source)
		}
		// Prometheus's last scrape is up to a second (plus a scrape's duration) old.
		lag := 2 * viaDirect.Throughput.ItemsPerS * itScrape.Seconds()
		if d := math.Abs(float64(viaProm.Progress.Done - viaDirect.Progress.Done)); d > lag+10 {
			t.Errorf("done via Prometheus %d, direct %d: differ by %g; want within %g (two scrapes)", viaProm.Progress.Done, viaDirect.Progress.Done, d, lag+10)
		}
		p, d := viaProm.Throughput.TokensPerS, viaDirect.Throughput.TokensPerS
		if d <= 0 || math.Abs(p-d)/d > itRateTol {
			t.Errorf("tokens/s via Prometheus %.0f, direct %.0f; want within %.0f%%", p, d, 100*itRateTol)
		}
	})

	t.Run("ETA agrees with direct scraping", func(t *testing.T) {
		pe, de := viaProm.ETA, viaDirect.ETA
		if pe == nil || de == nil || pe.Seconds == nil || de.Seconds == nil {
			t.Fatalf("ETA via Prometheus %+v, direct %+v; want both running", pe, de)
		}
		if rel := math.Abs(*pe.Seconds-*de.Seconds) / *de.Seconds; rel > itETATol {
			t.Errorf("ETA via Prometheus %.0f s (%s), direct %.0f s (%s); want within %.0f%%", *pe.Seconds, pe.Reason, *de.Seconds, de.Reason, 100*itETATol)
		}
	})

	t.Run("storage on every host agrees with statfs here", func(t *testing.T) {
		var local *reports.PathInfo
		remote := map[string]reports.PathInfo{}
		for i, p := range viaProm.Storage.Paths {
			if p.Path != out {
				continue
			}
			if p.Host == "" {
				local = &viaProm.Storage.Paths[i]
			} else {
				remote[p.Host] = p
			}
		}
		if local == nil || local.FreeBytes == nil {
			t.Fatalf("no local figures for %s: %+v", out, viaProm.Storage.Paths)
		}
		for _, h := range hosts {
			r, ok := remote[h]
			if !ok || r.FreeBytes == nil || r.TotalBytes == nil {
				t.Errorf("no node_exporter figures for %s on %s: %+v", out, h, viaProm.Storage.Paths)
				continue
			}
			if r.Mount != local.Mount || *r.TotalBytes != *local.TotalBytes {
				t.Errorf("%s on %s: mount %s, %d bytes; statfs here says %s, %d bytes", out, h, r.Mount, *r.TotalBytes, local.Mount, *local.TotalBytes)
			}
			// Other processes (Prometheus itself) write meanwhile.
			tol := math.Max(256<<20, 0.01*float64(*local.TotalBytes))
			if d := math.Abs(float64(*r.FreeBytes) - float64(*local.FreeBytes)); d > tol {
				t.Errorf("%s on %s: %d bytes free; statfs here says %d (differ by %g, want within %g)", out, h, *r.FreeBytes, *local.FreeBytes, d, tol)
			}
		}
		answer := reports.AnswerFree("itest", viaProm.Storage.Paths, viaProm.Storage.WriteRates, viaProm.ETA.Seconds, nil).Text()
		if !strings.Contains(answer, "on 127.0.0.2") {
			t.Errorf("the free-space answer does not name the hosts:\n%s", answer)
		}
	})

	t.Run("promql stage checks", func(t *testing.T) {
		want := map[string]string{"serving": reports.StageDone, "other-run": reports.StagePending}
		for _, s := range viaProm.Stages {
			if s.State != want[s.Name] {
				t.Errorf("stage %s = %s (%s); want %s", s.Name, s.State, s.Detail, want[s.Name])
			}
		}
	})

	t.Run("wrong credentials are a named problem", func(t *testing.T) {
		env["ITEST_PROM_PASS"] = "wrong"
		defer func() { env["ITEST_PROM_PASS"] = itPass }()
		m, _, err := New(f, Options{ProbeTimeout: 2 * time.Second, LookupEnv: lookup})
		if err != nil {
			t.Fatal(err)
		}
		rs := m.Status(ctx, Need{Progress: true}).Runs[0]
		if !itHasProblem(rs, "prometheus "+promURL, "401") {
			t.Errorf("problems = %+v; want prometheus %s with 401", rs.Problems, promURL)
		}
	})

	t.Run("a dead Prometheus is a named problem, not a hang", func(t *testing.T) {
		prom.Stop()
		m, _, err := New(f, Options{ProbeTimeout: 2 * time.Second, LookupEnv: lookup})
		if err != nil {
			t.Fatal(err)
		}
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		rs := m.Status(c, All).Runs[0]
		if c.Err() != nil {
			t.Fatalf("status took longer than 10 s with Prometheus down")
		}
		if !itHasProblem(rs, "prometheus "+promURL, "connection refused") {
			t.Errorf("problems = %+v; want prometheus %s: connection refused", rs.Problems, promURL)
		}
	})
}

func itHasProblem(rs reports.RunStatus, probe, text string) bool {
	for _, p := range rs.Problems {
		if p.Probe == probe && strings.Contains(p.Error, text) {
			return true
		}
	}
	return false
}

func itWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// itSampleProgress records one progress sample of every run, as the sampler does, without the
// storage probes (whose disk-rate reading waits a second).
func (m *Monitor) itSampleProgress(ctx context.Context) {
	now := m.opts.Now()
	for i := range m.file.Runs {
		r := &m.file.Runs[i]
		rs, smp := m.runStatus(ctx, r, Need{Progress: true}, m.newPass(ctx, Need{Progress: true}, true), now)
		m.record(r, rs, smp, now)
	}
}

// itSummary is the figures the test compares, for the log.
func itSummary(rs reports.RunStatus) string {
	var b strings.Builder
	if rs.Progress != nil {
		fmt.Fprintf(&b, "done %d/%d (%s)", rs.Progress.Done, rs.Progress.Total, rs.Progress.Source)
	}
	if rs.Throughput != nil {
		fmt.Fprintf(&b, ", %.0f tok/s, %.1f items/s over %.0f s", rs.Throughput.TokensPerS, rs.Throughput.ItemsPerS, rs.Throughput.WindowS)
	}
	if rs.ETA != nil && rs.ETA.Seconds != nil {
		fmt.Fprintf(&b, ", ETA %.0f s (%s)", *rs.ETA.Seconds, rs.ETA.Reason)
	}
	for _, p := range rs.Storage.Paths {
		if p.FreeBytes != nil {
			fmt.Fprintf(&b, "; %s on %s@%q: %d free", p.Path, p.Mount, p.Host, *p.FreeBytes)
		}
	}
	for _, w := range rs.Storage.WriteRates {
		fmt.Fprintf(&b, "; writes %s@%q %.0f B/s", w.Mount, w.Host, w.BytesPerS)
	}
	for _, n := range rs.Notices {
		fmt.Fprintf(&b, "; notice %q", n)
	}
	return b.String()
}
