package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/posts"
	"runwatch/reports"
)

func chartProblems(b map[string]any, l blockKitLimits) []string {
	var problems []string
	errf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	dv := l.DataVisualization
	raw, _ := json.Marshal(b)
	var blk slack.DataVisualizationBlock
	if err := json.Unmarshal(raw, &blk); err != nil {
		errf("data_visualization block does not decode: %v", err)
		return problems
	}
	if err := blk.Validate(); err != nil {
		errf("data_visualization block: %v", err)
	}
	if n := utf8.RuneCountInString(blk.Title); n == 0 || n > dv.Title.Max {
		errf("chart title of %d characters", n)
	}
	line, ok := blk.Chart.(*slack.DataVisualizationLineChart)
	if !ok {
		errf("chart is a %T; runwatch draws line charts", blk.Chart)
		return problems
	}
	ax := line.AxisConfig
	if n := len(ax.Categories); n < dv.Categories.Min || n > dv.Categories.Max {
		errf("%d categories; want %d to %d", n, dv.Categories.Min, dv.Categories.Max)
	}
	for _, c := range ax.Categories {
		if utf8.RuneCountInString(c) > dv.CategoryName.Max {
			errf("category %q too long", c)
		}
	}
	if utf8.RuneCountInString(ax.XLabel) > dv.AxisLabel.Max || utf8.RuneCountInString(ax.YLabel) > dv.AxisLabel.Max {
		errf("axis label too long")
	}
	if n := len(line.Series); n < dv.Series.Min || n > dv.Series.Max {
		errf("%d series", n)
	}
	for _, s := range line.Series {
		if utf8.RuneCountInString(s.Name) > dv.SeriesName.Max {
			errf("series name %q too long", s.Name)
		}
		if n := len(s.Data); n < dv.Data.Min || n > dv.Data.Max {
			errf("series %q has %d points; Slack takes %d to %d", s.Name, n, dv.Data.Min, dv.Data.Max)
		}
		for _, p := range s.Data {
			if utf8.RuneCountInString(p.Label) > dv.PointLabel.Max {
				errf("point label %q too long", p.Label)
			}
		}
	}
	return problems
}

// withHistory takes n samples of e's run a minute apart on its test clock, the log moving on.
func withHistory(t testing.TB, e *botEnv, n int) {
	t.Helper()
	t0 := e.Clock.Now()
	for i := range n {
		e.Clock.Set(t0.Add(time.Duration(i) * time.Minute))
		e.WriteLog(t, 300+i*45, 25000)
		e.Mon.Sample(context.Background())
	}
}

