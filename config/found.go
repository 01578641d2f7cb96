package config

// Found is what discovery found on this host for a run, and how: a run with no run file is made of it,
// and a run-file run it completed says which keys it filled. Answers say it once ("found: vLLM on :8000
// (pid 1234), job python3 generate.py (pid 4242) → log /data/gen.log"), so a person can tell a
// discovered fact from one they configured. Discovery (package discover) fills it in.
type Found struct {
	// Engines are the inference servers the run reads: listening sockets on this host that serve a known
	// engine's /metrics.
	Engines []FoundEngine
	// Job is the process the run follows; nil when discovery found engines but no job.
	Job *FoundJob
	// Filled names the keys of a run-file run that discovery filled because the run left them out
	// ("metrics", "total", "outputs", "log"); nil for a run discovery made.
	Filled []string
	// FallbackLog is the job's log as discovery found it, for a run whose own log: does not exist: the
	// monitor reads it instead, saying so, rather than answer "ETA: unknown" while the job logs elsewhere.
	FallbackLog string
	// Unlinked are the engines found on this host that nothing links to a run-file run (no process of its
	// job is their client): left out of its metrics, and said once.
	Unlinked []FoundEngine
	// Shared are the other jobs discovery found using the run's engines: an engine's token, request and
	// finish counters are then every job's, so the monitor takes none of them for the run's own and prices
	// it from its log's items alone.
	Shared []SharedJob
	// Stopped are progress logs only a shell holds and nothing writes: the logs of jobs that have stopped
	// (the shell that started one keeps its stdout open). Never a run's job; said so an answer does not
	// read as if no job had ever run.
	Stopped []FoundStopped
	// Invisible counts the processes discovery could not inspect (their open files unreadable to this user):
	// a job among them is missed, never guessed. Unseen counts the connections to the run's engines from
	// such processes.
	Invisible, Unseen int
}

// FoundEngine is one inference server discovery found listening.
type FoundEngine struct {
	Kind    string // as probes.Engine.Kind: "vllm", "sglang", "tgi", "llamacpp", "trtllm", ...
	Port    int
	PID     int    // 0 when the socket's process could not be inspected
	Command string // the process's command line, shortened ("llm-d-inference-sim --port 8000")
	URL     string // the /metrics URL it answered on
}

// FoundJob is the job process discovery found, with what it found of it.
type FoundJob struct {
	PID     int
	Command string // shortened command line: "python3 generate.py"
	// How says how it was found: "client of :8000" or "writes growing files".
	How string
	// Log is the job's log ("" when none was found) and LogFrom where it came from: "stdout", "stderr" or
	// "an open file".
	Log, LogFrom string
	// Progress is the newest progress line the log holds ("" when none yet).
	Progress string
	// Outputs are the files the job holds open for writing (not its log), each with its mount.
	Outputs []FoundOutput
	// Total is the item count its progress lines give (0 when they give none).
	Total int64
}

// SharedJob is another job using one of a run's engines: its run (when discovery made one of it), its
// command line and pid, and the engine's port; or, with Unseen set, that many connections to the engine
// from processes discovery could not inspect (no command, no pid), which may be another job's.
type SharedJob struct {
	Run     string
	Command string
	PID     int
	Port    int
	Unseen  int
}

// FoundStopped is the log of a job that has stopped: its last progress line, and the shell holding it.
type FoundStopped struct {
	Log, Progress string
	PID           int
	Command       string
}

// FoundOutput is a file a job writes, and the mount it lands on.
type FoundOutput struct {
	Path       string
	MountPoint string // "" when the mount table did not say
	FSType     string
}
