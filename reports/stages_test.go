package reports

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestStageFromProgress(t *testing.T) {
	tests := []struct {
		p     *Progress
		state string
		want  string
	}{
		{nil, StagePending, "no progress reported yet"},
		{&Progress{}, StagePending, "not started"},
		{&Progress{Done: 300, Total: 25000}, StageInProgress, "300 / 25,000 (1%)"},
		{&Progress{Done: 12}, StageInProgress, "12 done"},
		{&Progress{Done: 25000, Total: 25000}, StageDone, "25,000 items done"},
	}
	for _, tt := range tests {
		if got := StageFromProgress(tt.p, nil); got.State != tt.state || got.Detail != tt.want {
			t.Errorf("StageFromProgress(%+v) = %+v; want %s %q", tt.p, got, tt.state, tt.want)
		}
	}
	// Without progress, a failed source is named, the log first whatever the order the probes failed in; the
	// check is unchecked (it could not run), and a source that failed for progress and something else once.
	failed := []Problem{
		{Probe: "metrics http://gpu-1:8000/metrics", Error: "scrape http://gpu-1:8000/metrics: connection refused"},
		{Probe: "mounts", Error: "read mountinfo: permission denied"},
		{Probe: "log /data/gen.log", Error: "log /data/gen.log: permission denied\nread /data/gen.log"},
		{Probe: "metrics http://gpu-1:8000/metrics", Error: "scrape http://gpu-1:8000/metrics: connection refused"},
	}
	got := StageFromProgress(nil, ProgressProblems(failed))
	if want := "no progress reading: log /data/gen.log failed: permission denied; read /data/gen.log (1 other source failed too)"; got.Detail != want || !got.Unchecked || got.State != StagePending {
		t.Errorf("StageFromProgress(nil, failed) = %+v; want pending, unchecked, %q", got, want)
	}
	if got := StageFromProgress(&Progress{Done: 12}, ProgressProblems(failed)); got.Detail != "12 done" || got.Unchecked {
		t.Errorf("StageFromProgress(progress, failed) = %+v; want the progress: another source answered", got)
	}
}

func TestStageFromMetric(t *testing.T) {
	vals := map[string]float64{"running": 0, "done": 300}
	tests := []struct {
		metric, name, op string
		value            float64
		state, want      string
	}{
		{"vllm:num_requests_running", "running", "==", 0, StageDone, "vllm:num_requests_running = 0 == 0"},
		{"done", "done", ">=", 25000, StagePending, "done = 300, waiting for >= 25000"},
		{"x", "x", ">", 1, StagePending, "metric x not scraped (known: running, done, kv_cache_usage)"},
		// A name it knows that no engine reported (the servers are down): not "kv_cache_usage not scraped (known:
		// ..., kv_cache_usage, ...)".
		{"kv_cache_usage", "kv_cache_usage", ">", 0.5, StagePending, "metric kv_cache_usage not scraped yet: no engine reported it"},
	}
	for _, tt := range tests {
		if got := StageFromMetric(tt.metric, tt.name, tt.op, tt.value, vals, []string{"running", "done", "kv_cache_usage"}); got.State != tt.state || got.Detail != tt.want {
			t.Errorf("StageFromMetric(%s %s %g) = %+v; want %s %q", tt.metric, tt.op, tt.value, got, tt.state, tt.want)
		}
	}
}

func TestStageFromGrowth(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	prev := Growth{Size: 1 << 20, Files: 2, Changed: t0, Seen: t0}
	pst := time.FixedZone("PST", -8*3600)
	tests := []struct {
		name  string
		seen  bool
		cur   Growth
		now   time.Time
		state string
		want  string
	}{
		{"empty", false, Growth{Changed: t0, Seen: t0}, t0, StagePending, "/out is empty"},
		{"first look", false, prev, t0, StageInProgress, "1.05 MB in 2 files"},
		{"grew", true, Growth{Size: 2 << 20, Files: 3, Changed: t0.Add(time.Minute), Seen: t0.Add(time.Minute)}, t0.Add(time.Minute), StageInProgress, "2.10 MB in 3 files, +1.05 MB since 12:00 UTC"},
		{"quiet a while", true, Growth{Size: 1 << 20, Files: 2, Changed: t0, Seen: t0.Add(5 * time.Minute)}, t0.Add(5 * time.Minute), StageInProgress, "1.05 MB in 2 files"},
		{"quiet 10 minutes", true, Growth{Size: 1 << 20, Files: 2, Changed: t0, Seen: t0.Add(11 * time.Minute)}, t0.Add(11 * time.Minute), StageDone, "1.05 MB in 2 files, unchanged since Sun 29 Nov 12:00 UTC"},
		// The bot's clock in another zone: the times are said in it, as the rest of the answer is, not
		// labelled UTC (the status said "as of 10:34 PST" above "marked done … at Dec 1 18:34 UTC").
		{"grew, bot in PST", true, Growth{Size: 2 << 20, Files: 3, Changed: t0.Add(time.Minute), Seen: t0.Add(time.Minute)}, t0.Add(time.Minute).In(pst), StageInProgress, "2.10 MB in 3 files, +1.05 MB since 04:00 PST"},
		{"quiet, bot in PST", true, Growth{Size: 1 << 20, Files: 2, Changed: t0, Seen: t0.Add(11 * time.Minute)}, t0.Add(11 * time.Minute).In(pst), StageDone, "1.05 MB in 2 files, unchanged since Sun 29 Nov 04:00 PST"},
	}
	for _, tt := range tests {
		if got := StageFromGrowth("/out", prev, tt.seen, tt.cur, tt.now); got.State != tt.state || got.Detail != tt.want {
			t.Errorf("%s: StageFromGrowth = %+v; want %s %q", tt.name, got, tt.state, tt.want)
		}
	}
}

