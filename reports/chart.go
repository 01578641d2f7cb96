package reports

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"strings"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"runwatch/probes"
)

// ErrChartNoData is returned by RenderChart when the history has fewer than two samples.
var ErrChartNoData = errors.New("not enough history to chart: need at least two samples")

// ChartOptions shape a chart; zero fields take their defaults.
type ChartOptions struct {
	Width, Height int            // pixels; default 800 × 500
	Title         string         // drawn at the top
	Loc           *time.Location // time zone of the time axis; default UTC
	// MaxPoints bounds how many times the estimator is re-run over the history (default
	// DefaultChartPoints): the chart is a picture, not a replay of every sample.
	MaxPoints int
	// Memo, when set, keeps the estimates between charts of one run (see ChartMemo).
	Memo *ChartMemo
}

// ChartPoint is one point of a chart: the throughput and the ETA as the estimator saw them at T.
type ChartPoint struct {
	T          float64  `json:"t"`
	TokensPerS float64  `json:"tokens_per_s"`
	ItemsPerS  float64  `json:"items_per_s"`
	ETAS       *float64 `json:"eta_s"` // nil when unknown, stalled or done
	LowS       *float64 `json:"eta_low_s"`
	HighS      *float64 `json:"eta_high_s"`
}

// ChartSeries re-runs the estimator over growing prefixes of the history, as the bot would have answered at
// each moment: at every sample up to maxPoints (default DefaultChartPoints), past that at evenly spaced ones
// that stay put as the history grows (two thirds of maxPoints to maxPoints of them, half for a history just
// past maxPoints samples, always including the last; see chartIndices).
func ChartSeries(hist []Observation, cfg EstimateConfig, maxPoints int) []ChartPoint {
	return (*ChartMemo)(nil).Series(hist, cfg, maxPoints)
}

// Chart colours.
var (
	chartBG     = color.RGBA{255, 255, 255, 255}
	chartFrame  = color.RGBA{170, 170, 170, 255}
	chartGrid   = color.RGBA{232, 232, 232, 255}
	chartText   = color.RGBA{40, 40, 40, 255}
	chartRate   = color.RGBA{31, 119, 180, 255}
	chartETA    = color.RGBA{230, 110, 0, 255}
	chartRange  = color.RGBA{253, 208, 162, 255}
	chartMargin = struct{ left, right, top, bottom int }{70, 20, 46, 30}
	// chartPalette is every colour a chart has: the text is a bitmap font, drawn without blending.
	chartPalette = color.Palette{chartBG, chartFrame, chartGrid, chartText, chartRate, chartETA, chartRange}
)

