package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/posts"
	"runwatch/reports"
)

// TestHostileConfigWithinBlockKitLimits sends every reply, status, warning and the App Home of a
// run file at its limits through Slack's: a 64-character run name (the most config takes), 30 plans and 50 stages with
// long names, outputs at PATH_MAX.
func TestHostileConfigWithinBlockKitLimits(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	name := strings.Repeat("n", 64) // the longest run name config takes
	var longDir string
	e := newHTTPEnv(t, botOpts{Clock: clock, Run: func(r *config.Run) {
		r.Name = name
		deep := r.Outputs[0]
		for len(deep) < 3900 {
			deep = filepath.Join(deep, strings.Repeat("d", 200))
		}

		longDir = deep
		os.MkdirAll(deep, 0o755)
		r.Outputs = []string{r.Outputs[0]}
		for i := range 100 {
			r.Outputs = append(r.Outputs, filepath.Join(deep, fmt.Sprintf("o%03d", i)))
		}
		r.Watch = r.Outputs[1:]
		r.Stages = nil
		for i := range 50 {
			r.Stages = append(r.Stages, config.Stage{Name: fmt.Sprintf("stage-%02d-%s", i, strings.Repeat("s", 3000)), Check: "manual"})
		}
		for i := range 30 {
			r.Plans = append(r.Plans, config.Plan{Name: fmt.Sprintf("plan-%02d-%s", i, strings.Repeat("p", 3000)), Target: deep, Tokens: config.Tokens{N: 25e12},
				Layers: config.Layers{List: []int{2, 30, 58}}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"})
		}
	}})
	withHistory(t, e.botEnv, 30)
	texts := []string{"eta", "why", "ontrack", "runwatch left", "safe", "throughput", "stuck", "status", "storage",
		"writes", "where", "space", "fit", "chart", "runs", "snooze 2h", "unsnooze", "stage stage-01 done", "stage", "logs", "help", "what"}
	for _, text := range texts {
		rep := e.bot.Ask(context.Background(), conversation.Request{Text: text, Channel: "C0SYNTH", ChannelName: "synth", User: "UADMIN", Source: "mention"})
		checkMessage(t, fmt.Sprintf("answer to %q (%s)", text, rep.Intent), rep.Message)
	}
	rs, err := e.Mon.RunStatus(context.Background(), name, monitor.All)
	if err != nil {
		t.Fatal(err)
	}
	checkMessage(t, "scheduled status", e.bot.StatusMessage(rs, true))
	checkMessage(t, "scheduled status without charts", e.bot.StatusMessage(rs, false))
	for i := range 200 {
		rs.Problems = append(rs.Problems, reports.Problem{Probe: fmt.Sprintf("metrics http://10.0.0.%d:8000/metrics?%s", i, strings.Repeat("q", 3000)), Error: strings.Repeat("connection refused ", 100)})
	}
	checkMessage(t, "status with 200 failing probes", e.bot.StatusMessage(rs, true))
	w := &warningEnv{httpEnv: e, alerter: posts.NewAlerter(time.UTC, func(string) string { return "#synth" }), claims: posts.NewClaims(nil, nil)}
	hostile := testkit.Eval(name, func(r *reports.RunStatus) {
		*r = rs
		r.ETA = &reports.ETA{State: reports.StateStalled, StalledSince: new(1000.0), Reason: strings.Repeat("no progress ", 500)}
		for i := range 50 {
			r.Storage.Warnings = append(r.Storage.Warnings, reports.StorageWarning{Kind: posts.AlertProtected, Mount: longDir + fmt.Sprint(i),
				Message: fmt.Sprintf("%d processes are writing to protected `%s`", i, longDir)})
		}
	})
	t0 := clock.Now()
	seen := map[string]int{}
	for i := range 3 {
		for _, p := range w.alerter.Process([]monitor.Evaluation{hostile}, t0.Add(time.Duration(i)*time.Minute), func(string) bool { return false }) {
			p.Message.Controls = e.bot.WarningControls(p.Run, p.Key, "")
			checkMessage(t, "warning "+p.Kind, p.Message)
			seen[p.Kind]++
		}
	}
	if seen[posts.AlertStall] == 0 || seen[posts.AlertProtected] < 50 {
		t.Errorf("warnings checked = %v; want the stall and 50 protected writes", seen)
	}
	many := []reports.RunStatus{}
	for i := range 100 {
		r := rs
		r.Name = fmt.Sprintf("%s-%03d", name[:60], i)
		many = append(many, r)
	}
	raw, _ := json.Marshal(e.app.homeBlocks(many, clock.Now()))
	checkBlockKitLimits(t, "App Home", raw, homeMaxBlocks)
	if len(raw) > 250000 {
		t.Errorf("App Home view of %d bytes", len(raw))
	}
	rep := e.bot.Ask(context.Background(), conversation.Request{Text: "runs", Channel: "C0SYNTH", ChannelName: "synth", User: "UADMIN", Source: "mention"})
	checkMessage(t, "runs", rep.Message)
}
