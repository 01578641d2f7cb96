package reports

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Quality is what the engines say about why requests finished: a completion that hit max_tokens is
// a truncated sample, an aborted or failed one is a missing sample.
type Quality struct {
	Finished  float64            `json:"finished"`             // requests counted in the window
	Shares    map[string]float64 `json:"shares"`               // reason -> fraction of Finished
	MaxTokens int64              `json:"max_tokens,omitempty"` // the run's max_tokens, 0 when unknown
	// Jump is set when a share in the latest finishes is well above the share before them.
	Jump *ShareJump `json:"jump,omitempty"`
}

// ShareJump is a finish reason whose share rose: from Before (over BeforeN finishes) to Now (over
// the latest NowN finishes).
type ShareJump struct {
	Reason  string  `json:"reason"`
	Before  float64 `json:"before"`
	Now     float64 `json:"now"`
	BeforeN float64 `json:"before_n"`
	NowN    float64 `json:"now_n"`
}

// QualityConfig sets when a share counts as jumped. Zero values take the defaults.
type QualityConfig struct {
	// MinWindow is how many finishes the latest window and the earlier one each need (default 30).
	MinWindow float64
	// MinRise is the rise in share that matters (default 0.10, ten points).
	MinRise float64
	// MinZ is the two-proportion z a rise must reach to be more than chance (default 4).
	MinZ float64
}

func (c QualityConfig) withDefaults() QualityConfig {
	if c.MinWindow <= 0 {
		c.MinWindow = 30
	}
	if c.MinRise <= 0 {
		c.MinRise = 0.10
	}
	if c.MinZ <= 0 {
		c.MinZ = 4
	}
	return c
}

// qualityReasons are the reasons a jump is looked for in, in the order they are reported.
var qualityReasons = []string{"length", "abort", "error"}

// AssessQuality reads the finish counters of every server over the samples given. It returns nil
// when no server says why its requests finished, or none has finished yet.
func AssessQuality(s SignalSeries, maxTokens int64, cfg QualityConfig) *Quality {
	cfg = cfg.withDefaults()
	var steps []signalStep
	for _, st := range s.steps() {
		if st.finished != nil {
			steps = append(steps, st)
		}
	}
	total := func(st signalStep) float64 {
		var n float64
		for _, v := range st.finished {
			n += v
		}
		return n
	}
	q := &Quality{Shares: map[string]float64{}, MaxTokens: maxTokens}
	by := map[string]float64{}
	for _, st := range steps {
		for r, v := range st.finished {
			by[r] += v
			q.Finished += v
		}
	}
	if q.Finished <= 0 {
		return nil
	}
	for r, v := range by {
		q.Shares[r] = v / q.Finished
	}
	start := signalSplit(len(steps), func(i int) float64 { return total(steps[i]) }, cfg.MinWindow)
	if start <= 0 {
		return q
	}
	var n0, n1 float64
	k0, k1 := map[string]float64{}, map[string]float64{}
	for i, st := range steps {
		for r, v := range st.finished {
			if i < start {
				k0[r] += v
				n0 += v
			} else {
				k1[r] += v
				n1 += v
			}
		}
	}
	if n0 < cfg.MinWindow {
		return q
	}
	bestZ := 0.0
	for _, r := range qualityReasons {
		before, now := k0[r]/n0, k1[r]/n1
		z := signalZ(k0[r], n0, k1[r], n1)
		if now-before >= cfg.MinRise && z >= cfg.MinZ && z > bestZ {
			bestZ = z
			q.Jump = &ShareJump{Reason: r, Before: before, Now: now, BeforeN: n0, NowN: n1}
		}
	}
	return q
}

// minQualityFinished is how many finished requests a share needs before it is a finding: one request that
// ran to max_tokens read "100% of completions hit max_tokens (of 1 finished)", flagged as truncating.
const minQualityFinished = 20

// Matters reports whether the finishes are worth a line in an ETA answer: a share jumped, a tenth
// of the completions are truncated, or one in a hundred is lost, of minQualityFinished at least.
func (q *Quality) Matters() bool {
	if q == nil {
		return false
	}
	return q.Jump != nil || q.Finished >= minQualityFinished && (q.Shares["length"] >= 0.10 || q.Shares["abort"]+q.Shares["error"] >= 0.01)
}

