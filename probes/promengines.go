package probes

import (
	"context"
	"maps"
	"math"
	"slices"
	"sort"
	"time"
)

// PromEngines reads a run's inference servers from a Prometheus server and answers in the terms of
// a direct scrape: one Engine per `instance` label (summed over data-parallel `engine` labels,
// with the rules of ParseMetrics), beside the targets' `up`.
type PromEngines struct {
	client *Prometheus
	sel    string // the run's label matchers without braces, e.g. job="vllm",run="x"
}

// NewPromEngines returns the engine source of the run whose series selector is selector.
func NewPromEngines(client *Prometheus, selector string) *PromEngines {
	return &PromEngines{client: client, sel: promInner(selector)}
}

// Selector is the run's series selector, as messages name it.
func (p *PromEngines) Selector() string { return promSelector(nil, p.sel) }

// PromInstance is one scrape target at one moment.
type PromInstance struct {
	Name   string
	Up     float64 // the most of its targets' up
	HasUp  bool
	Engine Engine // Kind "" when none of its series names a known engine
	// Scraped is when its engine series were last scraped (unix seconds; 0 when not said): what the
	// values are as of.
	Scraped float64
}

// Down reports whether Prometheus cannot scrape the instance (up = 0).
func (pi PromInstance) Down() bool { return pi.HasUp && pi.Up == 0 }

// PromEngineReading is the run's instances at one moment, sorted by name, and how often each
// server's token counter was reset in the last hour.
type PromEngineReading struct {
	Instances []PromInstance
	Restarts  map[string]int
	// At is when the engines' values are from (unix seconds; 0 when Prometheus did not say): the
	// median of the instances' last scrapes, which lags the moment asked by a scrape interval
	// normally, and by the whole gap after Prometheus missed scrapes.
	At float64
}

// Read reads the run's instances at at. An answer cut at the series limits is an error: part of
// the servers would undercount the totals.
func (p *PromEngines) Read(ctx context.Context, at time.Time) (PromEngineReading, error) {
	out, err := p.client.EngineReadings(ctx, []string{p.sel}, at)
	if err != nil {
		return PromEngineReading{}, err
	}
	return out[0], nil
}

// promEngineReading turns the series of one instant engine query into instances and restarts.
func promEngineReading(series []PromSeries) PromEngineReading {
	out := PromEngineReading{Restarts: map[string]int{}}
	byName := map[string]*PromInstance{}
	get := func(name string) *PromInstance {
		if byName[name] == nil {
			byName[name] = &PromInstance{Name: name}
		}
		return byName[name]
	}
	var engineSeries []PromSeries
	for _, s := range series {
		if len(s.Samples) == 0 {
			continue
		}
		v := s.Samples[len(s.Samples)-1].V
		inst := s.Labels["instance"]
		switch s.Labels["__name__"] {
		case "up":
			pi := get(inst)
			pi.Up, pi.HasUp = math.Max(pi.Up, v), true
		case promResetsName:
			if v > 0 {
				out.Restarts[inst] = int(v)
			}
		case promScrapedName:
			get(inst).Scraped = v
		default:
			engineSeries = append(engineSeries, s)
		}
	}
	for inst, e := range PromEnginesByInstance(engineSeries) {
		get(inst).Engine = e
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out.Instances = append(out.Instances, *byName[name])
	}
	out.At = promDataTime(out.Instances)
	return out
}

// promDataTime is the median of the scrape times of the instances that have an engine: the moment
// their values, summed, stand for (0 when none says). All of them lag together after a gap in
// Prometheus's data; the median keeps one server scraped long ago from dragging the rest.
func promDataTime(insts []PromInstance) float64 {
	var ts []float64
	for _, pi := range insts {
		if pi.Scraped > 0 && pi.Engine.Kind != "" {
			ts = append(ts, pi.Scraped)
		}
	}
	if len(ts) == 0 {
		return 0
	}
	sort.Float64s(ts)
	return ts[(len(ts)-1)/2]
}

// History settings: about promHistoryPoints steps per span, never finer than promMinStep.
const (
	promHistoryPoints = 360
	promMinStep       = time.Second
)

// promStep is the query_range step that covers span in about promHistoryPoints points.
func promStep(span time.Duration) time.Duration {
	step := (span / promHistoryPoints).Truncate(time.Second)
	return max(step, promMinStep)
}

