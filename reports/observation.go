package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Observation is one sample of a run's progress: a point of the sampler's history and a line of a trace file.
//
// Counts from the job log (Done, Total, Errors, AvgCompletion, Elapsed) cover the whole job. Counts from the
// inference engines (GenTokens, FinishedLenSum, FinishedLenCount, LengthCapped) are the engines' own counters:
// they restart from zero when a server restarts. Pointer fields are nil when the source did not say.
type Observation struct {
	T             float64  `json:"t"` // seconds: unix time in live history, seconds since start in a trace
	Done          int64    `json:"done"`
	Total         int64    `json:"total"` // 0 = unknown
	Errors        int64    `json:"errors,omitempty"`
	GenTokens     *float64 `json:"gen_tokens,omitempty"`     // engine generation-token counter summed over servers; may reset
	Running       *float64 `json:"running,omitempty"`        // requests in the engine batch
	Waiting       *float64 `json:"waiting,omitempty"`        // requests queued in the engine
	AvgCompletion *float64 `json:"avg_completion,omitempty"` // job log's mean completion tokens of finished items
	Elapsed       *float64 `json:"elapsed,omitempty"`        // job's own elapsed seconds (log), for single-sample estimates

	// FinishedLenSum and FinishedLenCount are the sum and count of the engine histogram of generated tokens
	// per finished request (vllm:request_generation_tokens); they reset with the server.
	FinishedLenSum   *float64 `json:"finished_len_sum,omitempty"`
	FinishedLenCount *float64 `json:"finished_len_count,omitempty"`
	// LengthCapped counts requests the engine finished because they hit max_tokens (finished_reason="length").
	LengthCapped *float64 `json:"length_capped,omitempty"`
	// MaxTokens is the job's max_tokens setting; 0 when unknown.
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// Restarts counts the server restarts the sampler has seen. A sampler that carries the engine counters
	// across restarts (so GenTokens never drops) must say so here: the batch starts afresh at each.
	Restarts int64 `json:"restarts,omitempty"`
}

// observationJSON mirrors Observation with every number kept as written, so that ParseObservation can tell a
// missing field from a zero and name the field that is wrong.
type observationJSON struct {
	T                *json.RawMessage `json:"t"`
	Done             *json.RawMessage `json:"done"`
	Total            *json.RawMessage `json:"total"`
	Errors           *json.RawMessage `json:"errors"`
	GenTokens        *json.RawMessage `json:"gen_tokens"`
	Running          *json.RawMessage `json:"running"`
	Waiting          *json.RawMessage `json:"waiting"`
	AvgCompletion    *json.RawMessage `json:"avg_completion"`
	Elapsed          *json.RawMessage `json:"elapsed"`
	FinishedLenSum   *json.RawMessage `json:"finished_len_sum"`
	FinishedLenCount *json.RawMessage `json:"finished_len_count"`
	LengthCapped     *json.RawMessage `json:"length_capped"`
	MaxTokens        *json.RawMessage `json:"max_tokens"`
	Restarts         *json.RawMessage `json:"restarts"`
}

// ParseObservation parses one trace line (a JSON object) strictly: an unknown field, a missing t or done, a
// negative count, done greater than a known total, a number that is not finite or an integer field that is not
// an integer is an error naming the field.
func ParseObservation(line []byte) (Observation, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var raw observationJSON
	if err := dec.Decode(&raw); err != nil {
		return Observation{}, fmt.Errorf("parse observation: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Observation{}, errors.New("parse observation: unexpected data after the object")
	}
	if raw.T == nil {
		return Observation{}, errors.New("parse observation: missing field t")
	}
	if raw.Done == nil {
		return Observation{}, errors.New("parse observation: missing field done")
	}
	var o Observation
	var err error
	if o.T, err = obsFloat("t", raw.T); err != nil {
		return Observation{}, err
	}
	ints := []struct {
		name string
		raw  *json.RawMessage
		dst  *int64
	}{
		{"done", raw.Done, &o.Done},
		{"total", raw.Total, &o.Total},
		{"errors", raw.Errors, &o.Errors},
		{"max_tokens", raw.MaxTokens, &o.MaxTokens},
		{"restarts", raw.Restarts, &o.Restarts},
	}
	for _, f := range ints {
		if f.raw == nil {
			continue
		}
		if *f.dst, err = obsInt(f.name, f.raw); err != nil {
			return Observation{}, err
		}
	}
	floats := []struct {
		name string
		raw  *json.RawMessage
		dst  **float64
	}{
		{"gen_tokens", raw.GenTokens, &o.GenTokens},
		{"running", raw.Running, &o.Running},
		{"waiting", raw.Waiting, &o.Waiting},
		{"avg_completion", raw.AvgCompletion, &o.AvgCompletion},
		{"elapsed", raw.Elapsed, &o.Elapsed},
		{"finished_len_sum", raw.FinishedLenSum, &o.FinishedLenSum},
		{"finished_len_count", raw.FinishedLenCount, &o.FinishedLenCount},
		{"length_capped", raw.LengthCapped, &o.LengthCapped},
	}
	for _, f := range floats {
		if f.raw == nil {
			continue
		}
		v, err := obsFloat(f.name, f.raw)
		if err != nil {
			return Observation{}, err
		}
		*f.dst = &v
	}
	if o.Total > 0 && o.Done > o.Total {
		return Observation{}, fmt.Errorf("parse observation: done %d is greater than total %d", o.Done, o.Total)
	}
	return o, nil
}

// obsFloat converts a JSON number to a finite, non-negative float. A quoted number is not a number.
func obsFloat(name string, n *json.RawMessage) (float64, error) {
	v, err := strconv.ParseFloat(string(*n), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("parse observation: %s: %s is not a finite number", name, *n)
	}
	if v < 0 {
		return 0, fmt.Errorf("parse observation: %s is negative (%s)", name, *n)
	}
	return v, nil
}

// obsInt converts a JSON number to a non-negative integer.
func obsInt(name string, n *json.RawMessage) (int64, error) {
	v, err := strconv.ParseInt(string(*n), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse observation: %s: %s is not an integer", name, *n)
	}
	if v < 0 {
		return 0, fmt.Errorf("parse observation: %s is negative (%d)", name, v)
	}
	return v, nil
}