// TestEveryReplyWithinBlockKitLimits sends every kind of message the bot can send through the
// limits: the answer of every command (and of its refusals), scheduled statuses with charts and
// buttons, every kind of warning with its buttons, follow-ups and reminders, the App Home.
func TestEveryReplyWithinBlockKitLimits(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	long := strings.Repeat("a very long detail ", 40)
	e := newHTTPEnv(t, botOpts{Clock: clock, Run: func(r *config.Run) {
		for i := range 60 {
			r.Stages = append(r.Stages, config.Stage{Name: fmt.Sprintf("stage %02d %s", i, long[:40]), Check: "manual"})
		}
		r.Plans = []config.Plan{{Name: "hidden-states", Target: r.Outputs[0], Tokens: config.Tokens{N: 25e6},
			Layers: config.Layers{List: []int{2, 30, 58}}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"}}
	}, File: twoRuns})
	withHistory(t, e.botEnv, 30)

	asked := map[string]bool{}
	texts := []string{"eta synth", "why synth", "ontrack synth", "runwatch left synth", "what's left to do?", "safe synth", "throughput synth", "stuck synth", "servers synth", "status synth", "storage synth", "storage /etc synth", "storage hidden-states",
		"writes synth", "where synth", "space synth", "fit synth", "chart synth", "runs", "snooze 2h synth", "snooze forever synth",
		"unsnooze synth", "stage \"stage 01 " + long[:40] + "\" done synth", "stage nope done synth", "stage synth", "logs synth", "logs extract", "help",
		"what is the meaning of life", "ETA?", "", "thanks", "hello"}
	for _, text := range texts {
		for _, user := range []string{"UADMIN", "U222"} {
			rep := e.bot.Ask(context.Background(), conversation.Request{Text: text, Channel: "C0SYNTH", ChannelName: "synth", User: user, Source: "mention"})
			asked[rep.Intent] = true
			checkMessage(t, fmt.Sprintf("answer to %q from %s (%s)", text, user, rep.Intent), rep.Message)
		}
	}
	for _, c := range conversation.CommandTable() {
		if !asked[c.Name] {
			t.Errorf("no reply of command %s was checked; add a question that reaches it", c.Name)
		}
	}
	checkMessage(t, "not allowed", conversation.NotAllowed().Message)

	rs, err := e.Mon.RunStatus(context.Background(), "synth", monitor.All)
	if err != nil {
		t.Fatal(err)
	}
	status := e.bot.StatusMessage(rs, true)
	if len(status.Charts) != 2 || status.Controls == nil {
		t.Fatalf("status has %d charts and controls %v; want throughput and ETA charts and buttons", len(status.Charts), status.Controls)
	}
	checkMessage(t, "scheduled status with charts", status)
	raw, _ := json.Marshal(status.Blocks())
	if !strings.Contains(string(raw), `"data_visualization"`) || !strings.Contains(string(raw), `"actions"`) {
		t.Errorf("status blocks lack the chart or the buttons: %s", raw)
	}

	// Every warning kind, with its buttons, its repeat in the thread, its resolution and the
	// reminder of whoever took it.
	w := &warningEnv{httpEnv: e, alerter: posts.NewAlerter(time.UTC, func(string) string { return "#synth" }), claims: posts.NewClaims(nil, nil)}
	shift := testkit.Eval("synth", nil)
	shift.Shift = &reports.Shift{Reason: strings.Repeat("completions got longer ", 200)}
	evs := []monitor.Evaluation{shift, testkit.Eval("extract", testkit.Stalled), testkit.Eval("synth", func(rs *reports.RunStatus) {
		testkit.ProtectedWrite(rs)
		rs.Storage.Warnings = append(rs.Storage.Warnings,
			reports.StorageWarning{Kind: posts.AlertOutput, Mount: "/shared", Message: "output `/data/out` resolves to protected `/shared`"},
			reports.StorageWarning{Kind: posts.AlertDiskFull, Mount: "/data", Message: "`/data` fills in 2 h, before the ETA " + long})
		rs.Problems = []reports.Problem{{Probe: "metrics http://127.0.0.1:1/metrics", Error: long}, {Probe: "state", Error: "read-only file system"}}
	})}
	t0 := clock.Now()
	sent := w.alerter.Process(evs, t0, func(string) bool { return false })
	sent = append(sent, w.alerter.Process(evs, t0.Add(time.Minute), func(string) bool { return false })...) // confirmations
	seen := map[string]bool{}
	for _, p := range sent {
		seen[p.Kind] = true
		p.Message.Controls = e.bot.WarningControls(p.Run, p.Key, "")
		checkMessage(t, "warning "+p.Kind, p.Message)
		w.alerter.Delivered(p, "1700000000.000100")
	}
	for _, k := range []string{posts.AlertShift, posts.AlertStall, posts.AlertProtected, posts.AlertOutput, posts.AlertDiskFull, posts.AlertProbe} {
		if !seen[k] {
			t.Errorf("no %s warning was checked (got %v)", k, kinds(sent))
		}
	}
	w.claims.Apply(w.alerter, nil, t0, func(string) bool { return false })
	w.claims.Take("extract/"+posts.AlertStall, "UADMIN", t0, time.Hour)
	later := w.claims.Apply(w.alerter, w.alerter.Process(evs, t0.Add(3*time.Hour), func(string) bool { return false }), t0.Add(3*time.Hour), func(string) bool { return false })
	gone := w.alerter.Process([]monitor.Evaluation{testkit.Eval("synth", nil), testkit.Eval("extract", nil)}, t0.Add(4*time.Hour), func(string) bool { return false })
	for _, p := range append(later, gone...) {
		seen[p.Kind] = true
		checkMessage(t, "follow-up "+p.Kind, p.Message)
	}
	if !seen[posts.AlertStall+"_reminder"] || !seen[posts.AlertStall+"_resolved"] {
		t.Errorf("no reminder or resolution was checked (got %v)", seen)
	}
	other := rs
	other.Name = "extract"
	raw, _ = json.Marshal(e.app.homeBlocks([]reports.RunStatus{rs, other}, clock.Now()))
	checkBlockKitLimits(t, "App Home", raw, homeMaxBlocks)
}

// TestBlockKitCheckCatches shows the limit check finds what Slack refuses, so the tests that use it
// can fail.
func TestBlockKitCheckCatches(t *testing.T) {
	l := kitLimits(t)
	long := strings.Repeat("x", 3001)
	points := make([]slack.DataVisualizationDataPoint, 21)
	cats := make([]string, 21)
	for i := range points {
		cats[i] = fmt.Sprintf("t%d", i)
		points[i] = slack.NewDataVisualizationDataPoint(cats[i], 1)
	}
	chart := slack.NewDataVisualizationBlock("a chart", slack.NewDataVisualizationLineChart(slack.NewDataVisualizationAxisConfig(cats...),
		slack.NewDataVisualizationDataSeries("tok/s", points...)))
	tests := []struct {
		name   string
		blocks []slack.Block
	}{
		{"section too long", []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, long, false, false), nil, nil)}},
		{"header too long", []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, long[:151], false, false))}},
		{"chart with 21 points", []slack.Block{chart}},
		{"six menu entries", []slack.Block{slack.NewActionBlock("rw:r=x", slack.NewOverflowBlockElement("menu",
			slack.NewOptionBlockObject("1", slack.NewTextBlockObject(slack.PlainTextType, "1", false, false), nil),
			slack.NewOptionBlockObject("2", slack.NewTextBlockObject(slack.PlainTextType, "2", false, false), nil),
			slack.NewOptionBlockObject("3", slack.NewTextBlockObject(slack.PlainTextType, "3", false, false), nil),
			slack.NewOptionBlockObject("4", slack.NewTextBlockObject(slack.PlainTextType, "4", false, false), nil),
			slack.NewOptionBlockObject("5", slack.NewTextBlockObject(slack.PlainTextType, "5", false, false), nil),
			slack.NewOptionBlockObject("6", slack.NewTextBlockObject(slack.PlainTextType, "6", false, false), nil)))}},
		{"eleven context elements", []slack.Block{slack.NewContextBlock("", func() []slack.MixedElement {
			var els []slack.MixedElement
			for range 11 {
				els = append(els, slack.NewTextBlockObject(slack.MarkdownType, "x", false, false))
			}
			return els
		}()...)}},
	}
	for _, tt := range tests {
		raw, _ := json.Marshal(tt.blocks)
		if p := blockKitProblems(l, raw, 50); len(p) == 0 {
			t.Errorf("%s: no problem found", tt.name)
		}
	}
	var many []slack.Block
	for range 51 {
		many = append(many, slack.NewDividerBlock())
	}
	raw, _ := json.Marshal(many)
	if p := blockKitProblems(l, raw, 50); len(p) == 0 {
		t.Errorf("51 blocks: no problem found")
	}
}

// blockKitLimits are Block Kit's limits (testkit.Limits).
type blockKitLimits = testkit.BlockKitLimits

func kitLimits(t testing.TB) blockKitLimits { return testkit.Limits(t) }

// blockKitProblems lists what in raw Slack would refuse, charts checked by slack-go's own validation.
func blockKitProblems(l blockKitLimits, raw []byte, maxBlocks int) []string {
	return testkit.BlockKitProblems(l, raw, maxBlocks, chartProblems)
}

// checkBlockKitLimits checks every block of raw (a JSON array of blocks) against Slack's limits, the
// data_visualization block's own included (plus slack-go's validation of it).
func checkBlockKitLimits(t testing.TB, what string, raw []byte, maxBlocks int) {
	t.Helper()
	testkit.CheckBlocks(t, what, raw, maxBlocks, chartProblems)
}

// checkMessage checks a message as the Web API would get it (testkit.CheckMessage).
func checkMessage(t testing.TB, what string, m reports.Message) {
	t.Helper()
	testkit.CheckMessage(t, what, m, chartProblems)
}
