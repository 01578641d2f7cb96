package main

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

func TestParseMrkdwn(t *testing.T) {
	spans := parseMrkdwn("*4,482 / 25,000* done, `/data` &lt;ok&gt; <!date^1^{time}|09:59 UTC> <@U0ALICE> :zzz: 5 * 3", style{size: 15})
	var got []string
	for _, s := range spans {
		switch {
		case s.st.bold:
			got = append(got, "B:"+s.text)
		case s.st.code:
			got = append(got, "C:"+s.text)
		case s.st.mention:
			got = append(got, "@:"+s.text)
		case s.st.emoji != "":
			got = append(got, "E:"+s.st.emoji)
		default:
			got = append(got, s.text)
		}
	}
	want := []string{"B:4,482 / 25,000", " done, ", "C:/data", " <ok> ", "09:59 UTC", " ", "@:@U0ALICE", " ", "E:zzz", " 5 * 3"}
	if len(got) != len(want) {
		t.Fatalf("parseMrkdwn = %q; want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span %d = %q; want %q", i, got[i], want[i])
		}
	}
}

func TestRenderDrawsBlocks(t *testing.T) {
	in := []byte(`{"kind":"message","channel":"#synth","time":"10:00","blocks":[
		{"type":"header","text":{"type":"plain_text","text":"synth · status"}},
		{"type":"section","text":{"type":"mrkdwn","text":"ETA *2 h*\n` + "```\\nlog line\\n```" + `"}},
		{"type":"data_visualization","title":"Throughput","chart":{"type":"line","series":[{"name":"tok/s","data":[{"label":"a","value":1},{"label":"b","value":3}]}],"axis_config":{"categories":["a","b"]}}},
		{"type":"actions","block_id":"rw:r=synth","elements":[{"type":"button","action_id":"stage_done","style":"primary","text":{"type":"plain_text","text":"Mark done"}},{"type":"overflow","action_id":"menu","options":[]}]},
		{"type":"context","elements":[{"type":"mrkdwn","text":"as of 10:00"}]}]}`)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.json"), in, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.png")
	if err := run(filepath.Join(dir, "in.json"), out, 1); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != int(width) || h < 400 {
		t.Errorf("image is %d×%d; want %d wide and tall enough for five blocks", w, h, int(width))
	}
	if !hasColour(img, colPrimary) || !hasColour(img, colSeries[0]) || !hasColour(img, colCodeBG) {
		t.Errorf("the primary button, the chart line or the code block was not drawn")
	}
	if err := run(filepath.Join(dir, "missing.json"), out, 1); err == nil {
		t.Errorf("a missing input did not fail")
	}
}

func hasColour(img image.Image, c interface{ RGBA() (r, g, b, a uint32) }) bool {
	r0, g0, b0, _ := c.RGBA()
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
		for x := bnd.Min.X; x < bnd.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r == r0 && g == g0 && b == b0 {
				return true
			}
		}
	}
	return false
}
