package reports

import (
	"fmt"
	"math"

	"runwatch/probes"
)

// MeasuredPlan is a hidden-state plan checked against the files its job has written so far: bytes
// per token from what is in the target directory, and the final size that implies, beside the
// plan's own arithmetic (layers × hidden size × bytes per element).
type MeasuredPlan struct {
	Plan   string `json:"plan"`
	Target string `json:"target"`
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"`
	// Tokens the written files hold, and where that count came from: "safetensors headers" or
	// "job progress" (the plan's tokens times the share of items done).
	Tokens        float64 `json:"tokens,omitempty"`
	TokensSource  string  `json:"tokens_source,omitempty"`
	BytesPerToken float64 `json:"bytes_per_token,omitempty"`
	// PlanBytesPerToken is the plan's own figure.
	PlanBytesPerToken float64 `json:"plan_bytes_per_token"`
	// FinalBytes is the forecast at the plan's token count; Remaining what is still to be written.
	FinalBytes float64 `json:"final_bytes,omitempty"`
	Remaining  float64 `json:"remaining_bytes,omitempty"`
	FreeBytes  *uint64 `json:"free_bytes,omitempty"`
	Fits       *bool   `json:"fits,omitempty"`
	// Disagree says measured and planned bytes per token differ by more than a quarter.
	Disagree bool   `json:"disagree,omitempty"`
	Sentence string `json:"sentence"` // mrkdwn
}

// measuredMinBytes is how much must be written before bytes per token mean anything: the first
// file of a job can be all header.
const measuredMinBytes = 1 << 20

// MeasurePlan compares what the target holds with the plan. done is the share of the job's items
// finished (0..1, 0 when unknown), used when no safetensors header names its tokens.
func MeasurePlan(p PlanResult, w probes.Written, done float64) MeasuredPlan {
	mp := MeasuredPlan{Plan: p.Name, Target: p.Target, Files: w.Files, Bytes: w.Bytes, PlanBytesPerToken: p.BytesPerToken, FreeBytes: p.FreeBytes}
	switch {
	case w.TokensInFiles > 0:
		// Headers describe the safetensors files only; other files (an index, logs) do not scale.
		mp.Tokens, mp.TokensSource = w.TokensInFiles, "safetensors headers"
		mp.BytesPerToken = float64(w.SafetensorsBytes) / w.TokensInFiles
	case done > 0 && p.Tokens > 0:
		mp.Tokens, mp.TokensSource = done*p.Tokens, "job progress"
		mp.BytesPerToken = float64(w.Bytes) / mp.Tokens
	}
	name := Code(p.Target)
	if w.Bytes < measuredMinBytes || mp.BytesPerToken <= 0 {
		what := "nothing yet"
		if w.Files > 0 {
			what = fmt.Sprintf("%s in %s", Bytes(float64(w.Bytes)), Plural(w.Files, "file", "files"))
		}
		mp.Tokens, mp.TokensSource, mp.BytesPerToken = 0, "", 0
		mp.Sentence = fmt.Sprintf("Written so far to %s: %s — too little to measure bytes per token.", name, what)
		if w.Bytes >= measuredMinBytes {
			mp.Sentence = fmt.Sprintf("Written so far to %s: %s; no token count to divide by (no safetensors header names its tokens and the job's progress is unknown).", name, what)
		}
		return mp
	}
	s := fmt.Sprintf("Measured: %s holds %s in %s, %s tokens by the %s: *%s per token*",
		name, Bytes(float64(w.Bytes)), Plural(w.Files, "file", "files"), Tokens(mp.Tokens), mp.TokensSource, Bytes(mp.BytesPerToken))
	if p.Tokens > 0 {
		mp.FinalBytes = mp.BytesPerToken * p.Tokens
		if w.TokensInFiles > 0 {
			mp.FinalBytes += float64(w.Bytes - w.SafetensorsBytes)
		}
		mp.Remaining = math.Max(0, mp.FinalBytes-float64(w.Bytes))
		s += fmt.Sprintf(" → %s at %s tokens, %s still to write", Bytes(mp.FinalBytes), Tokens(p.Tokens), Bytes(mp.Remaining))
		if p.FreeBytes != nil {
			fits := float64(*p.FreeBytes) >= mp.Remaining
			mp.Fits = &fits
			if fits {
				s += fmt.Sprintf(", %s free: fits", Bytes(float64(*p.FreeBytes)))
			} else {
				s += fmt.Sprintf(", only %s free: *does not fit*", Bytes(float64(*p.FreeBytes)))
			}
		}
	}
	s += "."
	if p.BytesPerToken > 0 {
		ratio := mp.BytesPerToken / p.BytesPerToken
		if ratio > 1.25 || ratio < 0.8 {
			mp.Disagree = true
			more := fmt.Sprintf("%.1f× more", ratio)
			if ratio < 1 {
				more = fmt.Sprintf("%.1f× less", 1/ratio)
			}
			s += fmt.Sprintf("\n:warning: The plan (%s layers × %s × %d B) says %s per token; the files hold %s. Check `layers`, `hidden_size` and `dtype`, or what else the job writes there.",
				Count(float64(p.Layers)), Count(float64(p.HiddenSize)), p.BytesPerElem, Bytes(p.BytesPerToken), more)
		} else {
			s += fmt.Sprintf(" The plan's %s per token agrees.", Bytes(p.BytesPerToken))
		}
	}
	mp.Sentence = s
	return mp
}

// MeasuredFor finds the measurement of the plan named plan; nil when there is none.
func MeasuredFor(ms []MeasuredPlan, plan string) *MeasuredPlan {
	for i := range ms {
		if ms[i].Plan == plan {
			return &ms[i]
		}
	}
	return nil
}
