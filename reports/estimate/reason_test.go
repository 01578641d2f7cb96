package estimate

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"

	"runwatch/reports/format"
)

// TestOneSampleWithoutElapsed: a metrics-only run's first sample has finished items but no elapsed time; the
// answer says that is what is missing, not that nothing has finished.
func TestOneSampleWithoutElapsed(t *testing.T) {
	g := 565405.0
	e, _ := Compute([]Observation{{T: 1e9, Done: 300, Total: 25000, GenTokens: &g}}, Config{})
	if e.State != StateUnknown || !strings.Contains(e.Reason, "300 items finished") || !strings.Contains(e.Reason, "no elapsed time") {
		t.Errorf("one sample, 300 done, no elapsed: %s %q; want unknown, naming the 300 finished and the missing elapsed time", e.State, e.Reason)
	}
	e, _ = Compute([]Observation{{T: 1e9, Done: 0, Total: 25000, GenTokens: &g}}, Config{})
	if !strings.Contains(e.Reason, "no item finished yet") {
		t.Errorf("one sample, nothing done: %q; want it to say no item has finished", e.Reason)
	}
}

// TestReasonNamesTheDrain: near the end the items left × tokens ÷ tokens/s of the reason is well short of the
// ETA, because the batch drains; the reason says by how much, and mid-run, where the drain is a small share of
// the time left, it does not.
func TestReasonNamesTheDrain(t *testing.T) {
	hist := readTrace(t, "../testdata/trace_length_drift.jsonl")
	at := func(t float64) []Observation {
		for i, o := range hist {
			if o.T > t {
				return hist[:i]
			}
		}
		return hist
	}
	e, _ := Compute(at(17460), Config{})
	if e.Seconds == nil || e.TokensPerS <= 0 {
		t.Fatalf("at t=17460: %+v", e)
	}
	extra := *e.Seconds - e.ItemsLeft*e.TokensPerItem/e.TokensPerS
	if extra < 0.1**e.Seconds || !strings.Contains(e.Reason, "more for the batch draining at the end") {
		t.Errorf("at t=17460 (ETA %.0f s, %.0f s of it past the arithmetic): %q; want the drain named", *e.Seconds, extra, e.Reason)
	}
	if want := ", and " + format.Span(extra) + " more for the batch"; !strings.Contains(e.Reason, want) {
		t.Errorf("at t=17460: %q; want the %.0f s the drain adds (%q)", e.Reason, extra, want)
	}
	if e, _ := Compute(at(7200), Config{}); strings.Contains(e.Reason, "draining") {
		t.Errorf("mid-run at t=7200: %q; the drain is a small share of the time left and goes unsaid", e.Reason)
	}
}

// TestReasonLastItemSingular: with one item to go the reason said "1 items left × 93 tokens each" (peer small,
// and six answers of heldout ho-mixed-max); every answer of those traces says "1 item left" instead, and no
// answer says "1 items".
func TestReasonLastItemSingular(t *testing.T) {
	for _, trace := range []string{"../testdata/peer/small.jsonl", "../testdata/peer/heldout/ho-mixed-max.jsonl"} {
		hist := readTrace(t, trace)
		last := 0
		for i := 1; i <= len(hist); i++ {
			e, _ := Compute(hist[:i], Config{})
			if oneItems.MatchString(e.Reason) {
				t.Errorf("%s t=%v: %q; want 1 item, not 1 items", trace, hist[i-1].T, e.Reason)
			}
			if strings.Contains(e.Reason, "1 item left") {
				last++
			}
		}
		if last == 0 {
			t.Errorf("%s: no answer with one item left; want at least one saying \"1 item left\"", trace)
		}
	}
	if e, _ := Compute(readTrace(t, "../testdata/peer/small.jsonl")[:10], Config{}); !strings.Contains(e.Reason, " items left") {
		t.Errorf("mid-run: %q; want the items left in the plural", e.Reason)
	}
	// One sample with the first item finished: "a single observation: 1 items finished", "too early: 1 items
	// finished while 200 are in flight".
	g, el, running := 2000.0, 30.0, 200.0
	for _, o := range []Observation{{T: 1e9, Done: 1, Total: 25000, GenTokens: &g},
		{T: 1e9, Done: 1, Total: 25000, GenTokens: &g, Elapsed: &el, Running: &running}} {
		if e, _ := Compute([]Observation{o}, Config{}); oneItems.MatchString(e.Reason) || !strings.Contains(e.Reason, "1 item finished") {
			t.Errorf("one sample, 1 done: %q; want 1 item finished", e.Reason)
		}
	}
}

var oneItems = regexp.MustCompile(`(^|[^.0-9])1 items\b`) // not a rate's "15.1 items/s"

// TestLengthsJSON: the censored mean's fields are snake_case with their units, like the rest of --json.
func TestLengthsJSON(t *testing.T) {
	b, _ := json.Marshal(Lengths{Low: 1131, Point: 1376, High: 1622, Finished: 300, InFlight: 200, Age: 245605, FinishedMean: 1066})
	for _, k := range []string{`"low_tokens":1131`, `"point_tokens":1376`, `"high_tokens":1622`, `"finished_items":300`,
		`"in_flight_items":200`, `"in_flight_decoded_tokens":245605`, `"finished_mean_tokens":1066`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("Lengths JSON %s lacks %s", b, k)
		}
	}
}

