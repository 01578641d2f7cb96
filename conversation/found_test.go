package conversation

import (
	"context"
	"strings"
	"testing"

	"runwatch/config"
)

// foundJob is what discovery found on the seed's box, as config.Found carries it.
func foundJob(log string) *config.Found {
	return &config.Found{
		Engines: []config.FoundEngine{{Kind: "vllm", Port: 8000, PID: 1234, URL: "http://127.0.0.1:8000/metrics"}},
		Job: &config.FoundJob{PID: 4242, Command: "python3 generate.py", How: "client of :8000", Log: log, LogFrom: "stdout",
			Outputs: []config.FoundOutput{{Path: "/data/synth/samples.jsonl"}}, Total: 25000},
	}
}

// TestDiscoveredRunSaysWhatWasFoundOnce: the first answer about a discovered run says what was found and
// how; the next answers in the same console or Slack do not repeat it.
func TestDiscoveredRunSaysWhatWasFoundOnce(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) { r.Channel, r.Stages = "", nil }})
	e.File.Runs[0].Found = foundJob(e.Log)
	const found = "found: vLLM on :8000 (pid 1234), job python3 generate.py (pid 4242) → log "
	ctx := context.Background()
	first := e.bot.Ask(ctx, Request{Text: "ETA?", Source: "console"}).Message.Text()
	if !strings.Contains(first, found) || !strings.Contains(first, "(its stdout), writes /data/synth/samples.jsonl. No run file: bot init prints one to edit.") {
		t.Errorf("first answer = %q; want it to say %q…", first, found)
	}
	for _, q := range []string{"ETA?", "how fast?", "where does the output go?"} {
		if text := e.bot.Ask(ctx, Request{Text: q, Source: "console"}).Message.Text(); strings.Contains(text, "found:") {
			t.Errorf("%s after the first answer = %q; want what was found said once", q, text)
		}
	}
}

// TestDiscoveredRunNeverGuessesProtected: "are we writing to the protected mount?" about a discovered run
// says how to make one, pointing at bot init for the run file there is not yet. "are we writing to
// /shared?" (the README's headline question) was refused ("I only answer about run gen's outputs …
// /shared isn't one of them", exit 1) though the job's files are known: it answers from them, where the job
// does write, that /shared itself is not watched, and how to guard it.
func TestDiscoveredRunNeverGuessesProtected(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) { r.Channel, r.Stages = "", nil }})
	e.File.Runs[0].Found = foundJob(e.Log)
	ctx := context.Background()
	text := e.bot.Ask(ctx, Request{Text: "are we writing to the protected mount?", Source: "console"}).Message.Text()
	if !strings.Contains(text, "protected:") || !strings.Contains(text, "a run file (there is none yet: bot init --write saves one with what I found, to add to)") ||
		strings.Contains(text, "the run file") {
		t.Errorf("are we writing to the protected mount? = %q; want how to add protected: to a run file bot init writes", text)
	}
	for _, tt := range []struct{ q, verdict, itself string }{
		{"are we writing to /shared?", "(ok) No — none of the files run synth's job writes is under /shared. It writes only /data/synth/samples.jsonl.", "not /shared itself"},
		{"are we writing to /data?", "Yes — run synth's job writes under /data: /data/synth/samples.jsonl.", "not /data itself"},
	} {
		rep := e.bot.Ask(ctx, Request{Text: tt.q, Source: "console"})
		text := rep.Message.Text()
		if rep.Refused || !strings.Contains(text, tt.verdict) || !strings.Contains(text, tt.itself) ||
			!strings.Contains(text, "save a run file with bot init --write and add protected: [") {
			t.Errorf("%s = %q (refused %v); want %q, that the path itself is not watched, and how to guard it", tt.q, text, rep.Refused, tt.verdict)
		}
	}
}

// TestRunFileRunSaysWhatDiscoveryFilled: a run-file run discovery completed says which keys came from it;
// its advice still points at the run file, which is there.
func TestRunFileRunSaysWhatDiscoveryFilled(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	f := foundJob(e.Log)
	f.Filled = []string{"metrics", "total"}
	e.File.Runs[0].Found, e.File.Runs[0].Line = f, 3
	text := e.bot.Ask(context.Background(), Request{Text: "ETA?", Source: "console"}).Message.Text()
	if want := "found on this host for job python3 generate.py (pid 4242), for what the run file leaves out: metrics: vLLM on :8000 (pid 1234); total: 25,000 (its progress lines)."; !strings.Contains(text, want) {
		t.Errorf("ETA? = %q; want %q", text, want)
	}
}