// RenderChart draws a run's history as a PNG: throughput on top, the ETA with its low–high range
// below, on a shared time axis. It is pure: the same history gives the same bytes.
func RenderChart(hist []Observation, cfg EstimateConfig, o ChartOptions) ([]byte, error) {
	if o.Width <= 0 {
		o.Width = 800
	}
	if o.Height <= 0 {
		o.Height = 500
	}
	if o.Width < 300 || o.Height < 200 || o.Width > 4000 || o.Height > 4000 {
		return nil, fmt.Errorf("chart size %d×%d is out of range (300×200 to 4000×4000)", o.Width, o.Height)
	}
	if o.Loc == nil {
		o.Loc = time.UTC
	}
	pts := o.Memo.Series(hist, cfg, o.MaxPoints)
	if len(pts) < 1 || hist[len(hist)-1].T <= hist[0].T {
		return nil, ErrChartNoData
	}
	// A paletted image of the chart's colours (the background first, so it starts filled): the same pixels
	// as a full-colour one, a quarter of the memory, and PNG-encoded in a third of the time.
	img := image.NewPaletted(image.Rect(0, 0, o.Width, o.Height), chartPalette)
	t0, t1 := hist[0].T, hist[len(hist)-1].T

	useTokens := chartInTokens(pts)
	rate := func(p ChartPoint) float64 {
		if useTokens {
			return p.TokensPerS
		}
		return p.ItemsPerS
	}
	unit := "items/s"
	if useTokens {
		unit = "tok/s"
	}
	etaMax, etaUnit, etaDiv := chartETAScale(pts)

	mid := o.Height / 2
	top := image.Rect(chartMargin.left, chartMargin.top, o.Width-chartMargin.right, mid-14)
	bottom := image.Rect(chartMargin.left, mid+16, o.Width-chartMargin.right, o.Height-chartMargin.bottom)

	chartLabel(img, 8, 18, o.Title, chartText)
	chartLabel(img, top.Min.X, top.Min.Y-4, "throughput ("+unit+")", chartRate)
	chartLabel(img, bottom.Min.X, bottom.Min.Y-4, "ETA ("+etaUnit+" left; shaded: range)", chartETA)

	var rateMax float64
	for _, p := range pts {
		rateMax = math.Max(rateMax, rate(p))
	}
	rateTicks := chartTicks(0, rateMax)
	etaTicks := chartTicks(0, etaMax/etaDiv)
	timeTicks := chartTimeTicks(t0, t1, o.Loc)

	xOf := func(r image.Rectangle, t float64) int {
		return r.Min.X + int(math.Round((t-t0)/(t1-t0)*float64(r.Dx()-1)))
	}
	yOf := func(r image.Rectangle, v, vmax float64) int {
		if vmax <= 0 {
			return r.Max.Y - 1
		}
		return r.Max.Y - 1 - int(math.Round(v/vmax*float64(r.Dy()-1)))
	}
	for _, panel := range []struct {
		r     image.Rectangle
		ticks []float64
	}{{top, rateTicks}, {bottom, etaTicks}} {
		vmax := panel.ticks[len(panel.ticks)-1]
		for _, v := range panel.ticks {
			y := yOf(panel.r, v, vmax)
			chartHLine(img, panel.r.Min.X, panel.r.Max.X-1, y, chartGrid)
			s := chartNumber(v)
			chartLabel(img, panel.r.Min.X-6-chartTextWidth(s), y+4, s, chartText)
		}
		for _, tt := range timeTicks {
			chartVLine(img, xOf(panel.r, tt.t), panel.r.Min.Y, panel.r.Max.Y-1, chartGrid)
		}
		chartRect(img, panel.r, chartFrame)
	}
	for _, tt := range timeTicks {
		x := xOf(bottom, tt.t)
		chartLabel(img, x-chartTextWidth(tt.label)/2, bottom.Max.Y+15, tt.label, chartText)
	}

	// The ETA range first, so the lines are drawn over it.
	etaTop := etaTicks[len(etaTicks)-1]
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if a.LowS == nil || a.HighS == nil || b.LowS == nil || b.HighS == nil {
			continue
		}
		xa, xb := xOf(bottom, a.T), xOf(bottom, b.T)
		for x := xa; x <= xb; x++ {
			f := 0.0
			if xb > xa {
				f = float64(x-xa) / float64(xb-xa)
			}
			lo := (*a.LowS + f*(*b.LowS-*a.LowS)) / etaDiv
			hi := (*a.HighS + f*(*b.HighS-*a.HighS)) / etaDiv
			chartVLine(img, x, yOf(bottom, hi, etaTop), yOf(bottom, lo, etaTop), chartRange)
		}
	}
	rateTop := rateTicks[len(rateTicks)-1]
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		chartLine(img, xOf(top, a.T), yOf(top, rate(a), rateTop), xOf(top, b.T), yOf(top, rate(b), rateTop), chartRate)
		if a.ETAS != nil && b.ETAS != nil {
			chartLine(img, xOf(bottom, a.T), yOf(bottom, *a.ETAS/etaDiv, etaTop), xOf(bottom, b.T), yOf(bottom, *b.ETAS/etaDiv, etaTop), chartETA)
		}
	}
	if len(pts) == 1 || etaMax == 0 {
		chartLabel(img, bottom.Min.X+10, bottom.Min.Y+20, "no running estimate in this window", chartText)
	}

	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode chart: %w", err)
	}
	return buf.Bytes(), nil
}

// chartTicks returns 3 to 6 round tick values from lo covering hi (1, 2, 5 × 10^k steps).
func chartTicks(lo, hi float64) []float64 {
	if !(hi > lo) || math.IsInf(hi, 0) || math.IsNaN(hi) {
		return []float64{lo, lo + 1}
	}
	raw := (hi - lo) / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := lo; ; v += step {
		out = append(out, v)
		if v >= hi-1e-9*step {
			break
		}
	}
	return out
}

