package handlers

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/testkit"
	"runwatch/posts"
	"runwatch/reports"
)

var screensDir = flag.String("screens", "", "write the Block Kit JSON of a status post and of the App Home to this directory (scripts/screens.sh draws them)")

// TestScreens captures what the recording Web API stand-in received for a scheduled status (with
// its charts and buttons), a warning someone took, and the App Home, as the README's pictures
// show them. Without -screens it only checks that the capture works.
func TestScreens(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 20, 0, 0, time.UTC)
	clock := testkit.NewClock(t0)
	// A job whose pace changes: completions get longer after the first half hour, as in the demo.
	tokens := func(m float64) float64 { return 41000*m + 9000*max(m-30, 0) }
	items := func(m float64) int { return 300 + int(52*m-14*max(m-30, 0)) }
	metrics := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		m := clock.Now().Sub(t0).Minutes()
		fmt.Fprintf(rw, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 200\n"+
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 12\n"+
			"# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"m\"} %g\n", 565000+tokens(m))
	}))
	t.Cleanup(metrics.Close)
	w := newWarningEnvWith(t, botOpts{Clock: clock, Metrics: []string{metrics.URL + "/metrics"}, Run: func(r *config.Run) {
		r.Name, r.Channel = "synth-25k", "#synth-25k"
		r.Stages = []config.Stage{{Name: "download drafter", Check: "manual"}, {Name: "generate", Check: "progress"},
			{Name: "Training script updated", Check: "manual"}}
	}, File: func(f *config.File) {
		r := f.Runs[0]
		r.Name, r.Channel, r.Metrics = "hidden-states", "#hidden-states", nil
		r.Stages = []config.Stage{{Name: "extract", Check: "progress"}}
		f.Runs = append(f.Runs, r)
	}})
	w.alerter.Channel = func(run string) string { return "#" + run }
	for i := range 100 {
		clock.Set(t0.Add(time.Duration(i) * time.Minute))
		w.WriteLog(t, items(float64(i)), 25000)
		w.Mon.Sample(t.Context())
	}
	if rep := w.bot.Ask(t.Context(), conversation.Request{Text: "stage \"download drafter\" done synth-25k", User: "UADMIN", Source: "console"}); rep.Refused {
		t.Fatal(rep.Message.Text())
	}
	post, _ := postStatus(t, w.httpEnv)

	// No ETA figure in the warning: the picture's ETA line is the estimator's, and a second, fixed one beside
	// it (it said 6 h 40 min under an ETA of 7 h 42 min) contradicted it.
	diskFull := func(rs *reports.RunStatus) {
		rs.Storage.Warnings = []reports.StorageWarning{{Kind: posts.AlertDiskFull, Mount: "/data",
			Message: "`/data` has 74.0 GB free and fills in 3 h 10 min at the current rate, before the job ends."}}
	}
	for i := range 2 {
		w.step(t, clock.Now().Add(time.Duration(i)*time.Minute), testkit.Eval("hidden-states", testkit.ProtectedWrite), testkit.Eval("synth-25k", diskFull))
	}
	open := w.claims.Open("hidden-states")
	if len(open) != 1 {
		t.Fatalf("open warnings of hidden-states = %v; want the protected write", open)
	}
	w.claims.Take(open[0].Key, "U0ALICE", clock.Now(), time.Hour)
	w.post(t, "/slack/events", homeOpened("EvScreens", "UADMIN", "D0ADMIN"), nil)
	home := w.fake.Wait(t, "views.publish", 1)[0]
	w.waitIdle()

	var view publishedView
	if err := json.Unmarshal(home.Body, &view); err != nil {
		t.Fatal(err)
	}
	screens := map[string]any{
		"status.json": map[string]any{"kind": "message", "channel": "#synth-25k", "time": clock.Now().Format("15:04"),
			"blocks": json.RawMessage(post.Form.Get("blocks"))},
		"home.json": map[string]any{"kind": "home", "blocks": view.View.Blocks},
	}
	if !strings.Contains(post.Form.Get("blocks"), "data_visualization") || len(view.View.Blocks) == 0 {
		t.Fatalf("the capture lacks the chart or the App Home")
	}
	if *screensDir == "" {
		return
	}
	for name, v := range screens {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*screensDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
