package estimate

// Observation is one sample of a run's progress: a point of the sampler's history and a line of a trace file.
//
// Counts from the job log (Done, Total, Errors, AvgCompletion, Elapsed) cover the whole job. Counts from the
// inference engines (GenTokens, FinishedLenSum, FinishedLenCount, LengthCapped) are totals that only grow,
// summed over servers and carried across their restarts (counted in Restarts) and steps back (StepsBack): the
// sampler folds each server's readings once (estimate.Counter), and a trace recorded with the servers' raw
// counters is folded when it is read (Fold). Pointer fields are nil when the source did not say.
//
// T is seconds on the run's own clock, a monotonic one: only the difference between two Ts means anything
// (an interval). It never means a wall-clock time; what a person reads as a clock time is converted from it at
// the edge, where the wall clock is known.
type Observation struct {
	T             float64  `json:"t"`
	Done          int64    `json:"done"`
	Total         int64    `json:"total"` // 0 = unknown
	Errors        int64    `json:"errors,omitempty"`
	GenTokens     *float64 `json:"gen_tokens,omitempty"`     // engines' generated tokens, a folded total
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
	// Restarts counts the server restarts the sampler has seen (the counters carry on across them; the batch
	// starts afresh at each).
	Restarts int64 `json:"restarts,omitempty"`
	// StepsBack counts the readings that fell below the counters without a restart (replicas behind one
	// address answering in turn): many of them leave the counters' sum unknown.
	StepsBack int64 `json:"steps_back,omitempty"`
	// LogModified is when the job log last changed, on the same clock as T, when progress comes from a log: a
	// progress line read now may be hours old.
	LogModified *float64 `json:"log_modified,omitempty"`
}
