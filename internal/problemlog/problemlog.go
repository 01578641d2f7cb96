// Package problemlog logs the problems a process counts in its metrics (the bot's probe failures,
// the exporter's problems), by their full names: each when it starts or its error changes, and once
// when it ends, so that a metric whose labels must stay few (a kind, never a URL or an address)
// still has its details in the log. It owns nothing else.
package problemlog

import (
	"cmp"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"runwatch/reports"
)

// Log remembers the problems it last saw. The zero Log with a nil logger logs nothing.
type Log struct {
	Logger *slog.Logger
	// What names the thing that has the problems in each line, e.g. "probe failing".
	What string

	mu   sync.Mutex
	last map[key]string // error by run and probe
}

type key struct{ run, probe string }

// Observe takes the problems of each run now (by run name) and logs what changed since the last call.
func (l *Log) Observe(problems map[string][]reports.Problem) {
	now := map[key]string{}
	for run, ps := range problems {
		for _, p := range ps {
			now[key{run, p.Probe}] = p.Error
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Logger != nil {
		order := func(m map[key]string) []key {
			return slices.SortedFunc(maps.Keys(m), func(a, b key) int {
				return cmp.Or(strings.Compare(a.run, b.run), strings.Compare(a.probe, b.probe))
			})
		}
		for _, k := range order(now) {
			if old, ok := l.last[k]; !ok || old != now[k] {
				l.Logger.Warn(l.What, "run", k.run, "probe", k.probe, "err", now[k])
			}
		}
		for _, k := range order(l.last) {
			if _, ok := now[k]; !ok {
				l.Logger.Info(l.What+" resolved", "run", k.run, "probe", k.probe)
			}
		}
	}
	l.last = now
}
