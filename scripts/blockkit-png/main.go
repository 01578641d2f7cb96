// Command blockkit-png draws a Slack message or App Home tab, given as the Block Kit JSON runwatch
// sent, as a PNG that looks roughly like Slack's light theme: the README's pictures of the channel
// and the Home tab are drawn with it (scripts/screens.sh), so they show what the code sends. It
// knows the blocks runwatch uses (header, section with an accessory button, context, actions with
// buttons and an overflow menu, divider, data_visualization line charts) and Slack mrkdwn (bold,
// italic, code, code blocks, links, mentions, date tokens, the emoji runwatch uses).
//
//	go run ./scripts/blockkit-png -in status.json -out docs/slack-status.png
//
// The input is {"kind": "message"|"home", "channel": "#name", "time": "10:42", "blocks": [...]}
// or a bare array of blocks.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"strconv"
	"strings"
)

// screen is the input: what to draw and around what.
type screen struct {
	Kind    string  `json:"kind"`
	Channel string  `json:"channel"`
	Time    string  `json:"time"`
	Blocks  []block `json:"blocks"`
}

type textObj struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// element is a button, an overflow menu, or (in a context block) a text object.
type element struct {
	Type     string          `json:"type"`
	RawText  json.RawMessage `json:"text"`
	Style    string          `json:"style"`
	ActionID string          `json:"action_id"`
}

// label is the element's text, whether Slack wrote it as an object or a string.
func (e element) label() string {
	var o textObj
	if json.Unmarshal(e.RawText, &o) == nil && o.Text != "" {
		return o.Text
	}
	var s string
	json.Unmarshal(e.RawText, &s)
	return s
}

type chartData struct {
	Type   string `json:"type"`
	Series []struct {
		Name string `json:"name"`
		Data []struct {
			Label string  `json:"label"`
			Value float64 `json:"value"`
		} `json:"data"`
	} `json:"series"`
	Axis struct {
		Categories []string `json:"categories"`
		XLabel     string   `json:"x_label"`
		YLabel     string   `json:"y_label"`
	} `json:"axis_config"`
}

type block struct {
	Type      string     `json:"type"`
	Text      *textObj   `json:"text"`
	Fields    []textObj  `json:"fields"`
	Accessory *element   `json:"accessory"`
	Elements  []element  `json:"elements"`
	Title     string     `json:"title"`
	Chart     *chartData `json:"chart"`
}

const (
	width      = 760.0
	bodySize   = 15.0
	bodyLine   = 22.0
	smallSize  = 12.5
	smallLine  = 18.0
	blockGap   = 8.0
	buttonH    = 30.0
	chartPlotH = 170.0
)

func main() {
	in := flag.String("in", "", "Block Kit JSON to draw")
	out := flag.String("out", "", "PNG to write")
	scale := flag.Float64("scale", 2, "pixels per logical pixel")
	flag.Parse()
	if err := run(*in, *out, *scale); err != nil {
		fmt.Fprintln(os.Stderr, "blockkit-png:", err)
		os.Exit(1)
	}
}

func run(in, out string, scale float64) error {
	if in == "" || out == "" {
		return errors.New("usage: blockkit-png -in FILE.json -out FILE.png")
	}
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	sc, err := parseScreen(b)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	img := render(sc, scale)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

func parseScreen(b []byte) (screen, error) {
	var sc screen
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		err := json.Unmarshal(b, &sc.Blocks)
		return sc, err
	}
	err := json.Unmarshal(b, &sc)
	if err == nil && len(sc.Blocks) == 0 {
		err = errors.New("no blocks to draw")
	}
	return sc, err
}

// render lays the screen out twice: once to measure, once to draw on an image of that height.
func render(sc screen, scale float64) *image.RGBA {
	f := newFonts(scale)
	measure := &canvas{scale: scale, f: f}
	h := layout(measure, sc, false)
	c := &canvas{img: image.NewRGBA(image.Rect(0, 0, int(width*scale), int(math.Ceil(h*scale)))), scale: scale, f: f}
	draw.Draw(c.img, c.img.Bounds(), image.NewUniform(colWhite), image.Point{}, draw.Src)
	layout(c, sc, true)
	return c.img
}

