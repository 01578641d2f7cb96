package monitor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"runwatch/checklist"
	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"
	"runwatch/reports/estimate"
)

// runState is what the monitor remembers about a run; its exported fields are persisted.
type runState struct {
	mu sync.Mutex
	persisted
	// finish caches the finish summary of a finished run, keyed by the T of the observation that reached
	// the total: summarising re-runs the estimator over the history, and a finished run's answers and
	// samples keep asking.
	finish    *reports.FinishSummary
	finishKey float64
	// stateErr is why the run's state is not on disk: the last save failed, or the file could not
	// be loaded at start. Answers name it until a save works.
	stateErr error
	// shift is how far the run's clock is ahead of the monitor's (see continueClock).
	shift float64
	// memo is what the run's successive estimates share (estimate.Memo): their cost stays flat as the
	// history grows.
	memo estimate.Memo
}

// ErrNotSaved marks a change (a sample, a snooze, a stage mark) that took effect but could not be
// written to the state directory; it is written with the next save that works.
var ErrNotSaved = errors.New("kept in memory, not saved")

// ErrReadOnly marks a change (a snooze, a stage mark) refused because this monitor only reads the state
// directory; the error's text is Options.ReadOnlyWhy when set.
var ErrReadOnly = errors.New("this runwatch only reads its state directory, so the change would be lost")

// readOnlyError is ErrReadOnly in the words of the monitor's ReadOnlyWhy.
type readOnlyError struct{ why string }

func (e readOnlyError) Error() string        { return e.why }
func (e readOnlyError) Is(target error) bool { return target == ErrReadOnly }

// ReadOnly is ErrReadOnly, in the words of Options.ReadOnlyWhy, when this monitor only reads its state
// directory (so a change made through it would be lost), else nil.
func (m *Monitor) ReadOnly() error { return m.readOnly() }

// readOnly is ErrReadOnly with why, or nil when the monitor writes its state.
func (m *Monitor) readOnly() error {
	switch {
	case !m.opts.ReadOnly:
		return nil
	case m.opts.ReadOnlyWhy == "":
		return ErrReadOnly
	}
	return readOnlyError{m.opts.ReadOnlyWhy}
}

type persisted struct {
	Version int                       `json:"version"`
	History []reports.Observation     `json:"history"`
	Shift   reports.ShiftDetector     `json:"shift"`
	LogFile *probes.LogFile           `json:"log_file,omitempty"`
	Engines map[string]engineMemo     `json:"engines,omitempty"`
	Free    map[string][]freePoint    `json:"free,omitempty"`
	Snooze  *time.Time                `json:"snooze_until,omitempty"`
	Stages  map[string]StageMark      `json:"stage_marks,omitempty"`
	Growing map[string]reports.Growth `json:"growing,omitempty"`
	Last    *reports.ETA              `json:"last_eta,omitempty"`
	// Range is the ETA's range as last shown, which the next one is held to (reports.RangeHold).
	Range reports.RangeHold `json:"range_hold"`
	// Moves is the first and announced estimates and the last shifts, for "why" and "on track" answers.
	Moves reports.MoveLog `json:"moves"`
	// Clock is the last sample's time on the run clock and on the wall clock (see clock.go).
	Clock *clockMark `json:"clock,omitempty"`
}

// StageMark is a stage state set by hand from Slack.
type StageMark = checklist.Mark

// freePoint is one free-space reading of a mount, kept in the run's state for the trend.
type freePoint = reports.FreePoint

// maxFreePoints bounds the free-space history per mount.
const maxFreePoints = 240

// thinFree keeps a mount's free-space history within maxFreePoints by dropping every other reading of its
// older half, rather than the oldest readings: the recent pace keeps every reading, and the history still
// reaches back as far as a slow fill's forecast asks (reports.FillRate wants a span in proportion to the
// time to full; 240 readings 5 s apart were 20 minutes, too short to name a disk that fills in 6 hours).
func thinFree(pts []freePoint) []freePoint {
	if len(pts) <= maxFreePoints {
		return pts
	}
	half := len(pts) / 2
	out := make([]freePoint, 0, len(pts))
	for i := 0; i < half; i += 2 {
		out = append(out, pts[i])
	}
	return append(out, pts[half:]...)
}

