package monitor

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/promtest"
	"runwatch/probes"
	"runwatch/reports"
)

// fourRunning is a vLLM server's /metrics with four requests running: an engine Prometheus scrapes, on a host
// with no exporter beside it.
var fourRunning = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprint(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 4\n")
})

// A host of the run that no `bot exporter` speaks for is a gap, unless it is this machine, whose own
// scan speaks for it: an engine at 127.0.0.1 scraped by a Prometheus on this machine is on this
// machine (the one-host setup: bot, Prometheus and vLLM on one box); one at 127.0.0.8 is another
// host. Real Prometheus, engines that answer like vLLM, no exporter anywhere.
func TestHostsWithoutAnExporterAreGaps(t *testing.T) {
	t.Parallel()
	here, there := promtest.Serve(t, "127.0.0.1", fourRunning), promtest.Serve(t, "127.0.0.8", fourRunning)
	prom := promtest.StartServer(t, fmt.Sprintf(`  - job_name: vllm
    static_configs:
      - targets: [%q]
        labels: {run: one}
      - targets: [%q, %q]
        labels: {run: two}
`, here, here, there))
	prom.WaitFor(t, "the engines scraped", `count(up{job="vllm"} == 1)`, 60*time.Second,
		func(r probes.PromResult) bool { v, ok := promtest.Value(r); return ok && v == 3 })

	shared := filepath.Join(t.TempDir(), "shared")
	os.MkdirAll(shared, 0o755)
	run := func(name string) config.Run {
		return config.Run{Name: name, Protected: []string{shared}, Prometheus: &config.Prometheus{URL: prom.URL, Selector: fmt.Sprintf(`{run=%q}`, name)}}
	}
	proc := t.TempDir() // a /proc with no process: the bot's own scan sees nothing, and runs whole
	sharedProcTree(t, proc, 0)
	m, _, err := New(&config.File{Source: "test", Runs: []config.Run{run("one"), run("two")}},
		Options{ProcRoot: proc, ProbeTimeout: 5 * time.Second, RateWindow: -1, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	noExporter := func(name string) []string {
		t.Helper()
		rs, err := m.RunStatus(context.Background(), name, Need{Storage: true})
		if err != nil {
			t.Fatal(err)
		}
		var hosts []string
		for _, g := range rs.Storage.Coverage.Missing {
			if g.Source == reports.GapNoExporter {
				hosts = append(hosts, g.Hosts...)
			}
		}
		return hosts
	}
	if got := noExporter("one"); len(got) != 0 {
		t.Errorf("run on this machine alone: hosts without an exporter = %v; want none (this machine's scan speaks for it)", got)
	}
	if got := noExporter("two"); !slices.Equal(got, []string{"127.0.0.8"}) {
		t.Errorf("run on this machine and 127.0.0.8: hosts without an exporter = %v; want [127.0.0.8]", got)
	}
}