func TestFillRate(t *testing.T) {
	var falling, rising []FreePoint
	for i := range 11 {
		falling = append(falling, FreePoint{T: float64(1000 + 30*i), Free: uint64(1e9 - 1e6*30*i)})
		rising = append(rising, FreePoint{T: float64(1000 + 30*i), Free: uint64(1e9 + 1e6*30*i)})
	}
	if tr, ok := FillRate(falling, 0); !ok || tr.Rate < 0.999e6 || tr.Rate > 1.001e6 {
		t.Errorf("FillRate(falling 1 MB/s) = %+v, %v; want 1e6", tr, ok)
	}
	if _, ok := FillRate(rising, 0); ok {
		t.Error("FillRate(rising) = ok; want no rate")
	}
	if tr, ok := FillRate(falling[:3], 0); ok {
		if s, firm := tr.Forecast(falling[2].Free); firm {
			t.Errorf("FillRate(one minute, 3 readings) forecasts %g s; want no forecast from three readings", s)
		}
	}
	if _, ok := FillRate(falling, 1250); ok {
		t.Error("FillRate(since the last 2 points) = ok; want no rate from too few points")
	}
}

// A time to full reaches at most fillReach times the span of the readings behind it, whatever the pace: a
// write burst seconds long on a roomy disk is a pace with no forecast; the same disk shrinking at that pace
// for a tenth of the forecast has one; and a steady fill is forecast from the shortest recent window that
// supports it, so a fill that starts after hours of quiet is named a tenth of its time to full after it
// starts, not diluted by the quiet.
func TestFillRateEvidence(t *testing.T) {
	const free0 = 84.3e9
	series := func(step float64, n int, rate func(t float64) float64) []FreePoint {
		var pts []FreePoint
		free := free0
		for i := range n {
			tt := step * float64(i)
			if i > 0 {
				free -= rate(tt) * step
			}
			pts = append(pts, FreePoint{T: tt, Free: uint64(free)})
		}
		return pts
	}
	burst := func(tt float64) float64 {
		if tt > 5 && tt <= 20 {
			return 3.86e6
		}
		return 0
	}
	for _, tt := range []struct {
		name     string
		pts      []FreePoint
		forecast bool
		within   float64 // when forecast: the seconds to full, to 1%
	}{
		{"15 s burst, then 2 min quiet", series(5, 28, burst), false, 0},
		{"3.86 MB/s for 30 min: 6 h away needs 36 min", series(5, 361, func(float64) float64 { return 3.86e6 }), false, 0},
		{"3.86 MB/s for 40 min", series(5, 481, func(float64) float64 { return 3.86e6 }), true, (free0 - 3.86e6*2400) / 3.86e6},
		{"quiet 3 h, then 50 MB/s for 3 min", series(30, 367, func(t float64) float64 {
			if t > 3*3600 {
				return 50e6
			}
			return 0
		}), true, (free0 - 50e6*180) / 50e6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, ok := FillRate(tt.pts, 0)
			s, firm := tr.Forecast(tt.pts[len(tt.pts)-1].Free)
			if !ok && tt.forecast {
				t.Fatalf("FillRate = %+v, %v; want a trend", tr, ok)
			}
			if firm != tt.forecast || (firm && math.Abs(s-tt.within) > 0.01*tt.within) {
				t.Errorf("FillRate = %+v; Forecast = %.0f s, %v; want %v (%.0f s)", tr, s, firm, tt.forecast, tt.within)
			}
		})
	}
}

// A progress stage counted by the servers says whose count it is, as the progress line does.
func TestStageFromServerCount(t *testing.T) {
	for _, src := range []string{"metrics", "prometheus", "log"} {
		got := StageFromProgress(&Progress{Done: 11500, Total: 25000, Source: src}, nil).Detail
		if says := strings.Contains(got, "server's count"); says != (src != "log") {
			t.Errorf("StageFromProgress(source %s).Detail = %q; want the server's count named: %v", src, got, src != "log")
		}
	}
}