const stateVersion = 1

func stateFile(run string) string { return "run-" + run + ".json" }

func (m *Monitor) loadRun(name string) (*runState, error) {
	rs := &runState{}
	rs.Version = stateVersion
	if m.opts.State == nil {
		return rs, nil
	}
	err := m.opts.State.Load(stateFile(name), &rs.persisted)
	if err != nil {
		fresh := &runState{}
		fresh.Version = stateVersion
		if errors.Is(err, fs.ErrNotExist) {
			return fresh, nil
		}
		fresh.stateErr = fmt.Errorf("starting run %s with empty history: %w", name, err)
		return fresh, fresh.stateErr
	}
	sort.SliceStable(rs.History, func(i, j int) bool { return rs.History[i].T < rs.History[j].T })
	rs.Engines = rekeyedEngines(rs.Engines)
	m.continueClock(rs)
	return rs, nil
}

// rekeyedEngines moves counters kept under a key that names a URL with more than redaction now shows (a
// state file from before path tokens were hidden: https://gw/bot1:TOKEN/metrics) to the key the URL has
// now, so that neither the token stays on disk nor the endpoint's counters start over. A key with a
// digest (#…, two URLs alike once redacted) is left alone: its redacted form would lose the digest. So is a
// Prometheus instance's key (probes.PromCounterPrefix): it is the instance label as Prometheus gives it,
// which may be a URL, and is read back so.
func rekeyedEngines(in map[string]engineMemo) map[string]engineMemo {
	for k, v := range in {
		if strings.Contains(k, "#") || strings.HasPrefix(k, probes.PromCounterPrefix) {
			continue
		}
		if nk := probes.RedactURLsIn(k); nk != k {
			delete(in, k)
			if _, ok := in[nk]; !ok {
				in[nk] = v
			}
		}
	}
	return in
}

func (m *Monitor) runState(name string) *runState {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.runs[name]
	if rs == nil {
		rs = &runState{}
		rs.Version = stateVersion
		m.runs[name] = rs
	}
	return rs
}

// historyWith returns the history with obs appended (when it is newer), leaving the state alone.
func (rs *runState) historyWith(obs reports.Observation) []reports.Observation {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	h := make([]reports.Observation, len(rs.History), len(rs.History)+1)
	copy(h, rs.History)
	if len(h) == 0 || obs.T > h[len(h)-1].T {
		h = append(h, obs)
	}
	return h
}

// History returns a copy of a run's history.
func (m *Monitor) History(name string) []reports.Observation {
	rs := m.runState(name)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]reports.Observation(nil), rs.History...)
}

func (rs *runState) engineMemos() map[string]engineMemo {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make(map[string]engineMemo, len(rs.Engines))
	for k, v := range rs.Engines {
		out[k] = v
	}
	return out
}

func (rs *runState) logFile() *probes.LogFile {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.LogFile == nil {
		return nil
	}
	f := *rs.LogFile
	return &f
}

// rangeHold is the ETA's range as last shown.
func (rs *runState) rangeHold() reports.RangeHold {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.Range
}

func (rs *runState) snoozedUntil() *time.Time {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.Snooze == nil {
		return nil
	}
	t := *rs.Snooze
	return &t
}