// PromStep is the run's instances at one step of a history.
type PromStep struct {
	T         float64 // unix seconds
	Instances []PromInstance
}

// History reads the run's instances from from to now, in steps that end at now (so the newest is
// as fresh as the data). A run younger than a few dozen steps is asked again with a step fitted
// to its age, so that its first minutes are measured too. A span shorter than two steps has no
// history: nil, nil.
func (p *PromEngines) History(ctx context.Context, from, now time.Time) ([]PromStep, error) {
	out, err := p.client.Histories(ctx, []string{p.sel}, from, now)
	if err != nil || out == nil {
		return nil, err
	}
	return out[0], nil
}

// promFirstT is the time of the earliest sample in series (0 when there is none).
func promFirstT(series []PromSeries) float64 {
	first := 0.0
	for _, s := range series {
		if len(s.Samples) > 0 && (first == 0 || s.Samples[0].T < first) {
			first = s.Samples[0].T
		}
	}
	return first
}

// promSteps replays a query_range answer step by step: at each instant, every instance with a
// sample then, as an instant query at that moment would have read it.
func promSteps(series []PromSeries) []PromStep {
	type instData struct {
		name          string
		ups           [][]PromSample
		eng           []PromSeries
		replay        *PromEngineReplay
		upCur, engCur []int
		values        []float64
		scraped       []PromSample
		scrapedCur    int
	}
	byName := map[string]*instData{}
	tset := map[float64]bool{}
	for _, s := range series {
		inst := s.Labels["instance"]
		d := byName[inst]
		if d == nil {
			d = &instData{name: inst}
			byName[inst] = d
		}
		switch s.Labels["__name__"] {
		case "up":
			d.ups = append(d.ups, s.Samples)
		case promScrapedName:
			d.scraped = s.Samples
		default:
			d.eng = append(d.eng, s)
		}
		for _, smp := range s.Samples {
			tset[smp.T] = true
		}
	}
	list := make([]*instData, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		d := byName[name]
		d.replay = NewPromEngineReplay(d.eng)
		d.upCur, d.engCur, d.values = make([]int, len(d.ups)), make([]int, len(d.eng)), make([]float64, len(d.eng))
		list = append(list, d)
	}
	ts := make([]float64, 0, len(tset))
	for t := range tset {
		ts = append(ts, t)
	}
	sort.Float64s(ts)
	// at reads a series at t: steps are the same instants in every series of the answer.
	at := func(samples []PromSample, cur *int, t float64) (float64, bool) {
		for *cur < len(samples) && samples[*cur].T < t {
			*cur++
		}
		if *cur < len(samples) && samples[*cur].T == t {
			return samples[*cur].V, true
		}
		return 0, false
	}
	out := make([]PromStep, 0, len(ts))
	for _, t := range ts {
		var insts []PromInstance
		for _, d := range list {
			pi := PromInstance{Name: d.name}
			for k, ups := range d.ups {
				if v, ok := at(ups, &d.upCur[k], t); ok {
					pi.Up, pi.HasUp = math.Max(pi.Up, v), true
				}
			}
			present := false
			for j, es := range d.eng {
				v, ok := at(es.Samples, &d.engCur[j], t)
				if !ok {
					v = math.NaN()
				}
				d.values[j], present = v, present || ok
			}
			if present {
				pi.Engine = d.replay.At(d.values)
			}
			if v, ok := at(d.scraped, &d.scrapedCur, t); ok {
				pi.Scraped = v
			}
			if present || pi.HasUp {
				insts = append(insts, pi)
			}
		}
		out = append(out, PromStep{T: t, Instances: insts})
	}
	return promRetime(out)
}

// promRetime puts each step at the time its values are from (promDataTime) rather than the time it
// was evaluated at, and drops the steps whose data is no newer than the step before: a step of a
// query_range answer repeats the last scrape's values until the next scrape, so a gap in
// Prometheus's data (a restart, missed scrapes) is a run of steps with the values from before it,
// which, kept at their own times, would read as a stall and then a burst. Steps that do not say
// when their data is from are kept as they are.
func promRetime(steps []PromStep) []PromStep {
	out := steps[:0]
	last := 0.0
	for _, st := range steps {
		if at := promDataTime(st.Instances); at > 0 {
			st.T = at
		}
		if st.T <= last {
			continue
		}
		last = st.T
		out = append(out, st)
	}
	return out
}
