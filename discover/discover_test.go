package discover

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/probes"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

// jobHost is the seed's box as a proc tree: a vLLM serving /metrics (a recorded exposition), a Python job
// with a forked worker, both connected to it, its stdout redirected to a log printing progress, holding a
// JSONL output open; beside them a web server on another port and a Prometheus scraping the engine.
func jobHost(t *testing.T) (tree *procTree, data string, port int) {
	t.Helper()
	tree = newProcTree(t)
	data = t.TempDir()
	port = serve(t, "vllm_v1_metrics_docs_design_example.txt", 0, "")
	web := serve(t, "", 404, "not found")

	tree.proc(1234, 1, "python3", "-m", "vllm.entrypoints.openai.api_server", "--port", fmt.Sprint(port))
	tree.listen(1234, 5, fmt.Sprintf("127.0.0.1:%d", port))
	tree.connect(1234, 6, fmt.Sprintf("127.0.0.1:%d", port), "127.0.0.1:50001") // the server's side of the job's connection

	log := writeFile(t, data, "gen.log", "loading model\nProgress: 280/25000 (0 errors)\nProgress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n")
	out := writeFile(t, data, "synth/samples.jsonl", `{"id": 1}`+"\n")
	tree.proc(4242, 1, "/usr/bin/python3", "-u", "generate.py", "--total", "25000")
	tree.fd(4242, 0, "/dev/null", flagsRead)
	tree.fd(4242, 1, log, flagsAppend)
	tree.fd(4242, 2, log, flagsAppend)
	tree.fd(4242, 7, out, flagsAppend)
	tree.connect(4242, 3, "127.0.0.1:50001", fmt.Sprintf("127.0.0.1:%d", port))
	// A worker it forked: same command line, its own connection.
	tree.proc(4243, 4242, "/usr/bin/python3", "-u", "generate.py", "--total", "25000")
	tree.fd(4243, 1, log, flagsAppend)
	tree.connect(4243, 3, "127.0.0.1:50002", fmt.Sprintf("127.0.0.1:%d", port))

	tree.proc(777, 1, "/usr/bin/prometheus", "--config.file=/etc/prometheus/prometheus.yml")
	tree.connect(777, 9, "127.0.0.1:50003", fmt.Sprintf("127.0.0.1:%d", port))
	tree.fd(777, 10, "/var/lib/prometheus/wal/00000001", flagsAppend)

	tree.proc(555, 1, "nginx: master process /usr/sbin/nginx")
	tree.listen(555, 6, fmt.Sprintf("0.0.0.0:%d", web))
	return tree, data, port
}

