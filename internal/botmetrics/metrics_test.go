package botmetrics

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"runwatch/monitor"
	"runwatch/reports"
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
		`runwatch_probe_failures_total{probe="metrics http://10.0.0.1:8000/metrics",run="synth"} 2`,
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
