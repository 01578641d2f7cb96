package conversation

import "strings"

// splitArgs splits command text into words, keeping a quoted phrase together:
// `stage "Training script updated" done` gives stage, Training script updated, done. Slack's
// clients often turn straight quotes into curly ones, so “…” and ‘…’ quote too; an unclosed
// quote runs to the end.
func splitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	inWord, closeQuote := false, rune(0)
	flush := func() {
		if inWord {
			out = append(out, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for _, r := range s {
		switch {
		case closeQuote != 0:
			if r == closeQuote {
				closeQuote = 0
				continue
			}
			cur.WriteRune(r)
		case r == '"' || r == '“' || r == '‘':
			inWord = true
			closeQuote = map[rune]rune{'"': '"', '“': '”', '‘': '’'}[r]
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\u00a0':
			flush()
		default:
			inWord = true
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}
