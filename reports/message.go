package reports

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// Message is an answer ready to render: Slack gets it as Block Kit with a mrkdwn fallback, the console
// as plain text. Sections hold Slack mrkdwn; anything that came from outside (a path, a log line, a
// command name) must pass through Esc or Code before it goes in.
type Message struct {
	Title    string   // plain text, shown as a header
	Sections []string // mrkdwn paragraphs, in order
	Context  []string // small print: sources, what failed
	// Charts are drawn by Slack (data_visualization blocks) after the sections; text transports
	// leave them out.
	Charts []Chart
	// Controls are the buttons under the message (Slack only).
	Controls *Controls
	// Plain, when set, is what plain text (Text) shows instead of the sections, already plain: for
	// wording plain text must say otherwise, such as a question quoted back, which mrkdwn sets as code
	// and plain text would leave bare in the sentence.
	Plain []string
}

// Slack's limits for the blocks we use.
const (
	maxBlocks      = 50
	maxSectionText = 3000
	maxHeaderText  = 150
	maxContextText = 2000
)

// Esc escapes text for mrkdwn: &, < and > become entities, so a log line can never ping
// <!channel> or forge a link.
func Esc(s string) string {
	s = strings.ReplaceAll(s, "&", "&amp;")
	s = strings.ReplaceAll(s, "<", "&lt;")
	return strings.ReplaceAll(s, ">", "&gt;")
}

// Code renders outside text as an inline code span.
func Code(s string) string {
	s = strings.ReplaceAll(s, "`", "'")
	s = strings.ReplaceAll(s, "\n", " ")
	return "`" + Esc(s) + "`"
}

// SlackTime renders t as a Slack date token, which each reader sees in their own time zone; the
// fallback (for clients and the console) is t in loc.
func SlackTime(t time.Time, loc *time.Location) string {
	lt := t.In(loc)
	return fmt.Sprintf("<!date^%d^{time}|%s>", t.Unix(), lt.Format("15:04 MST"))
}

// SlackDateTime is SlackTime with the date included.
func SlackDateTime(t time.Time, loc *time.Location) string {
	lt := t.In(loc)
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), lt.Format("Mon 2 Jan 15:04 MST"))
}

// Fallback is the message's notification text, sent beside its blocks: its mrkdwn, cut to 3,000
// characters (Slack truncates past 4,000).
func (m Message) Fallback() string { return TruncateRunes(m.Mrkdwn(), 3000) }

// Mrkdwn renders the message as one mrkdwn text (Slack's notification fallback).
func (m Message) Mrkdwn() string {
	var b strings.Builder
	if m.Title != "" {
		b.WriteString("*" + Esc(m.Title) + "*\n")
	}
	for _, s := range m.Sections {
		b.WriteString(s)
		b.WriteString("\n")
	}
	if len(m.Context) > 0 {
		b.WriteString("_" + strings.Join(m.Context, " · ") + "_\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// Text renders the message as plain text for a terminal.
func (m Message) Text() string {
	var b strings.Builder
	if m.Title != "" {
		b.WriteString(m.Title + "\n")
	}
	if m.Plain != nil {
		for _, s := range m.Plain {
			b.WriteString(s + "\n")
		}
	} else {
		for _, s := range m.Sections {
			b.WriteString(PlainText(s))
			b.WriteString("\n")
		}
	}
	for _, c := range m.Context {
		b.WriteString("  " + PlainText(c) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// Blocks renders the message as Block Kit within Slack's limits: at most 50 blocks, 3,000
// characters per section (long sections are split on line boundaries), 150 per header; charts and
// controls Slack would refuse are left out rather than have the whole message refused.
func (m Message) Blocks() []slack.Block {
	var blocks []slack.Block
	if m.Title != "" {
		blocks = append(blocks, slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, truncate(m.Title, maxHeaderText), true, false)))
	}
	var chunks []string
	for _, s := range m.Sections {
		chunks = append(chunks, splitText(s, maxSectionText)...)
	}
	var tail []slack.Block // charts and buttons come after the sections, before the context
	for _, c := range m.Charts {
		if b := c.block(); b != nil {
			tail = append(tail, b)
		}
	}
	if b := m.Controls.Block(); b != nil {
		tail = append(tail, b)
	}
	room := maxBlocks - len(blocks) - len(tail)
	if len(m.Context) > 0 {
		room--
	}
	if len(chunks) > room {
		dropped := len(chunks) - room + 1
		chunks = append(chunks[:room-1], fmt.Sprintf("_…%d more sections not shown; ask for a narrower answer._", dropped))
	}
	for _, c := range chunks {
		if strings.TrimSpace(c) == "" {
			continue
		}
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, c, false, false), nil, nil))
	}
	blocks = append(blocks, tail...)
	if len(m.Context) > 0 {
		text := truncate(strings.Join(m.Context, " · "), maxContextText)
		blocks = append(blocks, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, text, false, false)))
	}
	return blocks
}