// layout places the chrome (channel bar and bot name, or the Home tab's header) and the blocks,
// and returns the height used.
func layout(c *canvas, sc screen, paint bool) float64 {
	bold := style{bold: true, size: 15, col: colText}
	muted := style{size: smallSize, col: colMuted}
	var x, y float64
	if sc.Kind == "home" {
		if paint {
			c.text(24, 30, "runwatch", style{bold: true, size: 17, col: colText})
			tx := 24.0
			for i, tab := range []string{"Home", "Messages", "About"} {
				st := style{size: 14, col: colMuted}
				if i == 0 {
					st = style{bold: true, size: 14, col: colText}
				}
				w := c.text(tx, 60, tab, st)
				if i == 0 {
					c.fillRect(tx, 68, w, 2, colText)
				}
				tx += w + 24
			}
			c.fillRect(0, 70, width, 1, colBorder)
		}
		x, y = 24, 86
	} else {
		if paint {
			name := sc.Channel
			if name == "" {
				name = "#channel"
			}
			c.text(20, 28, "# "+strings.TrimPrefix(name, "#"), bold)
			c.fillRect(0, 44, width, 1, colBorder)
			c.roundRect(20, 60, 36, 36, 8, color.RGBA{29, 53, 87, 255})
			c.text(26.5, 84, "rw", style{bold: true, size: 15, col: colWhite})
			w := c.text(68, 72, "runwatch", bold)
			c.roundRect(68+w+6, 60, 30, 15, 3, color.RGBA{232, 232, 232, 255})
			c.text(68+w+10, 71.5, "APP", style{bold: true, size: 9.5, col: colMuted})
			if sc.Time != "" {
				c.text(68+w+42, 72, sc.Time, muted)
			}
		}
		x, y = 68, 80
	}
	w := width - x - 24
	for _, b := range sc.Blocks {
		y += drawBlock(c, b, x, y, w, paint) + blockGap
	}
	return y + 16
}

// drawBlock draws one block at (x, y) within w and returns its height.
func drawBlock(c *canvas, b block, x, y, w float64, paint bool) float64 {
	switch b.Type {
	case "header":
		if b.Text == nil {
			return 0
		}
		return c.flow([]span{{b.Text.Text, style{bold: true, size: 17.5, col: colText}}}, x, y+4, w, 26, paint) + 6
	case "section":
		tw := w
		if b.Accessory != nil {
			tw -= 130
			if paint {
				bw := buttonWidth(c, *b.Accessory)
				drawButton(c, *b.Accessory, x+w-bw, y)
			}
		}
		h := 0.0
		if b.Text != nil {
			h = mrkdwnBlock(c, b.Text.Text, x, y, tw, paint)
		}
		for _, f := range b.Fields {
			h += mrkdwnBlock(c, f.Text, x, y+h, tw, paint)
		}
		if b.Accessory != nil {
			h = math.Max(h, buttonH)
		}
		return h
	case "context":
		var spans []span
		for i, e := range b.Elements {
			if i > 0 {
				spans = append(spans, span{"   ", style{size: smallSize, col: colMuted}})
			}
			spans = append(spans, parseMrkdwn(e.label(), style{size: smallSize, col: colMuted})...)
		}
		return c.flow(spans, x, y, w, smallLine, paint)
	case "actions":
		bx, by := x, y
		for _, e := range b.Elements {
			bw := buttonWidth(c, e)
			if bx+bw > x+w && bx > x {
				bx, by = x, by+buttonH+8
			}
			if paint {
				drawButton(c, e, bx, by)
			}
			bx += bw + 8
		}
		return by - y + buttonH + 4
	case "divider":
		if paint {
			c.fillRect(x, y+6, w, 1, colBorder)
		}
		return 12
	case "data_visualization":
		return drawChart(c, b, x, y, w, paint)
	}
	return 0
}

// mrkdwnBlock draws a section's mrkdwn text, code blocks included, and returns its height.
func mrkdwnBlock(c *canvas, text string, x, y, w float64, paint bool) float64 {
	h := 0.0
	parts := strings.Split(text, "```")
	for i, part := range parts {
		if i%2 == 1 { // inside a code block
			lines := strings.Split(strings.Trim(part, "\n"), "\n")
			st := style{code: true, size: 13, col: colText}
			bh := float64(len(lines))*18 + 14
			if paint {
				c.outlineRect(x, y+h+2, w, bh, 4, colBorder, colCodeBG)
				for j, l := range lines {
					clipped := l
					for len(clipped) > 0 && c.measure(clipped, st) > w-20 {
						clipped = clipped[:len(clipped)-1]
					}
					c.text(x+10, y+h+2+7+float64(j)*18+13, entities.Replace(clipped), st)
				}
			}
			h += bh + 6
			continue
		}
		for _, line := range strings.Split(strings.Trim(part, "\n"), "\n") {
			if strings.TrimSpace(line) == "" && len(parts) > 1 {
				continue
			}
			h += c.flow(parseMrkdwn(line, style{size: bodySize, col: colText}), x, y+h, w, bodyLine, paint)
		}
	}
	return h
}

