package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"runwatch/config"
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
			!strings.Contains(text, "Copy runwatch.example.yaml to runwatch.yaml") ||
			strings.Contains(text, "No progress source configured") || strings.Contains(text, "the run has no progress source") {
			t.Errorf("%s with no run file = %q; want it to say there is none and how to make one", q, text)
		}
	}
}
