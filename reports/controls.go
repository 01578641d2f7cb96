package reports

import (
	"math"
	"strconv"
	"time"

	"github.com/slack-go/slack"

	"runwatch/probes"
)

// Controls are the buttons under a message. Transports without buttons (the console, the CLI)
// leave them out: everything a control does is also a command.
type Controls struct {
	// Ref says what the controls are about (a run, a warning); it comes back with every press.
	// Slack carries it as the actions block's block_id, so it is at most 255 bytes.
	Ref string
	// Buttons are shown in order; keep two or three, with a Menu for the rest.
	Buttons []Button
	// Menu, when it has choices, is an overflow menu ("⋯") after the buttons.
	Menu []Choice
}

// Button is one button.
type Button struct {
	ID    string // what it does ("snooze"); Slack's action_id
	Text  string // plain text, at most 75 characters
	Value string // comes back with the press, at most 2,000 bytes
	Style string // "primary", "danger" or ""
}

// Choice is one entry of a menu.
type Choice struct {
	Text  string // plain text, at most 75 characters
	Value string // comes back with the press, at most 150 bytes
}

// MenuID is the action_id of a message's overflow menu.
const MenuID = "menu"

// MaxBlockID is the longest block_id Slack takes, so the longest Controls.Ref.
const MaxBlockID = 255

// Block Kit limits of the elements used here (blockkit-limits.json in internal/testkit/testdata).
const (
	maxButtonText  = 75
	maxButtonValue = 2000
	maxOptionValue = 150
	maxOverflow    = 5
	maxChartTitle  = 50
	maxChartLabel  = 20
	maxChartAxis   = 50
	// MaxChartPoints is the most points one data_visualization series may have.
	MaxChartPoints = 20
	maxChartSeries = 6 // slack-go's and the stricter of the documented limits
)

// Block renders the controls as an actions block (nil when there is nothing to show), dropping
// what Slack would refuse (a value or ref too long) instead of having the whole message refused.
func (c *Controls) Block() slack.Block {
	if c == nil || len(c.Ref) > MaxBlockID {
		return nil
	}
	var els []slack.BlockElement
	for _, b := range c.Buttons {
		if b.ID == "" || len(b.Value) > maxButtonValue {
			continue
		}
		btn := slack.NewButtonBlockElement(b.ID, b.Value, slack.NewTextBlockObject(slack.PlainTextType, truncate(b.Text, maxButtonText), true, false))
		if b.Style != "" {
			btn.Style = slack.Style(b.Style)
		}
		els = append(els, btn)
	}
	var opts []*slack.OptionBlockObject
	for _, ch := range c.Menu {
		if len(ch.Value) > maxOptionValue || len(opts) == maxOverflow {
			continue
		}
		opts = append(opts, slack.NewOptionBlockObject(ch.Value, slack.NewTextBlockObject(slack.PlainTextType, truncate(ch.Text, maxButtonText), true, false), nil))
	}
	if len(opts) > 0 {
		els = append(els, slack.NewOverflowBlockElement(MenuID, opts...))
	}
	if len(els) == 0 {
		return nil
	}
	return slack.NewActionBlock(c.Ref, els...)
}

// Chart is a line chart Slack draws itself (a data_visualization block): categories along the
// x axis, one value per category in each series.
type Chart struct {
	Title      string
	YLabel     string
	Categories []string
	Series     []ChartLine
}

// ChartLine is one series of a Chart.
type ChartLine struct {
	Name   string
	Values []float64 // one per category
}

// block renders the chart, or nil when it is empty or does not fit Slack's limits.
func (c Chart) block() slack.Block {
	n := len(c.Categories)
	if n == 0 || n > MaxChartPoints || len(c.Series) == 0 || len(c.Series) > maxChartSeries {
		return nil
	}
	var series []slack.DataVisualizationDataSeries
	for _, s := range c.Series {
		if len(s.Values) != n {
			return nil
		}
		var pts []slack.DataVisualizationDataPoint
		for i, v := range s.Values {
			pts = append(pts, slack.NewDataVisualizationDataPoint(truncate(c.Categories[i], maxChartLabel), v))
		}
		series = append(series, slack.NewDataVisualizationDataSeries(truncate(s.Name, maxChartLabel), pts...))
	}
	cats := make([]string, n)
	for i, cat := range c.Categories {
		cats[i] = truncate(cat, maxChartLabel)
	}
	axis := slack.NewDataVisualizationAxisConfig(cats...).WithYLabel(truncate(c.YLabel, maxChartAxis))
	b := slack.NewDataVisualizationBlock(truncate(c.Title, maxChartTitle), slack.NewDataVisualizationLineChart(axis, series...))
	if b.Validate() != nil {
		return nil
	}
	return b
}