func TestDiscoverFindsEngineAndJob(t *testing.T) {
	tree, data, port := jobHost(t)
	res, err := New(Options{ProcRoot: tree.root, Self: -1, ProbeTimeout: 5 * time.Second}).Discover(t.Context())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if len(res.Problems) > 0 {
		t.Errorf("problems %v; want none", res.Problems)
	}
	wantEngine := Engine{Kind: "vllm", Port: port, URL: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), PID: 1234,
		Command: "python3 -m vllm.entrypoints.openai.api_server"}
	if len(res.Engines) != 1 || res.Engines[0] != wantEngine {
		t.Fatalf("engines %+v; want only %+v (the web server answers 404)", res.Engines, wantEngine)
	}
	if res.Listening != 2 || res.Probed != 2 {
		t.Errorf("listening %d, probed %d; want 2 and 2", res.Listening, res.Probed)
	}
	if len(res.Jobs) != 1 {
		t.Fatalf("jobs %+v; want one (the worker is the job's, Prometheus scrapes)", res.Jobs)
	}
	j := res.Jobs[0]
	if j.PID != 4242 || !slices.Equal(j.PIDs, []int{4242, 4243}) || j.Name != "generate" || j.Command != "python3 generate.py" ||
		j.How != fmt.Sprintf("client of :%d", port) || !slices.Equal(j.Ports, []int{port}) {
		t.Errorf("job %+v; want generate, pid 4242 with worker 4243, client of :%d", j, port)
	}
	if want := filepath.Join(data, "gen.log"); j.Log != want || j.LogFrom != "stdout" {
		t.Errorf("log %q from %q; want %q from stdout", j.Log, j.LogFrom, want)
	}
	if j.Progress == nil || j.Progress.Done != 300 || j.Progress.Total != 25000 {
		t.Errorf("progress %+v; want the newest line, 300/25000", j.Progress)
	}
	wantOut := []Output{{Path: filepath.Join(data, "synth/samples.jsonl"), MountPoint: "/", FSType: "ext4"}}
	if !reflect.DeepEqual(j.Outputs, wantOut) {
		t.Errorf("outputs %+v; want %+v", j.Outputs, wantOut)
	}

	runs := Runs(res)
	if len(runs) != 1 {
		t.Fatalf("runs %+v; want one", runs)
	}
	r := runs[0]
	if r.Name != "generate" || r.Log != j.Log || !slices.Equal(r.Metrics, []string{wantEngine.URL}) ||
		!slices.Equal(r.Outputs, []string{filepath.Join(data, "synth")}) || len(r.Protected) > 0 || r.Channel != "" {
		t.Errorf("run %+v; want generate reading its log and the engine, outputs its directory, no protected mount or channel guessed", r)
	}
	if r.Found == nil || r.Found.Job == nil || r.Found.Job.Total != 25000 || len(r.Found.Engines) != 1 {
		t.Errorf("found %+v; want the job and the engine", r.Found)
	}
}

// TestDiscoverLogOpenedByTheScript: a job that opens its own log (stdout is a terminal) is found by the
// progress in the tail of a file it writes; its data files are not read as logs, and are its outputs.
func TestDiscoverLogOpenedByTheScript(t *testing.T) {
	tree := newProcTree(t)
	data := t.TempDir()
	port := serve(t, "sglang_metrics_llama31_8b_docs.txt", 0, "")
	tree.proc(10, 1, "python3", "-m", "sglang.launch_server", "--port", fmt.Sprint(port))
	tree.listen(10, 5, fmt.Sprintf("127.0.0.1:%d", port))
	// A JSONL with a line that reads like progress: an output, never taken for the log.
	out := writeFile(t, data, "out/shard-0.jsonl", `{"text": "Progress: 1/2"}`+"\n")
	log := writeFile(t, data, "logs/run.txt", "step\r 40%|████      | 400/1000 [00:10<00:15, 40.0it/s]\r 41%|████      | 410/1000 [00:10<00:14, 41.0it/s]\n")
	tree.proc(20, 1, "python3", "extract.py")
	tree.fd(20, 1, "/dev/pts/3", "02")
	tree.fd(20, 4, out, flagsAppend)
	tree.fd(20, 5, log, flagsAppend)
	tree.connect(20, 3, "127.0.0.1:40000", fmt.Sprintf("127.0.0.1:%d", port))

	res, err := New(Options{ProcRoot: tree.root, Self: -1, ProbeTimeout: 5 * time.Second}).Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Engines) != 1 || res.Engines[0].Kind != "sglang" {
		t.Fatalf("engines %+v; want SGLang", res.Engines)
	}
	if len(res.Jobs) != 1 {
		t.Fatalf("jobs %+v; want one", res.Jobs)
	}
	j := res.Jobs[0]
	if j.Log != log || j.LogFrom != "an open file" || j.Progress == nil || j.Progress.Done != 410 || j.Progress.Total != 1000 {
		t.Errorf("log %q from %q, progress %+v; want %s, an open file, 410/1000 (tqdm's last redraw)", j.Log, j.LogFrom, j.Progress, log)
	}
	if len(j.Outputs) != 1 || j.Outputs[0].Path != out {
		t.Errorf("outputs %+v; want only %s", j.Outputs, out)
	}
}

