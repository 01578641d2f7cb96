package main

// "Are we writing to /shared?" over many hosts, end to end: real `bot exporter` processes on
// 127.0.0.2-5 (two runs on disjoint hosts), the real Prometheus scraping them every second, and
// one-shot `bot ask` / `bot status` as the central bot, whose own /proc is empty so that every
// writer it names comes through Prometheus. The faults are real too: an exporter stopped with
// SIGSTOP, Prometheus stopped with SIGSTOP, the writer killed.

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"runwatch/internal/promtest"
	"runwatch/internal/racequiet"
	"runwatch/internal/testkit"
	"runwatch/internal/testkit/fake"
	"runwatch/probes"
)

// verdict is an answer's verdict: the line after its title.
func verdict(answer string) string {
	lines := strings.SplitN(answer, "\n", 3)
	if len(lines) < 2 {
		return answer
	}
	return lines[1]
}

// writeTo starts a process that holds path open for writing until the test ends (or it is killed).
func writeTo(t *testing.T, path string) *promtest.Process {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sleep", "600")
	cmd.ExtraFiles = []*os.File{f}
	return promtest.Start(t, cmd)
}

// processEnv is the environment of a bot process the test starts in dir: nothing of the environment
// the tests run in, no discovery, a state directory of its own, and the extra variables given.
func processEnv(dir string, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), racequiet.ChildEnv(), "HOME=" + dir, "RUNWATCH_DISCOVER=off", "RUNWATCH_STATE_DIR=" + filepath.Join(dir, "state")}, extra...)
}

// serveEngine serves a recorded vLLM's /metrics on host until the test ends: a host of a run whose
// target Prometheus scrapes, with no exporter beside it.
func serveEngine(t *testing.T, host string) string {
	t.Helper()
	replay := fake.NewReplay(t, fake.VLLMOptions{TokensPerScrape: 41580})
	var n atomic.Int64
	return promtest.Serve(t, host, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(replay.Body(int(n.Add(1)))) }))
}

// startExporter runs the built bot's `bot exporter` on addr with the node's run file, reading procRoot
// ("" the real /proc).
func startExporter(t *testing.T, bin, dir, addr, config, procRoot string) *promtest.Process {
	t.Helper()
	cmd := exec.Command(bin, "exporter", "--listen", addr, "--config", config)
	cmd.Dir, cmd.Env = dir, processEnv(dir, "RUNWATCH_PROC_ROOT="+procRoot, "RUNWATCH_PROBE_TIMEOUT=5s")
	return promtest.Start(t, cmd)
}

