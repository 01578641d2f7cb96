package probes

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/prometheus/common/model"
)

// Limits on one exposition line, checked before a line reaches expfmt's parser. That parser's cost
// grows with the square of a series' labels (3 series of 5,000 labels, 147 KB, took 14–21 s of CPU
// per parse), and a parse cannot be interrupted, so a body with absurd series is refused before it
// is parsed at all. Real engines export a handful of labels per series and lines of a few hundred
// bytes.
const (
	MetricsMaxLabels    = 128      // labels in one series
	MetricsMaxLineBytes = 64 << 10 // bytes in one line, label names and values included
)

// ErrAbsurdSeries marks an exposition refused because a line broke MetricsMaxLabels or
// MetricsMaxLineBytes, or a Prometheus answer refused because a series broke MetricsMaxLabels or
// PromMaxLabelBytes.
var ErrAbsurdSeries = errors.New("absurd series")

// metricsLineTooLong is the error for a line past MetricsMaxLineBytes.
func metricsLineTooLong(num int, n int) error {
	return fmt.Errorf("%w: line %d is %s long (limit %s); the scrape is refused", ErrAbsurdSeries, num, logTailSize(int64(n)), logTailSize(MetricsMaxLineBytes))
}

// metricsCheckLabels counts the labels of a sample line (the '=' signs inside its braces, outside
// quoted values) and refuses a line with more than MetricsMaxLabels. It is linear in the line.
func metricsCheckLabels(num int, line []byte) error {
	open := bytes.IndexByte(line, '{')
	if open < 0 {
		return nil
	}
	labels, quoted, escaped := 0, false, false
	for _, c := range line[open+1:] {
		switch {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case !quoted && c == '=':
			labels++
		case !quoted && c == '}':
			return metricsLabelCount(num, line[:open], labels)
		}
	}
	return metricsLabelCount(num, line[:open], labels)
}

func metricsLabelCount(num int, name []byte, labels int) error {
	if labels <= MetricsMaxLabels {
		return nil
	}
	name = bytes.TrimSpace(name)
	if len(name) > 80 || !metricsPlainName(name) {
		name = []byte("(a series)")
	}
	return fmt.Errorf("%w: line %d: %s has %d labels (limit %d); the scrape is refused", ErrAbsurdSeries, num, name, labels, MetricsMaxLabels)
}

func metricsPlainName(b []byte) bool {
	for i, c := range b {
		if !metricsNameByte(c, i == 0) {
			return false
		}
	}
	return len(b) > 0
}

// PromMaxLabelBytes bounds one label value of an answer: label values are names (an instance, a
// mount point, a device), and an answer holding a longer one is refused like a scrape line past
// MetricsMaxLineBytes, rather than carried into every message that names the series.
const PromMaxLabelBytes = 4 << 10

// promCheckLabels refuses an answer with a series past MetricsMaxLabels labels or a label value
// past PromMaxLabelBytes.
func promCheckLabels(v model.Value) error {
	check := func(m model.Metric) error {
		if len(m) > MetricsMaxLabels {
			return fmt.Errorf("%w: a series has %d labels (limit %d); the answer is refused", ErrAbsurdSeries, len(m), MetricsMaxLabels)
		}
		for k, lv := range m {
			if len(lv) > PromMaxLabelBytes {
				return fmt.Errorf("%w: a series' label %q is %s long (limit %s); the answer is refused",
					ErrAbsurdSeries, clipLine(string(k)), logTailSize(int64(len(lv))), logTailSize(PromMaxLabelBytes))
			}
		}
		return nil
	}
	switch v := v.(type) {
	case model.Vector:
		for _, s := range v {
			if err := check(s.Metric); err != nil {
				return err
			}
		}
	case model.Matrix:
		for _, s := range v {
			if err := check(s.Metric); err != nil {
				return err
			}
		}
	}
	return nil
}
