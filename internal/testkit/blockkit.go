package testkit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"runwatch/reports"
)

// Length and Span are the shapes of blockkit-limits.json's entries.
type (
	Length struct {
		Max int `json:"max_length"`
	}
	Span struct {
		Min int `json:"min_items"`
		Max int `json:"max_items"`
	}
)

// BlockKitLimits are Block Kit's limits as testdata/blockkit-limits.json gives them (from Slack's
// documentation; see /work/shared/fixtures/slack-spec).
type BlockKitLimits struct {
	Text     Length `json:"text"`
	ActionID Length `json:"action_id"`
	BlockID  Length `json:"block_id"`
	Button   struct {
		Text  Length `json:"text"`
		Value Length `json:"value"`
	} `json:"button"`
	Option struct {
		Text  Length `json:"text"`
		Value Length `json:"value"`
	} `json:"option"`
	Overflow struct {
		Options Span `json:"options"`
	} `json:"overflow"`
	Actions struct {
		Elements Span `json:"elements"`
	} `json:"actions"`
	Context struct {
		Elements Span `json:"elements"`
	} `json:"context"`
	Header struct {
		Text Length `json:"text"`
	} `json:"header"`
	Section struct {
		Text   Length `json:"text"`
		Fields struct {
			Max     int `json:"max_items"`
			ItemMax int `json:"item_max_length"`
		} `json:"fields"`
	} `json:"section"`
	DataVisualization struct {
		Title        Length `json:"title"`
		Series       Span   `json:"series"`
		SeriesName   Length `json:"series_name"`
		Data         Span   `json:"data"`
		PointLabel   Length `json:"point_label"`
		Categories   Span   `json:"categories"`
		CategoryName Length `json:"category_label"`
		AxisLabel    Length `json:"axis_label"`
	} `json:"data_visualization"`
}

var (
	limitsOnce sync.Once
	limits     BlockKitLimits
)

// Limits loads Block Kit's limits once.
func Limits(t testing.TB) BlockKitLimits {
	t.Helper()
	limitsOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "testdata", "blockkit-limits.json"))
		if err == nil {
			err = json.Unmarshal(b, &limits)
		}
		if err != nil || limits.Section.Text.Max == 0 || limits.DataVisualization.Data.Max == 0 || limits.Overflow.Options.Max == 0 {
			t.Fatalf("blockkit-limits.json: %v (section %d, chart points %d, overflow %d)", err,
				limits.Section.Text.Max, limits.DataVisualization.Data.Max, limits.Overflow.Options.Max)
		}
	})
	return limits
}

// ChartCheck lists what Slack would refuse in one data_visualization block (decoded JSON). The Slack
// transport's tests have one on slack-go's own validation of the block; testkit does not import the Slack SDK.
type ChartCheck func(block map[string]any, l BlockKitLimits) []string

// CheckBlocks fails the test for each of BlockKitProblems.
func CheckBlocks(t testing.TB, what string, raw []byte, maxBlocks int, charts ChartCheck) {
	t.Helper()
	for _, p := range BlockKitProblems(Limits(t), raw, maxBlocks, charts) {
		t.Errorf("%s: %s", what, p)
	}
}

// CheckMessage checks a message as the Web API would get it: its blocks within the limits, and
// a plain-text fallback for notifications and clients without blocks.
func CheckMessage(t testing.TB, what string, m reports.Message, charts ChartCheck) {
	t.Helper()
	raw, err := json.Marshal(m.Blocks())
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	CheckBlocks(t, what, raw, 50, charts)
	if fb := m.Fallback(); strings.TrimSpace(fb) == "" || utf8.RuneCountInString(fb) > 4000 {
		t.Errorf("%s: fallback text %q; want a non-empty text within 4,000 characters", what, fb)
	}
}

func runes(v any) int {
	s, _ := v.(string)
	return utf8.RuneCountInString(s)
}

func textOf(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["text"].(string)
	return s
}

// slackMarkup is what a "<…>" in mrkdwn may be: a mention (user, channel, user group, @here), a date, a
// link. Anything else is text that was not escaped: Slack shows "<run>" as a broken link, and "<!channel>"
// written by a log line would page a channel.
var slackMarkup = regexp.MustCompile(`^<(@[UW][A-Z0-9]+|#C[A-Z0-9]+|!(here|channel|everyone)|!subteam\^S[A-Z0-9]+|!date\^[0-9]+\^[^|>]*|https?://[^|>\s]+|mailto:[^|>\s]+)(\|[^<>]*)?>$`)

// markupToken is every "<…>" in a text, and every "&" that starts no entity.
var markupToken = regexp.MustCompile(`<[^<>]*>|<|>|&(amp;|lt;|gt;)?`)