// TestDiscoverWithoutEngine: no engine answers, so the job is the process writing a growing file; one
// whose file does not grow is not a job, nor is a daemon writing under /var/log, nor a Prometheus whose
// write-ahead log grows beside the data.
func TestDiscoverWithoutEngine(t *testing.T) {
	tree := newProcTree(t)
	data := t.TempDir()
	growing := writeFile(t, data, "hs/shard-00001.safetensors", "x")
	still := writeFile(t, data, "notes.txt", "nothing new\n")
	tree.proc(30, 1, "python3", "dump_hidden_states.py")
	tree.fd(30, 4, growing, flagsAppend)
	tree.proc(31, 1, "vim", "notes.txt")
	tree.fd(31, 4, still, flagsAppend)
	tree.proc(32, 1, "/usr/sbin/rsyslogd", "-n")
	tree.fd(32, 4, "/var/log/syslog", flagsAppend)
	// A Prometheus keeping its TSDB beside the data (not under /var/lib): its WAL grows too.
	wal := writeFile(t, data, "prometheus/wal/00000001", "x")
	tree.proc(33, 1, "/usr/bin/prometheus", "--storage.tsdb.path="+filepath.Join(data, "prometheus"))
	tree.fd(33, 5, wal, flagsAppend)

	d := New(Options{ProcRoot: tree.root, Self: -1, GrowWait: time.Millisecond})
	d.betweenLooks = func() {
		f, err := os.OpenFile(growing, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("more tensor bytes")
		f.Close()
		if err := os.WriteFile(wal, []byte("a longer write-ahead log"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := d.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Engines) != 0 || len(res.Jobs) != 1 {
		t.Fatalf("engines %+v, jobs %+v; want no engine and one job", res.Engines, res.Jobs)
	}
	j := res.Jobs[0]
	if j.PID != 30 || j.Name != "dump_hidden_states" || j.How != "writes growing files" || j.Log != "" ||
		len(j.Outputs) != 1 || j.Outputs[0].Path != growing {
		t.Errorf("job %+v; want dump_hidden_states (pid 30), writing %s, no log", j, growing)
	}
	runs := Runs(res)
	if len(runs) != 1 || runs[0].Name != "dump_hidden_states" || len(runs[0].Metrics) != 0 || !slices.Equal(runs[0].Outputs, []string{filepath.Dir(growing)}) {
		t.Errorf("runs %+v; want one, its outputs the shard directory", runs)
	}
}

// TestDiscoverOnly: limited to some processes, discovery neither probes nor reads the others.
func TestDiscoverOnly(t *testing.T) {
	tree, _, port := jobHost(t)
	// Limited to the job: its engine is out of scope, so nothing is probed and the job is found by its files.
	d := New(Options{ProcRoot: tree.root, Self: -1, Only: []int{4242}, GrowWait: time.Millisecond})
	res, err := d.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Listening != 0 || len(res.Engines) != 0 {
		t.Errorf("listening %d, engines %+v; want none in scope", res.Listening, res.Engines)
	}
	if len(res.Jobs) != 1 || res.Jobs[0].PID != 4242 || res.Jobs[0].How != "writes growing files" {
		t.Errorf("jobs %+v; want 4242 by its log", res.Jobs)
	}
	// The engine and the job: found as on the whole host.
	res, err = New(Options{ProcRoot: tree.root, Self: -1, Only: []int{1234, 4242}, ProbeTimeout: 5 * time.Second}).Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Engines) != 1 || res.Engines[0].Port != port || len(res.Jobs) != 1 || res.Jobs[0].PID != 4242 {
		t.Errorf("engines %+v, jobs %+v; want the engine and the job", res.Engines, res.Jobs)
	}
}

// TestTwoJobsTwoRuns: two scripts using one engine are two runs named after them; a second job of the
// same script gets a number.
func TestTwoJobsTwoRuns(t *testing.T) {
	e := Engine{Kind: "vllm", Port: 8000, URL: "http://127.0.0.1:8000/metrics", PID: 1}
	res := Result{Engines: []Engine{e, {Kind: "tgi", Port: 8081, URL: "http://127.0.0.1:8081/metrics", PID: 2}}, Jobs: []Job{
		{PID: 10, Name: "generate", Ports: []int{8000}, Log: "/data/a.log"},
		{PID: 11, Name: "judge", Ports: []int{8000}, Log: "/data/b.log"},
		{PID: 12, Name: "generate", Ports: []int{8000}, Log: "/data/c.log"},
	}}
	var got []string
	for _, r := range Runs(res) {
		got = append(got, fmt.Sprintf("%s %s %v", r.Name, r.Log, r.Metrics))
	}
	want := []string{"generate /data/a.log [http://127.0.0.1:8000/metrics]", "judge /data/b.log [http://127.0.0.1:8000/metrics]",
		"generate-2 /data/c.log [http://127.0.0.1:8000/metrics]", "tgi-8081  [http://127.0.0.1:8081/metrics]"}
	if !slices.Equal(got, want) {
		t.Errorf("Runs = %q; want %q (the idle TGI a run of its own, named with its port however many engines are idle)", got, want)
	}
}

func TestFill(t *testing.T) {
	res := Result{
		Engines: []Engine{{Kind: "vllm", Port: 8000, URL: "http://127.0.0.1:8000/metrics", PID: 1}},
		Jobs: []Job{{PID: 10, Name: "generate", Ports: []int{8000}, Log: "/data/gen.log",
			Outputs: []Output{{Path: "/data/synth/a.jsonl"}}, Progress: progress(300, 25000)}},
	}
	off := false
	tests := []struct {
		name string
		run  config.Run
		off  bool
		want config.Run
		fill []string
		fb   string
	}{
		{"everything left out", config.Run{Name: "a"}, false,
			config.Run{Name: "a", Log: "/data/gen.log", Metrics: []string{"http://127.0.0.1:8000/metrics"}, Total: 25000, Outputs: []string{"/data/synth"}},
			[]string{"log", "metrics", "total", "outputs"}, ""},
		{"what it says stays", config.Run{Name: "a", Log: "/data/gen.log", Total: 10, Outputs: []string{"/data"}, Prometheus: &config.Prometheus{URL: "http://p:9090"}}, false,
			config.Run{Name: "a", Log: "/data/gen.log", Total: 10, Outputs: []string{"/data"}, Prometheus: &config.Prometheus{URL: "http://p:9090"}}, nil, ""},
		{"a mistyped log", config.Run{Name: "a", Log: "/data/gne.log", Metrics: []string{"http://gpu1:8000/metrics"}}, false,
			config.Run{Name: "a", Log: "/data/gne.log", Metrics: []string{"http://gpu1:8000/metrics"}, Total: 25000, Outputs: []string{"/data/synth"}},
			[]string{"total", "outputs"}, "/data/gen.log"},
		{"discover: false", config.Run{Name: "a"}, true, config.Run{Name: "a"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &config.File{Runs: []config.Run{tt.run}}
			if tt.off {
				f.Discover = &off
			}
			Fill(f, res)
			got := f.Runs[0]
			found := got.Found
			got.Found = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Fill(%+v) = %+v; want %+v", tt.run, got, tt.want)
			}
			switch {
			case tt.fill == nil && tt.fb == "" && found != nil:
				t.Errorf("Found = %+v; want nil: nothing was filled", found)
			case (tt.fill != nil || tt.fb != "") && (found == nil || !slices.Equal(found.Filled, tt.fill) || found.FallbackLog != tt.fb):
				t.Errorf("Found = %+v; want filled %v, fallback %q", found, tt.fill, tt.fb)
			}
		})
	}
}

func TestWanted(t *testing.T) {
	dir := t.TempDir()
	log := writeFile(t, dir, "gen.log", "x\n")
	off := false
	tests := []struct {
		f    *config.File
		want bool
	}{
		{&config.File{Runs: []config.Run{{Name: "a", Log: log, Metrics: []string{"http://h:1/metrics"}}}}, false},
		{&config.File{Runs: []config.Run{{Name: "a", Log: log, Prometheus: &config.Prometheus{URL: "http://p"}}}}, false},
		{&config.File{Runs: []config.Run{{Name: "a", Log: log}}}, true},
		{&config.File{Runs: []config.Run{{Name: "a", Log: dir + "/gne.log", Metrics: []string{"http://h:1/metrics"}}}}, true},
		{&config.File{Runs: []config.Run{{Name: "a"}}, Discover: &off}, false},
	}
	for _, tt := range tests {
		if got := Wanted(tt.f); got != tt.want {
			t.Errorf("Wanted(%+v) = %v; want %v", tt.f.Runs[0], got, tt.want)
		}
	}
}

func TestCommandAndName(t *testing.T) {
	tests := []struct {
		cmdline       []string
		command, name string
	}{
		{[]string{"/usr/bin/python3", "-u", "01b_generate_synthetic.py", "--n", "25000"}, "python3 01b_generate_synthetic.py", "01b_generate_synthetic"},
		{[]string{"python3.11", "-m", "vllm.entrypoints.openai.api_server", "--port", "8000"}, "python3.11 -m vllm.entrypoints.openai.api_server", "api_server"},
		{[]string{"/opt/llm-d-inference-sim", "--port", "8000", "--model", "m"}, "llm-d-inference-sim --port 8000 --model m", "llm-d-inference-sim"},
		{[]string{"/opt/llm-d-inference-sim", "--port", "8000", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-num-seqs", "64"},
			"llm-d-inference-sim --port 8000 --model …", "llm-d-inference-sim"},
		{[]string{"python3", "-c", "print(1)"}, "python3 -c …", "python3"},
		{[]string{"bash", "run job.sh"}, "bash run job.sh", "run-job"},
		{[]string{"bash", "3"}, "bash 3", "bash"},
		{[]string{"/bin/bash", "-o", "pipefail", "./feed.sh", "3"}, "bash feed.sh", "feed"},
		{[]string{"python3", "gen\x1b[31m.py"}, "python3 gen?[31m.py", "gen--31m"},
	}
	for _, tt := range tests {
		p := &process{comm: filepath.Base(tt.cmdline[0]), cmdline: tt.cmdline}
		if got := p.command(); got != tt.command {
			t.Errorf("command(%q) = %q; want %q", tt.cmdline, got, tt.command)
		}
		if got := p.name(); got != tt.name {
			t.Errorf("name(%q) = %q; want %q", tt.cmdline, got, tt.name)
		}
	}
}

// TestRunFileLoads: what `bot init` prints loads as a run file, to the runs discovery made, and says in
// comments what it found and what it never guesses.
func TestRunFileLoads(t *testing.T) {
	tree, _, _ := jobHost(t)
	res, err := New(Options{ProcRoot: tree.root, Self: -1, ProbeTimeout: 5 * time.Second}).Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	made := File(res)
	text := RunFile(made, res, time.Date(2026, 12, 7, 3, 40, 0, 0, time.UTC))
	f, err := config.Parse([]byte(text), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("config.Parse(RunFile) = %v\n%s", err, text)
	}
	if len(f.Runs) != 1 {
		t.Fatalf("runs %+v; want 1\n%s", f.Runs, text)
	}
	got, want := f.Runs[0], made.Runs[0]
	got.Line, want.Found = 0, nil
	want.Total = res.Jobs[0].Progress.Total
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run file reads back as %+v; want %+v\n%s", got, want, text)
	}
	for _, s := range []string{"2026-12-07 03:40 UTC", "# the job: python3 generate.py (pid 4242), client of", "its stdout is redirected to this file",
		"vLLM on :", "# protected: [/shared]", "# channel:"} {
		if !strings.Contains(text, s) {
			t.Errorf("run file does not say %q:\n%s", s, text)
		}
	}
	// Nothing found: still a file that loads, with a run to fill in.
	text = RunFile(nil, Result{}, time.Now())
	if _, err := config.Parse([]byte(text), func(string) (string, bool) { return "", false }); err != nil || !strings.Contains(text, "Nothing was found") {
		t.Errorf("RunFile(nothing) = %v\n%s", err, text)
	}
}

func progress(done, total int64) *probes.Progress {
	return &probes.Progress{Done: done, Total: total}
}

// TestDiscoverClientBetweenRequests: a job that opens a connection per request holds none at the first
// look; a later look finds it a client of the engine, rather than a writer of files with no engine.
func TestDiscoverClientBetweenRequests(t *testing.T) {
	tree := newProcTree(t)
	data := t.TempDir()
	port := serve(t, "vllm_v1_metrics_docs_design_example.txt", 0, "")
	tree.proc(1234, 1, "vllm", "serve", "m", "--port", fmt.Sprint(port))
	tree.listen(1234, 5, fmt.Sprintf("127.0.0.1:%d", port))
	log := writeFile(t, data, "gen.log", "Progress: 10/100 (0 errors)\n")
	tree.proc(4242, 1, "python3", "generate.py")
	tree.fd(4242, 1, log, flagsAppend)
	d := New(Options{ProcRoot: tree.root, Self: -1, ProbeTimeout: 5 * time.Second, GrowWait: 5 * time.Millisecond})
	looks := 0
	d.betweenClientLooks = func(look int) {
		looks = look
		if look == 3 {
			tree.connect(4242, 3, "127.0.0.1:50001", fmt.Sprintf("127.0.0.1:%d", port))
		}
	}
	res, err := d.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if looks != clientLooks-1 || len(res.Jobs) != 1 || res.Jobs[0].How != fmt.Sprintf("client of :%d", port) {
		t.Errorf("after %d looks, jobs %+v; want the job a client of :%d at the third, and every look made", looks, res.Jobs, port)
	}
}

// TestTwoPerRequestClientsBothFound: two jobs that connect per request, each caught holding a connection at
// a different look: once one was found the looks stopped, the other job went unseen, and its tokens were
// counted as the first's. Every look's clients are kept: two jobs, the engine said shared.
func TestTwoPerRequestClientsBothFound(t *testing.T) {
	tree := newProcTree(t)
	data := t.TempDir()
	port := serve(t, "vllm_v1_metrics_docs_design_example.txt", 0, "")
	tree.proc(1234, 1, "vllm", "serve", "m", "--port", fmt.Sprint(port))
	tree.listen(1234, 5, fmt.Sprintf("127.0.0.1:%d", port))
	for i, pid := range []int{4866, 4931} {
		tree.proc(pid, 1, "python3", "gen.py", fmt.Sprint(port))
		tree.fd(pid, 1, writeFile(t, data, fmt.Sprintf("gen%d.log", i), "Progress: 10/100\n"), flagsAppend)
	}
	tree.connect(4866, 3, "127.0.0.1:50001", fmt.Sprintf("127.0.0.1:%d", port))
	d := New(Options{ProcRoot: tree.root, Self: -1, ProbeTimeout: 5 * time.Second, GrowWait: 5 * time.Millisecond})
	d.betweenClientLooks = func(look int) {
		if look == 2 {
			// The first job's request finished (its connection closed); the second's is under way.
			tree.tcp = nil
			tree.listen(0, 0, fmt.Sprintf("127.0.0.1:%d", port))
			tree.connect(4931, 4, "127.0.0.1:50002", fmt.Sprintf("127.0.0.1:%d", port))
		}
	}
	res, err := d.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	runs := Runs(res)
	if len(res.Jobs) != 2 || len(runs) != 2 || len(runs[0].Found.Shared) != 1 || len(runs[1].Found.Shared) != 1 {
		t.Fatalf("jobs %+v, runs %+v; want both jobs, each told the engine is shared", res.Jobs, runs)
	}
}
