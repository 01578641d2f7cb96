package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Progress is what one progress line says.
type Progress struct {
	Done, Total int64
	Errors      int64   // 0 when the format has none
	Elapsed     float64 // seconds since the job started, 0 when unknown
	AvgTokens   float64 // mean completion tokens so far, 0 when unknown
	Rate        float64 // items/s as printed, 0 when unknown
	Format      string  // "progress", "tqdm" or "custom"
	Desc        string  // a tqdm bar's description ("Processed prompts"), "" for none
	Line        string  // the matched line, valid UTF-8, at most 300 bytes
}

// LogFile identifies the file a reading came from, so callers detect rotation
// (inode changed) and truncation (size shrank).
type LogFile struct {
	Path    string
	Inode   uint64
	Size    int64
	ModTime time.Time
}

// LogReading is one read of a job log.
type LogReading struct {
	Progress Progress
	File     LogFile
	// Foreign are the progress bars in the part of the log read that are not the job's, each
	// description once, the newest first.
	Foreign []ForeignBar
}

// ErrNoProgress is returned (wrapped) when the tail of a log holds no line
// that any known progress format matches.
var ErrNoProgress = errors.New("no progress line")

// ErrLineTooLong is returned (wrapped, together with ErrNoProgress) when the
// newest line of a log does not fit in the largest tail window, so it cannot
// be inspected at constant cost.
var ErrLineTooLong = errors.New("the last line is longer than that")

// ErrNotRegular is returned (wrapped) when the log path names a FIFO, a
// directory, a socket or a device: tailing those could block or never end.
var ErrNotRegular = errors.New("not a regular file")

const (
	logTailWindow  = 64 << 10 // first read: enough for hundreds of tqdm updates
	logTailCap     = 4 << 20  // widest read; bounds the cost whatever the file size
	logTailLineMax = 300      // Progress.Line limit, in bytes
	logTailRetries = 3        // re-reads when the file shrinks under us
)

// Log reads the newest progress from the end of one job log. Each Read opens
// the path afresh, so a rotated or truncated log is followed without any
// bookkeeping. A Log is safe for concurrent use; reads do not overlap.
type Log struct {
	path   string
	custom *regexp.Regexp
	guard  *Guard
}

// NewLog returns a probe for the log at path. custom, when not nil, is tried
// before the built-in formats; build it with config.CompileProgressPattern, which checks its
// named groups.
func NewLog(path string, custom *regexp.Regexp) *Log {
	return &Log{path: path, custom: custom, guard: newFailFastGuard()}
}

// Read returns the newest progress line of the log and the identity of the
// file it came from. The read goes through a fail-fast Guard so that ctx can
// abandon it when the filesystem hangs; readers at the same moment share one
// read, and while an abandoned read is still blocked, further reads fail at
// once instead of piling up.
//
// want is what is known of the job (its total): a line that contradicts it is not the job's, and is
// named in Foreign instead.
func (l *Log) Read(ctx context.Context, want LogWant) (LogReading, error) {
	if err := ctx.Err(); err != nil {
		return LogReading{}, fmt.Errorf("read %s: %w", l.path, err)
	}
	// The read itself runs on: ctx only abandons the wait for it.
	// One read per log at a time, whatever want (the same for a run between samples): a hung
	// filesystem holds one thread, not one per want.
	v, err := l.guard.do(ctx, "read", func() (any, error) { return l.read(context.WithoutCancel(ctx), want) })
	switch {
	case err == nil:
		return v.(LogReading), nil
	case errors.Is(err, errStillHung):
		return LogReading{}, fmt.Errorf("read %s: an earlier read has not returned yet (is the filesystem hung?)", l.path)
	case ctx.Err() != nil:
		return LogReading{}, fmt.Errorf("read %s: %w", l.path, ctx.Err())
	}
	return LogReading{}, err
}