// TrendCharts turns a run's chart series into Slack-drawn charts: throughput, and the ETA with its
// low–high range, over the run, at most MaxChartPoints points each (the series is thinned evenly,
// always keeping the newest point). Times are labelled in loc. Points without an ETA are left out
// of the ETA chart; nil means nothing to draw.
func TrendCharts(pts []ChartPoint, loc *time.Location) []Chart {
	if len(pts) < 2 {
		return nil
	}
	if loc == nil {
		loc = time.UTC
	}
	useTokens := chartInTokens(pts)
	rate := Chart{Title: "Throughput", YLabel: "items/s"}
	name := "items/s"
	if useTokens {
		rate.YLabel, name = "tokens/s", "tok/s"
	}
	line := ChartLine{Name: name}
	for _, p := range thinPoints(pts, MaxChartPoints) {
		v := p.ItemsPerS
		if useTokens {
			v = p.TokensPerS
		}
		rate.add(trendLabel(p.T, pts, loc), &line, round3(v))
	}
	rate.Series = []ChartLine{line}
	out := []Chart{rate}

	var withETA []ChartPoint
	for _, p := range pts {
		if p.ETAS != nil {
			withETA = append(withETA, p)
		}
	}
	if len(withETA) < 2 {
		return out
	}
	_, unit, div := chartETAScale(withETA)
	eta := Chart{Title: "ETA with its range", YLabel: "ETA, " + unit}
	mid, low, high := ChartLine{Name: "ETA"}, ChartLine{Name: "low"}, ChartLine{Name: "high"}
	ranged := true
	for _, p := range thinPoints(withETA, MaxChartPoints) {
		if p.LowS == nil || p.HighS == nil {
			ranged = false
		}
	}
	for _, p := range thinPoints(withETA, MaxChartPoints) {
		if ranged {
			eta.add(trendLabel(p.T, pts, loc), &mid, round3(*p.ETAS/div), &low, round3(*p.LowS/div), &high, round3(*p.HighS/div))
		} else {
			eta.add(trendLabel(p.T, pts, loc), &mid, round3(*p.ETAS/div))
		}
	}
	eta.Series = []ChartLine{mid}
	if ranged {
		eta.Series = append(eta.Series, low, high)
	}
	return append(out, eta)
}

// add appends a category with one value per line (pairs of line, value). A label equal to the
// previous one (two samples in the same minute) replaces that point: Slack wants distinct labels.
func (c *Chart) add(label string, pairs ...any) {
	same := len(c.Categories) > 0 && c.Categories[len(c.Categories)-1] == label
	if !same {
		c.Categories = append(c.Categories, label)
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		l, v := pairs[i].(*ChartLine), pairs[i+1].(float64)
		if same {
			l.Values[len(l.Values)-1] = v
		} else {
			l.Values = append(l.Values, v)
		}
	}
}

// thinPoints keeps at most n points, evenly spaced, the first and the last included.
func thinPoints(pts []ChartPoint, n int) []ChartPoint {
	if len(pts) <= n {
		return pts
	}
	out := make([]ChartPoint, 0, n)
	for k := range n {
		out = append(out, pts[int(math.Round(float64(k)*float64(len(pts)-1)/float64(n-1)))])
	}
	return out
}

// trendLabel names a point on the x axis: a clock time for live history (unix seconds), the time
// since the start for a trace; with seconds when the span is short, so labels stay distinct.
func trendLabel(t float64, all []ChartPoint, loc *time.Location) string {
	span := all[len(all)-1].T - all[0].T
	if all[0].T > 1e9 {
		layout := "15:04"
		if span < 20*60 {
			layout = "15:04:05"
		}
		if span > 20*3600 {
			layout = "Mon 15:04"
		}
		return probes.UnixTime(math.Floor(t)).In(loc).Format(layout)
	}
	return "+" + Duration(t-all[0].T)
}

// round3 keeps three significant digits: a chart needs no more, and the JSON stays short.
func round3(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return r
}
