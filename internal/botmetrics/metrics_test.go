package botmetrics

import (
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"runwatch/monitor"
	"runwatch/reports"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

func TestMetrics(t *testing.T) {
	m := New()
	evs := []monitor.Evaluation{
		{Run: reports.RunStatus{Name: "synth", Problems: []reports.Problem{{Probe: "metrics http://10.0.0.1:8000/metrics", Error: "no answer within 2s"}}}},
		{Run: reports.RunStatus{Name: "extract"}},
	}
	m.ObserveEvaluations(evs)
	m.ObserveEvaluations(evs)
	m.Posted("stall", nil)
	m.Posted("status_update", errors.New("boom"))
	m.SlackRetry("chat.postMessage", "rate_limited")
	m.Answered("mention", 30*time.Millisecond)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	for _, want := range []string{
		"runwatch_samples_total 2",
		`runwatch_probe_failures_total{probe="metrics",run="synth"} 2`,
		`runwatch_slack_posts_total{kind="stall",result="ok"} 1`,
		`runwatch_slack_posts_total{kind="status_update",result="error"} 1`,
		`runwatch_slack_api_retries_total{method="chat.postMessage",reason="rate_limited"} 1`,
		`runwatch_answer_duration_seconds_bucket{source="mention",le="0.05"} 1`,
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, `run="extract"`) {
		t.Errorf("/metrics counts a failure for extract, which had none")
	}
	// A nil Metrics records nothing and does not panic: the console runs without one.
	var none *Metrics
	none.ObserveEvaluations(evs)
	none.Posted("x", nil)
	none.Answered("x", time.Second)
}

// A probe failure is counted by kind and logged by its full name: once when it starts, once when it ends.
func TestProbeFailuresLoggedByName(t *testing.T) {
	var logs strings.Builder
	m := New()
	m.LogFailures(slog.New(slog.NewTextHandler(&logs, nil)))
	failing := []monitor.Evaluation{{Run: reports.RunStatus{Name: "synth", Problems: []reports.Problem{{Probe: "prometheus target gpu-node-3:8000", Error: "up = 0"}}}}}
	m.ObserveEvaluations(failing)
	m.ObserveEvaluations(failing)
	m.ObserveEvaluations([]monitor.Evaluation{{Run: reports.RunStatus{Name: "synth"}}})
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `msg="probe failing" run=synth probe="prometheus target gpu-node-3:8000" err="up = 0"`) ||
		!strings.Contains(lines[1], `msg="probe failing resolved" run=synth probe="prometheus target gpu-node-3:8000"`) {
		t.Errorf("log = %q; want the failure by its name when it starts and when it ends", logs.String())
	}
}
