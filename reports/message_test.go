package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

func TestPlainText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"*Yes* — 2 processes", "Yes — 2 processes"},
		{"ETA *3 h 10 min* (2 h – 4 h)", "ETA 3 h 10 min (2 h – 4 h)"},
		{"_rough: a single sample_", "rough: a single sample"},
		{"writes `/data/hidden_states/x_1.bin` now", "writes /data/hidden_states/x_1.bin now"},
		{"`a*b*c` stays", "a*b*c stays"},
		{"done around <!date^1764420000^{time}|14:40 UTC>.", "done around 14:40 UTC."},
		{"see <https://example.com|the docs>", "see the docs (https://example.com)"},
		{"ask <@U123>", "ask @U123"},
		{"&lt;!channel&gt; &amp; co", "<!channel> & co"},
		{":white_check_mark: *gen* — done", "[done] gen — done"},
		// The unsnooze answer: a decoration goes with its space, not as a literal ":bell:".
		{":bell: Warnings for `demo` are back on.", "Warnings for demo are back on."},
		{"it said :bell:", "it said "},
		// The runs list and the snooze answer say "snoozed" in words: the glyph said it a second time.
		{"• demo — log :zzz: snoozed until 11:00 UTC", "• demo — log snoozed until 11:00 UTC"},
		{"a :custom_thing: stays", "a :custom_thing: stays"},
		{"5 * 3 = 15 and 2 * 2", "5 * 3 = 15 and 2 * 2"},
	}
	for _, tt := range tests {
		if got := PlainText(tt.in); got != tt.want {
			t.Errorf("PlainText(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestEscapeNeverPings(t *testing.T) {
	line := "Progress: 3/5 <!channel> <@U1|x> & <https://evil|click>"
	m := Message{Sections: []string{"log: " + Code(line), "raw: " + Esc(line)}}
	out := m.Mrkdwn()
	for _, bad := range []string{"<!channel>", "<@U1", "<https://"} {
		if strings.Contains(out, bad) {
			t.Errorf("Mrkdwn() = %q contains live markup %q", out, bad)
		}
	}
	b, _ := json.Marshal(m.Blocks())
	if strings.Contains(string(b), "<!channel>") || strings.Contains(string(b), `\u003c!channel\u003e`) {
		t.Errorf("blocks contain a live <!channel>: %s", b)
	}
	if got := PlainText(Code(line)); got != strings.ReplaceAll(line, "`", "'") {
		t.Errorf("PlainText(Code(%q)) = %q; want the line back", line, got)
	}
}

func TestBlocksStayInsideSlackLimits(t *testing.T) {
	long := strings.Repeat("• a line of a long answer with ünïcödé and &amp; entities\n", 300)
	var many []string
	for range 80 {
		many = append(many, "section")
	}
	tests := []struct {
		name string
		m    Message
	}{
		{"long section", Message{Title: strings.Repeat("T", 400), Sections: []string{long}, Context: []string{"ctx"}}},
		{"many sections", Message{Title: "x", Sections: many, Context: []string{strings.Repeat("c", 5000)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocks := tt.m.Blocks()
			if len(blocks) > maxBlocks {
				t.Errorf("%d blocks; Slack allows %d", len(blocks), maxBlocks)
			}
			for _, b := range blocks {
				switch b := b.(type) {
				case *slack.SectionBlock:
					if n := len(b.Text.Text); n > maxSectionText || !utf8.ValidString(b.Text.Text) {
						t.Errorf("section of %d bytes (valid UTF-8: %v)", n, utf8.ValidString(b.Text.Text))
					}
				case *slack.HeaderBlock:
					if n := len(b.Text.Text); n > maxHeaderText {
						t.Errorf("header of %d bytes", n)
					}
				}
			}
			// The JSON survives a round trip through slack-go's own decoder.
			raw, err := json.Marshal(slack.Blocks{BlockSet: blocks})
			if err != nil {
				t.Fatal(err)
			}
			var back slack.Blocks
			if err := json.Unmarshal(raw, &back); err != nil || len(back.BlockSet) != len(blocks) {
				t.Errorf("round trip: %v, %d blocks; want %d", err, len(back.BlockSet), len(blocks))
			}
		})
	}
	// Nothing is lost silently: the text of a long section is all there, split across blocks.
	m := Message{Sections: []string{long}}
	var joined strings.Builder
	for _, b := range m.Blocks() {
		joined.WriteString(b.(*slack.SectionBlock).Text.Text + "\n")
	}
	if strings.Count(joined.String(), "a line of") != 300 {
		t.Errorf("split lost lines: %d of 300", strings.Count(joined.String(), "a line of"))
	}
}

func TestSlackTimeHasFallback(t *testing.T) {
	ts := time.Date(2026, 11, 29, 14, 40, 0, 0, time.UTC)
	s := SlackTime(ts, time.UTC)
	if !strings.HasPrefix(s, "<!date^1795963200^") || PlainText(s) != "14:40 UTC" {
		t.Errorf("SlackTime = %q, plain %q", s, PlainText(s))
	}
}

func FuzzPlainText(f *testing.F) {
	for _, s := range []string{"*a* `b` _c_", "<!date^1^{time}|x>", "\x000\x00 `x`", "`unclosed", "&amp;&lt;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		PlainText(s)
		m := Message{Title: s, Sections: []string{s, Code(s), Esc(s)}, Context: []string{s}}
		if len(m.Blocks()) > maxBlocks {
			t.Errorf("too many blocks for %q", s)
		}
		m.Text()
	})
}

func TestUnglyphed(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"(!) completions that hit max_tokens rose", "completions that hit max_tokens rose"},
		{"(!!) Output resolves inside protected", "Output resolves inside protected"},
		{"[    ] review-samples", "review-samples"},
		{"completions (!) stay", "completions (!) stay"},
		{"(!)no space", "(!)no space"},
	} {
		if got := Unglyphed(tt.in); got != tt.want {
			t.Errorf("Unglyphed(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
	if got := Unglyphed(PlainText(":warning: the disk *fills* in 2 h")); got != "the disk fills in 2 h" {
		t.Errorf("Unglyphed(PlainText(:warning: ...)) = %q", got)
	}
}

// TestEmojiTextCoversTheCode reads the emoji the answers are written with (reports, the conversation, the posts
// and the Slack transport) and checks the
// console has a rendering for each: ":bell: Warnings for demo are back on." reached the terminal as it was.
func TestEmojiTextCoversTheCode(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	var more []string
	for _, dir := range []string{"../conversation", "../posts", "../slackapp"} {
		fs, _ := filepath.Glob(dir + "/*.go")
		if len(fs) == 0 {
			t.Fatalf("no Go files in %s: the answers moved; read them where they are now", dir)
		}
		more = append(more, fs...)
	}
	used := regexp.MustCompile(`:([a-z][a-z0-9_]+):`)
	seen := 0
	for _, f := range append(files, more...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range used.FindAllStringSubmatch(string(b), -1) {
			seen++
			if _, ok := emojiText[m[1]]; !ok {
				t.Errorf("%s writes :%s:, which the console shows as it is: give it an entry in emojiText", f, m[1])
			}
		}
	}
	if seen < 20 {
		t.Fatalf("found %d emoji in the sources; the glob or the pattern is wrong", seen)
	}
}

// TestMessagePlain: a message's Plain, when set, is its plain text in place of the sections; Slack
// still gets the sections, and the context is small print either way.
func TestMessagePlain(t *testing.T) {
	m := Message{Title: "t", Sections: []string{"answer `banana pancake`"}, Plain: []string{`answer "banana pancake"`}, Context: []string{"_small_"}}
	if got, want := m.Text(), "t\nanswer \"banana pancake\"\n  small"; got != want {
		t.Errorf("Text() = %q; want %q", got, want)
	}
	if got := m.Mrkdwn(); !strings.Contains(got, "answer `banana pancake`") || strings.Contains(got, `"banana pancake"`) {
		t.Errorf("Mrkdwn() = %q; want the sections, not Plain", got)
	}
}
