package discover

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestShellIsNotTheJob: right after the job was killed, "ETA?" answered about a run named "3" after "job
// bash 3 (pid 3570, by the files it writes)", a shell whose stdout held the killed job's log, with the host's
// vLLM servers summed into it. A shell holding a progress log nothing writes is the log of a job that has
// stopped, never a job; the engines stay runs of their own. While the job runs, the job is the script the
// shell started, named after it, not the shell.
func TestShellIsNotTheJob(t *testing.T) {
	for _, alive := range []bool{false, true} {
		t.Run(fmt.Sprintf("job alive %v", alive), func(t *testing.T) {
			tree := newProcTree(t)
			data := t.TempDir()
			log := writeFile(t, data, "gen.log", "Progress: 837/3000 elapsed: 300s\nProgress: 838/3000 elapsed: 301s\n")
			p1, p2 := serve(t, "vllm_v1_metrics_docs_design_example.txt", 0, ""), serve(t, "vllm_v1_metrics_docs_design_example.txt", 0, "")
			tree.proc(100, 1, "/opt/llm-d-inference-sim", "--port", fmt.Sprint(p1))
			tree.listen(100, 5, fmt.Sprintf("127.0.0.1:%d", p1))
			tree.proc(101, 1, "/opt/llm-d-inference-sim", "--port", fmt.Sprint(p2))
			tree.listen(101, 5, fmt.Sprintf("127.0.0.1:%d", p2))
			tree.proc(3570, 1, "bash", "-o", "pipefail", "3")
			tree.fd(3570, 1, log, flagsAppend)
			tree.fd(3570, 2, log, flagsAppend)
			if alive {
				tree.proc(3571, 3570, "python3", "gen.py", "24101", "3000", "out.jsonl")
				tree.fd(3571, 1, log, flagsAppend)
			} else {
				// What the script ran after the job (`python3 gen.py …; sleep 600`) holds the log too.
				tree.proc(3572, 3570, "sleep", "600")
				tree.fd(3572, 1, log, flagsAppend)
			}
			d := New(Options{ProcRoot: tree.root, Self: -1, ProbeTimeout: 5 * time.Second, GrowWait: time.Millisecond})
			res, err := d.Discover(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range Runs(res) {
				names = append(names, r.Name)
				if r.Found.Job == nil && len(r.Metrics) != 1 || r.Found.Job != nil && len(r.Metrics) != 0 {
					t.Errorf("run %s reads %v; want each server a run of its own, none summed into the job", r.Name, r.Metrics)
				}
			}
			if alive {
				if len(res.Jobs) != 1 || res.Jobs[0].PID != 3571 || res.Jobs[0].Name != "gen" || len(res.Stopped) != 0 {
					t.Errorf("jobs %+v, stopped %+v; want python3 gen.py (pid 3571), not the shell that started it", res.Jobs, res.Stopped)
				}
				return
			}
			want := []Stopped{{Log: log, Progress: "Progress: 838/3000 elapsed: 301s", PID: 3570, Command: "bash -o pipefail 3"}}
			if len(res.Jobs) != 0 || !slices.Equal(res.Stopped, want) {
				t.Errorf("jobs %+v, stopped %+v; want no job, and %+v", res.Jobs, res.Stopped, want)
			}
			if slices.ContainsFunc(names, func(n string) bool {
				return !strings.HasPrefix(n, "llm-d-inference-sim") && !strings.HasPrefix(n, "vllm-")
			}) {
				t.Errorf("runs %q; want only the two servers, named with their ports", names)
			}
			if r := Runs(res)[0]; len(r.Found.Stopped) != 1 || r.Found.Stopped[0].PID != 3570 {
				t.Errorf("found %+v; want the stopped job's log said", r.Found)
			}
		})
	}
}

// TestShellWritingItsOwnLogIsAJob: a shell script that prints its own progress into a log that grows is
// the job, named after its script.
func TestShellWritingItsOwnLogIsAJob(t *testing.T) {
	tree := newProcTree(t)
	log := writeFile(t, t.TempDir(), "loop.log", "Progress: 1/10\n")
	tree.proc(40, 1, "bash", "./loop.sh")
	tree.fd(40, 1, log, flagsAppend)
	d := New(Options{ProcRoot: tree.root, Self: -1, GrowWait: time.Millisecond})
	d.betweenLooks = func() {
		if err := os.WriteFile(log, []byte("Progress: 1/10\nProgress: 2/10\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := d.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 1 || res.Jobs[0].Name != "loop" || res.Jobs[0].Log != log || len(res.Stopped) != 0 {
		t.Errorf("jobs %+v, stopped %+v; want loop.sh, its log %s", res.Jobs, res.Stopped, log)
	}
}