// TestHighEndBounded: no answer over the peer corpus's queued trace (12 of whose answers put the high end at up
// to 8.35x the point without the bound) puts it past maxHighRatio times its point, and boundHigh leaves a
// range inside it alone.
func TestHighEndBounded(t *testing.T) {
	t.Parallel()
	hist := readTrace(t, "../testdata/peer/queued.jsonl")
	for i := 2; i <= len(hist); i++ {
		e, _ := Compute(hist[:i], Config{})
		if e.Seconds != nil && e.HighS != nil && *e.HighS > maxHighRatio**e.Seconds*(1+1e-9) {
			t.Errorf("t=%v: ETA %.0f s, high end %.0f s: past %gx", hist[i-1].T, *e.Seconds, *e.HighS, maxHighRatio)
		}
	}
	sec, lo, hi := 100.0, 80.0, 200.0
	if e := boundHigh(ETA{Seconds: &sec, LowS: &lo, HighS: &hi}); *e.HighS != 200 {
		t.Errorf("boundHigh(100 s, high 200 s) = %v; want it left alone", *e.HighS)
	}
	hi = 400
	if e := boundHigh(ETA{Seconds: &sec, LowS: &lo, HighS: &hi}); *e.HighS != 250 {
		t.Errorf("boundHigh(100 s, high 400 s) = %v; want 250", *e.HighS)
	}
}

// readTrace reads a committed trace (JSONL, one Observation a line). The sim package's ReadTrace would be the
// one to call, but it imports reports, which imports this package.
func readTrace(t *testing.T, path string) []Observation {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hist []Observation
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var o Observation
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		hist = append(hist, o)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return hist
}

// TestWindowsOf: a reason names the window of each figure, one window when they share it, "the whole run"
// for one that starts with the history (never when the history starts mid-job), and tokens per item apart from
// the rate only when there are lengths.
func TestWindowsOf(t *testing.T) {
	const now, start, block = 3600.0, 0.0, 60.0
	for _, c := range []struct {
		rateAt, lenAt float64
		lengths       bool
		want          string
	}{
		{0, 0, true, " (rates of the whole run)"},
		{20, 0, true, " (rates of the whole run)"},
		{2700, 2700, true, " (rates of the last 15 min)"},
		{2700, 2750, true, " (rates of the last 14 min)"},
		{0, 2700, true, " (tokens per item of the last 15 min, tok/s of the whole run)"},
		{2700, 0, true, " (tokens per item of the whole run, tok/s of the last 15 min)"},
		{1800, 3000, true, " (tokens per item of the last 10 min, tok/s of the last 30 min)"},
		{1800, 0, false, " (rates of the last 30 min)"},
	} {
		if got := windowsOf(now, start, window{at: c.rateAt}, window{at: c.lenAt}, block, c.lengths); got != c.want {
			t.Errorf("windowsOf(rate from %v, lengths from %v, lengths %v) = %q; want %q", c.rateAt, c.lenAt, c.lengths, got, c.want)
		}
	}
	// A history that starts mid-job is never "the whole run".
	for _, c := range []struct {
		rateAt, lenAt float64
		want          string
	}{
		{0, 0, " (rates of the last 1 h)"},
		{0, 2700, " (tokens per item of the last 15 min, tok/s of the last 1 h)"},
	} {
		if got := windowsOf(now, math.Inf(-1), window{at: c.rateAt}, window{at: c.lenAt}, block, true); got != c.want {
			t.Errorf("mid-job windowsOf(rate from %v, lengths from %v) = %q; want %q", c.rateAt, c.lenAt, got, c.want)
		}
	}
	// A figure that is a fitted line's latest value is not the mean of its window.
	for _, c := range []struct {
		rate, length window
		want         string
	}{
		{window{at: 1800, trend: true}, window{at: 0, trend: false}, " (tokens per item of the whole run, tok/s following the trend of the last 30 min)"},
		{window{at: 2700, trend: true}, window{at: 2700, trend: true}, " (rates following the trend of the last 15 min)"},
		{window{at: 2700, trend: false}, window{at: 2700, trend: true}, " (tokens per item following the trend of the last 15 min, tok/s of the last 15 min)"},
		{window{at: 0, trend: true}, window{at: 0, trend: true}, " (rates following the trend of the whole run)"},
		// A whole run's rate that is not the run average (full batches only) is said as such, apart from the lengths.
		{window{at: 0, apart: fullBatches}, window{at: 0}, " (tokens per item of the whole run, tok/s of the whole run, full batches only)"},
		{window{at: 2700, apart: fullBatches}, window{at: 2700}, " (rates of the last 15 min)"},
	} {
		if got := windowsOf(now, start, c.rate, c.length, block, true); got != c.want {
			t.Errorf("windowsOf(%+v, %+v) = %q; want %q", c.rate, c.length, got, c.want)
		}
	}
}

// TestStaleLog: one sample whose job log has not changed for stall_after is a stall; not when the engines
// have requests running (the job works, its log is quiet) or the log changed within it.
func TestStaleLog(t *testing.T) {
	old, fresh, running, idle := 1e9-7200, 1e9-60, 12.0, 0.0
	for _, c := range []struct {
		name     string
		modified *float64
		running  *float64
		want     string
	}{
		{"log untouched 2 h", &old, nil, StateStalled},
		{"log untouched 2 h, engines idle", &old, &idle, StateStalled},
		{"log untouched 2 h, engines busy", &old, &running, StateRunning},
		{"log written a minute ago", &fresh, nil, StateRunning},
		{"no log time", nil, nil, StateRunning},
	} {
		el := 408.0
		o := Observation{T: 1e9, Done: 300, Total: 25000, Elapsed: &el, LogModified: c.modified, Running: c.running}
		if c.running != nil {
			g := 565405.0
			o.GenTokens = &g
		}
		e, _ := Compute([]Observation{o}, Config{StallAfter: 600})
		if e.State != c.want {
			t.Errorf("%s: %s (%s); want %s", c.name, e.State, e.Reason, c.want)
		}
	}
}