// UnescapedMrkdwn lists what in a mrkdwn text should have been escaped (reports.Esc): a "<" or ">" that is
// no Slack markup, an "&" that starts no entity.
func UnescapedMrkdwn(s string) []string {
	var bad []string
	for _, m := range markupToken.FindAllString(s, -1) {
		switch {
		case strings.HasPrefix(m, "&"):
			if m == "&" {
				bad = append(bad, "&")
			}
		case !slackMarkup.MatchString(m):
			bad = append(bad, m)
		}
	}
	return bad
}

// BlockKitProblems lists what in raw (a JSON array of blocks) Slack would refuse: the block count,
// header, section, context, actions and button/menu limits; a data_visualization block is charts's to
// check (nil: it is a problem, since nothing checked it). Mrkdwn texts must be escaped (UnescapedMrkdwn).
func BlockKitProblems(l BlockKitLimits, raw []byte, maxBlocks int, charts ChartCheck) []string {
	var problems []string
	errf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	var blocks []map[string]any
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return []string{"blocks are not JSON: " + err.Error()}
	}
	if len(blocks) == 0 || len(blocks) > maxBlocks {
		errf("%d blocks; want 1 to %d", len(blocks), maxBlocks)
	}
	ids := map[string]bool{}
	checkMrkdwn := func(where string, v any) {
		m, _ := v.(map[string]any)
		if m["type"] != "mrkdwn" {
			return
		}
		if bad := UnescapedMrkdwn(textOf(m)); len(bad) > 0 {
			errf("%s: mrkdwn not escaped: %q in %q", where, bad, textOf(m))
		}
	}
	checkElement := func(e map[string]any) {
		if n := runes(e["action_id"]); n > l.ActionID.Max {
			errf("action_id of %d characters", n)
		}
		switch e["type"] {
		case "button":
			if n := utf8.RuneCountInString(textOf(e["text"])); n == 0 || n > l.Button.Text.Max {
				errf("button text %q is %d characters", textOf(e["text"]), n)
			}
			if n := runes(e["value"]); n > l.Button.Value.Max {
				errf("button value of %d characters", n)
			}
		case "overflow":
			opts, _ := e["options"].([]any)
			if len(opts) < l.Overflow.Options.Min || len(opts) > l.Overflow.Options.Max {
				errf("overflow with %d options", len(opts))
			}
			for _, o := range opts {
				om, _ := o.(map[string]any)
				if n := utf8.RuneCountInString(textOf(om["text"])); n == 0 || n > l.Option.Text.Max {
					errf("option text of %d characters", n)
				}
				if n := runes(om["value"]); n > l.Option.Value.Max {
					errf("option value of %d characters", n)
				}
			}
		default:
			errf("element type %v is not one runwatch means to send", e["type"])
		}
	}
	for i, b := range blocks {
		if id, _ := b["block_id"].(string); id != "" {
			if utf8.RuneCountInString(id) > l.BlockID.Max || ids[id] {
				errf("block %d: block_id %q too long or not unique", i, id)
			}
			ids[id] = true
		}
		switch b["type"] {
		case "header":
			if n := utf8.RuneCountInString(textOf(b["text"])); n == 0 || n > l.Header.Text.Max {
				errf("header of %d characters", n)
			}
		case "section":
			if n := utf8.RuneCountInString(textOf(b["text"])); n == 0 || n > l.Section.Text.Max {
				errf("section %d of %d characters", i, n)
			}
			checkMrkdwn(fmt.Sprintf("section %d", i), b["text"])
			if fs, _ := b["fields"].([]any); len(fs) > l.Section.Fields.Max {
				errf("section with %d fields", len(fs))
			}
			if acc, ok := b["accessory"].(map[string]any); ok {
				checkElement(acc)
			}
		case "context":
			els, _ := b["elements"].([]any)
			if len(els) == 0 || len(els) > l.Context.Elements.Max {
				errf("context with %d elements", len(els))
			}
			for _, e := range els {
				if n := utf8.RuneCountInString(textOf(e)); n == 0 || n > l.Text.Max {
					errf("context text of %d characters", n)
				}
				checkMrkdwn(fmt.Sprintf("context %d", i), e)
			}
		case "actions":
			els, _ := b["elements"].([]any)
			if len(els) == 0 || len(els) > l.Actions.Elements.Max {
				errf("actions with %d elements", len(els))
			}
			for _, e := range els {
				em, _ := e.(map[string]any)
				checkElement(em)
			}
		case "divider":
		case "data_visualization":
			if charts == nil {
				errf("block %d: a data_visualization block nothing checked", i)
				continue
			}
			problems = append(problems, charts(b, l)...)
		default:
			errf("block type %v is not one runwatch means to send", b["type"])
		}
	}
	return problems
}
