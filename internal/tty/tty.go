// Package tty keeps terminal control sequences out of what runwatch prints on a terminal. Process names,
// log lines, file names and a job's own output reach the console, `bot ask` and `bot status` as they are,
// and any of them can carry escape sequences: a screen clear, a clipboard write (OSC 52), a title change,
// a carriage return and an erase that hide the "(!!) Yes" printed before them. Writer strips them from
// everything written through it, once, at the edge.
package tty

import (
	"io"
	"regexp"
	"strings"
)

// escape matches an escape sequence whole: CSI (ESC [ … final), OSC (ESC ] … BEL or ESC \), the string
// sequences DCS, SOS, PM and APC (ESC P, X, ^, _ … ESC \), and two-byte escapes; a lone ESC at the end.
var escape = regexp.MustCompile("\x1b\\[[0-?]*[ -/]*[@-~]|\x1b\\][^\x07\x1b]*(\x07|\x1b\\\\)?|\x1b[PX^_][^\x1b]*(\x1b\\\\)?|\x1b[ -~]|\x1b$|\u009b[0-?]*[ -/]*[@-~]|\u009d[^\x07\u009c]*(\x07|\u009c)?")

// Clean is s without escape sequences and control characters, except tab and newline.
func Clean(s string) string {
	if !strings.ContainsFunc(s, control) {
		return s
	}
	s = escape.ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if control(r) {
			return -1
		}
		return r
	}, s)
}

// control reports whether r is a C0 or C1 control (or DEL) a terminal acts on; tab and newline print.
func control(r rune) bool {
	return r != '\t' && r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0)
}

// Writer writes through to w what is written to it, Clean. Each write is cleaned whole: runwatch writes
// lines, so a sequence is not split between writes.
func Writer(w io.Writer) io.Writer { return cleanWriter{w} }

type cleanWriter struct{ w io.Writer }

func (c cleanWriter) Write(p []byte) (int, error) {
	s := string(p)
	clean := Clean(s)
	if clean == s {
		return c.w.Write(p)
	}
	if _, err := io.WriteString(c.w, clean); err != nil {
		return 0, err
	}
	return len(p), nil
}