// chartNumber formats an axis value compactly: 950, 1.5k, 12k, 2.5M.
func chartNumber(v float64) string {
	switch {
	case v >= 1e6:
		return chartTrimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case v >= 1e3:
		return chartTrimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return chartTrimZero(fmt.Sprintf("%.2f", v))
}

func chartTrimZero(s string) string {
	for len(s) > 1 && s[len(s)-1] == '0' && bytes.ContainsRune([]byte(s), '.') {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

type chartTick struct {
	t     float64
	label string
}

// chartTimeTicks puts 2 to 8 ticks on round clock times between t0 and t1 (unix seconds).
func chartTimeTicks(t0, t1 float64, loc *time.Location) []chartTick {
	steps := []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
		30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
		48 * time.Hour, 7 * 24 * time.Hour}
	span := time.Duration((t1 - t0) * float64(time.Second))
	step := steps[len(steps)-1]
	for _, s := range steps {
		if span/s <= 7 {
			step = s
			break
		}
	}
	layout := "15:04"
	switch {
	case step >= 24*time.Hour:
		layout = "Jan 2"
	case span >= 24*time.Hour:
		layout = "Jan 2 15:04"
	}
	start := probes.UnixTime(math.Ceil(t0)).In(loc)
	// Round up to a multiple of the step in local time.
	_, off := start.Zone()
	sec := start.Unix() + int64(off)
	stepS := int64(step / time.Second)
	first := (sec+stepS-1)/stepS*stepS - int64(off)
	var out []chartTick
	for t := first; float64(t) <= t1; t += stepS {
		out = append(out, chartTick{t: float64(t), label: time.Unix(t, 0).In(loc).Format(layout)})
	}
	return out
}

func chartLabel(img *image.Paletted, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(chartASCII(s))
}

// chartASCII keeps text within the bitmap font's ASCII: the separators runwatch uses become
// plain ones, anything else a '?'.
func chartASCII(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 128:
			b.WriteRune(r)
		case r == '·' || r == '–' || r == '—':
			b.WriteRune('-')
		case r == '…':
			b.WriteString("...")
		default:
			b.WriteRune('?')
		}
	}
	return b.String()
}

func chartTextWidth(s string) int {
	return font.MeasureString(basicfont.Face7x13, chartASCII(s)).Round()
}

func chartHLine(img *image.Paletted, x0, x1, y int, c color.RGBA) {
	ci := uint8(img.Palette.Index(c))
	for x := x0; x <= x1; x++ {
		img.SetColorIndex(x, y, ci)
	}
}

func chartVLine(img *image.Paletted, x, y0, y1 int, c color.RGBA) {
	if y0 > y1 {
		y0, y1 = y1, y0
	}
	ci := uint8(img.Palette.Index(c))
	for y := y0; y <= y1; y++ {
		img.SetColorIndex(x, y, ci)
	}
}

func chartRect(img *image.Paletted, r image.Rectangle, c color.RGBA) {
	chartHLine(img, r.Min.X, r.Max.X-1, r.Min.Y, c)
	chartHLine(img, r.Min.X, r.Max.X-1, r.Max.Y-1, c)
	chartVLine(img, r.Min.X, r.Min.Y, r.Max.Y-1, c)
	chartVLine(img, r.Max.X-1, r.Min.Y, r.Max.Y-1, c)
}

// chartLine draws a two-pixel-wide line (Bresenham, doubled downwards).
func chartLine(img *image.Paletted, x0, y0, x1, y1 int, c color.RGBA) {
	ci := uint8(img.Palette.Index(c))
	dx, dy := chartAbs(x1-x0), -chartAbs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	e := dx + dy
	for {
		img.SetColorIndex(x0, y0, ci)
		img.SetColorIndex(x0, y0+1, ci)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func chartAbs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// chartInTokens says whether a chart of pts plots tokens/s (some engine counted tokens) or items/s. The
// PNG and the Slack-drawn charts ask it, so the fallback shows what the chart it replaces would.
func chartInTokens(pts []ChartPoint) bool {
	return slices.ContainsFunc(pts, func(p ChartPoint) bool { return p.TokensPerS > 0 })
}

// chartETAScale is the ETA axis of a chart of pts: the largest ETA or range top, and its unit (hours,
// or minutes below two hours) with the seconds per unit.
func chartETAScale(pts []ChartPoint) (maxS float64, unit string, div float64) {
	for _, p := range pts {
		if p.HighS != nil {
			maxS = math.Max(maxS, *p.HighS)
		}
		if p.ETAS != nil {
			maxS = math.Max(maxS, *p.ETAS)
		}
	}
	if maxS < 2*3600 {
		return maxS, "minutes", 60
	}
	return maxS, "hours", 3600
}
