package monitor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/promtest"
	"runwatch/probes"
	"runwatch/reports"
)

// A host whose node_exporter stops answering stays in the storage answers, its free space unknown
// and why, rather than leaving them as though it never held the run's paths. Real Prometheus, a
// real node_exporter on each of two hosts (127.0.0.1 and 127.0.0.8), the second stopped mid-test.
// Before, the space answer and the status named 127.0.0.8 while its exporter answered and said
// nothing of it once it stopped: "all disks fine" over a host nobody could see.
func TestVanishedNodeExporterStaysInStorage(t *testing.T) {
	// Waits on a real Prometheus's scrapes: beside the monitor's other tests.
	t.Parallel()
	nodeBin := promtest.NodeExporterBinary(t)
	engine := func(host string) string { return promtest.Serve(t, host, fourRunning) }
	hosts := []string{"127.0.0.1", "127.0.0.8"}
	var engines, nodeAddrs []string
	var nodes []*promtest.Process
	for _, h := range hosts {
		engines = append(engines, engine(h))
		addr := promtest.FreeAddr(t, h)
		nodes = append(nodes, promtest.Start(t, exec.Command(nodeBin, "--web.listen-address="+addr,
			"--collector.disable-defaults", "--collector.filesystem",
			"--collector.filesystem.fs-types-exclude=^(autofs|binfmt_misc|bpf|cgroup2?|configfs|debugfs|devpts|devtmpfs|fusectl|hugetlbfs|mqueue|nsfs|proc|procfs|pstore|rpc_pipefs|securityfs|selinuxfs|sysfs|tracefs)$")))
		nodeAddrs = append(nodeAddrs, addr)
	}
	prom := promtest.StartServer(t, fmt.Sprintf(`  - job_name: vllm
    static_configs:
      - targets: [%q, %q]
        labels: {run: fs}
  - job_name: node
    static_configs:
      - targets: [%q, %q]
`, engines[0], engines[1], nodeAddrs[0], nodeAddrs[1]))
	exporters := func(n float64) func(probes.PromResult) bool {
		return func(r probes.PromResult) bool {
			v, ok := promtest.Value(r)
			return (ok && v == n) || (n == 0 && len(r.Series) == 0)
		}
	}
	const perHost = `count(count by (instance) (node_filesystem_avail_bytes))`
	prom.WaitFor(t, "both node_exporters scraped", perHost, 60*time.Second, exporters(2))
	prom.WaitFor(t, "both engines scraped", `count(up{run="fs"} == 1)`, 30*time.Second, exporters(2))

	out := filepath.Join(t.TempDir(), "out")
	os.MkdirAll(out, 0o755)
	proc := t.TempDir()
	sharedProcTree(t, proc, 0)
	m, _, err := New(&config.File{Source: "test", Runs: []config.Run{{Name: "fs", Outputs: []string{out},
		Prometheus: &config.Prometheus{URL: prom.URL, Selector: `{run="fs"}`}}}},
		Options{ProcRoot: proc, ProbeTimeout: 5 * time.Second, RateWindow: -1, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	status := func() reports.RunStatus {
		t.Helper()
		rs, err := m.RunStatus(context.Background(), "fs", Need{Storage: true})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	onHost := func(rs reports.RunStatus, h string) (reports.PathInfo, bool) {
		for _, p := range rs.Storage.Paths {
			if p.Path == out && p.Host == h {
				return p, true
			}
		}
		return reports.PathInfo{}, false
	}
	before := status()
	for _, h := range hosts {
		if p, ok := onHost(before, h); !ok || p.FreeBytes == nil {
			t.Fatalf("both exporters up: %s on %s = %+v (listed %t); want its free space", out, h, p, ok)
		}
	}

	nodes[1].Stop()
	prom.WaitFor(t, "127.0.0.8's filesystems gone", perHost, 30*time.Second, exporters(1))
	after := status()
	p, ok := onHost(after, "127.0.0.8")
	if !ok {
		t.Fatalf("127.0.0.8's node_exporter stopped: %s is no longer listed on it (paths %+v); want it there, free space unknown", out, after.Storage.Paths)
	}
	if p.FreeBytes != nil || !strings.Contains(p.Error, "node_exporter") {
		t.Errorf("%s on 127.0.0.8 after its node_exporter stopped = free %v, error %q; want unknown, naming node_exporter", out, p.FreeBytes, p.Error)
	}
	if p, ok := onHost(after, "127.0.0.1"); !ok || p.FreeBytes == nil {
		t.Errorf("%s on 127.0.0.1, whose exporter still answers = %+v; want its free space", out, p)
	}
	space := reports.AnswerFree("fs", after.Storage.Paths, after.Storage.WriteRates, nil, nil).Text()
	if !strings.Contains(space, "on 127.0.0.8: free space unknown") {
		t.Errorf("space answer after 127.0.0.8's node_exporter stopped does not say its free space is unknown:\n%s", space)
	}
	verdict := reports.StorageVerdict(after.Storage, nil)
	if !strings.Contains(verdict, "on 127.0.0.8 free space unknown") {
		t.Errorf("status storage line after 127.0.0.8's node_exporter stopped = %q; want 127.0.0.8's free space unknown", verdict)
	}
	if !itHasProblem(after, "node_exporter 127.0.0.8", "gone from Prometheus") {
		t.Errorf("problems = %+v; want node_exporter 127.0.0.8 named", after.Problems)
	}
	if !strings.Contains(reports.AnswerWhere("fs", after.Storage).Text(), "on 127.0.0.8 — its node_exporter's filesystem series are gone from Prometheus (they were there within the last hour)") {
		t.Errorf("where answer after 127.0.0.8's node_exporter stopped does not name the host and why:\n%s", reports.AnswerWhere("fs", after.Storage).Text())
	}

	// Prometheus itself stops: the hosts it answered for lately are not gone, their free space is
	// unknown because the query failed.
	prom.Stop()
	down := status()
	for _, h := range hosts {
		p, ok := onHost(down, h)
		if !ok || p.FreeBytes != nil || !strings.Contains(p.Error, "the storage query to Prometheus failed") {
			t.Errorf("Prometheus down: %s on %s = %+v (listed %t); want it listed, free space unknown: the storage query failed", out, h, p, ok)
		}
	}
	if v := reports.StorageVerdict(down.Storage, nil); !strings.Contains(v, "on 127.0.0.1 free space unknown") {
		t.Errorf("status storage line with Prometheus down = %q; want the hosts it answered for named, free space unknown", v)
	}

	// A monitor that never heard from Prometheus (a one-shot command) knows no host to name: the other
	// hosts' free space is unknown, said, not left out.
	fresh, _, err := New(&config.File{Source: "test", Runs: []config.Run{{Name: "fs", Outputs: []string{out},
		Prometheus: &config.Prometheus{URL: prom.URL, Selector: `{run="fs"}`}}}},
		Options{ProcRoot: proc, ProbeTimeout: 5 * time.Second, RateWindow: -1, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := fresh.RunStatus(context.Background(), "fs", Need{Storage: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := reports.StorageVerdict(rs.Storage, nil); !strings.Contains(rs.Storage.RemoteError, "the storage query to Prometheus failed") || !strings.Contains(v, "other hosts' free space unknown") {
		t.Errorf("a fresh monitor with Prometheus down: remote error %q, status storage line %q; want the other hosts' free space unknown, and why", rs.Storage.RemoteError, v)
	}
}