func TestWritesVerdictOverManyHosts(t *testing.T) {
	t.Parallel() // waits on Prometheus's scrapes, mostly: beside the other tests that run processes
	bin := buildBot(t)
	dir := t.TempDir()
	shared, data := filepath.Join(dir, "shared"), filepath.Join(dir, "data")
	os.MkdirAll(shared, 0o755)
	os.MkdirAll(data, 0o755)
	writer := writeTo(t, filepath.Join(shared, "part-00001.bin"))

	// Every node has the same run file, without prometheus: (an exporter reports its own node only).
	node := filepath.Join(dir, "node.yaml")
	nodeRuns := fmt.Sprintf("runs:\n  - {name: r1, protected: [%q], outputs: [%q]}\n  - {name: r2, protected: [%q], outputs: [%q]}\n", shared, data, shared, data)
	if err := os.WriteFile(node, []byte(nodeRuns), 0o644); err != nil {
		t.Fatal(err)
	}
	// r1 runs on 127.0.0.2 (which sees the writer) and 127.0.0.3 (sees no process); r2 on 127.0.0.4 (sees the
	// writer) and 127.0.0.5, and an engine on 127.0.0.6 with no exporter; r3 only on engines, on 127.0.0.6 and
	// 127.0.0.7.
	// 127.0.0.3's /proc is its own, so that its scan can be made to fail.
	empty, busy, node3 := testkit.ProcView(t), testkit.ProcView(t, writer.Cmd.Process.Pid), testkit.ProcView(t)
	addr := map[string]string{}
	exporters := map[string]*promtest.Process{}
	for _, h := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
		proc := busy
		switch h {
		case "127.0.0.3":
			proc = node3
		case "127.0.0.5":
			proc = empty
		}
		addr[h] = promtest.FreeAddr(t, h)
		exporters[h] = startExporter(t, bin, dir, addr[h], node, proc)
	}
	for _, h := range []string{"127.0.0.6", "127.0.0.7"} {
		addr[h] = serveEngine(t, h)
	}
	prom := promtest.StartServer(t, fmt.Sprintf(`  - job_name: runwatch-exporter
    static_configs:
      - targets: [%q, %q]
        labels: {run: r1}
      - targets: [%q, %q]
        labels: {run: r2}
  - job_name: vllm
    static_configs:
      - targets: [%q]
        labels: {run: r2}
      - targets: [%q, %q]
        labels: {run: r3}
`, addr["127.0.0.2"], addr["127.0.0.3"], addr["127.0.0.4"], addr["127.0.0.5"], addr["127.0.0.6"], addr["127.0.0.6"], addr["127.0.0.7"]))
	prom.WaitFor(t, "every exporter scraped, two seeing the writer",
		`count(runwatch_invisible_processes) + count(runwatch_protected_writer_processes{command="sleep"} > 0)`, 90*time.Second,
		func(r probes.PromResult) bool { v, ok := promtest.Value(r); return ok && v == 6 })
	prom.WaitFor(t, "the engines scraped", `count(up{job="vllm"} == 1)`, 90*time.Second,
		func(r probes.PromResult) bool { v, ok := promtest.Value(r); return ok && v == 3 })

	central := filepath.Join(dir, "central.yaml")
	centralRuns := fmt.Sprintf(`runs:
  - name: r1
    protected: [%q]
    outputs: [%q]
    prometheus: {url: %s, selector: '{run="r1"}'}
  - name: r2
    protected: [%q]
    outputs: [%q]
    prometheus: {url: %s, selector: '{run="r2"}'}
  - name: r3
    protected: [%q]
    outputs: [%q]
    prometheus: {url: %s, selector: '{run="r3"}'}
`, shared, data, prom.URL, shared, data, prom.URL, shared, data, prom.URL)
	if err := os.WriteFile(central, []byte(centralRuns), 0o644); err != nil {
		t.Fatal(err)
	}
	// The central bot: one-shot `bot ask` and `bot status` that see no writer of their own.
	bot := func(args ...string) string {
		t.Helper()
		// An answer that could not tell exits 1; its text is what the test reads.
		_, out, errb := runBot(t, dir, processEnv(dir, "RUNWATCH_PROC_ROOT="+empty, "RUNWATCH_PROBE_TIMEOUT=2s"), args...)
		t.Logf("bot %q:\n%s%s", args, out, errb)
		return out
	}
	ask := func(run, question string) string {
		t.Helper()
		return bot("ask", "--config", central, "--run", run, question)
	}
	status := func(run string) string {
		t.Helper()
		return bot("status", "--config", central, "--run", run)
	}
	question := "are we writing to " + shared + "?"

	t.Run("two runs on disjoint hosts each name their own writer", func(t *testing.T) {
		for run, mine := range map[string]string{"r1": "127.0.0.2", "r2": "127.0.0.4"} {
			other := map[string]string{"r1": "127.0.0.4", "r2": "127.0.0.2"}[run]
			got := ask(run, question)
			if !strings.Contains(got, "Yes") || !strings.Contains(got, "on host "+mine) {
				t.Errorf("%s: %q = %q; want yes, on host %s", run, question, got, mine)
			}
			if strings.Contains(got, other) {
				t.Errorf("%s: %q names %s, a host of the other run: %q", run, question, other, got)
			}
		}
	})

	t.Run("an exporter stopped with SIGSTOP is no all-clear", func(t *testing.T) {
		exporters["127.0.0.2"].Pause(t)
		defer exporters["127.0.0.2"].Resume(t)
		prom.WaitFor(t, "127.0.0.2's exporter down", fmt.Sprintf(`up{instance=%q}`, addr["127.0.0.2"]), 30*time.Second,
			func(r probes.PromResult) bool { v, ok := promtest.Value(r); return ok && v == 0 })
		got := ask("r1", question)
		first := verdict(got)
		if strings.Contains(first, "(ok)") || !strings.Contains(first, "Can't tell") || !strings.Contains(first, "127.0.0.2") {
			t.Errorf("with 127.0.0.2's exporter stopped (its writer still writing), the first line = %q; want can't tell, naming 127.0.0.2", first)
		}
		safe := ask("r1", "is "+shared+" safe?")
		if first := verdict(safe); strings.Contains(first, "(ok)") || strings.Contains(first, "Yes") {
			t.Errorf("is it safe? with 127.0.0.2's exporter stopped: first line %q; want no yes", first)
		}
		st := status("r1")
		if strings.Contains(st, "(ok) no writes") || !strings.Contains(st, "127.0.0.2") {
			t.Errorf("status with 127.0.0.2's exporter stopped = %q; want no all-clear, naming 127.0.0.2", st)
		}
	})
	prom.WaitFor(t, "127.0.0.2's exporter back", fmt.Sprintf(`runwatch_invisible_processes{instance=%q}`, addr["127.0.0.2"]), 30*time.Second,
		func(r probes.PromResult) bool { _, ok := promtest.Value(r); return ok })

	t.Run("Prometheus stopped with SIGSTOP is no all-clear", func(t *testing.T) {
		prom.Pause(t)
		defer prom.Resume(t)
		got := ask("r1", question)
		first := verdict(got)
		if strings.Contains(first, "(ok)") || !strings.Contains(first, "Can't tell") || !strings.Contains(first, "Prometheus") {
			t.Errorf("with Prometheus stopped, the first line = %q; want can't tell, naming Prometheus", first)
		}
		safe := ask("r1", "is "+shared+" safe?")
		if first := verdict(safe); strings.Contains(first, "(ok)") || strings.Contains(first, "Yes") {
			t.Errorf("is it safe? with Prometheus stopped: first line %q; want no yes", first)
		}
		if st := status("r1"); strings.Contains(st, "(ok) no writes") {
			t.Errorf("status with Prometheus stopped = %q; want no all-clear", st)
		}
	})
	prom.WaitFor(t, "Prometheus back", "vector(1)", 30*time.Second, func(r probes.PromResult) bool { return len(r.Series) == 1 })

	t.Run("a killed writer is a plain no once every host answered", func(t *testing.T) {
		writer.Stop()
		prom.WaitFor(t, "the writer gone from every exporter", `count(runwatch_invisible_processes) + (count(runwatch_protected_writer_processes > 0) or vector(0))`, 30*time.Second,
			func(r probes.PromResult) bool { v, ok := promtest.Value(r); return ok && v == 4 })
		got := ask("r1", question)
		if first := verdict(got); !strings.HasPrefix(first, "(ok) No") {
			t.Errorf("with the writer killed and both hosts answering, the first line = %q; want (ok) No", first)
		}
	})

	t.Run("an exporter whose scan failed is no all-clear", func(t *testing.T) {
		// A pid entry that is a file, not a directory: 127.0.0.3's scan fails (neither "gone" nor
		// "permission denied"), and its exporter still answers every scrape.
		bad := filepath.Join(node3, "77777")
		if err := os.WriteFile(bad, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(bad)
		prom.WaitFor(t, "127.0.0.3's exporter counting its failed scan", fmt.Sprintf(`runwatch_exporter_problems{instance=%q}`, addr["127.0.0.3"]), 30*time.Second,
			func(r probes.PromResult) bool { v, ok := promtest.Value(r); return ok && v > 0 })
		got := ask("r1", question)
		first := verdict(got)
		if strings.Contains(first, "(ok)") || !strings.Contains(first, "Can't tell") || !strings.Contains(first, "127.0.0.3") || !strings.Contains(first, "could not scan") {
			t.Errorf("with 127.0.0.3's scan failing, the first line = %q; want can't tell for 127.0.0.3, whose exporter could not scan", first)
		}
		if first := verdict(ask("r1", "is "+shared+" safe?")); strings.Contains(first, "(ok)") || strings.Contains(first, "Yes") {
			t.Errorf("is it safe? with 127.0.0.3's scan failing: first line %q; want no yes", first)
		}
	})

	t.Run("hosts of the run that no exporter speaks for are no all-clear", func(t *testing.T) {
		// r2's writer is gone from 127.0.0.4, 127.0.0.5 sees none, and 127.0.0.6 runs an engine of r2's but no exporter.
		got := ask("r2", question)
		first := verdict(got)
		if strings.Contains(first, "(ok)") || !strings.Contains(first, "Can't tell for host 127.0.0.6") || !strings.Contains(first, "run bot exporter on 127.0.0.6") {
			t.Errorf("r2, with 127.0.0.6 exporting nothing, the first line = %q; want can't tell for 127.0.0.6, saying to run bot exporter there", first)
		}
		if first := verdict(ask("r2", "is "+shared+" safe?")); strings.Contains(first, "(ok)") || strings.Contains(first, "Yes") {
			t.Errorf("is it safe? with 127.0.0.6 exporting nothing: first line %q; want no yes", first)
		}
		// r3 runs on engines alone: said once, for both hosts, not once per host.
		got = ask("r3", question)
		first = verdict(got)
		if strings.Contains(first, "(ok)") || !strings.Contains(first, "Can't tell for hosts 127.0.0.6 and 127.0.0.7: none of them runs bot exporter") || strings.Count(first, "bot exporter") != 1 {
			t.Errorf("r3, whose hosts all lack an exporter, the first line = %q; want one can't tell for the 2 hosts, none of which runs bot exporter", first)
		}
		if st := status("r3"); strings.Contains(st, "(ok) no writes") || !strings.Contains(st, "unknown for hosts 127.0.0.6 and 127.0.0.7") {
			t.Errorf("status of r3 = %q; want writes unknown for the 2 hosts", st)
		}
	})
}
