package reports

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"runwatch/reports/estimate"
)

// Status is the answer of `bot status --json`: every configured run.
type Status struct {
	GeneratedAt time.Time   `json:"generated_at"`
	Runs        []RunStatus `json:"runs"`
}

// RunStatus is everything known about one run at one moment.
type RunStatus struct {
	Name       string         `json:"name"`
	Storage    Storage        `json:"storage"`
	Plans      []PlanResult   `json:"plans"`
	Progress   *Progress      `json:"progress,omitempty"`
	Throughput *Throughput    `json:"throughput,omitempty"`
	ETA        *ETA           `json:"eta,omitempty"`
	Engines    []EngineStatus `json:"engines,omitempty"`
	Stages     []StageStatus  `json:"stages,omitempty"`
	Snoozed    *time.Time     `json:"snoozed_until,omitempty"`
	Problems   []Problem      `json:"problems"`
	// Notices are events worth a line that are not failures: a rotated log, a restarted server.
	Notices []string `json:"notices,omitempty"`

	// Quality is why the engines' requests finished (truncated at max_tokens, aborted, failed);
	// Drafter is how speculative decoding does. Nil when the engines do not say.
	Quality *Quality `json:"quality,omitempty"`
	Drafter *Drafter `json:"drafter,omitempty"`
	// Measured checks each plan against the files its target holds so far.
	Measured []MeasuredPlan `json:"measured,omitempty"`
	// Moves is how the ETA moved: the first and announced estimates and the last sharp moves.
	Moves *MoveLog `json:"moves,omitempty"`
	// Finish summarises the run once it has finished.
	Finish *FinishSummary `json:"finish,omitempty"`
}

// Problem is a probe that failed or timed out; the rest of the answer still stands.
type Problem struct {
	Probe string `json:"probe"`
	Error string `json:"error"`
	// Answers: the source answered, but not with what was asked (probes.ErrNotMetrics: an HTTP error
	// status, a page of another kind); it is up. False for one that did not answer, or any other failure.
	Answers bool `json:"answers,omitempty"`
}

// Progress is how far the job is, from its log (or the engines when there is no log).
type Progress struct {
	Done      int64   `json:"done"`
	Total     int64   `json:"total"`
	Errors    int64   `json:"errors"`
	AvgTokens float64 `json:"avg_tokens,omitempty"`
	Source    string  `json:"source,omitempty"` // "log", "metrics" or "prometheus"
}

// EngineStatus is one inference server as last scraped.
type EngineStatus struct {
	URL              string   `json:"url"`
	Host             string   `json:"host,omitempty"`
	Kind             string   `json:"kind"`
	OK               bool     `json:"ok"`
	Engines          int      `json:"engines,omitempty"`
	Running          *float64 `json:"running"`
	Waiting          *float64 `json:"waiting"`
	KVCacheUsage     *float64 `json:"kv_cache_usage"`
	GenerationTokens *float64 `json:"generation_tokens"`
	Error            string   `json:"error,omitempty"`
	// Answers: the server answered, but not with metrics (probes.ErrNotMetrics); it is up, unlike one
	// whose Error is a refusal, an unreachable host or a deadline.
	Answers bool `json:"answers,omitempty"`
	// Missing names what an engine that answered lacks, and what it exports instead.
	Missing []string `json:"missing,omitempty"`
}

// Stage states.
const (
	StageDone       = "done"
	StageInProgress = "in_progress"
	StagePending    = "pending"
	StageFailed     = "failed"
)

// StageStatus is one line of a run's checklist.
type StageStatus struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Detail string `json:"detail"` // plain, from the check; escaped when rendered
	Manual bool   `json:"manual,omitempty"`
	// By is who marked the stage by hand (a Slack user id, or where it was marked: console); Detail names
	// them as " by <By> ", which the rendering makes a mention.
	By string `json:"by,omitempty"`
	// Unchecked: the check itself could not run (a query that fails, a path that cannot be read); Detail
	// says why. The stage is not done, and it is not waiting on anything either.
	Unchecked bool `json:"unchecked,omitempty"`
}

// Problem lines are kept short in chat; the JSON keeps them whole. Each is one line (joined errors
// are separated by "; ") and names its probe once, though the error may begin with it too.
func problemLine(p Problem) string {
	return fmt.Sprintf(":warning: %s: %s", Esc(p.Probe), Esc(p.short(300)))
}

