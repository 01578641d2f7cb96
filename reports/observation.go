package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runwatch/reports/estimate"
	"strconv"
)

// Observation is one sample of a run's progress (see estimate.Observation).
type Observation = estimate.Observation

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
	StepsBack        *json.RawMessage `json:"steps_back"`
	LogModified      *json.RawMessage `json:"log_modified"`
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
		{"steps_back", raw.StepsBack, &o.StepsBack},
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
		{"log_modified", raw.LogModified, &o.LogModified},
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
