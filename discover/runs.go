package discover

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"runwatch/config"
)

// This file turns what discovery found into runs: the runs of a host with no run file, and the keys a
// run file's runs leave out.

// Source is the config.File.Source of a file made by discovery.
const Source = "discovery on this host"

// File is the run file discovery makes when there is none: one run per job, named after its script,
// reading its log and the engines it is a client of, writing its outputs; an engine no job uses is a run
// of its own, named after its kind and port ("vllm-8000"). Nil when nothing was found.
func File(res Result) *config.File {
	runs := Runs(res)
	if len(runs) == 0 {
		return nil
	}
	return &config.File{Runs: runs, Source: Source}
}

// Runs are the runs File holds.
func Runs(res Result) []config.Run {
	var runs []config.Run
	used := map[string]int{}
	name := func(n string) string {
		used[strings.ToLower(n)]++
		if k := used[strings.ToLower(n)]; k > 1 {
			return n + "-" + strconv.Itoa(k)
		}
		return n
	}
	claimed := map[int]bool{}
	names := make([]string, len(res.Jobs))
	for i, j := range res.Jobs {
		names[i] = name(j.Name)
	}
	for i, j := range res.Jobs {
		var engines []Engine
		for _, e := range res.Engines {
			if slices.Contains(j.Ports, e.Port) {
				engines = append(engines, e)
				claimed[e.Port] = true
			}
		}
		if len(res.Jobs) == 1 && len(j.Ports) == 0 && len(res.Engines) == 1 {
			// The one job, found by its files, and the one engine, which it holds no connection to at this
			// moment (a client that connects per request): its run reads it, as the found line says. Of
			// several engines nothing says which is the job's: none is summed into it.
			engines = res.Engines
			for _, e := range engines {
				claimed[e.Port] = true
			}
		}
		r := config.Run{Name: names[i], Log: j.Log, Outputs: j.OutputDirs(), Found: found(res, engines, &j)}
		r.Found.Shared = sharedWith(res, names, i)
		for _, e := range engines {
			r.Metrics = append(r.Metrics, e.URL)
		}
		runs = append(runs, r)
	}
	var idle []Engine
	for _, e := range res.Engines {
		if !claimed[e.Port] {
			idle = append(idle, e)
		}
	}
	for _, e := range idle {
		// Always with its port: a name that depends on how many other engines are idle at the moment of the
		// look read "vllm" in one command and "vllm-36013" in the next.
		n := e.Kind + "-" + strconv.Itoa(e.Port)
		runs = append(runs, config.Run{Name: name(runName(n)), Metrics: []string{e.URL}, Found: found(res, []Engine{e}, nil)})
	}
	return runs
}

// sharedWith are the jobs other than jobs[i] connected to one of its engines (names are their runs'; nil
// for a Fill, whose other jobs have no run), each once, at the first port they share; and the connections
// to its engines from processes discovery could not inspect, which may be another job's.
func sharedWith(res Result, names []string, i int) []config.SharedJob {
	jobs := res.Jobs
	var out []config.SharedJob
	for _, e := range res.Engines {
		if e.Unseen > 0 && slices.Contains(jobs[i].Ports, e.Port) {
			out = append(out, config.SharedJob{Port: e.Port, Unseen: e.Unseen})
		}
	}
	for k, o := range jobs {
		if k == i {
			continue
		}
		for _, p := range jobs[i].Ports {
			if slices.Contains(o.Ports, p) {
				sj := config.SharedJob{Command: o.Command, PID: o.PID, Port: p}
				if names != nil {
					sj.Run = names[k]
				}
				out = append(out, sj)
				break
			}
		}
	}
	return out
}

// StoppedLogs are res's logs of jobs that have stopped, as config.Found carries them.
func StoppedLogs(res Result) []config.FoundStopped {
	var out []config.FoundStopped
	for _, s := range res.Stopped {
		out = append(out, config.FoundStopped{Log: s.Log, Progress: s.Progress, PID: s.PID, Command: s.Command})
	}
	return out
}

// found is the config.Found of a run reading engines and following job (nil: none).
func found(res Result, engines []Engine, job *Job) *config.Found {
	f := &config.Found{Invisible: res.Invisible, Stopped: StoppedLogs(res)}
	for _, e := range engines {
		f.Unseen += e.Unseen
		f.Engines = append(f.Engines, config.FoundEngine{Kind: e.Kind, Port: e.Port, PID: e.PID, Command: e.Command, URL: e.URL})
	}
	if job != nil {
		fj := &config.FoundJob{PID: job.PID, Command: job.Command, How: job.How, Log: job.Log, LogFrom: job.LogFrom}
		if job.Progress != nil {
			fj.Progress, fj.Total = job.Progress.Line, job.Progress.Total
		}
		for _, o := range job.Outputs {
			fj.Outputs = append(fj.Outputs, config.FoundOutput{Path: o.Path, MountPoint: o.MountPoint, FSType: o.FSType})
		}
		f.Job = fj
	}
	return f
}