func (l *Log) read(ctx context.Context, want LogWant) (LogReading, error) {
	// O_NONBLOCK: opening a FIFO with no writer must not block; the fstat
	// below then rejects it.
	f, err := os.OpenFile(l.path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return LogReading{}, logMissing(l.path, logTailUnwrapPath(err))
	}
	if err != nil {
		return LogReading{}, fmt.Errorf("read %s: %w", l.path, logTailUnwrapPath(err))
	}
	defer f.Close()

	for attempt := 0; ; attempt++ {
		fi, err := f.Stat()
		if err != nil {
			return LogReading{}, fmt.Errorf("read %s: %w", l.path, logTailUnwrapPath(err))
		}
		if !fi.Mode().IsRegular() {
			return LogReading{}, fmt.Errorf("read %s: %w (%s)", l.path, ErrNotRegular, logTailKind(fi.Mode()))
		}
		file := LogFile{Path: l.path, Size: fi.Size(), ModTime: fi.ModTime()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			file.Inode = st.Ino
		}
		pk := &progressPicker{custom: l.custom, want: want}
		p, err := logTailFind(ctx, f, fi.Size(), pk)
		if errors.Is(err, errLogTailShrank) && attempt < logTailRetries {
			continue // truncated while we read; look again at the new size
		}
		if err != nil {
			return LogReading{File: file, Foreign: pk.foreign}, fmt.Errorf("read %s: %w", l.path, err)
		}
		return LogReading{Progress: p, File: file, Foreign: pk.foreign}, nil
	}
}

var errLogTailShrank = errors.New("file shrank while being read")

// logTailFind reads a window at the end of r (size bytes long), looks for
// the newest line of the job's progress in it (pk says which lines are), and
// doubles the window up to logTailCap when there is none. Only the newly
// exposed part of the file is scanned on each widening.
func logTailFind(ctx context.Context, r io.ReaderAt, size int64, pk *progressPicker) (Progress, error) {
	if size == 0 {
		return Progress{}, fmt.Errorf("%w (the file is empty)", ErrNoProgress)
	}
	var (
		buf      []byte
		off      = size // file offset of buf[0]
		scanEnd  = size // segments ending at or before this offset are still to be scanned
		examined int    // complete, non-empty segments looked at so far
		window   = int64(logTailWindow)
	)
	for {
		newOff := max(size-window, 0)
		grown := make([]byte, size-newOff)
		copy(grown[off-newOff:], buf)
		n, err := r.ReadAt(grown[:off-newOff], newOff)
		if int64(n) < off-newOff {
			if err == nil || errors.Is(err, io.EOF) {
				return Progress{}, errLogTailShrank
			}
			return Progress{}, err
		}
		buf, off = grown, newOff

		sc := logTailScan(buf, int(scanEnd-off), off > 0, scanEnd == size, pk)
		examined += sc.examined
		if p, ok := pk.pick(); ok {
			return p, nil
		}
		if off == 0 {
			return Progress{}, fmt.Errorf("%w in the whole file (%d bytes)%s", ErrNoProgress, size, pk.why())
		}
		if window >= logTailCap {
			if examined == 0 {
				return Progress{}, fmt.Errorf("%w in the last %s; %w", ErrNoProgress, logTailSize(window), ErrLineTooLong)
			}
			return Progress{}, fmt.Errorf("%w in the last %s%s", ErrNoProgress, logTailSize(window), pk.why())
		}
		if sc.headEnd >= 0 {
			scanEnd = off + int64(sc.headEnd)
		}
		if err := ctx.Err(); err != nil {
			return Progress{}, err
		}
		window *= 2
	}
}

type logTailScanResult struct {
	headEnd  int // index of the separator that ends the skipped head segment, -1 if none
	examined int
}

// logTailScan looks backwards through the segments of buf[:end] (split on
// '\n' and '\r') for progress lines, newest first, and hands each to pk until
// it has the job's. When partialHead is set the first segment may have started
// before buf and is not trusted. When atEOF is set the last segment is the
// file's last bytes with no separator after them: it may still be half
// written, so only a tqdm update — which ends with ']' and so cannot match
// unless complete — is accepted from it.
func logTailScan(buf []byte, end int, partialHead, atEOF bool, pk *progressPicker) logTailScanResult {
	res := logTailScanResult{headEnd: -1}
	first := true
	for i := end; ; {
		j := bytes.LastIndexAny(buf[:i], "\r\n")
		if j < 0 && partialHead {
			return res
		}
		seg := buf[j+1 : i]
		if len(seg) > 0 {
			p, ok := ParseProgress(seg, pk.custom)
			open := first && atEOF
			if !open {
				res.examined++
			}
			if ok && (!open || p.Format == "tqdm") && pk.add(p) {
				return res
			}
		}
		first = false
		if j < 0 {
			return res
		}
		res.headEnd = j
		i = j
	}
}

