package reports

import (
	"strings"
	"testing"

	"runwatch/config"
)

func TestFoundLine(t *testing.T) {
	vllm := config.FoundEngine{Kind: "vllm", Port: 8000, PID: 1234, URL: "http://127.0.0.1:8000/metrics"}
	job := &config.FoundJob{PID: 4242, Command: "python3 generate.py", How: "client of :8000", Log: "/data/gen.log", LogFrom: "stdout",
		Outputs: []config.FoundOutput{{Path: "/data/synth/samples.jsonl"}, {Path: "/data/synth/rejects.jsonl"}}, Total: 25000}
	tests := []struct {
		name  string
		found *config.Found
		want  string
	}{
		{"no discovery", nil, ""},
		{"the seed's box", &config.Found{Engines: []config.FoundEngine{vllm}, Job: job},
			"found: vLLM on :8000 (pid 1234), job `python3 generate.py` (pid 4242) → log `/data/gen.log` (its stdout), writes `/data/synth/samples.jsonl` and 1 other file. No run file: `bot init` prints one to edit."},
		{"a job found by its files, its log its own", &config.Found{Job: &config.FoundJob{PID: 7, Command: "python3 dump.py", How: "writes growing files",
			Log: "/d/run.txt", LogFrom: "an open file", Outputs: []config.FoundOutput{{Path: "/d/hs/0.safetensors"}}}, Invisible: 1},
			"found: job `python3 dump.py` (pid 7, by the files it writes) → log `/d/run.txt` (a file it writes), writes `/d/hs/0.safetensors`. No run file: `bot init` prints one to edit; 1 process could not be inspected."},
		{"an engine and no job", &config.Found{Engines: []config.FoundEngine{{Kind: "sglang", Port: 30000}}, Unseen: 2},
			"found: SGLang on :30000 (its process could not be inspected): no job found connected to it. No run file: `bot init` prints one to edit; 2 connections to the engine from processes I can't inspect."},
		{"a run file's run", &config.Found{Engines: []config.FoundEngine{vllm}, Job: job, Filled: []string{"metrics", "total"}},
			"found on this host for job `python3 generate.py` (pid 4242), for what the run file leaves out: `metrics:` vLLM on :8000 (pid 1234); `total:` 25,000 (its progress lines)."},
		{"a run file's run, nothing filled", &config.Found{Engines: []config.FoundEngine{vllm}, Job: job, Filled: []string{}, FallbackLog: "/data/gen.log"}, ""},
		{"a run file's run its job's engine is not linked to", &config.Found{Unlinked: []config.FoundEngine{{Kind: "vllm", Port: 24101, PID: 4800}}, Filled: []string{}},
			"`metrics:` left out: found vLLM on :24101 (pid 4800) on this host, but no process of this run's job is its client (no process here writes its log or outputs), so it is not read for it; add `metrics:` to the run file if one serves this job."},
		{"an engine, and the log of a job that has stopped", &config.Found{Engines: []config.FoundEngine{{Kind: "vllm", Port: 24101, PID: 4800}},
			Stopped: []config.FoundStopped{{Log: "/tmp/nu/job/gen.log", Progress: "Progress: 838/3000", PID: 3570, Command: "bash 3"}}},
			"found: vLLM on :24101 (pid 4800): no job found connected to it. No run file: `bot init` prints one to edit; the log `/tmp/nu/job/gen.log` (last: `Progress: 838/3000`) is held by `bash 3` (pid 3570), which does not write it: the log of a job that has stopped."},
		{"found nothing", &config.Found{Invisible: 3}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FoundLine(tt.found); got != tt.want {
				t.Errorf("FoundLine(%+v) =\n%q; want\n%q", tt.found, got, tt.want)
			}
		})
	}
	if got, want := NothingFound(&config.Found{Invisible: 3}), "and nothing was found on this host: no listening socket answered `/metrics` as an inference engine does, and no process was writing a log with progress or growing files (3 processes could not be inspected: run as the job's user, or root, to see them)"; got != want {
		t.Errorf("NothingFound = %q; want %q", got, want)
	}
	if got := NothingFound(nil); got != "" {
		t.Errorf("NothingFound(nil) = %q; want nothing: no discovery", got)
	}
}