// splitText cuts s into pieces of at most max bytes, on line boundaries where it can, and never
// inside a UTF-8 sequence or an entity.
func splitText(s string, max int) []string {
	var out []string
	for len(s) > max {
		cut := strings.LastIndex(s[:max], "\n")
		if cut <= 0 {
			cut = max
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			if amp := strings.LastIndex(s[:cut], "&"); amp >= 0 && amp > cut-6 && !strings.Contains(s[amp:cut], ";") {
				cut = amp
			}
		}
		out = append(out, s[:cut])
		s = strings.TrimPrefix(s[cut:], "\n")
	}
	return append(out, s)
}

func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// TruncateRunes cuts s to at most n characters (runes, not bytes) and an ellipsis.
func TruncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

var (
	slackToken = regexp.MustCompile(`<([^<>|]*)(\|([^<>]*))?>`)
	boldRE     = regexp.MustCompile(`(^|[\s(\[])\*([^*\s]|[^*\s][^*\n]*?[^*\s])\*($|[\s.,;:!?)\]])`)
	italicRE   = regexp.MustCompile(`(^|[\s(\[])_([^_\s]|[^_\s][^_\n]*?[^_\s])_($|[\s.,;:!?)\]])`)
	emojiRE    = regexp.MustCompile(`:([a-z0-9_+-]+):( ?)`) // with the space after it, which goes with a dropped one
	codeMark   = regexp.MustCompile("\x00[0-9]+\x00")
)

// emojiText is how the console shows the emoji runwatch uses; "" drops one that only decorates (with the
// space after it). Every emoji the code writes has an entry: TestEmojiTextCoversTheCode reads the sources.
var emojiText = map[string]string{
	"white_check_mark":         "[done]",
	"heavy_check_mark":         "[done]",
	"hourglass_flowing_sand":   "[....]",
	"white_large_square":       "[    ]",
	"x":                        "[FAIL]",
	"warning":                  "(!)",
	"rotating_light":           "(!!)",
	"large_green_circle":       "(ok)",
	"red_circle":               "(!!)",
	"large_yellow_circle":      "(~)",
	"zzz":                      "", // the words beside it say snoozed: "(snoozed) snoozed until" stuttered
	"chart_with_upwards_trend": "",
	"scissors":                 "(cut)",
	"zap":                      "(spec)",
	"grey_question":            "(?)",
	"information_source":       "(i)", // nothing to report yet: an empty checkbox ([    ]) read as a stray glyph
	"floppy_disk":              "(!)", // the state directory takes no writes
	"arrows_counterclockwise":  "(!)", // flapping
	"repeat":                   "(!)", // a warning back again
	"bell":                     "",    // warnings back on; a reminder
	"eyes":                     "",    // who is on a warning
	"raised_hand":              "",    // asked to wait
	"hourglass":                "",    // a warning no longer current: the words beside it say so
	"white_circle":             "",    // an instance standing by: the words beside it say so
	"black_circle":             "",    // an instance gone off duty: the words beside it say so
}

// Unglyphed is plain text without the console glyph of its leading emoji ("(!) completions ..." ->
// "completions ..."), for a line that goes inside another sentence: a warning's summary in its
// follow-up, the home tab, a claim.
func Unglyphed(plain string) string {
	for _, g := range emojiText {
		if g != "" && strings.HasPrefix(plain, g+" ") {
			return plain[len(g)+1:]
		}
	}
	return plain
}

// PlainText turns Slack mrkdwn into readable terminal text: dates and links show their fallback,
// emphasis markers and code ticks go, entities are decoded.
func PlainText(s string) string {
	s = slackToken.ReplaceAllStringFunc(s, func(tok string) string {
		m := slackToken.FindStringSubmatch(tok)
		target, label := m[1], m[3]
		switch {
		case strings.HasPrefix(target, "!date^"):
			if label != "" {
				return label
			}
			return target
		case strings.HasPrefix(target, "@"), strings.HasPrefix(target, "#"), strings.HasPrefix(target, "!"):
			if label != "" {
				return string(target[0]) + label
			}
			return target
		case label != "":
			return label + " (" + target + ")"
		}
		return target
	})
	s = strings.ReplaceAll(strings.ReplaceAll(s, "```", ""), "\x00", "")
	// Code spans are set aside while emphasis is removed, so their content stays as it is.
	parts := strings.Split(s, "`")
	var codes []string
	for i := 1; i < len(parts); i += 2 {
		codes = append(codes, parts[i])
		parts[i] = fmt.Sprintf("\x00%d\x00", len(codes)-1)
	}
	s = strings.Join(parts, "")
	for range 2 { // a second pass catches adjacent matches sharing a separator
		s = boldRE.ReplaceAllString(s, "$1$2$3")
		s = italicRE.ReplaceAllString(s, "$1$2$3")
	}
	s = emojiRE.ReplaceAllStringFunc(s, func(e string) string {
		name, space := strings.TrimSuffix(e, " "), ""
		if name != e {
			space = " "
		}
		t, ok := emojiText[strings.Trim(name, ":")]
		switch {
		case !ok:
			return e
		case t == "":
			return ""
		}
		return t + space
	})
	s = codeMark.ReplaceAllStringFunc(s, func(m string) string {
		i, _ := strconv.Atoi(strings.Trim(m, "\x00"))
		return codes[i]
	})
	s = strings.ReplaceAll(s, "&lt;", "<")
	s = strings.ReplaceAll(s, "&gt;", ">")
	s = strings.ReplaceAll(s, "&amp;", "&")
	return s
}
