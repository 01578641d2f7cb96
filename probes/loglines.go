package probes

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
)

// logLinesWindow is how much of a log's end LastLines reads: a bounded cost whatever the file.
const logLinesWindow = 64 << 10

// LastLines returns up to n of the last lines of the log at path, each cut to lineMax bytes on a
// character boundary, invalid UTF-8 replaced. It reads at most the last 64 KiB, refuses what is
// not a regular file (a FIFO could block), and runs through the guard so a hung mount cannot
// pile up stuck reads: a second call on the same path waits for the first.
func (g *Guard) LastLines(ctx context.Context, path string, n, lineMax int) ([]string, error) {
	v, err := g.do(ctx, "lastlines\x00"+path, func() (any, error) { return lastLines(path, n, lineMax) })
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return v.([]string), nil
}

func lastLines(path string, n, lineMax int) ([]string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, logTailUnwrapPath(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, logTailUnwrapPath(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s)", ErrNotRegular, logTailKind(fi.Mode()))
	}
	off := max(fi.Size()-logLinesWindow, 0)
	buf := make([]byte, fi.Size()-off)
	k, err := f.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return splitLastLines(buf[:k], off > 0, n, lineMax), nil
}

// splitLastLines returns the last n lines of buf; partialHead says buf starts mid-line (that line
// is dropped). Trailing empty lines are skipped.
func splitLastLines(buf []byte, partialHead bool, n, lineMax int) []string {
	if partialHead {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		} else {
			return nil
		}
	}
	buf = bytes.TrimRight(buf, "\r\n")
	if len(buf) == 0 || n <= 0 {
		return nil
	}
	lines := bytes.Split(buf, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		l = bytes.TrimRight(l, "\r")
		// tqdm redraws with carriage returns: the last redraw is what a terminal shows.
		if i := bytes.LastIndexByte(l, '\r'); i >= 0 {
			l = l[i+1:]
		}
		line := string(bytes.ToValidUTF8(l, []byte("\uFFFD")))
		if lineMax > 0 && len(line) > lineMax {
			line = ClipText(line, lineMax) + "…"
		}
		out = append(out, line)
	}
	return out
}
