package conversation

import (
	"sync"

	"runwatch/reports"
)

// TrendCharts are the run's throughput and ETA over its history, thinned to Slack's point limit from the
// points the PNG chart has: one memo serves both, and the scheduled post and the next answer reuse it.
func (b *Bot) TrendCharts(run string) []reports.Chart {
	pts := b.charts.of(run).Series(b.mon.History(run), b.mon.EstimateConfig(run), reports.DefaultChartPoints)
	return reports.TrendCharts(pts, b.loc)
}

// chartMemos are the runs' chart memos, one per run, made when first asked for.
type chartMemos struct {
	mu sync.Mutex
	m  map[string]*reports.ChartMemo
}

// of is run's chart memo.
func (c *chartMemos) of(run string) *reports.ChartMemo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*reports.ChartMemo{}
	}
	m := c.m[run]
	if m == nil {
		m = &reports.ChartMemo{}
		c.m[run] = m
	}
	return m
}

// ChartMemo is run's chart memo, which the scheduled posts' PNG chart shares with the answers'.
func (b *Bot) ChartMemo(run string) *reports.ChartMemo { return b.charts.of(run) }