// RunEnd is how near a run is to its end, for the checks its last requests would fool.
type RunEnd int

// How near a run is to its end.
const (
	EndBusy      RunEnd = iota // items still wait to start: the batch stays full
	EndLastBatch               // no more items left than requests in flight: the batch drains
	EndDone                    // every item is done
)

// End says how near r is to its end: finished when every item is done, in its last batch when the items left
// are no more than the requests the engines have in flight. Without a total or a running count it is busy.
func (r RunStatus) End() RunEnd {
	if (r.ETA != nil && r.ETA.State == StateDone) || (r.Progress != nil && r.Progress.Total > 0 && r.Progress.Done >= r.Progress.Total) {
		return EndDone
	}
	if r.Progress == nil || r.Progress.Total <= 0 {
		return EndBusy
	}
	var running float64
	known := false
	for _, e := range r.Engines {
		if e.OK && e.Running != nil {
			running += *e.Running
			known = true
		}
	}
	if known && float64(r.Progress.Total-r.Progress.Done) <= running {
		return EndLastBatch
	}
	return EndBusy
}

// At is q as a run at end should report it. In the last batch the requests still to finish are the longest by
// construction (the short ones finished first), so the share of the latest finishes that hit max_tokens rises
// whatever the completions are like: a rise of that share is not news. Once the run is done no jump is: the
// samples are what they are, and an answer after the finish should not repeat a warning about what comes next.
// The shares stand.
func (q *Quality) At(end RunEnd) *Quality {
	if q == nil || q.Jump == nil || end == EndBusy || (end == EndLastBatch && q.Jump.Reason != "length") {
		return q
	}
	c := *q
	c.Jump = nil
	return &c
}

// qualityReasonText names a finish reason in a sentence.
func qualityReasonText(r string, maxTokens int64) string {
	switch r {
	case "length":
		if maxTokens > 0 {
			return fmt.Sprintf("hit max_tokens (%s)", Count(float64(maxTokens)))
		}
		return "hit max_tokens"
	case "abort":
		return "were aborted"
	case "error":
		return "failed"
	}
	return "finished with " + Code(r)
}

// QualityLine renders the finish reasons: "31% of completions hit max_tokens (2,048): those
// samples are truncated · 0.3% aborted".
func QualityLine(q Quality) string {
	share := func(f float64) string {
		if f > 0 && f < 0.01 {
			return fmt.Sprintf("%.1f%%", math.Max(f*100, 0.1))
		}
		return Percent(f)
	}
	n := Count(q.Finished)
	length := q.Shares["length"]
	var s string
	switch {
	case length >= 0.10 && q.Finished >= minQualityFinished:
		s = fmt.Sprintf(":scissors: *%s of completions %s*: those samples are truncated", share(length), qualityReasonText("length", q.MaxTokens))
	case length > 0:
		s = fmt.Sprintf("Finishes: %s of completions %s", share(length), qualityReasonText("length", q.MaxTokens))
	default:
		s = "Finishes: none hit max_tokens"
	}
	for _, r := range []string{"abort", "error"} {
		if v, ok := q.Shares[r]; ok && v > 0 {
			s += fmt.Sprintf(" · %s %s", share(v), strings.TrimPrefix(strings.TrimPrefix(qualityReasonText(r, 0), "were "), "finished "))
		}
	}
	var other []string
	for r, v := range q.Shares {
		if r != "stop" && r != "length" && r != "abort" && r != "error" && v > 0 {
			other = append(other, share(v)+" "+Code(r))
		}
	}
	sort.Strings(other)
	if len(other) > 0 {
		s += " · " + strings.Join(other, " · ")
	}
	s += fmt.Sprintf(" (of %s finished)", n)
	if q.Jump != nil {
		s += "\n" + JumpLine(*q.Jump, q.MaxTokens)
	}
	return s
}

// JumpLine renders a share jump: "completions that hit max_tokens (2,048) rose from 14% of the 160 before
// to 100% of the latest 40 finished requests".
func JumpLine(j ShareJump, maxTokens int64) string {
	return fmt.Sprintf(":warning: completions that %s rose from %s of the %s before to *%s* of the latest %s finished requests",
		qualityReasonText(j.Reason, maxTokens), Percent(j.Before), Count(j.BeforeN), Percent(j.Now), Count(j.NowN))
}
