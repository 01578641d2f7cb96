package reports

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// FinishSummary is how a finished run went: when it finished, how long it took, what it produced, and how
// the first estimate compared with the real finish. Times are T (unix seconds in live history).
type FinishSummary struct {
	// StartedAt and FinishedAt are 0 when the run finished before runwatch first saw it running.
	StartedAt  float64 `json:"started_at,omitempty"`
	FinishedAt float64 `json:"finished_at,omitempty"`
	DurationS  float64 `json:"duration_s,omitempty"` // 0 when unknown
	Items      int64   `json:"items"`
	Errors     int64   `json:"errors"`
	// Tokens are the completion tokens generated, 0 when unknown; TokensApprox marks a figure from the
	// run-average rate rather than the job's own count.
	Tokens         float64 `json:"tokens,omitempty"`
	TokensApprox   bool    `json:"tokens_approx,omitempty"`
	AvgTokensPerS  float64 `json:"avg_tokens_per_s,omitempty"`
	PeakTokensPerS float64 `json:"peak_tokens_per_s,omitempty"`
	AvgItemsPerS   float64 `json:"avg_items_per_s,omitempty"`
	// First is the first estimate recorded (MoveLog.First: the shift detector's first reference, which is
	// not posted), when there was one.
	First *EstimateMark `json:"first_estimate,omitempty"`
}

// SummarizeFinish summarises a run whose history reaches its total: nil when it has not finished. first is
// the first estimate recorded (nil when none was). The peak rate is the highest recent-window throughput
// the estimator reported along the history.
func SummarizeFinish(hist []Observation, cfg EstimateConfig, first *EstimateMark) *FinishSummary {
	// The current run only: a job that started over (done went backwards) is summarised from its restart.
	for i := len(hist) - 1; i > 0; i-- {
		if hist[i].Done < hist[i-1].Done {
			hist = hist[i:]
			break
		}
	}
	fin := -1
	for i, o := range hist {
		if o.Total > 0 && o.Done >= o.Total {
			fin = i
			break
		}
	}
	if fin < 0 {
		return nil
	}
	hist = hist[:fin+1]
	last := hist[fin]
	f := &FinishSummary{FinishedAt: last.T, StartedAt: hist[0].T, Items: last.Done, Errors: last.Errors}
	switch {
	case last.Elapsed != nil && *last.Elapsed > 0:
		// The job's own clock covers the time before runwatch was watching.
		f.StartedAt = last.T - *last.Elapsed
	case hist[0].Elapsed != nil:
		f.StartedAt = hist[0].T - *hist[0].Elapsed
	}
	f.DurationS = f.FinishedAt - f.StartedAt
	if fin == 0 {
		// Never seen running: it finished before the first sample, at a moment the history does not hold.
		// Only the job's own elapsed time (when it logs one) says how long it took.
		f.FinishedAt, f.StartedAt, f.DurationS = 0, 0, 0
		if last.Elapsed != nil {
			f.DurationS = *last.Elapsed
		}
	}
	_, tp := Estimate(hist, cfg)
	switch {
	case last.AvgCompletion != nil && *last.AvgCompletion > 0:
		f.Tokens = *last.AvgCompletion * float64(last.Done)
	case tp.RunTokensPerS > 0 && len(hist) > 1:
		f.Tokens, f.TokensApprox = tp.RunTokensPerS*(last.T-hist[0].T), true
	}
	if f.DurationS > 0 {
		f.AvgItemsPerS = float64(f.Items) / f.DurationS
		if f.Tokens > 0 {
			f.AvgTokensPerS = f.Tokens / f.DurationS
		}
	}
	for _, p := range ChartSeries(hist, cfg, 60) {
		f.PeakTokensPerS = math.Max(f.PeakTokensPerS, p.TokensPerS)
	}
	if first != nil {
		c := *first
		f.First = &c
	}
	return f
}

// Throughput is tp, the estimator's throughput of a finished run, with the summary's averages as its run
// average: over the job's own time from its start to its finish, the figures the finish line says, where the
// estimator's run average starts at runwatch's first sample. Without any rate in tp, the averages alone still
// say how fast it went instead of "not measured yet".
//
// A window that spans the whole run (a log first read after the finish: its elapsed time is the one span there
// is) is the run average itself, and takes the average's figures: one line, "1,066 tok/s · 1.00 items/s
// (25,000 items in 6 h 57 min up to the finish)", not "1.00 items/s (…); run average 1,066 tok/s · 1.00
// items/s", which said the items/s twice and the tok/s only as an average.
func (f FinishSummary) Throughput(tp Throughput) Throughput {
	if f.AvgTokensPerS > 0 || f.AvgItemsPerS > 0 {
		tp.RunTokensPerS, tp.RunItemsPerS = f.AvgTokensPerS, f.AvgItemsPerS
		if f.DurationS > 0 && tp.WindowS >= 0.99*f.DurationS {
			tp.TokensPerS, tp.ItemsPerS = f.AvgTokensPerS, f.AvgItemsPerS
		}
	}
	return tp
}