// short is the problem's error in one line of at most max bytes, without its probe's name in front: nor, for a
// metrics endpoint, the scrape's own "scrape URL: ", which named the URL a second time on the same line
// ("metrics http://h/metrics: scrape http://h/metrics: dial tcp …").
func (p Problem) short(max int) string {
	msg := strings.TrimPrefix(p.Error, p.Probe+": ")
	if url, ok := strings.CutPrefix(p.Probe, "metrics "); ok {
		url, _, _ = strings.Cut(url, " (metrics entry ") // "… (metrics entry 2)" names one of two alike URLs
		msg = strings.TrimPrefix(msg, "scrape "+url+": ")
	}
	var parts []string
	for _, line := range strings.Split(msg, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			parts = append(parts, line)
		}
	}
	return truncate(strings.Join(parts, "; "), max)
}

// ProblemContext renders the problems as context lines.
func ProblemContext(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, problemLine(p))
	}
	return out
}

// ServerCount reports whether Done is the inference servers' count of finished requests (no log
// counts the job): a counter that runs from each server's start, so it holds whatever the servers
// finished before this job as well.
func (p Progress) ServerCount() bool { return p.Source == "metrics" || p.Source == "prometheus" }

// serverCountNote says what a count from the servers is, after the figure it qualifies;
// serverCountSentence says it on its own.
const (
	serverCountNote     = "by the server's count of finished requests, which runs from the server's start: requests before this job count too"
	serverCountSentence = "The count is the server's finished requests, which runs from the server's start: requests before this job count too (a `log:` counts the job's own)."
)

// ProgressLine renders done/total with percent and errors. A count from the servers says so, and
// claims no error count: the servers' counter does not count the job's failures.
func ProgressLine(p Progress) string {
	if p.Total <= 0 {
		if p.ServerCount() {
			return fmt.Sprintf("%s done (total not known), %s", Count(float64(p.Done)), serverCountNote)
		}
		return fmt.Sprintf("%s done (total not known)", Count(float64(p.Done)))
	}
	s := fmt.Sprintf("*%s / %s* done (%s)", Count(float64(p.Done)), Count(float64(p.Total)),
		Percent(float64(p.Done)/float64(p.Total)))
	if p.ServerCount() {
		return s + ", " + serverCountNote
	}
	if p.Errors > 0 {
		s += fmt.Sprintf(", %s", Plural(int(p.Errors), "error", "errors"))
	} else {
		s += ", 0 errors"
	}
	return s
}

// ThroughputLine renders the recent and whole-run rates.
func ThroughputLine(t Throughput) string {
	var parts []string
	if t.TokensPerS > 0 {
		parts = append(parts, "*"+Rate(t.TokensPerS, "tok/s")+"*")
	}
	if t.ItemsPerS > 0 {
		parts = append(parts, Rate(t.ItemsPerS, "items/s"))
	}
	basis := t.Basis
	if t.InFlight > 0 && basis != "" {
		// From one sample the item rate counts finished items only. Said, so that items left ÷ this rate is not
		// taken for the ETA (at the seed's moment 0.74 items/s, with 200 in flight; the ETA runs at 1.01).
		basis += "; items finished only, " + Count(t.InFlight) + " more in flight"
	}
	if len(parts) == 0 && t.RunTokensPerS <= 0 && t.RunItemsPerS <= 0 {
		return "Throughput: not measured yet"
	}
	s := strings.Join(parts, " · ")
	switch {
	case len(parts) == 0:
		// Nothing recent (the run finished or paused): the run average is what is left to say.
	case t.UntilFinish && basis != "":
		// A finished run's window is its last before the finish, not the idle minutes since.
		s += " (" + basis + " up to the finish)"
	case t.UntilFinish && t.WindowS > 0:
		s += fmt.Sprintf(" over the %s up to the finish", Duration(t.WindowS))
	case basis != "":
		s += " (" + basis + ")"
	case t.WindowS > 0:
		s += fmt.Sprintf(" over the last %s", Duration(t.WindowS))
	}
	var run []string
	if t.RunTokensPerS > 0 {
		run = append(run, Rate(t.RunTokensPerS, "tok/s"))
	}
	if t.RunItemsPerS > 0 {
		run = append(run, Rate(t.RunItemsPerS, "items/s"))
	}
	switch {
	case len(run) > 0 && len(parts) == 0:
		s = "Run average " + strings.Join(run, " · ")
	case len(run) > 0 && (t.RunTokensPerS != t.TokensPerS || t.RunItemsPerS != t.ItemsPerS):
		s += "; run average " + strings.Join(run, " · ")
	}
	return s
}