// ParseProgress parses one log line (no trailing \n/\r) where a progress line
// starts: at the line's start or after the logger's prefix (a timestamp, a
// level, a source location), never inside other text. custom may be nil; when
// it matches it wins over the built-in formats. Whose progress the line is
// (the job's, or another bar's) the caller decides.
func ParseProgress(line []byte, custom *regexp.Regexp) (Progress, bool) {
	var (
		p      Progress
		ok     bool
		starts = progressStarts(line)
	)
	if custom != nil {
		p, ok = logTailParseCustom(line, custom, starts)
	}
	if !ok {
		p, ok = logTailParseScript(line, starts)
	}
	if !ok {
		p, ok = logTailParseTqdm(line, starts)
	}
	if !ok {
		return Progress{}, false
	}
	p.Line = logTailLine(line)
	return p, true
}

// logTailNum matches a count with optional thousands separators.
const logTailNum = `(\d{1,3}(?:[,_]\d{3})+|\d+)`

var (
	logTailScriptRe  = regexp.MustCompile(`Progress:\s*` + logTailNum + `\s*/\s*` + logTailNum + `\b`)
	logTailErrorsRe  = regexp.MustCompile(`^\s*\(\s*` + logTailNum + `\s+errors?\s*\)`)
	logTailReqRateRe = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*req/s`)
	logTailAvgRe     = regexp.MustCompile(`avg completion:\s*(\d[\d,_]*(?:\.\d+)?)\s*tok`)
	logTailElapsedRe = regexp.MustCompile(`elapsed:\s*(\d[\dhms.:]*)`)

	// tqdm: "{desc}: {pct}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}{postfix}]".
	// The closing bracket is required, so a half-written update never matches.
	logTailTqdmRe = regexp.MustCompile(
		`(?:\d{1,3}%\|[^|]*\|\s*)?` +
			`(\d+(?:\.\d+)?[kMGTPEZY]?)/(\d+(?:\.\d+)?[kMGTPEZY]?)\s*` +
			`\[((?:\d+:)?\d+:\d\d)<(?:\?|(?:\d+:)?\d+:\d\d),\s*` +
			`(\?|\d+(?:\.\d+)?)\s*([kMGTPEZY]?)([^\s,\]/]*)/([^\s,\]]+)[^\]]*\]`)
)

// logTailParseScript parses the generation script's own line, e.g.
// "Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s".
// Everything after the counts is optional.
func logTailParseScript(line []byte, starts []int) (Progress, bool) {
	if !bytes.Contains(line, []byte("Progress:")) {
		return Progress{}, false // cheap test first: most log lines are not progress
	}
	m := logTailScriptRe.FindSubmatchIndex(line)
	if m == nil || !startsAt(starts, m[0]) {
		return Progress{}, false
	}
	done, ok1 := logTailInt(line[m[2]:m[3]])
	total, ok2 := logTailInt(line[m[4]:m[5]])
	if !ok1 || !ok2 {
		return Progress{}, false
	}
	p := Progress{Done: done, Total: total, Format: "progress"}
	rest := line[m[1]:]
	if sm := logTailErrorsRe.FindSubmatch(rest); sm != nil {
		p.Errors, _ = logTailInt(sm[1])
	}
	if sm := logTailReqRateRe.FindSubmatch(rest); sm != nil {
		p.Rate, _ = strconv.ParseFloat(string(sm[1]), 64)
	}
	if sm := logTailAvgRe.FindSubmatch(rest); sm != nil {
		p.AvgTokens, _ = logTailFloat(sm[1])
	}
	if sm := logTailElapsedRe.FindSubmatch(rest); sm != nil {
		p.Elapsed, _ = logTailSeconds(strings.TrimRight(string(sm[1]), ".:"))
	}
	return p, true
}

// logTailParseTqdm parses one tqdm update; the newest match on the line wins
// (a line may hold several when a tool wrote them without '\r').
func logTailParseTqdm(line []byte, starts []int) (Progress, bool) {
	if bytes.IndexByte(line, '<') < 0 || bytes.IndexByte(line, ']') < 0 {
		return Progress{}, false // cheap test first: every tqdm update has both
	}
	all := logTailTqdmRe.FindAllSubmatchIndex(line, -1)
	if all == nil {
		return Progress{}, false
	}
	// The first update starts the line, after its description; later ones are the same bar redrawn
	// without a carriage return.
	desc, anchored := barDesc(line, starts, all[0][0])
	if !anchored {
		return Progress{}, false
	}
	m := all[len(all)-1]
	g := func(i int) string { return string(line[m[2*i]:m[2*i+1]]) }
	done, ok1 := logTailScaled(g(1))
	total, ok2 := logTailScaled(g(2))
	elapsed, ok3 := logTailSeconds(g(3))
	if !ok1 || !ok2 || !ok3 || total <= 0 {
		return Progress{}, false
	}
	p := Progress{Done: done, Total: total, Elapsed: elapsed, Format: "tqdm", Desc: desc}
	if num := g(4); num != "?" {
		v, err := strconv.ParseFloat(num, 64)
		if err == nil {
			unit, per := g(6), g(7)
			switch {
			case per == "s":
				p.Rate = v * logTailPrefix(g(5))
			case unit == "s" && v > 0:
				p.Rate = 1 / v // "50.90s/it"
			}
			if math.IsInf(p.Rate, 0) {
				p.Rate = 0
			}
		}
	}
	return p, true
}

// logTailParseCustom applies a user pattern checked by config.CompileProgressPattern.
func logTailParseCustom(line []byte, re *regexp.Regexp, starts []int) (Progress, bool) {
	m := re.FindSubmatchIndex(line)
	if m == nil || !startsAt(starts, m[0]) {
		return Progress{}, false
	}
	p := Progress{Format: "custom"}
	var haveDone, haveTotal bool
	for i, name := range re.SubexpNames() {
		if name == "" || m[2*i] < 0 {
			continue
		}
		v := line[m[2*i]:m[2*i+1]]
		var ok bool
		switch name {
		case "done":
			p.Done, ok = logTailInt(v)
			haveDone = ok
		case "total":
			p.Total, ok = logTailInt(v)
			haveTotal = ok
		case "errors":
			p.Errors, _ = logTailInt(v)
		case "elapsed":
			p.Elapsed, _ = logTailSeconds(string(v))
		case "avg_tokens":
			p.AvgTokens, _ = logTailFloat(v)
		case "rate":
			p.Rate, _ = logTailFloat(v)
		}
	}
	return p, haveDone && haveTotal
}

// logTailInt parses a count that may carry thousands separators.
func logTailInt(b []byte) (int64, bool) {
	s := strings.NewReplacer(",", "", "_", "").Replace(strings.TrimSpace(string(b)))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

func logTailFloat(b []byte) (float64, bool) {
	s := strings.NewReplacer(",", "", "_", "").Replace(strings.TrimSpace(string(b)))
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// logTailScaled parses tqdm's unit-scaled counts ("980", "1.23k").
func logTailScaled(s string) (int64, bool) {
	mult := 1.0
	if n := len(s); n > 0 && strings.IndexByte("kMGTPEZY", s[n-1]) >= 0 {
		mult = logTailPrefix(s[n-1:])
		s = s[:n-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v*mult > math.MaxInt64/2 {
		return 0, false
	}
	return int64(math.Round(v * mult)), true
}

func logTailPrefix(p string) float64 {
	i := strings.Index("kMGTPEZY", p)
	if p == "" || i < 0 {
		return 1
	}
	return math.Pow(1000, float64(i+1))
}

// logTailSeconds parses "408", "408.5s", "1h02m03s", "00:13" or "3:22:32".
func logTailSeconds(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, ":") {
		var secs float64
		parts := strings.Split(s, ":")
		if len(parts) > 3 {
			return 0, false
		}
		for _, part := range parts {
			v, err := strconv.ParseUint(part, 10, 32)
			if err != nil {
				return 0, false
			}
			secs = secs*60 + float64(v)
		}
		return secs, true
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, false
		}
		return v, true
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false
	}
	return d.Seconds(), true
}

// logTailLine makes a line fit for a chat message: valid UTF-8, no
// surrounding blanks, at most logTailLineMax bytes, cut on a rune boundary.
func logTailLine(b []byte) string {
	return ClipText(strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD")), logTailLineMax)
}

// ClipText cuts s to at most n bytes without splitting a character.
func ClipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func logTailSize(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// logTailUnwrapPath drops the *fs.PathError layer so the message does not
// repeat the path; errors.Is(err, fs.ErrNotExist) still holds.
func logTailUnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func logTailKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "mode " + m.String()
}
