package main

import (
	"image"
	"image/color"
	"image/draw"
	"math"
	"regexp"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// Slack's light theme, roughly.
var (
	colText    = color.RGBA{29, 28, 29, 255}
	colMuted   = color.RGBA{97, 96, 97, 255}
	colBorder  = color.RGBA{221, 221, 221, 255}
	colCodeBG  = color.RGBA{246, 246, 246, 255}
	colCode    = color.RGBA{192, 19, 67, 255}
	colLink    = color.RGBA{18, 100, 163, 255}
	colMention = color.RGBA{232, 245, 250, 255}
	colPrimary = color.RGBA{0, 122, 90, 255}
	colDanger  = color.RGBA{224, 30, 90, 255}
	colWhite   = color.RGBA{255, 255, 255, 255}
	colRange   = []color.RGBA{{230, 110, 0, 255}, {245, 190, 130, 255}, {245, 190, 130, 255}}
	colSeries  = []color.RGBA{{18, 100, 163, 255}, {230, 110, 0, 255}, {120, 170, 220, 255}, {240, 170, 100, 255}, {0, 122, 90, 255}, {150, 80, 170, 255}}
)

// style is how a span of text is drawn.
type style struct {
	bold, italic, code, link, mention bool
	emoji                             string
	size                              float64
	col                               color.Color
}

type span struct {
	text string
	st   style
}

// fonts holds the Go fonts at the sizes in use, scaled for the output's pixel density.
type fonts struct {
	scale float64
	faces map[[2]int]font.Face // (kind, size*10)
	src   [4]*opentype.Font
}

func newFonts(scale float64) *fonts {
	f := &fonts{scale: scale, faces: map[[2]int]font.Face{}}
	for i, ttf := range [][]byte{goregular.TTF, gobold.TTF, goitalic.TTF, gomono.TTF} {
		parsed, err := opentype.Parse(ttf)
		if err != nil {
			panic(err) // the Go fonts ship with x/image: they parse
		}
		f.src[i] = parsed
	}
	return f
}

func (f *fonts) face(st style) font.Face {
	kind := 0
	switch {
	case st.code:
		kind = 3
	case st.bold:
		kind = 1
	case st.italic:
		kind = 2
	}
	size := st.size
	if st.code {
		size *= 0.92
	}
	key := [2]int{kind, int(size * 10)}
	if fc, ok := f.faces[key]; ok {
		return fc
	}
	fc, err := opentype.NewFace(f.src[kind], &opentype.FaceOptions{Size: size * f.scale, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		panic(err)
	}
	f.faces[key] = fc
	return fc
}

// canvas is the image being drawn, in logical pixels (scaled on the way to the image).
type canvas struct {
	img   *image.RGBA
	scale float64
	f     *fonts
}

func (c *canvas) px(v float64) int { return int(math.Round(v * c.scale)) }

func (c *canvas) fillRect(x, y, w, h float64, col color.Color) {
	draw.Draw(c.img, image.Rect(c.px(x), c.px(y), c.px(x+w), c.px(y+h)), image.NewUniform(col), image.Point{}, draw.Over)
}

// path fills a closed shape given in logical pixels.
func (c *canvas) path(col color.Color, build func(r *vector.Rasterizer, s func(float64) float32)) {
	b := c.img.Bounds()
	r := vector.NewRasterizer(b.Dx(), b.Dy())
	build(r, func(v float64) float32 { return float32(v * c.scale) })
	r.Draw(c.img, b, image.NewUniform(col), image.Point{})
}

func (c *canvas) roundRect(x, y, w, h, rad float64, col color.Color) {
	c.path(col, func(r *vector.Rasterizer, s func(float64) float32) {
		r.MoveTo(s(x+rad), s(y))
		r.LineTo(s(x+w-rad), s(y))
		r.QuadTo(s(x+w), s(y), s(x+w), s(y+rad))
		r.LineTo(s(x+w), s(y+h-rad))
		r.QuadTo(s(x+w), s(y+h), s(x+w-rad), s(y+h))
		r.LineTo(s(x+rad), s(y+h))
		r.QuadTo(s(x), s(y+h), s(x), s(y+h-rad))
		r.LineTo(s(x), s(y+rad))
		r.QuadTo(s(x), s(y), s(x+rad), s(y))
		r.ClosePath()
	})
}

// outlineRect draws a rounded frame of width 1.
func (c *canvas) outlineRect(x, y, w, h, rad float64, border, fill color.Color) {
	c.roundRect(x, y, w, h, rad, border)
	c.roundRect(x+1, y+1, w-2, h-2, math.Max(rad-1, 0), fill)
}

func (c *canvas) disc(cx, cy, rad float64, col color.Color) {
	c.path(col, func(r *vector.Rasterizer, s func(float64) float32) {
		const n = 24
		for i := 0; i <= n; i++ {
			a := 2 * math.Pi * float64(i) / n
			x, y := cx+rad*math.Cos(a), cy+rad*math.Sin(a)
			if i == 0 {
				r.MoveTo(s(x), s(y))
			} else {
				r.LineTo(s(x), s(y))
			}
		}
		r.ClosePath()
	})
}

// line strokes a polyline of width w.
func (c *canvas) line(pts [][2]float64, w float64, col color.Color) {
	for i := 1; i < len(pts); i++ {
		x0, y0, x1, y1 := pts[i-1][0], pts[i-1][1], pts[i][0], pts[i][1]
		dx, dy := x1-x0, y1-y0
		l := math.Hypot(dx, dy)
		if l == 0 {
			continue
		}
		nx, ny := -dy/l*w/2, dx/l*w/2
		c.path(col, func(r *vector.Rasterizer, s func(float64) float32) {
			r.MoveTo(s(x0+nx), s(y0+ny))
			r.LineTo(s(x1+nx), s(y1+ny))
			r.LineTo(s(x1-nx), s(y1-ny))
			r.LineTo(s(x0-nx), s(y0-ny))
			r.ClosePath()
		})
	}
}

// text draws s with its baseline at y and returns its width.
func (c *canvas) text(x, y float64, s string, st style) float64 {
	d := font.Drawer{Dst: c.img, Src: image.NewUniform(st.col), Face: c.f.face(st),
		Dot: fixed.Point26_6{X: fixed.Int26_6(x * c.scale * 64), Y: fixed.Int26_6(y * c.scale * 64)}}
	d.DrawString(s)
	return c.measure(s, st)
}

func (c *canvas) measure(s string, st style) float64 {
	return float64(font.MeasureString(c.f.face(st), s)) / 64 / c.scale
}

// emoji draws the shortcodes runwatch uses as small shapes (the Go fonts have no emoji).
func (c *canvas) emoji(x, baseline, size float64, name string) float64 {
	w := size * 1.25
	cx, cy, r := x+w/2, baseline-size*0.36, size*0.5
	switch name {
	case "white_check_mark", "heavy_check_mark":
		c.roundRect(cx-r, cy-r, 2*r, 2*r, r*0.3, color.RGBA{94, 168, 64, 255})
		c.line([][2]float64{{cx - r*0.5, cy}, {cx - r*0.1, cy + r*0.4}, {cx + r*0.55, cy - r*0.45}}, r*0.28, colWhite)
	case "white_large_square":
		c.outlineRect(cx-r, cy-r, 2*r, 2*r, r*0.2, color.RGBA{150, 150, 150, 255}, colWhite)
	case "large_green_circle":
		c.disc(cx, cy, r, color.RGBA{94, 168, 64, 255})
	case "red_circle", "rotating_light":
		c.disc(cx, cy, r, color.RGBA{221, 46, 68, 255})
		if name == "rotating_light" {
			c.text(cx-r*0.18, cy+r*0.45, "!", style{bold: true, size: size * 0.8, col: colWhite})
		}
	case "large_yellow_circle":
		c.disc(cx, cy, r, color.RGBA{253, 203, 88, 255})
	case "information_source":
		c.roundRect(cx-r, cy-r, 2*r, 2*r, r*0.3, color.RGBA{59, 136, 195, 255})
		c.text(cx-r*0.15, cy+r*0.55, "i", style{bold: true, size: size * 0.8, col: colWhite})
	case "warning":
		c.path(color.RGBA{255, 204, 77, 255}, func(rz *vector.Rasterizer, s func(float64) float32) {
			rz.MoveTo(s(cx), s(cy-r))
			rz.LineTo(s(cx+r), s(cy+r*0.8))
			rz.LineTo(s(cx-r), s(cy+r*0.8))
			rz.ClosePath()
		})
		c.text(cx-r*0.15, cy+r*0.65, "!", style{bold: true, size: size * 0.75, col: colText})
	case "hourglass_flowing_sand":
		c.path(color.RGBA{255, 172, 51, 255}, func(rz *vector.Rasterizer, s func(float64) float32) {
			rz.MoveTo(s(cx-r*0.7), s(cy-r))
			rz.LineTo(s(cx+r*0.7), s(cy-r))
			rz.LineTo(s(cx-r*0.7), s(cy+r))
			rz.LineTo(s(cx+r*0.7), s(cy+r))
			rz.ClosePath()
		})
	case "x":
		c.line([][2]float64{{cx - r*0.7, cy - r*0.7}, {cx + r*0.7, cy + r*0.7}}, r*0.35, color.RGBA{221, 46, 68, 255})
		c.line([][2]float64{{cx + r*0.7, cy - r*0.7}, {cx - r*0.7, cy + r*0.7}}, r*0.35, color.RGBA{221, 46, 68, 255})
	case "zzz":
		c.text(x, baseline, "zz", style{bold: true, size: size * 0.9, col: color.RGBA{85, 172, 238, 255}})
	case "eyes":
		for _, dx := range []float64{-r * 0.48, r * 0.48} {
			c.disc(cx+dx, cy, r*0.46, color.RGBA{120, 120, 120, 255})
			c.disc(cx+dx, cy, r*0.40, colWhite)
			c.disc(cx+dx+r*0.1, cy+r*0.08, r*0.2, colText)
		}
	case "bell":
		c.disc(cx, cy, r, color.RGBA{255, 172, 51, 255})
	default:
		c.disc(cx, cy, r*0.8, color.RGBA{200, 200, 200, 255})
	}
	return w
}

// Inline mrkdwn: <tokens>, `code`, *bold*, _italic_, :emoji:.
var (
	mrkToken = regexp.MustCompile("<[^<>]+>|`[^`]+`|:[a-z0-9_+-]+:|\\*[^*\\n]+\\*|_[^_\\n]+_")
	entities = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
)

// parseMrkdwn turns one line of Slack mrkdwn into styled spans.
func parseMrkdwn(s string, base style) []span {
	var out []span
	add := func(text string, st style) {
		if text != "" {
			out = append(out, span{entities.Replace(text), st})
		}
	}
	last := 0
	for _, m := range mrkToken.FindAllStringIndex(s, -1) {
		tok := s[m[0]:m[1]]
		// Emphasis only at word boundaries, as Slack does.
		if (tok[0] == '*' || tok[0] == '_') && m[0] > 0 && !strings.ContainsRune(" ([\n", rune(s[m[0]-1])) {
			continue
		}
		add(s[last:m[0]], base)
		last = m[1]
		st := base
		switch tok[0] {
		case '<':
			inner := tok[1 : len(tok)-1]
			target, label, _ := strings.Cut(inner, "|")
			switch {
			case strings.HasPrefix(target, "!date^"):
				add(label, st)
			case strings.HasPrefix(target, "@"), strings.HasPrefix(target, "#"):
				st.mention, st.col = true, colLink
				if label == "" {
					label = target
				}
				add(label, st)
			default:
				st.link, st.col = true, colLink
				if label == "" {
					label = target
				}
				add(label, st)
			}
		case '`':
			st.code, st.col = true, colCode
			out = append(out, span{entities.Replace(tok[1 : len(tok)-1]), st})
		case ':':
			st.emoji = tok[1 : len(tok)-1]
			out = append(out, span{tok, st})
		case '*':
			st.bold = true
			out = append(out, parseMrkdwn(tok[1:len(tok)-1], st)...)
		case '_':
			st.italic = true
			out = append(out, parseMrkdwn(tok[1:len(tok)-1], st)...)
		}
	}
	add(s[last:], base)
	return out
}

// flow lays spans out from (x, y) within width, wrapping on spaces, and returns the height used.
// With draw false it only measures.
func (c *canvas) flow(spans []span, x, y, width, lineH float64, draw bool) float64 {
	cx, baseline := x, y+lineH*0.78
	lines := 1.0
	for _, sp := range spans {
		if sp.st.emoji != "" {
			w := sp.st.size * 1.25
			if cx+w > x+width && cx > x {
				cx, baseline, lines = x, baseline+lineH, lines+1
			}
			if draw {
				c.emoji(cx, baseline, sp.st.size, sp.st.emoji)
			}
			cx += w + 2
			continue
		}
		words := strings.SplitAfter(sp.text, " ")
		for _, wd := range words {
			if wd == "" {
				continue
			}
			w := c.measure(wd, sp.st)
			if cx > x && cx+c.measure(strings.TrimRight(wd, " "), sp.st) > x+width {
				cx, baseline, lines = x, baseline+lineH, lines+1
				wd = strings.TrimLeft(wd, " ")
				w = c.measure(wd, sp.st)
			}
			if draw {
				switch {
				case sp.st.code:
					c.roundRect(cx-1, baseline-sp.st.size*0.95, w+2, sp.st.size*1.3, 3, colCodeBG)
				case sp.st.mention:
					c.roundRect(cx-1, baseline-sp.st.size*0.95, w+2, sp.st.size*1.3, 3, colMention)
				}
				c.text(cx, baseline, wd, sp.st)
			}
			cx += w
		}
	}
	return lines * lineH
}