// TestDefaultRunSaysDiscoveryFoundNothing: with no run file and nothing found, the built-in run's answers
// say discovery looked, and what it could not see.
func TestDefaultRunSaysDiscoveryFoundNothing(t *testing.T) {
	dir := t.TempDir()
	e := newBotEnv(t, botOpts{NoLogFile: true, File: func(f *config.File) {
		*f = *config.Default(dir)
		f.Runs[0].Found = &config.Found{Invisible: 2}
	}})
	text := e.bot.Ask(context.Background(), Request{Text: "ETA?", Source: "console"}).Message.Text()
	if want := "no run file was found (--config, $RUNWATCH_CONFIG or ./runwatch.yaml), and nothing was found on this host: no listening socket answered /metrics as an inference engine does, and no process was writing a log with progress or growing files (2 processes could not be inspected: run as the job's user, or root, to see them), so run local is the built-in default"; !strings.Contains(text, want) {
		t.Errorf("ETA? = %q; want %q", text, want)
	}
}

// TestNoRunNamedGoesToTheOnlyJob: with no run file, "ETA?" on a host with one job and two other servers
// asked "Which run? I watch gen, vllm-35629, vllm-36013" (exit 1). A question naming no run goes to the only
// discovered run with a job; the engines are not asked about. Two jobs, or a run file's runs, still ask.
func TestNoRunNamedGoesToTheOnlyJob(t *testing.T) {
	idle := func(name string, port int) config.Run {
		return config.Run{Name: name, Metrics: []string{"http://127.0.0.1:1/metrics"},
			Found: &config.Found{Engines: []config.FoundEngine{{Kind: "vllm", Port: port, PID: 9, URL: "http://127.0.0.1:1/metrics"}}}}
	}
	for _, tt := range []struct {
		name   string
		edit   func(f *config.File)
		picked bool
	}{
		{"one job, two idle servers", func(f *config.File) {}, true},
		{"two jobs", func(f *config.File) {
			r := f.Runs[0]
			r.Name, r.Found = "judge", foundJob("/data/judge.log")
			f.Runs = append(f.Runs, r)
		}, false},
		{"a run file's runs", func(f *config.File) { f.Runs[0].Line = 3 }, false},
		{"no job, the log of one that stopped", func(f *config.File) {
			for i := range f.Runs {
				f.Runs[i].Found.Job = nil
				f.Runs[i].Found.Stopped = []config.FoundStopped{{Log: "/tmp/nu/job/gen.log", Progress: "Progress: 838/3000", PID: 3570, Command: "bash 3"}}
			}
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newBotEnv(t, botOpts{Run: func(r *config.Run) { r.Channel, r.Stages = "", nil }, File: func(f *config.File) {
				f.Runs[0].Found = foundJob(f.Runs[0].Log)
				f.Runs = append(f.Runs, idle("vllm-35629", 35629), idle("vllm-36013", 36013))
				tt.edit(f)
			}})
			rep := e.bot.Ask(context.Background(), Request{Text: "ETA?", Source: "console"})
			text := rep.Message.Text()
			switch {
			case tt.picked && (rep.Refused || !strings.Contains(text, "synth · ETA")):
				t.Errorf("ETA? = %q (refused %v); want the answer about synth, the only run with a job", text, rep.Refused)
			case !tt.picked && (!rep.Refused || !strings.Contains(text, "Which run?")):
				t.Errorf("ETA? = %q (refused %v); want Which run?", text, rep.Refused)
			case strings.Contains(tt.name, "stopped") != strings.Contains(text, "No job is running on this host that I can see; the log /tmp/nu/job/gen.log (last: Progress: 838/3000) is held by bash 3 (pid 3570)"):
				t.Errorf("ETA? = %q; want the stopped job's log said exactly when no job runs", text)
			}
		})
	}
}
