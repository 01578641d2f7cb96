package testkit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit/fake"
	"runwatch/monitor"
)

// Fixture reads a recorded fixture of probes/testdata: real engines' metrics, mount tables, logs.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	return fake.Fixture(t, name)
}

// Recorded serves the given metrics bodies, advancing one on each call of next (the last one stays).
func Recorded(t testing.TB, bodies [][]byte) (url string, next func()) {
	t.Helper()
	var i atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores")
		w.Write(bodies[min(int(i.Load()), len(bodies)-1)])
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics", func() { i.Add(1) }
}

// MetricsOnly is a monitor over one run, "synth", whose only progress source is the metrics endpoint
// at url (1,000 items, max_tokens 64), on a clock the test moves through now.
func MetricsOnly(t testing.TB, url string, now *time.Time) *monitor.Monitor {
	t.Helper()
	file := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Channel: "#synth", Metrics: []string{url}, MaxTokens: 64, Total: 1000}}}
	m, _, err := monitor.New(file, monitor.Options{ProcRoot: fake.Testdata("proc"), ProbeTimeout: 5 * time.Second, RateWindow: -1,
		Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// NoLiveMarkup fails the test when s carries Slack markup that would act when posted: a mention
// (<@U…>, <!channel>, <#C…>) or a link (<http…>, <mailto…>), except a date (<!date^…>).
func NoLiveMarkup(t testing.TB, what, s string) {
	t.Helper()
	for i := strings.IndexByte(s, '<'); i >= 0; {
		rest := s[i:]
		if len(rest) > 1 && strings.ContainsRune("!@#", rune(rest[1])) && !strings.HasPrefix(rest, "<!date^") ||
			strings.HasPrefix(rest, "<http") || strings.HasPrefix(rest, "<mailto") {
			t.Fatalf("%s carries live Slack markup at %q:\n%s", what, rest[:min(len(rest), 40)], s)
		}
		j := strings.IndexByte(s[i+1:], '<')
		if j < 0 {
			break
		}
		i += 1 + j
	}
}