func buttonWidth(c *canvas, e element) float64 {
	if e.Type == "overflow" {
		return buttonH + 2
	}
	return c.measure(e.label(), style{bold: true, size: 14}) + 26
}

func drawButton(c *canvas, e element, x, y float64) {
	w := buttonWidth(c, e)
	border, fill, text := color.Color(color.RGBA{190, 190, 190, 255}), color.Color(colWhite), color.Color(colText)
	switch e.Style {
	case "primary":
		border, fill, text = colPrimary, colPrimary, colWhite
	case "danger":
		border, fill, text = colDanger, colDanger, colWhite
	}
	c.outlineRect(x, y, w, buttonH, 5, border, fill)
	if e.Type == "overflow" {
		for i := -1; i <= 1; i++ {
			c.disc(x+w/2+float64(i)*6, y+buttonH/2, 1.8, colText)
		}
		return
	}
	c.text(x+13, y+20, e.label(), style{bold: true, size: 14, col: text})
}

// drawChart draws a data_visualization line chart: title, y scale, the lines, a few x labels and
// the legend.
func drawChart(c *canvas, b block, x, y, w float64, paint bool) float64 {
	h := 24 + chartPlotH + 22 + 22
	if !paint || b.Chart == nil {
		return h
	}
	ch := b.Chart
	c.text(x, y+16, b.Title, style{bold: true, size: 14.5, col: colText})
	if ch.Axis.YLabel != "" {
		c.text(x+w-c.measure(ch.Axis.YLabel, style{size: 11}), y+16, ch.Axis.YLabel, style{size: 11, col: colMuted})
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ch.Series {
		for _, p := range s.Data {
			lo, hi = math.Min(lo, p.Value), math.Max(hi, p.Value)
		}
	}
	if math.IsInf(lo, 0) {
		return h
	}
	lo = math.Min(lo, 0)
	if hi <= lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / 4)
	hi = math.Ceil(hi/step) * step
	px, py, pw, ph := x+48, y+28, w-56, chartPlotH
	ty := func(v float64) float64 { return py + ph - (v-lo)/(hi-lo)*ph }
	small := style{size: 11, col: colMuted}
	for v := lo; v <= hi+step/2; v += step {
		c.fillRect(px, ty(v), pw, 1, color.RGBA{238, 238, 238, 255})
		lbl := compact(v)
		c.text(px-8-c.measure(lbl, small), ty(v)+4, lbl, small)
	}
	c.fillRect(px, py+ph, pw, 1, colBorder)
	n := len(ch.Axis.Categories)
	tx := func(i int) float64 {
		if n <= 1 {
			return px + pw/2
		}
		return px + float64(i)/float64(n-1)*pw
	}
	for i, cat := range ch.Axis.Categories {
		if n > 5 && i%((n-1)/4) != 0 && i != n-1 {
			continue
		}
		lw := c.measure(cat, small)
		c.text(math.Min(math.Max(tx(i)-lw/2, px), px+pw-lw), py+ph+16, cat, small)
	}
	index := map[string]int{}
	for i, cat := range ch.Axis.Categories {
		index[cat] = i
	}
	lx := px
	palette := colSeries
	if len(ch.Series) == 3 {
		palette = colRange // an estimate with its low and high
	}
	for si, s := range ch.Series {
		col := palette[si%len(palette)]
		var pts [][2]float64
		for _, p := range s.Data {
			pts = append(pts, [2]float64{tx(index[p.Label]), ty(p.Value)})
		}
		wd := 2.2
		if si > 0 && len(ch.Series) == 3 {
			wd = 1.4 // the range lines under the estimate
		}
		c.line(pts, wd, col)
		c.roundRect(lx, py+ph+30, 10, 10, 2, col)
		lx += 14 + c.text(lx+14, py+ph+39, s.Name, small) + 16
	}
	return h
}

// niceStep rounds a raw step to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func compact(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(math.Round(v/100)/10, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}
