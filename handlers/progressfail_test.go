package handlers

import (
	"context"
	"strings"
	"testing"
)

// A progress stage whose source failed names the failure, the source first and its error, with a URL's
// secrets redacted as in every other line: "no progress reported yet" read as a job that has not started.
func TestProgressStageNamesTheFailedSource(t *testing.T) {
	e := newBotEnv(t, botOpts{noLogFile: true, metrics: []string{"http://ops:hunter2@127.0.0.1:1/metrics?api_key=s3cr3t"}})
	for _, q := range []string{"status", "what's left?"} {
		text := e.bot.Ask(context.Background(), Request{Text: q, Source: "console"}).Message.Text()
		var line string
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "generate —") {
				line = l
			}
		}
		if !strings.Contains(line, "no progress reading: log "+e.log+" failed: the log file does not exist") ||
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