// fillRates is how fast free space shrinks on each observed mount, from the free-space history plus the
// current reading (reports.FillRate: the history is as long as a slow fill's forecast needs it to be).
func (rs *runState) fillRates(obs []reports.PathObservation, t float64) map[string]reports.FillTrend {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := map[string]reports.FillTrend{}
	for _, o := range obs {
		if o.Usage == nil || !o.HasMount {
			continue
		}
		mp := o.Mount.MountPoint
		if _, done := out[mp]; done {
			continue
		}
		pts := append(append([]freePoint(nil), rs.Free[mp]...), freePoint{T: t, Free: o.Usage.Free})
		if trend, ok := reports.FillRate(pts, 0); ok {
			out[mp] = trend
		}
	}
	return out
}

// Evaluation is the outcome of one sampler tick for one run.
type Evaluation struct {
	Run    reports.RunStatus
	Shift  *reports.Shift
	Sample bool // false when the run has no progress source
}

// Sample probes every run, records what it saw in the history (persisted when a state directory
// is set) and returns each run's status with any ETA shift.
func (m *Monitor) Sample(ctx context.Context) []Evaluation {
	now := m.opts.Now()
	pass := m.newPass(ctx, All, true)
	out := make([]Evaluation, len(m.file.Runs))
	var wg sync.WaitGroup
	for i := range m.file.Runs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := &m.file.Runs[i]
			rs, smp := m.runStatus(ctx, r, All, pass, now)
			ev := Evaluation{Run: rs}
			ev.Shift, ev.Sample = m.record(r, rs, smp, now)
			// The status named the state as it was before this sample; name it as it is now.
			ev.Run.Problems = slices.DeleteFunc(ev.Run.Problems, func(p reports.Problem) bool { return p.Probe == "state" })
			if err := m.save(r.Name); err != nil {
				ev.Run.Problems = append(ev.Run.Problems, reports.Problem{Probe: "state", Error: err.Error()})
			}
			// With its progress sample: an answer that probes storage again (a sample's storage may be
			// too old for it) builds plans and stages on this sample's progress.
			m.keepEval(r.Name, latestEval{at: now, need: All, rs: ev.Run, smp: smp})
			out[i] = ev
		}(i)
	}
	wg.Wait()
	return out
}

// record commits a sample to the run's state and runs shift detection on the new estimate.
func (m *Monitor) record(r *config.Run, rs reports.RunStatus, smp *sample, now time.Time) (*reports.Shift, bool) {
	st := m.runState(r.Name)
	t := m.runClock(st)
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, p := range rs.Storage.Paths {
		if p.FreeBytes == nil || p.Mount == "" || p.Host != "" {
			continue // remote paths keep no local free-space history
		}
		if st.Free == nil {
			st.Free = map[string][]freePoint{}
		}
		pts := st.Free[p.Mount]
		if len(pts) > 0 && pts[len(pts)-1].T >= t {
			continue
		}
		st.Free[p.Mount] = thinFree(append(pts, freePoint{T: t, Free: *p.FreeBytes}))
	}
	if smp == nil {
		return nil, false
	}
	st.Engines = smp.memos
	if smp.logFile != nil {
		st.LogFile = smp.logFile
	}
	if !smp.hasProgress {
		return nil, false
	}
	if len(st.History) == 0 || smp.obs.T > st.History[len(st.History)-1].T {
		st.History = append(st.History, smp.obs)
		if len(st.History) > m.opts.MaxHistory {
			st.History = reports.Compact(st.History, m.opts.MaxHistory*3/4)
		}
		st.Clock = &clockMark{T: smp.obs.T, Wall: probes.UnixSeconds(now)}
	}
	if rs.ETA == nil {
		return nil, true
	}
	e := *rs.ETA
	st.Last = &e
	st.Range.Keep(e)
	if smp.estimate != nil {
		e = *smp.estimate
	}
	sh, fired := st.Shift.Update(e, smp.obs.T, reports.ShiftConfig{})
	if !fired {
		st.Moves.Record(st.Shift, nil)
		return nil, true
	}
	st.Moves.Record(st.Shift, &sh)
	return &sh, true
}

