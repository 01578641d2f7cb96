package reports

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// chartHistory builds a run sampled every step seconds: items finish at itemsPerS, each of
// tokensPerItem tokens (tokens are left out when tokensPerItem is 0), with the rate halving after
// slowAt seconds (0: never).
func chartHistory(n int, step, itemsPerS, tokensPerItem, slowAt float64) []Observation {
	var hist []Observation
	t0 := float64(time.Date(2025, 3, 4, 9, 0, 0, 0, time.UTC).Unix())
	var done, tokens float64
	total := int64(itemsPerS * step * float64(n) * 1.5)
	for i := range n {
		t := float64(i) * step
		rate := itemsPerS
		if slowAt > 0 && t >= slowAt {
			rate /= 2
		}
		if i > 0 {
			// A little deterministic wobble so the estimator has noise to measure.
			wobble := 1 + 0.1*math.Sin(float64(i)*0.7)
			done += rate * step * wobble
			tokens += rate * step * wobble * tokensPerItem
		}
		o := Observation{T: t0 + t, Done: int64(done), Total: total}
		if tokensPerItem > 0 {
			g := tokens
			o.GenTokens = &g
		}
		hist = append(hist, o)
	}
	return hist
}

// countColor counts the pixels of exactly colour c.
func countColor(img image.Image, c color.RGBA) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			if uint8(r>>8) == c.R && uint8(g>>8) == c.G && uint8(bl>>8) == c.B && uint8(a>>8) == c.A {
				n++
			}
		}
	}
	return n
}

func TestRenderChart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		hist          []Observation
		opts          ChartOptions
		width, height int
		wantRange     bool // the ETA range band is drawn
	}{
		{"tokens over four hours", chartHistory(480, 30, 0.7, 1066, 0), ChartOptions{Title: "synth · throughput and ETA"}, 800, 500, true},
		{"items only, slowing down", chartHistory(200, 30, 2, 0, 3000), ChartOptions{Width: 640, Height: 400}, 640, 400, true},
		{"two samples", chartHistory(2, 30, 1, 100, 0), ChartOptions{}, 800, 500, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := RenderChart(tc.hist, EstimateConfig{}, tc.opts)
			if err != nil {
				t.Fatalf("RenderChart(%d samples) = %v", len(tc.hist), err)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("png.Decode(RenderChart) = %v", err)
			}
			if got := img.Bounds().Size(); got != image.Pt(tc.width, tc.height) {
				t.Errorf("size = %v; want %dx%d", got, tc.width, tc.height)
			}
			if n := countColor(img, chartRate); n < 50 {
				t.Errorf("throughput line pixels = %d; want a drawn line", n)
			}
			if n := countColor(img, chartRange); (n > 0) != tc.wantRange {
				t.Errorf("ETA range pixels = %d; want drawn = %v", n, tc.wantRange)
			}
			if tc.wantRange && countColor(img, chartETA) < 50 {
				t.Errorf("ETA line missing")
			}
			again, _ := RenderChart(tc.hist, EstimateConfig{}, tc.opts)
			if !bytes.Equal(b, again) {
				t.Errorf("RenderChart is not deterministic")
			}
			if os.Getenv("CHART_OUT") != "" {
				os.WriteFile(filepath.Join(os.Getenv("CHART_OUT"), tc.name+".png"), b, 0o644)
			}
		})
	}
}

func TestRenderChartErrors(t *testing.T) {
	tests := []struct {
		name string
		hist []Observation
		opts ChartOptions
		no   bool // ErrChartNoData
	}{
		{"empty", nil, ChartOptions{}, true},
		{"one sample", chartHistory(1, 30, 1, 0, 0), ChartOptions{}, true},
		{"no time passes", []Observation{{T: 5, Done: 1}, {T: 5, Done: 2}}, ChartOptions{}, true},
		{"too small", chartHistory(10, 30, 1, 0, 0), ChartOptions{Width: 10, Height: 10}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RenderChart(tc.hist, EstimateConfig{}, tc.opts)
			if err == nil {
				t.Fatalf("RenderChart(%d samples, %+v) = nil error; want one", len(tc.hist), tc.opts)
			}
			if errors.Is(err, ErrChartNoData) != tc.no {
				t.Errorf("RenderChart(%d samples) = %v; want ErrChartNoData = %v", len(tc.hist), err, tc.no)
			}
		})
	}
}

