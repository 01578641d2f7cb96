package conversation

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"runwatch/config"
)

// A progress stage whose source failed names the failure, the source first and its error, with a URL's
// secrets redacted as in every other line: "no progress reported yet" read as a job that has not started.
func TestProgressStageNamesTheFailedSource(t *testing.T) {
	e := newBotEnv(t, botOpts{NoLogFile: true, Metrics: []string{"http://ops:hunter2@127.0.0.1:1/metrics?api_key=s3cr3t"}})
	for _, q := range []string{"status", "what's left?"} {
		text := e.bot.Ask(context.Background(), Request{Text: q, Source: "console"}).Message.Text()
		var line string
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "generate —") {
				line = l
			}
		}
		if !strings.Contains(line, "no progress reading: log "+e.Log+" failed: the log file does not exist") ||
			!strings.Contains(line, "(1 other source failed too)") {
			t.Errorf("%s: generate stage = %q; want the log named with its error, and the other failed source counted", q, line)
		}
		for _, secret := range []string{"hunter2", "s3cr3t"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s = %q; shows the URL's secret %q", q, text, secret)
			}
		}
	}
}

// A log: with a typo and a job that has not written its log yet both find no file; the answer says which it
// looks like: the file beside the path that it most likely misspells, or the directory missing too.
func TestMissingLogSaysWhatIsBeside(t *testing.T) {
	tests := []struct {
		name string
		log  func(dir string) string
		want func(dir string) string
	}{
		{"a typo", func(dir string) string { return filepath.Join(dir, "gen.lg") },
			func(string) string { return "the log file does not exist, but gen.log is beside it: is log: mistyped?" }},
		{"no directory", func(dir string) string { return filepath.Join(dir, "logs", "gen.log") },
			func(dir string) string {
				return "the log file does not exist (yet), nor does its directory " + filepath.Join(dir, "logs")
			}},
		{"not yet", func(dir string) string { return filepath.Join(dir, "extract.log") },
			func(string) string { return "the log file does not exist (yet)\n" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newBotEnv(t, botOpts{Run: func(r *config.Run) { r.Log = tt.log(filepath.Dir(r.Log)) }})
			text := e.bot.Ask(context.Background(), Request{Text: "ETA?", Source: "console"}).Message.Text() + "\n"
			want := "log " + tt.log(e.Dir) + ": " + tt.want(e.Dir)
			if !strings.Contains(text, want) || strings.Contains(text, "no such file") {
				t.Errorf("ETA answer = %q; want %q, and the error said once", text, want)
			}
		})
	}
}

// A run with neither a log nor metrics: each answer leads with its own subject, so the throughput answer does
// not open with "ETA: unknown".
func TestNoProgressSourceAnswers(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) { r.Log, r.Metrics = "", nil }})
	tests := []struct{ text, lead string }{
		{"ETA?", "ETA: unknown — run synth has no progress source."},
		{"how fast are we going?", "Throughput: unknown — run synth has no progress source."},
		{"is it stuck?", "(~) Can't tell — run synth has no progress source."},
	}
	for _, tt := range tests {
		text := e.bot.Ask(context.Background(), Request{Text: tt.text, Source: "console"}).Message.Text()
		if _, body, _ := strings.Cut(text, "\n"); !strings.HasPrefix(body, tt.lead) {
			t.Errorf("Ask(%q) = %q; want its answer to start %q", tt.text, text, tt.lead)
		}
		// A run read from Prometheus is as good a source as a log or a scrape: the advice names all three.
		if !strings.Contains(text, "prometheus:") {
			t.Errorf("Ask(%q) = %q; want the advice to name prometheus: beside log: and metrics:", tt.text, text)
		}
	}
}