// ETALine renders an ETA with its range, its clock time and the reason.
func ETALine(e ETA, loc *time.Location) string {
	switch e.State {
	case "done":
		if e.Reason == "" {
			return ":white_check_mark: *Done.*"
		}
		return ":white_check_mark: *Done:* " + Esc(e.Reason) + "."
	case "stalled":
		s := ":rotating_light: *Stalled*"
		reason := e.Reason
		at := e.StalledAt
		if at == nil && e.StalledSince != nil {
			u := estimate.Unix(*e.StalledSince) // an ETA kept from before StalledAt
			at = &u
		}
		if at != nil {
			s += " since " + SlackTime(*at, loc)
			// The estimator's "no progress for 13 min: …" reads after the heading as "Stalled since 02:04 UTC
			// (13 min): the job log has not changed since then".
			if rest, ok := strings.CutPrefix(reason, "no progress for "); ok {
				if d, why, ok := strings.Cut(rest, ": "); ok {
					return s + Esc(" ("+d+"): "+why)
				}
			}
		}
		if reason != "" {
			s += " — " + Esc(reason)
		}
		return s
	case "unknown":
		if e.Reason == "" {
			return "ETA: unknown"
		}
		return "ETA: unknown — " + Esc(e.Reason)
	}
	if e.Seconds == nil {
		return "ETA: unknown — " + Esc(e.Reason)
	}
	s := fmt.Sprintf("ETA *%s*", Duration(*e.Seconds))
	if e.LowS != nil && e.HighS != nil {
		s += Range(*e.Seconds, *e.LowS, *e.HighS)
	}
	if e.FinishAt != nil {
		s += ", done around " + SlackDateTime(*e.FinishAt, loc)
	}
	if e.Rough {
		s += " _(rough)_"
	}
	s += "."
	if e.Reason != "" {
		s += " " + Esc(e.Reason)
	}
	return s
}

// EngineLineBeside summarises r's inference servers and their engines in an answer whose context lists r's
// live problems (LiveProblems): a failing endpoint whose error is among them is marked down (or, when it
// answered, as answering but not with metrics) without repeating the error, so each failure is printed once.
// Once every item is done a server that stopped answering is not down but retired (ServerRetired), and is
// said plainly: "`http://…/metrics` no longer answers (the job finished at 14:02)".
func EngineLineBeside(r RunStatus, loc *time.Location) string {
	es := r.Engines
	listed := map[string]bool{}
	for _, p := range r.LiveProblems() {
		listed[p.Probe+"\x00"+p.Error] = true
	}
	if len(es) == 0 {
		return ""
	}
	up, engines := 0, 0
	var running, waiting, kv float64
	kvN := 0
	for _, e := range es {
		if !e.OK {
			continue
		}
		up++
		engines += max(1, e.Engines)
		if e.Running != nil {
			running += *e.Running
		}
		if e.Waiting != nil {
			waiting += *e.Waiting
		}
		if e.KVCacheUsage != nil {
			kv += *e.KVCacheUsage
			kvN++
		}
	}
	// Each endpoint is a server; a server may run several data-parallel engines (vLLM's engine="0", "1"),
	// whose requests and KV cache are the server's.
	// A server that answers is up even when it gives no metrics: "up" would count it out.
	upWord := "up"
	for _, e := range es {
		if !e.OK && e.Answers {
			upWord = "serving metrics"
		}
	}
	s := fmt.Sprintf("Servers: %d of %d %s", up, len(es), upWord)
	switch {
	case engines <= up:
	case up == 1:
		s += fmt.Sprintf(" (%d data-parallel engines)", engines)
	default:
		s += fmt.Sprintf(" (%d engines between them)", engines)
	}
	if up > 0 {
		s += fmt.Sprintf(" · %s running · %s waiting", Count(running), Count(waiting))
		if kvN > 0 {
			s += " · KV cache " + Percent(kv/float64(kvN))
		}
	}
	for _, e := range es {
		switch {
		case e.OK:
		case r.ServerRetired("metrics "+e.URL) && e.Answers:
			s += fmt.Sprintf("\n%s%s answers, but no longer with metrics (%s)", Code(e.URL), onHost(e.Host), finishedWhen(r, loc))
		case r.ServerRetired("metrics " + e.URL):
			s += fmt.Sprintf("\n%s%s no longer answers (%s)", Code(e.URL), onHost(e.Host), finishedWhen(r, loc))
		case listed["metrics "+e.URL+"\x00"+e.Error] && e.Answers:
			s += fmt.Sprintf("\n:red_circle: %s%s answers, but not with metrics (below)", Code(e.URL), onHost(e.Host))
		case listed["metrics "+e.URL+"\x00"+e.Error]:
			s += fmt.Sprintf("\n:red_circle: %s%s is down (below)", Code(e.URL), onHost(e.Host))
		default:
			s += fmt.Sprintf("\n:red_circle: %s%s: %s", Code(e.URL), onHost(e.Host), Esc(e.Error))
		}
	}
	for _, e := range es {
		if e.OK && len(e.Missing) > 0 {
			s += fmt.Sprintf("\n:grey_question: %s%s (%s): %s", Code(e.URL), onHost(e.Host), Esc(e.Kind), Esc(truncate(strings.Join(e.Missing, "; "), 600)))
		}
	}
	return s
}

