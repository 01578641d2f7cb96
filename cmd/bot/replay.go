package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"runwatch/reports"
)

// maxTraceLine bounds one trace line; observations are a few hundred bytes.
const maxTraceLine = 1 << 20

// replay runs the estimator over a trace, one output line per input line. A bad line is reported
// on its own output line with its number and the replay carries on, so one glitch loses nothing.
func replay(in io.Reader, out io.Writer, asJSON bool) error {
	r := reports.NewReplayer(reports.EstimateConfig{}, reports.ShiftConfig{})
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxTraceLine)
	w := bufio.NewWriter(out)
	defer w.Flush()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	n, bad := 0, 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		o, err := reports.ParseObservation([]byte(line))
		if err != nil {
			bad++
			if asJSON {
				enc.Encode(map[string]any{"line": n, "error": err.Error()})
			} else {
				fmt.Fprintf(w, "line %d: %v\n", n, err)
			}
			continue
		}
		res := r.Step(o)
		if asJSON {
			if err := enc.Encode(res); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			continue
		}
		eta := "-"
		if res.ETAS != nil {
			eta = reports.Duration(*res.ETAS)
		}
		shift := ""
		if res.Shift {
			shift = " SHIFT"
		}
		fmt.Fprintf(w, "t=%-8.0f %-8s eta=%-12s%s %s\n", res.T, res.State, eta, shift, res.Reason)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read trace line %d: %w", n+1, err)
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d trace lines could not be read (see the output)", bad, n)
	}
	return nil
}
