package monitor

// What the protected paths' devices wrote over the last minutes: evidence for "are we writing to
// /shared?" that needs no process inspection. The disk counters are read with every storage probe
// (shared.go); this keeps a reading about every minute for ten minutes, so that a status can say
// "/shared's device wrote 0 B in the last 5 min" over a window long enough for the page cache's
// writeback (30 s by default) to have reached the device. The long-lived monitor persists the
// readings for one-shot commands, as it does the latest one.

import (
	"math"
	"sync"
	"time"

	"runwatch/probes"
	"runwatch/reports"
)

const (
	// deviceWindowKeep is how long readings are kept, deviceWindowStep their spacing, deviceWindowWant
	// the window a status measures over when the readings reach that far back.
	deviceWindowKeep = 10 * time.Minute
	deviceWindowStep = time.Minute
	deviceWindowWant = 5 * time.Minute
	deviceWindowFile = "disk-window.json"
)

// deviceWindow is the readings of the disk counters over the last deviceWindowKeep, oldest first.
type deviceWindow struct {
	mu       sync.Mutex
	readings []diskSample
}

// note adds cur (read at now) to the window and returns the reading to measure what the devices
// wrote since: the youngest one at least deviceWindowWant old, else the oldest kept; nil when there
// is none before now. A one-shot monitor, which keeps no window, reads the one a running bot saves.
func (m *Monitor) noteDevices(now time.Time, cur probes.DiskCounters) *diskSample {
	w := &m.devices
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.readings) == 0 && m.opts.State != nil {
		var saved []diskSample
		if err := m.opts.State.Load(deviceWindowFile, &saved); err == nil {
			w.readings = saved
		}
	}
	// Readings from the future (a clock stepped back) or too old are no window.
	kept := w.readings[:0]
	for _, r := range w.readings {
		if age := now.Sub(r.At); age > 0 && age <= deviceWindowKeep {
			kept = append(kept, r)
		}
	}
	w.readings = kept
	var from *diskSample
	for i := range w.readings {
		r := w.readings[i]
		if from == nil || now.Sub(r.At) >= deviceWindowWant {
			from = &r
		}
	}
	if m.opts.ReadOnly {
		return from
	}
	if n := len(w.readings); n == 0 || now.Sub(w.readings[n-1].At) >= deviceWindowStep {
		w.readings = append(w.readings, diskSample{At: now, Counters: cur})
		if m.opts.State != nil {
			// Best effort: without it a one-shot command has no window and says what it could not see.
			_ = m.opts.State.Save(deviceWindowFile, w.readings)
		}
	}
	return from
}

// deviceWrites is what the device of each path's mount wrote between from and cur, by mount point.
func deviceWrites(from, cur *diskSample, paths []reports.PathObservation) map[string]reports.DeviceWrites {
	if from == nil || cur == nil {
		return nil
	}
	secs := cur.At.Sub(from.At).Seconds()
	out := map[string]reports.DeviceWrites{}
	for _, p := range paths {
		if !p.HasMount {
			continue
		}
		if n, ok := probes.DeviceWritten(from.Counters, cur.Counters, p.Mount); ok {
			out[p.Mount.MountPoint] = reports.DeviceWrites{Device: p.Mount.Source, Bytes: n, Seconds: secs}
		}
	}
	return out
}

// remoteDevices is what node_exporter's disk counters say each host's devices wrote, by host and mount
// point, with the device each mount is on.
func remoteDevices(rem probes.RemoteStorage) map[string]map[string]reports.DeviceWrites {
	out := map[string]map[string]reports.DeviceWrites{}
	for _, h := range rem.Hosts {
		for mp, w := range rem.Written[h.Name] {
			dw := reports.DeviceWrites{Bytes: uint64(math.Round(max(w.Bytes, 0))), Seconds: w.Seconds}
			for _, f := range h.Filesystems {
				if f.Mount.MountPoint == mp {
					dw.Device = f.Mount.Source
				}
			}
			if out[h.Name] == nil {
				out[h.Name] = map[string]reports.DeviceWrites{}
			}
			out[h.Name][mp] = dw
		}
	}
	return out
}