// Wanted says whether a run file leaves something out that discovery would fill: a run with no log (or
// one that is not there) or with neither metrics nor Prometheus. A file that turns discovery off wants
// nothing.
func Wanted(f *config.File) bool {
	if f == nil || (f.Discover != nil && !*f.Discover) {
		return false
	}
	for _, r := range f.Runs {
		if r.Log == "" || logMissing(r.Log) || (len(r.Metrics) == 0 && r.Prometheus == nil) {
			return true
		}
	}
	return false
}

func logMissing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// Fill completes a run file's runs with what discovery found, and never changes what a run says: a run
// with no log gets its job's; with neither metrics nor Prometheus, the engines its job is a client of (or,
// for the one job on the host found by its files, the one engine found) and never an engine nothing links
// to the run (Found.Unlinked says those); with no total, the job's; with no outputs, the directories the
// job writes in. An engine another job uses too is named in Found.Shared. A run whose log: is not there
// keeps it, and gets the job's log as the one to read meanwhile (config.Found.FallbackLog), so a mistyped
// log: is said and answered past. Each run's Found says what was filled. A run is matched to a job as
// matchJob says.
func Fill(f *config.File, res Result) {
	if f == nil || (f.Discover != nil && !*f.Discover) {
		return
	}
	taken := map[int]bool{}
	for i := range f.Runs {
		r := &f.Runs[i]
		job := matchJob(r, res.Jobs, len(f.Runs) == 1, taken)
		var engines []Engine
		var shared []config.SharedJob
		if job != nil {
			taken[job.PID] = true
			for _, e := range res.Engines {
				if slices.Contains(job.Ports, e.Port) {
					engines = append(engines, e)
				}
			}
			if len(job.Ports) == 0 && len(res.Jobs) == 1 && len(res.Engines) == 1 {
				// The one job, found by its files, and the one engine, which it holds no connection to at this
				// moment (a client that connects per request), as Runs reads it.
				engines = res.Engines
			}
			shared = sharedWith(res, nil, slices.IndexFunc(res.Jobs, func(j Job) bool { return j.PID == job.PID }))
		}
		// Engines no process of the run is known to use are never its metrics: say so, once, instead.
		var unlinked []Engine
		if len(r.Metrics) == 0 && r.Prometheus == nil && len(engines) == 0 {
			unlinked = res.Engines
		}
		var filled []string
		fallback := ""
		if job != nil && job.Log != "" {
			switch {
			case r.Log == "":
				r.Log = job.Log
				filled = append(filled, "log")
			case r.Log != job.Log && logMissing(r.Log):
				fallback = job.Log
			}
		}
		if len(r.Metrics) == 0 && r.Prometheus == nil && len(engines) > 0 {
			for _, e := range engines {
				r.Metrics = append(r.Metrics, e.URL)
			}
			filled = append(filled, "metrics")
		} else {
			engines = nil
		}
		if r.Total == 0 && job != nil && job.Progress != nil && job.Progress.Total > 0 {
			r.Total = job.Progress.Total
			filled = append(filled, "total")
		}
		if len(r.Outputs) == 0 && job != nil && len(job.Outputs) > 0 {
			r.Outputs = job.OutputDirs()
			filled = append(filled, "outputs")
		}
		if len(filled) == 0 && fallback == "" && len(unlinked) == 0 {
			continue
		}
		r.Found = found(res, engines, job)
		r.Found.Filled, r.Found.FallbackLog = append([]string{}, filled...), fallback
		if len(engines) > 0 {
			r.Found.Shared = shared
		}
		for _, e := range unlinked {
			r.Found.Unlinked = append(r.Found.Unlinked, config.FoundEngine{Kind: e.Kind, Port: e.Port, PID: e.PID, Command: e.Command, URL: e.URL})
		}
	}
}

// matchJob is the job a run-file run is about: the one whose log is the run's, or that writes under the
// run's outputs, or whose log is beside the run's log: that is not there (a typo); for a lone run that
// names neither a log nor outputs, the only job. A run whose log or outputs no job writes has none: a
// job elsewhere on the host is no evidence about it.
func matchJob(r *config.Run, jobs []Job, lone bool, taken map[int]bool) *Job {
	for _, test := range []func(j *Job) bool{
		func(j *Job) bool { return r.Log != "" && j.Log == filepath.Clean(r.Log) },
		func(j *Job) bool {
			return slices.ContainsFunc(j.Outputs, func(o Output) bool {
				return slices.ContainsFunc(r.Outputs, func(d string) bool { return within(o.Path, d) })
			})
		},
		func(j *Job) bool {
			return r.Log != "" && j.Log != "" && filepath.Dir(j.Log) == filepath.Dir(filepath.Clean(r.Log)) && logMissing(r.Log)
		},
	} {
		for i := range jobs {
			if !taken[jobs[i].PID] && test(&jobs[i]) {
				return &jobs[i]
			}
		}
	}
	if lone && r.Log == "" && len(r.Outputs) == 0 && len(jobs) == 1 && !taken[jobs[0].PID] {
		return &jobs[0]
	}
	return nil
}

// within says whether path is dir or under it.
func within(path, dir string) bool {
	dir = filepath.Clean(dir)
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