// moveLog is a copy of the run's move log with the drift of e (the estimate at T t) from the announced
// estimate filled in.
func (rs *runState) moveLog(e *reports.ETA, t float64) *reports.MoveLog {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l := rs.Moves.Clone()
	if e != nil {
		if d, ok := rs.Shift.Drift(*e, t); ok {
			l.Drift = &d
		}
	}
	return &l
}

// save persists a run's state; errors leave the in-memory state intact for the next try.
func (m *Monitor) save(name string) error {
	if m.opts.State == nil || m.opts.ReadOnly {
		return nil
	}
	st := m.runState(name)
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := m.opts.State.Save(stateFile(name), &st.persisted); err != nil {
		st.stateErr = fmt.Errorf("%w: %w", ErrNotSaved, err)
		return st.stateErr
	}
	st.stateErr = nil
	return nil
}

// stateProblem is why the run's state is not on disk, nil when it is.
func (rs *runState) stateProblem() error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.stateErr
}

// Snooze silences a run's warnings until the given time (zero time unsnoozes) and persists it.
func (m *Monitor) Snooze(name string, until time.Time) error {
	if _, ok := m.file.RunByName(name); !ok {
		return fmt.Errorf("no run named %q", name)
	}
	if err := m.readOnly(); err != nil {
		return err
	}
	st := m.runState(name)
	st.mu.Lock()
	if until.IsZero() {
		st.Snooze = nil
	} else {
		u := until.UTC()
		st.Snooze = &u
	}
	st.mu.Unlock()
	return m.save(name)
}

// SnoozedUntil returns when a run's snooze ends, if it is snoozed.
func (m *Monitor) SnoozedUntil(name string) (time.Time, bool) {
	u := m.runState(name).snoozedUntil()
	if u == nil || !u.After(m.opts.Now()) {
		return time.Time{}, false
	}
	return *u, true
}

// MarkStage records a stage state set by hand and persists it. An empty state clears the mark.
func (m *Monitor) MarkStage(run, stage, state, by string) error {
	r, ok := m.file.RunByName(run)
	if !ok {
		return fmt.Errorf("no run named %q", run)
	}
	found := false
	for _, s := range r.Stages {
		if s.Name == stage {
			found = true
		}
	}
	if !found {
		var names []string
		for _, s := range r.Stages {
			names = append(names, s.Name)
		}
		if len(names) == 0 {
			return fmt.Errorf("run %s has no stage %q: it has no stages (they are listed under stages: in the run file)", run, stage)
		}
		return fmt.Errorf("run %s has no stage %q (stages: %s)", run, stage, strings.Join(names, ", "))
	}
	if err := m.readOnly(); err != nil {
		return err
	}
	st := m.runState(run)
	st.mu.Lock()
	if st.Stages == nil {
		st.Stages = map[string]StageMark{}
	}
	if state == "" {
		delete(st.Stages, stage)
	} else {
		st.Stages[stage] = StageMark{State: state, By: by, At: m.opts.Now().UTC()}
	}
	st.mu.Unlock()
	return m.save(run)
}

// finishSummary is the run's finish summary over hist (nil when it has not finished), from the cache when
// the finish it summarises is the same.
func (rs *runState) finishSummary(hist []reports.Observation, cfg reports.EstimateConfig, first *reports.EstimateMark) *reports.FinishSummary {
	key := -1.0
	for _, o := range hist {
		if o.Total > 0 && o.Done >= o.Total {
			key = o.T
			break
		}
	}
	if key < 0 {
		return nil
	}
	rs.mu.Lock()
	if rs.finish != nil && rs.finishKey == key && (first == nil) == (rs.finish.First == nil) {
		f := *rs.finish
		rs.mu.Unlock()
		return &f
	}
	rs.mu.Unlock()
	f := reports.SummarizeFinish(hist, cfg, first)
	if f == nil {
		return nil
	}
	rs.mu.Lock()
	c := *f
	rs.finish, rs.finishKey = &c, key
	rs.mu.Unlock()
	return f
}
