package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// YAML's own syntax errors point where its parser gave up, which for bad indentation is often the start of
// the enclosing block (line 1), and say nothing of the usual cause. syntaxError looks for the line a
// person would fix first: one indented to no level of the lines around it, or an unquoted ${VAR} in a
// bracketed list or mapping.

// yamlLine is the line number a yaml error names.
var yamlLine = regexp.MustCompile(`line (\d+):`)

// syntaxError turns a YAML parse error into one that names the line to fix and a hint.
func syntaxError(b []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if line, what, ok := badIndent(b); ok {
		return fmt.Errorf("line %d: bad indentation: %s (YAML said: %s)", line, what, strings.TrimSpace(yamlLine.ReplaceAllString(msg, "")))
	}
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	if strings.Contains(msg, "unknown escape character") {
		if at, key, esc, ok := badEscape(b, line); ok {
			return fmt.Errorf("line %d: %sin double quotes a backslash must be doubled (%s is not an escape YAML knows): write %s, or put the value in single quotes, where a backslash stays as it is",
				at, key, esc, `\`+esc)
		}
	}
	if strings.Contains(msg, "unexpected end of stream") {
		if at, q, ok := unclosedQuote(b); ok {
			return fmt.Errorf("line %d: the value opened with %s on this line is never closed: end it with %s (YAML said: %s)", at, q, q, strings.TrimSpace(yamlLine.ReplaceAllString(msg, "")))
		}
	}
	if dl, ok := unquotedVar(b); ok {
		return fmt.Errorf("line %d: %s; quote values that start with ${ (write \"${VAR}\"): in YAML a { starts a mapping", dl, strings.TrimSpace(yamlLine.ReplaceAllString(msg, "")))
	}
	if strings.Contains(msg, "did not find expected ',' or ']'") || strings.Contains(msg, "did not find expected ',' or '}'") {
		// YAML names the line before the one that opened the list (its context, counted from 0): say the
		// line with the bracket that is never closed.
		if at, open, ok := unclosedFlow(b); ok {
			return fmt.Errorf("line %d: the %s opened on this line is never closed (YAML said: %s)", at, open, strings.TrimSpace(yamlLine.ReplaceAllString(msg, "")))
		}
	}
	if line > 0 {
		return fmt.Errorf("line %d: %s", line, strings.TrimSpace(yamlLine.ReplaceAllString(msg, "")))
	}
	return fmt.Errorf("parse: %s", msg)
}

// unquotedVar finds the first line with ${ outside quotes in a flow context ([...] or {...}) or right
// after a list dash, where YAML reads the brace as a mapping.
func unquotedVar(b []byte) (int, bool) {
	for i, raw := range strings.Split(string(b), "\n") {
		line := stripComment(raw)
		j := strings.Index(line, "${")
		if j < 0 {
			continue
		}
		before := line[:j]
		if strings.Count(before, `"`)%2 == 1 || strings.Count(before, `'`)%2 == 1 {
			continue // inside quotes
		}
		if strings.ContainsAny(before, "[{,") || strings.HasSuffix(strings.TrimSpace(before), "-") {
			return i + 1, true
		}
	}
	return 0, false
}

// unclosedFlow finds the first line that opens a [ or { outside quotes and comments and does not close
// it there, nor on the lines that follow before a line at its own indentation or less.
func unclosedFlow(b []byte) (int, string, bool) {
	lines := strings.Split(string(b), "\n")
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	for i, raw := range lines {
		depth, first := 0, byte(0)
		quote := byte(0)
		for _, c := range []byte(stripComment(raw)) {
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '[' || c == '{':
				if depth == 0 {
					first = c
				}
				depth++
			case c == ']' || c == '}':
				depth--
			}
		}
		if depth <= 0 {
			continue
		}
		// A flow list may go on over the lines below it, indented further, and close there.
		for _, next := range lines[i+1:] {
			if strings.TrimSpace(next) == "" {
				continue
			}
			if indent(next) <= indent(raw) {
				break
			}
			depth -= strings.Count(next, "]") + strings.Count(next, "}") - strings.Count(next, "[") - strings.Count(next, "{")
		}
		if depth > 0 {
			return i + 1, map[byte]string{'[': "list [", '{': "mapping {"}[first], true
		}
	}
	return 0, "", false
}

// dqEscapes drops a double-quoted value's escapes: \" inside it closes nothing.
var dqEscapes = strings.NewReplacer(`\\`, "", `\"`, "")

// opensQuote reports whether a value opens a quote it does not close on its line, and which.
func opensQuote(v string) (string, bool) {
	if strings.HasPrefix(v, `"`) && strings.Count(dqEscapes.Replace(v), `"`)%2 == 1 {
		return `"`, true
	}
	if strings.HasPrefix(v, `'`) && strings.Count(v, `'`)%2 == 1 { // '' inside is one quote: the count stays even
		return `'`, true
	}
	return "", false
}

// unclosedQuote finds the first line whose value opens a quote it does not close: YAML reads on to the end
// of the file for the closing quote and names only the end of the stream.
func unclosedQuote(b []byte) (int, string, bool) {
	for i, raw := range strings.Split(string(b), "\n") {
		body := strings.TrimLeft(raw, " ")
		for strings.HasPrefix(body, "- ") {
			body = strings.TrimLeft(body[2:], " ")
		}
		v := body
		if k, rest, ok := strings.Cut(body, ": "); ok && !strings.ContainsAny(k, `"'`) {
			v = strings.TrimSpace(rest)
		}
		if q, ok := opensQuote(v); ok {
			return i + 1, q, true
		}
	}
	return 0, "", false
}

