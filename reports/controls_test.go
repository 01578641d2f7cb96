package reports

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func trendPoints(n int, t0, step float64) []ChartPoint {
	var pts []ChartPoint
	for i := range n {
		eta, lo, hi := 7200-float64(i)*60, 6000-float64(i)*50, 9000-float64(i)*70
		pts = append(pts, ChartPoint{T: t0 + float64(i)*step, TokensPerS: 40000 + float64(i), ItemsPerS: 0.7, ETAS: &eta, LowS: &lo, HighS: &hi})
	}
	return pts
}

func TestTrendCharts(t *testing.T) {
	t0 := float64(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC).Unix())
	charts := TrendCharts(trendPoints(45, t0, 60), time.UTC)
	if len(charts) != 2 {
		t.Fatalf("TrendCharts = %d charts; want throughput and ETA", len(charts))
	}
	rate, eta := charts[0], charts[1]
	if n := len(rate.Categories); n != MaxChartPoints || rate.Categories[n-1] != "08:44" || rate.Categories[0] != "08:00" {
		t.Errorf("throughput categories = %v; want %d from 08:00 to the newest, 08:44", rate.Categories, MaxChartPoints)
	}
	if len(eta.Series) != 3 || eta.YLabel != "ETA, hours" || eta.Series[0].Values[0] != 2 {
		t.Errorf("ETA chart = %+v; want ETA, low and high in hours, starting at 2", eta)
	}
	// Samples seconds apart share a minute label: one point per label, the later one kept.
	dup := TrendCharts(trendPoints(5, t0, 10), time.UTC)
	if c := dup[0].Categories; len(c) != 5 || c[0] == c[1] {
		t.Errorf("labels over 40 s = %v; want 5 distinct (seconds shown)", c)
	}
	same := append(trendPoints(3, t0, 3600), trendPoints(1, t0+2*3600+5, 1)...)
	if c := TrendCharts(same, time.UTC)[0]; len(c.Categories) != 3 || c.Series[0].Values[2] != 40000 {
		t.Errorf("two samples in one minute = %v %v; want one point for that minute, the later sample's", c.Categories, c.Series[0].Values)
	}
	if TrendCharts(trendPoints(1, t0, 60), time.UTC) != nil {
		t.Errorf("one point makes a chart; want none")
	}
	// A trace (seconds since the start) is labelled by elapsed time.
	if c := TrendCharts(trendPoints(3, 0, 1800), time.UTC)[0].Categories; c[2] != "+1 h" {
		t.Errorf("trace labels = %v; want elapsed time", c)
	}
}

func TestMessageBlocksWithChartsAndControls(t *testing.T) {
	t0 := float64(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC).Unix())
	var many []string
	for range 80 {
		many = append(many, "section")
	}
	m := Message{Title: "synth · status", Sections: many, Context: []string{"as of now"},
		Charts: TrendCharts(trendPoints(30, t0, 60), time.UTC),
		Controls: &Controls{Ref: "rw:r=synth", Buttons: []Button{{ID: "snooze", Text: "Snooze 1 h", Value: "1h"},
			{ID: "big", Text: "too big", Value: strings.Repeat("x", 2001)}},
			Menu: []Choice{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}, {"e", "5"}, {"f", "6"}, {"long", strings.Repeat("y", 151)}}}}
	blocks := m.Blocks()
	if len(blocks) != 50 {
		t.Errorf("blocks = %d; want 50 (80 sections cut to fit charts, buttons and context)", len(blocks))
	}
	var kinds []string
	for _, b := range blocks[len(blocks)-4:] {
		kinds = append(kinds, string(b.BlockType()))
	}
	if strings.Join(kinds, " ") != "data_visualization data_visualization actions context" {
		t.Errorf("last blocks = %v; want the two charts, the buttons, then the context", kinds)
	}
	act := blocks[len(blocks)-2].(*slack.ActionBlock)
	if n := len(act.Elements.ElementSet); n != 2 {
		t.Errorf("action elements = %d; want the button that fits and the menu", n)
	}
	if o := act.Elements.ElementSet[1].(*slack.OverflowBlockElement); len(o.Options) != 5 {
		t.Errorf("menu options = %d; want Slack's 5", len(o.Options))
	}
	raw, _ := json.Marshal(blocks)
	if strings.Contains(string(raw), "too big") {
		t.Errorf("a button whose value Slack would refuse was sent")
	}
	if (&Controls{Ref: strings.Repeat("r", 256)}).Block() != nil || (*Controls)(nil).Block() != nil {
		t.Errorf("controls with a ref Slack refuses, or none, render a block")
	}
	if (Chart{Title: "x", Categories: []string{"a", "b"}, Series: []ChartLine{{Name: "s", Values: []float64{1}}}}).block() != nil {
		t.Errorf("a chart whose series does not match its categories renders")
	}
	if txt := m.Text(); strings.Contains(txt, "Snooze") || strings.Contains(txt, "Throughput") {
		t.Errorf("plain text carries buttons or charts: %q", txt)
	}
}

// BenchmarkTrendCharts measures the charts of a status post over a long history (2,000 samples):
// the estimator re-run at Slack's 20 points, then the chart data.
func BenchmarkTrendCharts(b *testing.B) {
	hist := chartHistory(2000, 30, 0.7, 1066, 20000)
	for b.Loop() {
		if c := TrendCharts(ChartSeries(hist, EstimateConfig{}, MaxChartPoints), time.UTC); len(c) != 2 {
			b.Fatalf("charts = %d", len(c))
		}
	}
}
