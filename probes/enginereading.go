package probes

import (
	"errors"
	"sort"
	"strings"
)

// EngineReading is one inference server as read at one moment, directly (a /metrics scrape) or
// through Prometheus (one instance): what the engine counted, or why it gave nothing.
type EngineReading struct {
	Key    string // the server's counter key: its redacted metrics URL, or PromCounterPrefix + instance
	URL    string // the address a status shows
	Host   string // the instance, for servers read through Prometheus
	Probe  string // names the reading in problems
	Engine Engine
	Err    error
}

// PromCounterPrefix starts the counter key of a server read through Prometheus.
const PromCounterPrefix = "prometheus "

// ErrUpZero is an engine target Prometheus cannot scrape.
var ErrUpZero = errors.New("Prometheus cannot scrape it (up = 0)")

// PromReadings makes one reading per instance that serves as an engine, sorted by instance. An
// engine Prometheus cannot scrape (up = 0) that was one before (its key is in known) is a reading
// with an error, and so is one that vanished altogether, so that what it counted still counts.
// Instances that are down and were never engines are returned in down: a problem, not an engine.
func PromReadings(insts []PromInstance, where string, known map[string]bool) (readings []EngineReading, down []string) {
	seen := map[string]bool{}
	for _, pi := range insts {
		key := PromCounterPrefix + pi.Name
		switch {
		case pi.Engine.Kind != "":
			rd := EngineReading{Key: key, URL: where, Host: pi.Name, Probe: "prometheus target " + pi.Name, Engine: pi.Engine}
			if pi.Down() {
				rd.Err = ErrUpZero
			}
			readings = append(readings, rd)
		case pi.Down() && known[key]:
			readings = append(readings, EngineReading{Key: key, URL: where, Host: pi.Name, Probe: "prometheus target " + pi.Name, Err: ErrUpZero})
		case pi.Down():
			down = append(down, pi.Name)
		default:
			continue
		}
		seen[pi.Name] = true
	}
	for key := range known {
		inst, ok := strings.CutPrefix(key, PromCounterPrefix)
		if !ok || seen[inst] {
			continue
		}
		readings = append(readings, EngineReading{Key: key, URL: where, Host: inst, Probe: "prometheus target " + inst,
			Err: errors.New("no series in Prometheus any more (target removed or relabelled); its counts are kept")})
	}
	sort.Slice(readings, func(i, j int) bool { return readings[i].Host < readings[j].Host })
	sort.Strings(down)
	return readings, down
}
