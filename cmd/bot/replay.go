package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"runwatch/reports"
)

// maxTraceLine bounds one trace line; observations are a few hundred bytes.
const maxTraceLine = 1 << 20

// replay runs the estimator over a trace, one output line per input line. A bad line is reported
// on its own output line with its number and the replay carries on, so one glitch loses nothing.
func replay(in io.Reader, out io.Writer, asJSON bool) error {
	r := reports.NewReplayer(reports.EstimateConfig{}, reports.ShiftConfig{}).AsShown()
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
		fmt.Fprintln(w, replayText(res))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read trace line %d: %w", n+1, err)
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d trace lines could not be read (see the output)", bad, n)
	}
	return nil
}

// replayText is one replay line as text: the time as the trace gives it (0.5, not rounded to 0 or 2), the state,
// the estimate with its range, SHIFT where a warning would go out, and the reason.
func replayText(res reports.ReplayLine) string {
	eta := "-"
	if res.ETAS != nil {
		eta = reports.Duration(*res.ETAS)
		if res.Low != nil && res.High != nil {
			eta += reports.Range(*res.ETAS, *res.Low, *res.High)
		}
	}
	shift := ""
	if res.Shift {
		shift = " SHIFT"
	}
	return fmt.Sprintf("t=%-8s %-8s eta=%-28s%s %s", strconv.FormatFloat(res.T, 'f', -1, 64), res.State, eta, shift,
		res.Reason)
}

func runReplay(ctx context.Context, a *app, args []string) error {
	fs := a.bareFlags()
	trace := fs.String("trace", "", "the trace file: JSONL, one observation per line ({\"t\", \"done\", \"total\", ...}); - for stdin")
	asJSON := fs.Bool("json", true, "print one JSON line per input line; --json=false prints one line of text each")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *trace == "" {
		return usageError{"--trace FILE is required"}
	}
	var in io.Reader = a.stdin
	if *trace != "-" {
		f, err := os.Open(*trace)
		if err != nil {
			return fmt.Errorf("open trace: %w", err)
		}
		defer f.Close()
		in = f
	}
	return replay(in, a.stdout, *asJSON)
}
