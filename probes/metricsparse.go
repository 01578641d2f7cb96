package probes

// Parsing an exposition: which lines reach expfmt's parser (metricsFilter), and reruns of the
// parser past bad lines (metricsDecode). Reading and the Engine built from the result are in
// metrics.go.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func metricsParse(ctx context.Context, kept []byte, orig []int) (Engine, error) {
	fams, skipped, err := metricsDecode(ctx, kept, orig)
	if err != nil {
		e := metricsEmpty()
		e.Skipped = skipped
		return e, err
	}
	e := metricsEngine(fams)
	e.Skipped = skipped
	return e, nil
}

// metricsDecode runs expfmt's text parser over the lines metricsFilter
// keeps. The parser stops at the first bad line; each bad line is reported
// (by its number in the original body), dropped, and the parse rerun.
func metricsDecode(ctx context.Context, kept []byte, orig []int) (map[string]*dto.MetricFamily, []string, error) {
	var (
		removed  []int // 1-based line numbers in kept, ascending
		skipped  []string
		firstBad int // the first invalid line's number in the body
	)
	for {
		if err := ctx.Err(); err != nil {
			return nil, skipped, fmt.Errorf("parse metrics: %w", err)
		}
		p := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := p.TextToMetricFamilies(ctxReader{ctx, metricsWithout(kept, removed)})
		if err == nil {
			if len(fams) == 0 && len(skipped) > 0 {
				return nil, nil, metricsNotExposition(firstBad, len(skipped))
			}
			return fams, skipped, nil
		}
		var pe expfmt.ParseError
		if !errors.As(err, &pe) {
			return nil, skipped, fmt.Errorf("parse metrics: %w", err)
		}
		line := pe.Line
		for _, r := range removed {
			if r <= line {
				line++
			}
		}
		text, ok := metricsLine(kept, line)
		if !ok || line > len(orig) {
			return nil, skipped, fmt.Errorf("parse metrics: %w", err)
		}
		if len(skipped) == 0 {
			firstBad = orig[line-1]
		}
		skipped = append(skipped, fmt.Sprintf("line %d: %s: %q", orig[line-1], pe.Msg, logTailLine(metricsClip(text))))
		if len(skipped) > metricsMaxSkipped {
			return nil, nil, metricsNotExposition(firstBad, len(skipped))
		}
		i, _ := slices.BinarySearch(removed, line)
		removed = slices.Insert(removed, i, line)
	}
}

// ctxReader ends its reads with ctx's error once ctx is done. expfmt's parser reads its input as it
// parses and stops at a read error, so one pass over a large exposition (8 MiB of 128-label series took
// 3.7 s of CPU, past a 2 s probe timeout, and came back as an answer) ends within a buffer of input of
// the deadline instead of after it: checking ctx only between passes left a pass unbounded.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// metricsFilter keeps the lines the parser has to see: samples and
// HELP/TYPE lines of the families metricsEngine reads (minus histogram
// buckets, of which only _sum and _count are used), every line that does
// not start with a plain metric name, and the first metricsHeadLines lines
// whatever they are, so that a body that is not an exposition at all is
// still recognised and reported. The
// rest — most of a vLLM scrape is latency histograms — is dropped unparsed,
// which keeps a 1 MiB scrape well under 20 ms. orig maps each kept line to
// its 1-based number in body. The result always ends with a newline.
func metricsFilter(r io.Reader) (kept []byte, orig []int, n int64, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte // a line longer than br's buffer, being assembled
	for num := 1; ; num++ {
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			line, err = br.ReadSlice('\n')
			line = append(long, line...)
			if len(line) > MetricsMaxLineBytes {
				return nil, nil, n + int64(len(line)), notMetrics{metricsLineTooLong(num, len(line))}
			}
		}
		n += int64(len(line))
		if len(line) > MetricsMaxLineBytes {
			return nil, nil, n, notMetrics{metricsLineTooLong(num, len(line))}
		}
		if len(line) > 0 && (num <= metricsHeadLines || metricsWanted(line)) {
			if err := metricsCheckLabels(num, line); err != nil {
				return nil, nil, n, notMetrics{err}
			}
			kept = append(kept, line...)
			if line[len(line)-1] != '\n' {
				kept = append(kept, '\n') // the parser wants a final newline
			}
			orig = append(orig, num)
		}
		if err == io.EOF {
			return kept, orig, n, nil
		}
		if err != nil {
			return nil, nil, n, err
		}
	}
}

// metricsWanted reports whether a line must go to the parser.
func metricsWanted(line []byte) bool {
	rest := bytes.TrimLeft(line, " \t")
	if len(rest) > 0 && rest[0] == '#' {
		rest = bytes.TrimLeft(rest[1:], " \t")
		if !bytes.HasPrefix(rest, []byte("HELP")) && !bytes.HasPrefix(rest, []byte("TYPE")) {
			return false // other comments mean nothing to the parser
		}
		rest = bytes.TrimLeft(rest[4:], " \t")
	}
	end := 0
	for end < len(rest) && metricsNameByte(rest[end], end == 0) {
		end++
	}
	if end == 0 || (end < len(rest) && rest[end] == '"') {
		return true // not a plain sample: let the parser judge it
	}
	name := rest[:end]
	if bytes.HasSuffix(name, []byte("_bucket")) {
		return false
	}
	return metricsKnownName(name)
}

// metricsNameByte reports whether c may appear in a legacy metric name.
func metricsNameByte(c byte, first bool) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}

// metricsWithout returns body minus the given lines (1-based, ascending).
func metricsWithout(body []byte, removed []int) io.Reader {
	if len(removed) == 0 {
		return bytes.NewReader(body)
	}
	var parts []io.Reader
	line, start, pos := 1, 0, 0
	for _, r := range removed {
		for line < r {
			pos += bytes.IndexByte(body[pos:], '\n') + 1
			line++
		}
		parts = append(parts, bytes.NewReader(body[start:pos]))
		pos += bytes.IndexByte(body[pos:], '\n') + 1
		line++
		start = pos
	}
	parts = append(parts, bytes.NewReader(body[start:]))
	return io.MultiReader(parts...)
}

// metricsNotExposition is the error for a body that is not a metrics exposition. It quotes
// nothing of the body: what answered may be another service (a redirect, a proxy's login page, a
// cloud metadata endpoint) whose text must not reach Slack.
func metricsNotExposition(firstBad, bad int) error {
	if bad > metricsMaxSkipped {
		return fmt.Errorf("not Prometheus text: more than %d invalid lines, the first at line %d (is this the metrics endpoint?)", metricsMaxSkipped, firstBad)
	}
	return fmt.Errorf("not Prometheus text: no valid metric (%s invalid, the first at line %d; is this the metrics endpoint?)", metricsPlural(bad, "line"), firstBad)
}

func metricsPlural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// metricsLine returns line n (1-based) of body.
func metricsLine(body []byte, n int) ([]byte, bool) {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(body, '\n')
		if j < 0 {
			return nil, false
		}
		body = body[j+1:]
	}
	if len(body) == 0 {
		return nil, false
	}
	if j := bytes.IndexByte(body, '\n'); j >= 0 {
		body = body[:j]
	}
	return body, true
}

func metricsClip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