// SignalLines renders the finish shares and the drafter of a run, for a status.
func SignalLines(r RunStatus) []string {
	var out []string
	if r.Quality != nil {
		out = append(out, QualityLine(*r.Quality))
	}
	if r.Drafter != nil {
		out = append(out, DrafterLine(*r.Drafter))
	}
	return out
}

// StorageVerdict is the one-line storage summary of a status. A mount's free space and time to full carry on
// the same part each plan of plans that does not fit there, as the space answer does: "fills in 27 d" reads as
// safe beside hidden states still to come that need twenty times the free space.
func StorageVerdict(st Storage, plans []PlanResult) string {
	var parts []string
	switch {
	case st.ProtectedWrites:
		var mounts []string
		seen := map[string]bool{}
		for _, w := range st.Writers {
			if w.Protected && !seen[w.ProtectedPath] {
				seen[w.ProtectedPath] = true
				mounts = append(mounts, Code(w.ProtectedPath))
			}
		}
		s := ProtectedSeverity(true, 0) + " *writing to protected " + strings.Join(mounts, ", ") + "*"
		if unseen := hostGaps(st.subjectGaps(Target{})); len(unseen) > 0 {
			s += " (and can't tell for " + unseenHosts(unseen) + ")"
		}
		parts = append(parts, s)
	case len(st.ProtectedMounts) > 0 && scanFailed(st.subjectGaps(Target{})):
		var mounts []string
		for _, p := range st.ProtectedMounts {
			mounts = append(mounts, Code(p.Path))
		}
		parts = append(parts, ":warning: writes to "+strings.Join(mounts, ", ")+" unknown (the open-files scan failed)")
	case len(st.ProtectedMounts) > 0:
		var mounts []string
		for _, p := range st.ProtectedMounts {
			mounts = append(mounts, Code(p.Path))
		}
		gaps := st.subjectGaps(Target{})
		unseen, procs := hostGaps(gaps), processGaps(gaps)
		s := ":large_green_circle: no writes to " + strings.Join(mounts, ", ")
		var notes []string
		switch {
		case len(unseen) > 0:
			// What the writes answer leads with, the status says too: never "no writes" over a silence.
			s = ":grey_question: writes to " + strings.Join(mounts, ", ") + " unknown for " + unseenHosts(unseen)
			notes = append(notes, Esc(gapWhys(unseen)), "none on this host")
		case len(procs) > 0:
			s = ":large_yellow_circle: no writes seen to " + strings.Join(mounts, ", ")
		}
		if landing := len(st.OutputsInProtected()); landing > 0 {
			// "No writes" is not the news when an output already resolves there: lead with the risk.
			s = fmt.Sprintf("%s *%s inside protected %s*", ProtectedSeverity(false, landing), Plural(landing, "output resolves", "outputs resolve"),
				strings.Join(mounts, ", "))
			notes = append(notes, "no writes there yet")
			if len(unseen) > 0 {
				notes = append(notes, "can't tell for "+unseenHosts(unseen))
			}
		}
		switch q := st.quietFor(Target{}); {
		case st.Invisible > 0 && len(procs) == 0 && len(q) > 0:
			// The devices answered for what the scan could not see: their counters are the evidence.
			notes = append(notes, "the device wrote 0 B in the last "+Duration(q[0].Seconds))
		case st.Invisible > 0:
			notes = append(notes, fmt.Sprintf("%s not visible%s", Plural(st.Invisible, "process", "processes"), hiddenNames(st)))
		}
		for _, g := range procs {
			for _, h := range g.Hosts {
				if h != "" {
					notes = append(notes, fmt.Sprintf("%s not visible on %s", Plural(g.Processes, "process", "processes"), Code(h)))
				}
			}
		}
		if len(notes) > 0 {
			// One parenthesis: "(no writes there yet; 1 process not visible: ...)", not two in a row.
			s += " (" + strings.Join(notes, "; ") + ")"
		}
		parts = append(parts, s)
	}
	seen := map[string]bool{}
	for _, p := range st.Paths {
		// A path whose filesystem is unknown (a host whose node_exporter went quiet) is named by itself:
		// left out, the line would read as every disk accounted for.
		name := p.Mount
		if name == "" && p.Error != "" {
			name = p.Path
		}
		key := p.Host + "\x00" + name
		if name == "" || seen[key] {
			continue
		}
		seen[key] = true
		s := Code(name) + onHost(p.Host) + " "
		if p.FreeBytes != nil {
			s += Bytes(float64(*p.FreeBytes)) + " free"
			if p.FillsInS != nil {
				s += ", fills in " + Duration(*p.FillsInS)
			}
		} else {
			s += "free space unknown"
		}
		switch names, needs := unfitOn(p, plans); len(names) {
		case 0:
		case 1:
			if p.FillsInS != nil {
				s += " at the current rate"
			}
			s += fmt.Sprintf("; :red_circle: %s needs %s: does not fit", names[0], needs[0])
		default:
			if p.FillsInS != nil {
				s += " at the current rate"
			}
			for i := range names {
				names[i] += " (" + needs[i] + ")"
			}
			s += fmt.Sprintf("; :red_circle: %s and %s do not fit", strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
		}
		parts = append(parts, s)
	}
	if st.RemoteError != "" {
		parts = append(parts, "other hosts' free space unknown")
	}
	if len(parts) == 0 {
		return "Storage: nothing configured"
	}
	return "Storage: " + strings.Join(parts, " · ")
}

// NoProgressConfigured is a status's line for a run with no progress source. The built-in default run has no
// run file to add one to: the conversation puts why in its place.
const NoProgressConfigured = "No progress source configured (add `log:`, `metrics:` or `prometheus:` to the run file)."

// noProgressLine says why a status has no progress: a configured source that failed (the log, a
// metrics endpoint, Prometheus), named, or no source at all.
func noProgressLine(problems []Problem) string {
	failed := failedProgressSources(problems)
	if len(failed) == 0 {
		return NoProgressConfigured
	}
	return ":red_circle: No progress reading: " + strings.Join(failed, ", ") + " failed (details below)."
}

// failedProgressSources names (as code) each progress source among the problems: the log, a metrics
// endpoint, Prometheus.
func failedProgressSources(problems []Problem) []string {
	var failed []string
	for _, p := range ProgressProblems(problems) {
		failed = append(failed, Code(p.Probe))
	}
	return failed
}

// ProgressProblems is the problems of the progress sources (the log, a metrics endpoint, Prometheus), each
// source once (a dead Prometheus fails its history and its query alike), in the order of their names: the
// log, which counts the job when there is one, first, whatever order the probes failed in.
func ProgressProblems(problems []Problem) []Problem {
	var out []Problem
	seen := map[string]bool{}
	for _, p := range problems {
		if (strings.HasPrefix(p.Probe, "log ") || strings.HasPrefix(p.Probe, "metrics ") || strings.HasPrefix(p.Probe, "prometheus")) && !seen[p.Probe] {
			seen[p.Probe] = true
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Probe < out[j].Probe })
	return out
}

// hiddenNames is ": `tini` (pid 1)" for the first invisible process, "" when none is named.
func hiddenNames(st Storage) string {
	if len(st.Hidden) == 0 {
		return ""
	}
	h := st.Hidden[0]
	s := fmt.Sprintf("pid %d", h.PID)
	if h.Command != "" {
		s = Code(h.Command) + " " + s
	}
	if len(st.Hidden) > 1 || st.Invisible > 1 {
		s += ", …"
	}
	return ": " + s
}
