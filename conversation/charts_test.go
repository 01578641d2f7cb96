package conversation

import (
	"context"
	"math"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/reports"
)

// benchHistory is a run sampled every 30 s for n samples: about 0.7 items/s of 1,066 tokens each, with some
// wobble, halving after 20,000 s (reports' BenchmarkRenderChart history).
func benchHistory(n int) []reports.Observation {
	t0 := float64(time.Date(2025, 3, 4, 9, 0, 0, 0, time.UTC).Unix())
	var hist []reports.Observation
	var done, tokens float64
	for i := range n {
		rate := 0.7
		if float64(i)*30 >= 20000 {
			rate /= 2
		}
		if i > 0 {
			wobble := 1 + 0.1*math.Sin(float64(i)*0.7)
			done += rate * 30 * wobble
			tokens += rate * 30 * wobble * 1066
		}
		g := tokens
		hist = append(hist, reports.Observation{T: t0 + float64(i)*30, Done: int64(done), Total: int64(0.7 * 30 * float64(n) * 1.5), GenTokens: &g})
	}
	return hist
}

// paceRuns is a testkit.FakeRuns whose estimator configuration is the monitor's: the window follows the job's pace.
type paceRuns struct{ *testkit.FakeRuns }

func (paceRuns) EstimateConfig(string) reports.EstimateConfig {
	return reports.EstimateConfig{StallAfter: 600}
}

// BenchmarkChartCommand is `/runwatch chart` over a run of 2,000 samples (the monitor's bound): the PNG and
// the two charts Slack draws. "first" is a bot that has drawn no chart of the run; "next" one that drew it
// last a sample or a few earlier (the history grows by one sample an answer).
func BenchmarkChartCommand(b *testing.B) {
	full := benchHistory(3000)
	runs := &testkit.FakeRuns{File: &config.File{Source: "bench", Runs: []config.Run{{Name: "synth"}}}, At: time.Now(), Hist: full[:2000]}
	ask := func(bot *Bot) {
		rep := bot.Ask(context.Background(), Request{Text: "chart", Source: "console"})
		if rep.Attachment == nil && rep.Fallback == nil {
			b.Fatalf("chart answer has no PNG: %s", rep.Message.Text())
		}
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			ask(NewBot(paceRuns{runs}, time.UTC, config.Env{}))
		}
	})
	b.Run("next", func(b *testing.B) {
		bot := NewBot(paceRuns{runs}, time.UTC, config.Env{})
		ask(bot)
		n := 2000
		for b.Loop() {
			n = 2000 + (n-1999)%1000
			runs.Hist = full[:n]
			ask(bot)
		}
	})
}
