package conversation

import (
	"strings"
	"sync"

	"runwatch/config"
	"runwatch/reports"
)

// This file is how answers about a run discovery made or completed (config.Run.Found) say so: what was
// found and how, once per run, and where the run file an answer's advice points at comes from when there
// is none yet.

// foundSaid remembers the runs whose answers have said what discovery found, so it is said once (in a
// console or in Slack; each `bot ask` is a process of its own and says it every time).
type foundSaid struct {
	mu   sync.Mutex
	said map[string]bool
}

// once reports whether run's found line is still to be said, and marks it said.
func (f *foundSaid) once(run string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.said == nil {
		f.said = map[string]bool{}
	}
	k := strings.ToLower(run)
	if f.said[k] {
		return false
	}
	f.said[k] = true
	return true
}

// discovered says whether a run was made by discovery, with no run file behind it.
func discovered(run *config.Run) bool {
	return run != nil && run.Found != nil && run.Found.Filled == nil && run.Line == 0 &&
		(len(run.Found.Engines) > 0 || run.Found.Job != nil)
}

// onlyDiscoveredJob is, among runs discovery made with no run file, the only one that follows a job,
// when every other is an engine no job uses: a question that names no run is about the job ("ETA?" on a
// host with three servers and one job), and the engines are listed, not asked about. Nil otherwise.
func onlyDiscoveredJob(runs []*config.Run) *config.Run {
	var job *config.Run
	for _, r := range runs {
		switch {
		case !discovered(r):
			return nil
		case r.Found.Job == nil:
		case job != nil:
			return nil
		default:
			job = r
		}
	}
	return job
}

// noJobRunning says, when every run is one discovery made of an engine no job uses, which logs it found
// of jobs that have stopped (reports.StoppedLine); "" otherwise.
func noJobRunning(runs []*config.Run) string {
	for _, r := range runs {
		if !discovered(r) || r.Found.Job != nil {
			return ""
		}
	}
	if len(runs) == 0 {
		return ""
	}
	return reports.StoppedLine(runs[0].Found)
}

// noRunFileYet is what "the run file" in an answer's advice becomes for a discovered run: there is none
// to add a key to yet, and discovery never guesses a protected mount or a channel.
const noRunFileYet = "a run file (there is none yet: `bot init --write` saves one with what I found, to add to)"

// sayFound adds to a reply about a discovered or completed run what discovery found, the first time an
// answer is about that run (SayFound).
func (b *Bot) sayFound(rep *Reply) {
	if rep.Run == "" {
		return
	}
	if run, ok := b.mon.Config().RunByName(rep.Run); ok && run.Found != nil {
		SayFound(run, &rep.Message, b.found.once(run.Name))
	}
}

// SayFound points the advice of a discovered run's message ("add protected: to the run file") at how to
// make the run file it speaks of, and, with line, says first in its small print what discovery found for
// the run and how. Any other run's message is left as it is.
func SayFound(run *config.Run, m *reports.Message, line bool) {
	if run == nil || run.Found == nil {
		return
	}
	if discovered(run) {
		pointAtInit(m)
	}
	if l := reports.FoundLine(run.Found); l != "" && line {
		m.Context = append([]string{l}, m.Context...)
	}
}

// pointAtInit replaces the first "the run file" of a message's sections with noRunFileYet.
func pointAtInit(m *reports.Message) {
	for i, s := range m.Sections {
		if strings.Contains(s, "the run file") {
			m.Sections[i] = strings.Replace(s, "the run file", noRunFileYet, 1)
			return
		}
	}
}