// badIndent finds the first line indented to a column that matches no open block: deeper than a line
// that opens none, or back out to a column no enclosing key used. Lines inside block scalars (| and >),
// flow collections and multi-line quotes are not checked.
func badIndent(b []byte) (int, string, bool) {
	type level struct {
		col  int
		line int // the line that opened it
		last int // the last line at its column
	}
	var stack []level
	opens := false  // the previous content line ends with ':' (a block follows)
	itemCol := -1   // the previous line is a list item "- key: v": its keys sit at this column
	scalarCol := -1 // inside a block scalar started by a key at this column
	depth := 0      // open flow brackets
	for i, raw := range strings.Split(string(b), "\n") {
		n := i + 1
		line := strings.TrimRight(stripComment(raw), " \t\r")
		content := strings.TrimLeft(line, " ")
		if content == "" || strings.HasPrefix(content, "---") {
			continue
		}
		col := len(line) - len(content)
		if scalarCol >= 0 {
			if col > scalarCol {
				continue
			}
			scalarCol = -1
		}
		if depth > 0 {
			depth += strings.Count(content, "[") + strings.Count(content, "{") - strings.Count(content, "]") - strings.Count(content, "}")
			continue
		}
		if strings.HasPrefix(content, "\t") || strings.Contains(raw[:len(raw)-len(strings.TrimLeft(raw, " \t"))], "\t") {
			return n, "a tab in the indentation (YAML indents with spaces only)", true
		}
		var closed *level // the innermost level this line backs out of
		for len(stack) > 0 && stack[len(stack)-1].col > col {
			closed = &stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
		switch {
		case len(stack) == 0 || stack[len(stack)-1].col < col:
			if len(stack) > 0 && !opens && col != itemCol {
				if itemCol >= 0 {
					return n, fmt.Sprintf("%q is indented %d spaces; the keys of the list item on line %d are at %d",
						content, col, stack[len(stack)-1].line, itemCol), true
				}
				if closed != nil {
					// Between two levels: most often one space short of the keys above it.
					return n, fmt.Sprintf("%q is indented %d spaces, between the levels above it: %d (line %d) and %d",
						content, col, closed.col, closed.last, stack[len(stack)-1].col), true
				}
				return n, fmt.Sprintf("%q is indented deeper than line %d, which opens no block", content, stack[len(stack)-1].line), true
			}
			stack = append(stack, level{col, n, n})
		case stack[len(stack)-1].col == col:
			stack[len(stack)-1].last = n
		case stack[len(stack)-1].col > col:
			return n, fmt.Sprintf("%q is indented %d spaces, which matches no enclosing level", content, col), true
		}
		// What this line opens for the next.
		body := content
		itemCol = -1
		for strings.HasPrefix(body, "- ") {
			rest := strings.TrimLeft(body[2:], " ")
			itemCol = col + (len(content) - len(body)) + (len(body) - len(rest))
			body = rest
			if strings.Contains(body, ": ") || strings.HasSuffix(body, ":") {
				stack = append(stack, level{itemCol, n, n})
			}
		}
		if itemCol >= 0 && !(strings.Contains(body, ": ") || strings.HasSuffix(body, ":")) {
			itemCol = -1
		}
		opens = strings.HasSuffix(body, ":") || body == "-"
		if k, v, ok := strings.Cut(body, ": "); ok && !strings.ContainsAny(k, `"'`) {
			v = strings.TrimSpace(v)
			if strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">") {
				scalarCol = col
				if itemCol >= 0 {
					scalarCol = itemCol
				}
			}
			if strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{") {
				depth = strings.Count(v, "[") + strings.Count(v, "{") - strings.Count(v, "]") - strings.Count(v, "}")
			}
			if _, ok := opensQuote(v); ok {
				return 0, "", false // a multi-line quoted value: leave the judgement to YAML
			}
		}
	}
	return 0, "", false
}

// stripComment drops a # comment that is not inside quotes.
func stripComment(line string) string {
	inS, inD := false, false
	for i, c := range line {
		switch c {
		case '\'':
			if !inD {
				inS = !inS
			}
		case '"':
			if !inS {
				inD = !inD
			}
		case '#':
			if !inS && !inD && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
				return line[:i]
			}
		}
	}
	return line
}

// yamlEscapes are the characters YAML allows after a backslash in a double-quoted value.
const yamlEscapes = "0abt\tnvfre \"/\\N_LPxuU"

// badEscape finds, from line from on, the first double-quoted value holding a backslash YAML does not know
// (a regex's \d or \s): its line, "key: " of the line when it has one, and the escape. YAML names neither
// the key nor the usual cause, a regex written in double quotes.
func badEscape(b []byte, from int) (int, string, string, bool) {
	lines := strings.Split(string(b), "\n")
	for i := max(from, 1) - 1; i < len(lines); i++ {
		raw := lines[i]
		in := false
		for j := 0; j < len(raw); j++ {
			switch c := raw[j]; {
			case c == '"':
				in = !in
			case c == '\\' && in && j+1 < len(raw):
				if !strings.ContainsRune(yamlEscapes, rune(raw[j+1])) {
					key := ""
					if k, _, ok := strings.Cut(strings.TrimLeft(strings.TrimSpace(raw), "- "), ":"); ok && !strings.ContainsAny(k, `"'`) {
						key = k + ": "
					}
					return i + 1, key, raw[j : j+2], true
				}
				j++
			}
		}
	}
	return 0, "", "", false
}
