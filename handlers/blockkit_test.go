package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/reports"
)

// length and span are the shapes of blockkit-limits.json's entries.
type (
	length struct {
		Max int `json:"max_length"`
	}
	span struct {
		Min int `json:"min_items"`
		Max int `json:"max_items"`
	}
)

// blockKitLimits is the part of testdata/slack-spec/blockkit-limits.json the checks use.
type blockKitLimits struct {
	Text     length `json:"text"`
	ActionID length `json:"action_id"`
	BlockID  length `json:"block_id"`
	Button   struct {
		Text  length `json:"text"`
		Value length `json:"value"`
	} `json:"button"`
	Option struct {
		Text  length `json:"text"`
		Value length `json:"value"`
	} `json:"option"`
	Overflow struct {
		Options span `json:"options"`
	} `json:"overflow"`
	Actions struct {
		Elements span `json:"elements"`
	} `json:"actions"`
	Context struct {
		Elements span `json:"elements"`
	} `json:"context"`
	Header struct {
		Text length `json:"text"`
	} `json:"header"`
	Section struct {
		Text   length `json:"text"`
		Fields struct {
			Max     int `json:"max_items"`
			ItemMax int `json:"item_max_length"`
		} `json:"fields"`
	} `json:"section"`
	DataVisualization struct {
		Title        length `json:"title"`
		Series       span   `json:"series"`
		SeriesName   length `json:"series_name"`
		Data         span   `json:"data"`
		PointLabel   length `json:"point_label"`
		Categories   span   `json:"categories"`
		CategoryName length `json:"category_label"`
		AxisLabel    length `json:"axis_label"`
	} `json:"data_visualization"`
}

var (
	limitsOnce sync.Once
	limits     blockKitLimits
)

// kitLimits loads Block Kit's limits from testdata once.
func kitLimits(t testing.TB) blockKitLimits {
	t.Helper()
	limitsOnce.Do(func() {
		b, err := os.ReadFile(filepath.Join("testdata", "slack-spec", "blockkit-limits.json"))
		if err == nil {
			err = json.Unmarshal(b, &limits)
		}
		if err != nil || limits.Section.Text.Max == 0 || limits.DataVisualization.Data.Max == 0 || limits.Overflow.Options.Max == 0 {
			t.Fatalf("blockkit-limits.json: %v (section %d, chart points %d, overflow %d)", err,
				limits.Section.Text.Max, limits.DataVisualization.Data.Max, limits.Overflow.Options.Max)
		}
	})
	return limits
}

func runes(v any) int {
	s, _ := v.(string)
	return utf8.RuneCountInString(s)
}

func textOf(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["text"].(string)
	return s
}

// checkBlockKitLimits checks every block of raw (a JSON array of blocks) against Slack's limits:
// the block count, header, section, context, actions and button/menu limits, and the
// data_visualization block's own (plus slack-go's validation of it).
func checkBlockKitLimits(t testing.TB, what string, raw []byte, maxBlocks int) {
	t.Helper()
	for _, p := range blockKitProblems(kitLimits(t), raw, maxBlocks) {
		t.Errorf("%s: %s", what, p)
	}
}

// blockKitProblems lists what in raw Slack would refuse.
func blockKitProblems(l blockKitLimits, raw []byte, maxBlocks int) []string {
	var problems []string
	errf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	var blocks []map[string]any
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return []string{"blocks are not JSON: " + err.Error()}
	}
	if len(blocks) == 0 || len(blocks) > maxBlocks {
		errf("%d blocks; want 1 to %d", len(blocks), maxBlocks)
	}
	ids := map[string]bool{}
	checkElement := func(e map[string]any) {
		if n := runes(e["action_id"]); n > l.ActionID.Max {
			errf("action_id of %d characters", n)
		}
		switch e["type"] {
		case "button":
			if n := utf8.RuneCountInString(textOf(e["text"])); n == 0 || n > l.Button.Text.Max {
				errf("button text %q is %d characters", textOf(e["text"]), n)
			}
			if n := runes(e["value"]); n > l.Button.Value.Max {
				errf("button value of %d characters", n)
			}
		case "overflow":
			opts, _ := e["options"].([]any)
			if len(opts) < l.Overflow.Options.Min || len(opts) > l.Overflow.Options.Max {
				errf("overflow with %d options", len(opts))
			}
			for _, o := range opts {
				om, _ := o.(map[string]any)
				if n := utf8.RuneCountInString(textOf(om["text"])); n == 0 || n > l.Option.Text.Max {
					errf("option text of %d characters", n)
				}
				if n := runes(om["value"]); n > l.Option.Value.Max {
					errf("option value of %d characters", n)
				}
			}
		default:
			errf("element type %v is not one runwatch means to send", e["type"])
		}
	}
	for i, b := range blocks {
		if id, _ := b["block_id"].(string); id != "" {
			if utf8.RuneCountInString(id) > l.BlockID.Max || ids[id] {
				errf("block %d: block_id %q too long or not unique", i, id)
			}
			ids[id] = true
		}
		switch b["type"] {
		case "header":
			if n := utf8.RuneCountInString(textOf(b["text"])); n == 0 || n > l.Header.Text.Max {
				errf("header of %d characters", n)
			}
		case "section":
			if n := utf8.RuneCountInString(textOf(b["text"])); n == 0 || n > l.Section.Text.Max {
				errf("section %d of %d characters", i, n)
			}
			if fs, _ := b["fields"].([]any); len(fs) > l.Section.Fields.Max {
				errf("section with %d fields", len(fs))
			}
			if acc, ok := b["accessory"].(map[string]any); ok {
				checkElement(acc)
			}
		case "context":
			els, _ := b["elements"].([]any)
			if len(els) == 0 || len(els) > l.Context.Elements.Max {
				errf("context with %d elements", len(els))
			}
			for _, e := range els {
				if n := utf8.RuneCountInString(textOf(e)); n == 0 || n > l.Text.Max {
					errf("context text of %d characters", n)
				}
			}
		case "actions":
			els, _ := b["elements"].([]any)
			if len(els) == 0 || len(els) > l.Actions.Elements.Max {
				errf("actions with %d elements", len(els))
			}
			for _, e := range els {
				em, _ := e.(map[string]any)
				checkElement(em)
			}
		case "divider":
		case "data_visualization":
			problems = append(problems, chartProblems(b, l)...)
		default:
			errf("block type %v is not one runwatch means to send", b["type"])
		}
	}
	return problems
}

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

