package conversation

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/reports"
)

// "is vllm up?" for a run without servers says why by what the run file gives: a run with no log was told
// "I follow it from its log alone", a run read from Prometheus that it has no prometheus: at all.
func TestNoServersSaysWhatTheRunHas(t *testing.T) {
	// A Prometheus that answers every query with no series: it knows no server of this run.
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	t.Cleanup(prom.Close)
	tests := []struct {
		name      string
		opts      botOpts
		want, not string
	}{
		{"a log alone", botOpts{}, "so I follow it from its log alone", "nothing else"},
		{"nothing", botOpts{NoLogFile: true, Run: func(r *config.Run) { r.Log = "" }},
			"nothing else to follow the job by: the run has no `metrics:`, `prometheus:` or `log:`", "its log alone"},
		{"prometheus", botOpts{Run: func(r *config.Run) { r.Prometheus = &config.Prometheus{URL: prom.URL} }},
			"No inference servers found: Prometheus (`prometheus:`) has no vLLM, SGLang or TGI series for this run", "no `metrics:` endpoints or `prometheus:`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newBotEnv(t, tt.opts)
			rep := e.bot.Ask(context.Background(), Request{Text: "is vllm up?", Source: "console"})
			text := rep.Message.Mrkdwn()
			if rep.Intent != "servers" || !strings.Contains(text, tt.want) || strings.Contains(text, tt.not) {
				t.Errorf("is vllm up? (%s) = %s %q; want the servers answer saying %q, not %q", tt.name, rep.Intent, text, tt.want, tt.not)
			}
		})
	}
}

// Without a run file the bot watches the built-in default run, which has no progress source: its answer
// says there is no run file and how to make one, not "add log: to the run file".
func TestDefaultRunSaysThereIsNoRunFile(t *testing.T) {
	dir := t.TempDir()
	e := newBotEnv(t, botOpts{NoLogFile: true, File: func(f *config.File) { *f = *config.Default(dir) }})
	// The status and what's left said "No progress source configured (add log:, metrics: or prometheus: to the
	// run file)" beside an ETA that said there is none.
	for _, q := range []string{"ETA?", "is it stuck?", "status", "what's left?"} {
		text := e.bot.Ask(context.Background(), Request{Text: q, Source: "console"}).Message.Text()
		if !strings.Contains(text, "no run file was found (--config, $RUNWATCH_CONFIG or ./runwatch.yaml), so run local is the built-in default") ||
			!strings.Contains(text, "bot init prints a run file to start from (or copy runwatch.example.yaml to runwatch.yaml)") ||
			strings.Contains(text, "No progress source configured") || strings.Contains(text, "the run has no progress source") {
			t.Errorf("%s with no run file = %q; want it to say there is none and how to make one", q, text)
		}
	}
}

// A run counted by its servers alone (no log) shows the servers' finished requests as its progress: a
// counter that runs from the server's start, so 46% a few minutes into a job can be an older job's
// requests. Every answer that shows the count says so; one from the job's log says nothing of it.
func TestServerCountSaysItRunsFromTheServerStart(t *testing.T) {
	questions := []string{"ETA?", "status", "what's left?", "is it stuck?"}
	for _, src := range []string{"prometheus", "metrics", "log"} {
		runs := testkit.ReplyRuns(t)
		runs.RS.Progress = &reports.Progress{Done: 11500, Total: 25000, Source: src}
		b := NewBot(runs, time.UTC, config.Env{})
		shown := 0
		for _, q := range questions {
			got := b.Ask(context.Background(), Request{Text: q, Source: "mention", Channel: "C1"}).Message.Text()
			if !strings.Contains(got, "11,500") && !strings.Contains(got, "13,500") {
				continue // this answer shows no count
			}
			shown++
			says := strings.Contains(got, "from the server's start")
			if src != "log" && !says {
				t.Errorf("%s, progress from %s = %q; want it to say the count runs from the server's start", q, src, got)
			}
			if src == "log" && says {
				t.Errorf("%s, progress from the log = %q; want nothing of the server's count", q, got)
			}
			if src != "log" && strings.Contains(got, "0 errors") {
				t.Errorf("%s, progress from %s = %q; want no error count (the servers do not count the job's failures)", q, src, got)
			}
		}
		// Without this the test passes when no answer shows the count at all.
		if shown < 2 {
			t.Errorf("progress from %s: %d of %q show the count; want at least status and what's left", src, shown, questions)
		}
	}
}

// After a run counted by its servers alone finishes, every answer that shows the final count still says whose
// count it is: "No items left: all 25,000 are done" alone claimed the job's own count.
func TestFinishedServerCountSaysItRunsFromTheServerStart(t *testing.T) {
	for _, src := range []string{"prometheus", "metrics", "log"} {
		runs := testkit.ReplyRuns(t)
		runs.RS.Progress = &reports.Progress{Done: 25000, Total: 25000, Source: src}
		runs.RS.ETA = &reports.ETA{State: reports.StateDone, Reason: "all done", Progress: 1}
		runs.RS.Stages = nil
		b := NewBot(runs, time.UTC, config.Env{})
		for _, q := range []string{"ETA?", "status", "what's left?", "is it stuck?"} {
			got := b.Ask(context.Background(), Request{Text: q, Source: "mention", Channel: "C1"}).Message.Text()
			if !strings.Contains(got, "25,000") {
				continue // this answer shows no count
			}
			if says := strings.Contains(got, "from the server's start"); says != (src != "log") {
				t.Errorf("%s, finished, progress from %s = %q; want the server's count named: %v", q, src, got, src != "log")
			}
		}
	}
}
