package discover

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"runwatch/config"
)

// TestSharedEngineIsSaid: two jobs on one engine each got its counters as their own. Each discovered run
// names the other job as sharing the engine (the monitor then prices it from its log alone); a job on an
// engine of its own shares nothing. bot init leaves a shared engine's metrics: commented out, so that the
// file it writes, loaded, is filled and said the same way instead of pricing the job with both jobs' counts.
func TestSharedEngineIsSaid(t *testing.T) {
	res := Result{Engines: []Engine{{Kind: "vllm", Port: 24101, URL: "http://127.0.0.1:24101/metrics", PID: 1},
		{Kind: "vllm", Port: 24102, URL: "http://127.0.0.1:24102/metrics", PID: 2}}, Jobs: []Job{
		{PID: 4866, Name: "gen", Command: "python3 gen.py", Ports: []int{24101}, Log: "/data/a.log"},
		{PID: 4931, Name: "gen", Command: "python3 gen.py", Ports: []int{24101}, Log: "/data/b.log"},
		{PID: 5000, Name: "judge", Command: "python3 judge.py", Ports: []int{24102}, Log: "/data/c.log"},
	}}
	runs := Runs(res)
	want := map[string][]config.SharedJob{
		"gen":   {{Run: "gen-2", Command: "python3 gen.py", PID: 4931, Port: 24101}},
		"gen-2": {{Run: "gen", Command: "python3 gen.py", PID: 4866, Port: 24101}},
		"judge": nil,
	}
	for _, r := range runs {
		if got := r.Found.Shared; !slices.Equal(got, want[r.Name]) {
			t.Errorf("run %s: Shared = %+v; want %+v", r.Name, got, want[r.Name])
		}
	}
	text := RunFile(File(res), res, time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC))
	f, err := config.Parse([]byte(text), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("config.Parse(RunFile) = %v\n%s", err, text)
	}
	if len(f.Runs[0].Metrics) != 0 || len(f.Runs[2].Metrics) != 1 || !strings.Contains(text, "# left out: it also serves job python3 gen.py (pid 4931)") {
		t.Errorf("run file: metrics %v, %v; want the shared engine left out (said) and judge's kept\n%s", f.Runs[0].Metrics, f.Runs[2].Metrics, text)
	}
	Fill(f, res)
	if r := f.Runs[0]; len(r.Metrics) != 1 || r.Found == nil || len(r.Found.Shared) != 1 || r.Found.Shared[0].PID != 4931 {
		t.Errorf("the loaded run file, filled: %+v (found %+v); want the engine filled and said shared with pid 4931", r, r.Found)
	}
}

// TestFillLeavesUnlinkedEngines: a run file naming only a log no process writes got "metrics: vLLM on
// :24101" (another job's server) and that server's finish shares. Discovery fills a run's metrics only with
// engines its job uses; the others are named once as not linked, and the run's keys stay as they are.
func TestFillLeavesUnlinkedEngines(t *testing.T) {
	dir := t.TempDir()
	log := writeFile(t, dir, "job.log", "Progress: 20/100\n")
	res := Result{Engines: []Engine{{Kind: "vllm", Port: 24101, URL: "http://127.0.0.1:24101/metrics", PID: 1}},
		Jobs: []Job{{PID: 4866, Name: "gen", Command: "python3 gen.py", Ports: []int{24101}, Log: "/tmp/nu/job/gen.log",
			Outputs: []Output{{Path: "/tmp/nu/job/out.jsonl"}}, Progress: progress(838, 3000)}}}
	for _, tt := range []struct {
		name string
		run  config.Run
	}{
		{"a log no job writes", config.Run{Name: "esc", Log: log}},
		{"outputs no job writes", config.Run{Name: "esc", Outputs: []string{dir}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &config.File{Runs: []config.Run{tt.run}}
			Fill(f, res)
			r := f.Runs[0]
			if len(r.Metrics) != 0 || r.Total != 0 || r.Log != tt.run.Log || !slices.Equal(r.Outputs, tt.run.Outputs) {
				t.Errorf("Fill = %+v; want the run as it was: nothing links gen (pid 4866) to it", r)
			}
			if r.Found == nil || r.Found.Job != nil || len(r.Found.Unlinked) != 1 || r.Found.Unlinked[0].Port != 24101 || r.Found.Filled == nil {
				t.Errorf("Found = %+v; want vLLM on :24101 named as not linked, no job", r.Found)
			}
		})
	}
}

// TestUnseenConnectionsShareTheEngine: connections to the job's engine from processes discovery could not
// inspect may be another job's: the engine's counts are not taken as the job's alone either.
func TestUnseenConnectionsShareTheEngine(t *testing.T) {
	res := Result{Engines: []Engine{{Kind: "vllm", Port: 8000, URL: "http://127.0.0.1:8000/metrics", PID: 1, Unseen: 2}},
		Jobs: []Job{{PID: 4242, Name: "generate", Command: "python3 generate.py", Ports: []int{8000}, Log: "/data/gen.log"}}}
	runs := Runs(res)
	if want := []config.SharedJob{{Port: 8000, Unseen: 2}}; len(runs) != 1 || !slices.Equal(runs[0].Found.Shared, want) {
		t.Errorf("runs %+v; want the engine shared with 2 unseen connections", runs)
	}
	text := RunFile(File(res), res, time.Now())
	if !strings.Contains(text, "# left out: it also serves 2 connections from processes discovery could not inspect") {
		t.Errorf("run file does not leave the engine out, saying why:\n%s", text)
	}
}

// TestUnseenOnlyWhatEveryLookSees: a per-request client's connection opened between the reads of the
// sockets and of its owner's fds has no owner for one look; counted unseen, it would make the job's own
// engine look shared. Only connections every look sees without an owner count.
func TestUnseenOnlyWhatEveryLookSees(t *testing.T) {
	tree := newProcTree(t)
	port := serve(t, "vllm_v1_metrics_docs_design_example.txt", 0, "")
	tree.proc(1234, 1, "vllm", "serve", "m", "--port", fmt.Sprint(port))
	tree.listen(1234, 5, fmt.Sprintf("127.0.0.1:%d", port))
	log := writeFile(t, t.TempDir(), "gen.log", "Progress: 10/100\n")
	tree.proc(4242, 1, "python3", "gen.py")
	tree.fd(4242, 1, log, flagsAppend)
	tree.connect(4242, 3, "127.0.0.1:50001", fmt.Sprintf("127.0.0.1:%d", port))
	tree.connect(0, 0, "127.0.0.1:50002", fmt.Sprintf("127.0.0.1:%d", port)) // a hidden process's, all along
	tree.connect(0, 0, "127.0.0.1:50003", fmt.Sprintf("127.0.0.1:%d", port)) // the job's, caught mid-open
	d := New(Options{ProcRoot: tree.root, Self: -1, ProbeTimeout: 5 * time.Second, GrowWait: 5 * time.Millisecond})
	d.betweenClientLooks = func(look int) {
		if look == 1 {
			tree.tcp = tree.tcp[:len(tree.tcp)-1]
			tree.write("net/tcp", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+strings.Join(tree.tcp, "\n")+"\n")
		}
	}
	res, err := d.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Engines) != 1 || res.Engines[0].Unseen != 1 {
		t.Errorf("engines %+v; want 1 unseen connection (the one every look saw)", res.Engines)
	}
}