func TestChartSeries(t *testing.T) {
	t.Parallel()
	hist := chartHistory(600, 30, 1, 500, 9000)
	tests := []struct {
		max, want int
	}{
		{120, 101},  // every 6th sample: between two thirds of 120 and 120 (see chartIndices)
		{1000, 599}, // every sample after the first
		{2, 2},
	}
	for _, tc := range tests {
		pts := ChartSeries(hist, EstimateConfig{}, tc.max)
		if len(pts) != tc.want {
			t.Errorf("ChartSeries(600 samples, %d) has %d points; want %d", tc.max, len(pts), tc.want)
			continue
		}
		if last := pts[len(pts)-1].T; last != hist[len(hist)-1].T {
			t.Errorf("ChartSeries(600 samples, %d) ends at %v; want the last sample %v", tc.max, last, hist[len(hist)-1].T)
		}
	}
	// The rate halves at 9000 s: the chart must show it.
	pts := ChartSeries(hist, EstimateConfig{}, 120)
	early, late := pts[len(pts)/4].TokensPerS, pts[len(pts)-1].TokensPerS
	if !(late < 0.7*early) {
		t.Errorf("tokens/s early %.0f, late %.0f; want the late rate about half", early, late)
	}
}

func TestChartTicks(t *testing.T) {
	tests := []struct {
		hi   float64
		want []float64
	}{
		{1400, []float64{0, 500, 1000, 1500}},
		{9, []float64{0, 5, 10}},
		{0.7, []float64{0, 0.2, 0.4, 0.6000000000000001, 0.8}},
		{0, []float64{0, 1}},
	}
	for _, tc := range tests {
		got := chartTicks(0, tc.hi)
		if len(got) != len(tc.want) {
			t.Errorf("chartTicks(0, %v) = %v; want %v", tc.hi, got, tc.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-9 {
				t.Errorf("chartTicks(0, %v) = %v; want %v", tc.hi, got, tc.want)
				break
			}
		}
	}
}

func TestChartNumber(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"}, {500, "500"}, {1500, "1.5k"}, {2000, "2k"}, {2.5e6, "2.5M"}, {0.25, "0.25"}, {0.5, "0.5"},
	}
	for _, tc := range tests {
		if got := chartNumber(tc.v); got != tc.want {
			t.Errorf("chartNumber(%v) = %q; want %q", tc.v, got, tc.want)
		}
	}
}

// BenchmarkRenderChart draws the chart of a run of 2,000 samples (the monitor's bound). "first" estimates
// every point of it; "next" draws a run's chart again a sample later, with its memo of the chart before (the
// history grows by a sample each time, from 2,000 to 3,000 and round again).
func BenchmarkRenderChart(b *testing.B) {
	b.Run("first", func(b *testing.B) {
		hist := chartHistory(2000, 30, 0.7, 1066, 20000)
		for b.Loop() {
			if _, err := RenderChart(hist, EstimateConfig{}, ChartOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("next", func(b *testing.B) {
		full := chartHistory(3000, 30, 0.7, 1066, 20000)
		o := ChartOptions{Memo: &ChartMemo{}}
		n := 2000
		RenderChart(full[:n], EstimateConfig{}, o)
		for b.Loop() {
			n = 2000 + (n-1999)%1000
			if _, err := RenderChart(full[:n], EstimateConfig{}, o); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestChartTimeTicks(t *testing.T) {
	t0 := float64(time.Date(2025, 3, 4, 9, 7, 0, 0, time.UTC).Unix())
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		berlin = time.FixedZone("CET", 3600)
	}
	tests := []struct {
		name  string
		span  time.Duration
		loc   *time.Location
		first string
		n     int
	}{
		{"four hours", 4 * time.Hour, time.UTC, "10:00", 4},
		{"twenty minutes", 20 * time.Minute, time.UTC, "09:10", 4},
		{"three days", 72 * time.Hour, time.UTC, "Mar 4 12:00", 6},
		{"ten days", 240 * time.Hour, time.UTC, "Mar 5", 5},
		{"four hours in Berlin", 4 * time.Hour, berlin, "11:00", 4},
	}
	for _, tc := range tests {
		ticks := chartTimeTicks(t0, t0+tc.span.Seconds(), tc.loc)
		if len(ticks) != tc.n || ticks[0].label != tc.first {
			var labels []string
			for _, tk := range ticks {
				labels = append(labels, tk.label)
			}
			t.Errorf("%s: chartTimeTicks = %v; want %d ticks from %s", tc.name, labels, tc.n, tc.first)
		}
	}
}

func TestChartASCII(t *testing.T) {
	tests := []struct{ in, want string }{
		{"synth · throughput and ETA", "synth - throughput and ETA"},
		{"4 h – 9 h…", "4 h - 9 h..."},
		{"naïve", "na?ve"},
	}
	for _, tc := range tests {
		if got := chartASCII(tc.in); got != tc.want {
			t.Errorf("chartASCII(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
