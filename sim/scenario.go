package sim

// EventKind says what an Event does to the job.
type EventKind int

// The events a scenario can inject.
const (
	// Restart kills the inference server: the engine's counters restart from zero, in-flight requests are lost
	// and retried, and nothing runs for Duration seconds (default 60).
	Restart EventKind = iota + 1
	// Stall freezes the engine for Duration seconds: no tokens, no finished requests.
	Stall
	// Slowdown multiplies throughput by Factor for Duration seconds (0 = until the end).
	Slowdown
	// LengthDrift makes later prompts produce longer completions: the mean completion length of requests that
	// start after At ramps linearly to Factor times the original over Duration seconds (0 = at once).
	LengthDrift
)

// String names the event kind as scenarios and traces spell it.
func (k EventKind) String() string {
	switch k {
	case Restart:
		return "restart"
	case Stall:
		return "stall"
	case Slowdown:
		return "slowdown"
	case LengthDrift:
		return "length-drift"
	}
	return "unknown"
}

// Event is something that happens to the job at sim time At (seconds since the start).
type Event struct {
	At       float64
	Kind     EventKind
	Factor   float64
	Duration float64
}

// Scenario describes a job: its size, the engine and the completion-length distribution, and its events.
type Scenario struct {
	Name        string
	Items       int // prompts in the job
	Concurrency int // engine slots (max_num_seqs): requests decoded at once
	QueueDepth  int // requests the client keeps waiting in the engine queue beyond the slots
	MaxTokens   int // completions are capped here (finished_reason="length")

	// MeanTokens and Sigma define the completion-length distribution: lognormal with this mean and this
	// standard deviation of log-length, before the MaxTokens cap.
	MeanTokens, Sigma float64
	PromptTokens      float64 // mean prompt length, for the prompt-token counter and the KV cache gauge

	// PeakTokensPerS is the engine's aggregate decode rate with all slots busy; SingleTokensPerS is one
	// request's decode rate when it runs alone. Between them the aggregate rate is a*B/(1+b*B) for B
	// running requests: decoding is memory-bound at small batches and compute-bound at large ones.
	PeakTokensPerS, SingleTokensPerS float64

	// Jitter is the standard deviation of a slow random wobble of throughput (preemptions, prefill
	// interference); 0 disables it.
	Jitter float64

	ErrorRate float64 // share of finished items the client counts as errors
	Engines   int     // data-parallel engines behind the endpoint (engine="0".."N-1" labels when > 1)
	Model     string  // model_name label

	Events []Event
}

// Scenarios returns the scenarios of the accuracy benchmark: a steady run, length drift, a throughput drop, a
// server restart, a stall, and a small job whose finish is set by its stragglers.
func Scenarios() []Scenario {
	steady := baseScenario("steady")

	drift := baseScenario("length-drift")
	drift.MeanTokens = 700
	drift.Events = []Event{{At: 1800, Kind: LengthDrift, Factor: 1.5, Duration: 3600}}

	drop := baseScenario("throughput-drop")
	drop.Events = []Event{{At: 6000, Kind: Slowdown, Factor: 0.7}}

	restart := baseScenario("restart")
	restart.Events = []Event{{At: 7000, Kind: Restart, Duration: 60}}

	stall := baseScenario("stall")
	stall.Events = []Event{{At: 6500, Kind: Stall, Duration: 1800}}

	small := baseScenario("small-job-stragglers")
	small.Items = 1500
	small.Concurrency = 128
	small.QueueDepth = 32
	small.MeanTokens = 700
	small.Sigma = 1.0
	small.PeakTokensPerS = 1100
	small.SingleTokensPerS = 45

	return []Scenario{steady, drift, drop, restart, stall, small}
}

// DemoScenario is the job `--demo` runs: 25,000 prompts at 200-way concurrency, about 1,400 tokens/s, and
// completions that start near 650 tokens and drift to about 1,066, so that a shift warning shows up within a
// few minutes of real time at 60x.
func DemoScenario() Scenario {
	s := baseScenario("demo")
	s.MeanTokens = 650
	s.ErrorRate = 0.001
	s.Engines = 2
	s.Events = []Event{{At: 900, Kind: LengthDrift, Factor: 1066.0 / 650, Duration: 2400}}
	return s
}

// baseScenario is the job of the story this bot was written for: 25,000 prompts, 200 slots, long-tailed
// completions around 1,000 tokens capped at 4,096, about 1,400 tokens/s.
func baseScenario(name string) Scenario {
	return Scenario{
		Name:             name,
		Items:            25000,
		Concurrency:      200,
		QueueDepth:       56,
		MaxTokens:        4096,
		MeanTokens:       1000,
		Sigma:            0.8,
		PromptTokens:     350,
		PeakTokensPerS:   1400,
		SingleTokensPerS: 60,
		Jitter:           0.04,
		Engines:          1,
		Model:            "meta-llama/Llama-3.1-8B-Instruct",
	}
}