// checkMessage checks a message as the Web API would get it: its blocks within the limits, and
// a plain-text fallback for notifications and clients without blocks.
func checkMessage(t testing.TB, what string, m reports.Message) {
	t.Helper()
	raw, err := json.Marshal(m.Blocks())
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	checkBlockKitLimits(t, what, raw, 50)
	if fb := fallbackText(m); strings.TrimSpace(fb) == "" || utf8.RuneCountInString(fb) > 4000 {
		t.Errorf("%s: fallback text %q; want a non-empty text within 4,000 characters", what, fb)
	}
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
	w := &warningEnv{httpEnv: e, alerter: NewAlerter(time.UTC, func(string) string { return "#synth" }), claims: NewClaims(nil, nil)}
	shift := ev("synth", nil)
	shift.Shift = &reports.Shift{Reason: strings.Repeat("completions got longer ", 200)}
	evs := []monitor.Evaluation{shift, ev("extract", stalled), ev("synth", func(rs *reports.RunStatus) {
		protectedWrite(rs)
		rs.Storage.Warnings = append(rs.Storage.Warnings,
			reports.StorageWarning{Kind: AlertOutput, Mount: "/shared", Message: "output `/data/out` resolves to protected `/shared`"},
			reports.StorageWarning{Kind: AlertDiskFull, Mount: "/data", Message: "`/data` fills in 2 h, before the ETA " + long})
		rs.Problems = []reports.Problem{{Probe: "metrics http://127.0.0.1:1/metrics", Error: long}, {Probe: "state", Error: "read-only file system"}}
	})}
	t0 := clock.Now()
	posts := w.alerter.Process(evs, t0, func(string) bool { return false })
	posts = append(posts, w.alerter.Process(evs, t0.Add(time.Minute), func(string) bool { return false })...) // confirmations
	seen := map[string]bool{}
	for _, p := range posts {
		seen[p.Kind] = true
		p.Message.Controls = e.bot.WarningControls(p.Run, p.Key, "")
		checkMessage(t, "warning "+p.Kind, p.Message)
		w.alerter.Delivered(p, "1700000000.000100")
	}
	for _, k := range []string{AlertShift, AlertStall, AlertProtected, AlertOutput, AlertDiskFull, AlertProbe} {
		if !seen[k] {
			t.Errorf("no %s warning was checked (got %v)", k, kinds(posts))
		}
	}
	w.claims.apply(w.alerter, nil, t0, func(string) bool { return false })
	w.claims.Take("extract/"+AlertStall, "UADMIN", t0, time.Hour)
	later := w.claims.apply(w.alerter, w.alerter.Process(evs, t0.Add(3*time.Hour), func(string) bool { return false }), t0.Add(3*time.Hour), func(string) bool { return false })
	gone := w.alerter.Process([]monitor.Evaluation{ev("synth", nil), ev("extract", nil)}, t0.Add(4*time.Hour), func(string) bool { return false })
	for _, p := range append(later, gone...) {
		seen[p.Kind] = true
		checkMessage(t, "follow-up "+p.Kind, p.Message)
	}
	if !seen[AlertStall+"_reminder"] || !seen[AlertStall+"_resolved"] {
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