// ThroughputBeside is the throughput line said beside the finish line f (nil: none): without the run average
// the finish line gives as "Averaged 1,375 tok/s (1.42 items/s)", which the status said twice, a line apart.
func ThroughputBeside(t Throughput, f *FinishSummary) string {
	if f != nil && (f.AvgTokensPerS > 0 || f.AvgItemsPerS > 0) && (t.TokensPerS > 0 || t.ItemsPerS > 0) &&
		t.RunTokensPerS == f.AvgTokensPerS && t.RunItemsPerS == f.AvgItemsPerS {
		t.RunTokensPerS, t.RunItemsPerS = 0, 0
	}
	return ThroughputLine(t)
}

// FinishLine renders a finish summary in one paragraph.
func FinishLine(f FinishSummary, loc *time.Location) string {
	s := "*Finished"
	if f.FinishedAt > 0 {
		s += " at " + SlackDateTime(tTime(f.FinishedAt), loc)
	}
	if f.DurationS > 0 {
		s += " after " + Span(f.DurationS) // the throughput line above says "6 min 48 s", not "7 min"
	}
	s += fmt.Sprintf("*: %s items, %s", Count(float64(f.Items)), Plural(int(f.Errors), "error", "errors"))
	if f.Tokens > 0 {
		approx := ""
		if f.TokensApprox {
			approx = "≈"
		}
		s += fmt.Sprintf(", %s%s tokens", approx, Tokens(f.Tokens))
	}
	s += "."
	switch {
	case f.AvgTokensPerS > 0:
		// Each figure beside what it is: the items/s is the average's, not the peak's.
		s += fmt.Sprintf(" Averaged %s (%s)", Rate(f.AvgTokensPerS, "tok/s"), Rate(f.AvgItemsPerS, "items/s"))
		if f.PeakTokensPerS > 0 {
			s += ", peak " + Rate(f.PeakTokensPerS, "tok/s")
		}
		s += "."
	case f.AvgItemsPerS > 0:
		s += " Averaged " + Rate(f.AvgItemsPerS, "items/s") + "."
	}
	if f.First != nil && f.FinishedAt > 0 {
		off := f.FinishedAt - f.First.FinishT
		word := "later"
		if off < 0 {
			word = "earlier"
		}
		// The first estimate is the shift detector's first reference, recorded, not posted: nobody was told
		// it unless they asked then. It is named as the first baseline, as the ETA answers before it said ("No
		// baseline estimate yet"): whoever asked earlier got a rough figure, and "the first estimate" would be a
		// second first.
		s += fmt.Sprintf(" The first baseline estimate (at %s) said %s: it finished %s %s.", SlackTime(tTime(f.First.At), loc),
			SlackTime(tTime(f.First.FinishT), loc), Duration(math.Abs(off)), word)
	}
	return s
}

// At is when the run finished, ok false when it finished before runwatch first saw it running.
func (f FinishSummary) At() (time.Time, bool) {
	if f.FinishedAt <= 0 {
		return time.Time{}, false
	}
	return tTime(f.FinishedAt), true
}

// ServerRetired reports whether probe (a problem's probe name, or a warning's summary, which starts with it)
// is an inference server's metrics endpoint the run no longer needs: once every item is done the servers are
// stopped to free their GPUs, and that is the plan, not an outage to alarm anyone about.
func (r RunStatus) ServerRetired(probe string) bool {
	return strings.HasPrefix(probe, "metrics ") && r.End() == EndDone
}

// LiveProblems is r's problems but those of the servers retired at the finish (ServerRetired), for the
// footnotes of an answer: its servers line already says, plainly, that they no longer answer.
func (r RunStatus) LiveProblems() []Problem {
	var out []Problem
	for _, p := range r.Problems {
		if !r.ServerRetired(p.Probe) {
			out = append(out, p)
		}
	}
	return out
}

// FinishedWhen is "the job finished at 14:02 UTC", at said by clock, or "the job has finished" when at is
// zero: runwatch did not see when. The one wording of a finish for every answer; clock says the time as the
// text around it can show it (SlackTime in an answer's lines, plain "15:04 MST" in a checklist stage's detail).
func FinishedWhen(at time.Time, clock func(time.Time) string) string {
	if at.IsZero() {
		return "the job has finished"
	}
	return "the job finished at " + clock(at)
}

// finishedWhen is FinishedWhen of r's finish, its time a Slack date in loc.
func finishedWhen(r RunStatus, loc *time.Location) string {
	var at time.Time
	if r.Finish != nil {
		at, _ = r.Finish.At()
	}
	return FinishedWhen(at, func(t time.Time) string { return SlackTime(t, loc) })
}