// TestStoppedLine: with no job on the host but the log of one that stopped, the answers say so instead of
// only "nothing was found".
func TestStoppedLine(t *testing.T) {
	f := &config.Found{Stopped: []config.FoundStopped{{Log: "/tmp/nu/job/gen.log", Progress: "Progress: 838/3000", PID: 3570, Command: "bash 3"}}}
	want := "No job is running on this host that I can see; the log `/tmp/nu/job/gen.log` (last: `Progress: 838/3000`) is held by `bash 3` (pid 3570), which does not write it: the log of a job that has stopped."
	if got := StoppedLine(f); got != want {
		t.Errorf("StoppedLine = %q; want %q", got, want)
	}
	if got := NothingFound(f); !strings.HasSuffix(got, "growing files; the log `/tmp/nu/job/gen.log` (last: `Progress: 838/3000`) is held by `bash 3` (pid 3570), which does not write it: the log of a job that has stopped") {
		t.Errorf("NothingFound = %q; want it to name the stopped job's log", got)
	}
	if got := StoppedLine(&config.Found{}); got != "" {
		t.Errorf("StoppedLine(none) = %q; want \"\"", got)
	}
}

// TestAnswerUnwatched: "are we writing to /shared?" about a discovered run answers from the job's own
// files, with the protected verdict's caveats: a failed scan or processes it could not inspect are never a
// plain no, and no file seen is "can't tell".
func TestAnswerUnwatched(t *testing.T) {
	out := WriterInfo{PID: 4242, Command: "python3", File: "/tmp/nu/job/out.jsonl", Mount: "/", Output: true}
	other := WriterInfo{PID: 7, Command: "rsync", File: "/shared/x", Mount: "/shared"} // no output of the job's
	tests := []struct {
		name string
		st   Storage
		f    *config.Found
		want string
	}{
		{"the job writes elsewhere", Storage{Writers: []WriterInfo{out, other}}, nil,
			":large_green_circle: *No* — none of the files run gen's job writes is under `/shared`. It writes only `/tmp/nu/job/out.jsonl` on `/`."},
		{"from discovery, with its mount", Storage{}, &config.Found{Job: &config.FoundJob{Outputs: []config.FoundOutput{{Path: "/tmp/nu/job/out.jsonl", MountPoint: "/", FSType: "ext4"}}}},
			":large_green_circle: *No* — none of the files run gen's job writes is under `/shared`. It writes only `/tmp/nu/job/out.jsonl` on `/` (ext4)."},
		{"the job writes there", Storage{Writers: []WriterInfo{{PID: 4242, File: "/shared/gen/out.jsonl", Output: true}}}, nil,
			":large_yellow_circle: *Yes* — run gen's job writes under `/shared`: `/shared/gen/out.jsonl`."},
		{"processes not inspected", Storage{Writers: []WriterInfo{out}, Invisible: 2}, nil,
			":large_yellow_circle: *Not that I can see* — none of the files run gen's job writes is under `/shared`, but "},
		{"the scan failed", Storage{ScanError: "permission denied"}, &config.Found{Job: &config.FoundJob{Outputs: []config.FoundOutput{{Path: "/tmp/nu/job/out.jsonl"}}}},
			":warning: *Unknown* — I could not scan open files: permission denied."},
		{"no file seen", Storage{}, nil, ":grey_question: *Can't tell* — I see no file run gen's job is writing right now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := AnswerUnwatched("gen", tt.st, tt.f, "/shared/")
			if len(m.Sections) != 2 || !strings.HasPrefix(m.Sections[0], tt.want) || !strings.Contains(m.Sections[1], "add `protected: [/shared]` to the run") {
				t.Errorf("AnswerUnwatched = %q; want it to start %q, then how to guard /shared", m.Sections, tt.want)
			}
		})
	}
}
