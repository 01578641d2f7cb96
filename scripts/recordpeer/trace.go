package main

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"runwatch/probes"
	"runwatch/reports"
)

// jobState is what the job itself knows at a moment, the figures a job's own progress log carries.
type jobState struct {
	Done, Total, Errors int64
	CompletionSum       float64 // completion tokens of finished items, from each response's usage
	Elapsed             float64 // seconds since the job started
	MaxTokens           int64   // max_tokens of the request the job sent last
}

// scrape is one server's /metrics reading: the parsed engine, or the error that kept it from being read.
type scrape struct {
	Engine probes.Engine
	// Capped counts requests finished at max_tokens. The simulator labels vllm:request_success_total with
	// finish_reason where vLLM says finished_reason, so probes.Engine.FinishedByReason misses it; NaN when
	// absent.
	Capped float64
	// Streamed is the tokens streamed from the server since it started, read as its scrape returned (NaN
	// when requests are not streamed): what a counter per iteration holds.
	Streamed float64
	Err      error
}

// parseScrape reads one /metrics body.
func parseScrape(body []byte) (scrape, error) {
	e, err := probes.ParseMetrics(bytes.NewReader(body))
	if err != nil {
		return scrape{}, err
	}
	if len(e.Skipped) > 0 {
		return scrape{}, fmt.Errorf("metrics: %s", strings.Join(e.Skipped, "; "))
	}
	s := scrape{Engine: e, Capped: math.NaN()}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return scrape{}, fmt.Errorf("metrics: %w", err)
	}
	if f := fams["vllm:request_success_total"]; f != nil {
		s.Capped = 0
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == "finish_reason" || l.GetName() == "finished_reason") && l.GetValue() == "length" {
					s.Capped += m.GetCounter().GetValue()
				}
			}
		}
	}
	return s, nil
}

// observe turns the job's state and the servers' scrapes at trace time t into a trace line. Engine figures are
// summed over the servers that answered, as runwatch sums engines, and left out when none did; counters are
// the servers' own, so they drop when a server restarts.
func observe(t float64, js jobState, scrapes []scrape) reports.Observation {
	o := reports.Observation{
		T:         round(t, 1000),
		Done:      js.Done,
		Total:     js.Total,
		Errors:    js.Errors,
		Elapsed:   ptr(round(js.Elapsed, 1000)),
		MaxTokens: js.MaxTokens,
	}
	if js.Done > 0 {
		o.AvgCompletion = ptr(round(js.CompletionSum/float64(js.Done), 10))
	}
	var gen, running, waiting, finSum, finCount, capped sum
	for _, s := range scrapes {
		if s.Err != nil || s.Engine.Kind == "" {
			continue
		}
		e := s.Engine
		// A data-parallel rank that has finished nothing yet exports no counter; it has generated nothing.
		gen.add(zeroNaN(e.GenerationTokens))
		running.add(e.Running)
		waiting.add(e.Waiting)
		if valid(e.FinishedLenSum) && valid(e.FinishedLenCount) {
			finSum.add(e.FinishedLenSum)
			finCount.add(e.FinishedLenCount)
		} else {
			finSum.add(0)
			finCount.add(0)
		}
		if valid(s.Capped) {
			capped.add(s.Capped)
		} else {
			capped.add(e.FinishedByReason["length"])
		}
	}
	o.GenTokens, o.Running, o.Waiting = gen.ptr(), running.ptr(), waiting.ptr()
	o.FinishedLenSum, o.FinishedLenCount, o.LengthCapped = finSum.ptr(), finCount.ptr(), capped.ptr()
	return o
}

// progressLine is the job's log line for a state, in the "Progress: N/M" form runwatch's log probe reads.
func progressLine(js jobState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Progress: %d/%d", js.Done, js.Total)
	if js.Errors > 0 {
		fmt.Fprintf(&b, " (%d errors)", js.Errors)
	}
	if js.Elapsed > 0 {
		fmt.Fprintf(&b, ", %.2f req/s", float64(js.Done)/js.Elapsed)
	}
	if js.Done > 0 {
		fmt.Fprintf(&b, ", avg completion: %.0f tok", js.CompletionSum/float64(js.Done))
	}
	fmt.Fprintf(&b, ", elapsed: %.1fs", js.Elapsed)
	return b.String()
}

// sum adds values and remembers whether there was any.
type sum struct {
	v   float64
	any bool
}

func (s *sum) add(v float64) {
	if valid(v) {
		s.v += v
		s.any = true
	}
}

func (s sum) ptr() *float64 {
	if !s.any {
		return nil
	}
	return ptr(s.v)
}

func valid(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func zeroNaN(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

func ptr(v float64) *float64 { return &v }

// round keeps a trace small: t and elapsed to the millisecond, means to a tenth of a token.
func round(v, per float64) float64 { return math.Round(v*per) / per }

// perIteration is o with the token counter the servers' streamed tokens (summed over those that answered, as
// observe sums their counters): a counter that grows as tokens are decoded, as vLLM's does, beside the
// simulator's finished-length histogram, which moves on finish as vLLM's does too.
func perIteration(o reports.Observation, scrapes []scrape) reports.Observation {
	var gen sum
	for _, s := range scrapes {
		if s.Err == nil && s.Engine.Kind != "" {
			gen.add(s.Streamed)
		}
	}
	o.GenTokens = gen.ptr()
	return o
}
