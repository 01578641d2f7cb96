package monitor

import (
	"context"
	"sync"
	"time"

	"runwatch/probes"
)

// sharedProbes are read once per status for every run: the mount table, open files and disk counters.
type sharedProbes struct {
	table    *probes.MountTable
	tableErr error
	scan     *probes.WriterScan
	scanErr  error
	rates    map[string]float64 // by mount point
	rateErr  error
	// rateNote says why there are no write rates when there is nothing to measure them against.
	rateNote string
}

// sharedFuture is the shared probes of one status, read while each run's own sources are read.
type sharedFuture struct {
	done chan struct{}
	v    sharedProbes
}

// wait returns the shared probes once they are read.
func (f *sharedFuture) wait() *sharedProbes {
	<-f.done
	return &f.v
}

// startShared starts reading what every run shares; the runs' own probes need not wait for it.
func (m *Monitor) startShared(ctx context.Context, need Need) *sharedFuture {
	f := &sharedFuture{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.v = m.probeShared(ctx, need)
	}()
	return f
}

// diskSample is a reading of the disk counters and when it was taken; the long-lived monitor
// persists the latest (diskStateFile) so that one-shot commands measure write rates against it
// instead of waiting for a second reading of their own.
type diskSample struct {
	At       time.Time           `json:"at"`
	Counters probes.DiskCounters `json:"counters"`
}

const diskStateFile = "disk.json"

// rateNeedsSample is the status's note when no earlier reading is there to measure against.
const rateNeedsSample = "write rate: needs a second sample (no reading from a running bot in the last 10 minutes)"

// usable reports whether prev is a reading to measure a rate at now against.
func (d *diskSample) usable(now time.Time) bool {
	if d == nil {
		return false
	}
	age := now.Sub(d.At)
	return age >= time.Second && age <= 10*time.Minute
}

// previousDisk is the reading to measure against: this monitor's own, else the one a running bot
// left in the state directory.
func (m *Monitor) previousDisk(now time.Time) *diskSample {
	m.mu.Lock()
	prev := m.disk
	m.mu.Unlock()
	if prev.usable(now) || m.opts.State == nil {
		return prev
	}
	// A missing or unreadable file is the same as none: no reading to measure against.
	var saved diskSample
	if err := m.opts.State.Load(diskStateFile, &saved); err == nil && saved.usable(now) {
		return &saved
	}
	return prev
}

// keepDisk remembers cur as the latest reading, and persists it for one-shot commands.
func (m *Monitor) keepDisk(cur *diskSample) {
	m.mu.Lock()
	m.disk = cur
	m.mu.Unlock()
	if m.opts.State != nil && !m.opts.ReadOnly {
		// Best effort: without it a one-shot command says it needs a second sample.
		_ = m.opts.State.Save(diskStateFile, cur)
	}
}

// probeShared reads what every run shares: the mount table (for storage and plans), and for
// storage also the open files and the disk counters.
func (m *Monitor) probeShared(ctx context.Context, need Need) sharedProbes {
	var s sharedProbes
	if !need.Storage && !need.Plans {
		return s
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
		defer cancel()
		s.table, s.tableErr = m.mounts.Read(c)
	}()
	if !need.Storage {
		wg.Wait()
		return s
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		c, cancel := context.WithTimeout(ctx, 2*m.opts.ProbeTimeout)
		defer cancel()
		scan, err := m.writers.Scan(c)
		if err != nil {
			s.scanErr = err
			return
		}
		s.scan = &scan
	}()
	var cur probes.DiskCounters
	var curErr error
	go func() {
		defer wg.Done()
		c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
		defer cancel()
		cur, curErr = m.diskio.Read(c)
	}()
	wg.Wait()
	if curErr != nil {
		s.rateErr = curErr
		return s
	}
	now := m.opts.Now()
	prev := m.previousDisk(now)
	m.keepDisk(&diskSample{At: now, Counters: cur})
	if !prev.usable(now) {
		wait := m.opts.RateWindow
		if wait <= 0 {
			s.rateNote = rateNeedsSample
			return s
		}
		// Asked to measure: take a short second reading, bounded by the deadline.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 2*wait {
			s.rateNote = rateNeedsSample
			return s
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return s
		}
		c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
		next, err := m.diskio.Read(c)
		cancel()
		if err != nil {
			s.rateErr = err
			return s
		}
		prev = &diskSample{At: now, Counters: cur}
		now = m.opts.Now()
		cur = next
		m.keepDisk(&diskSample{At: now, Counters: cur})
	}
	if s.table != nil {
		dt := now.Sub(prev.At).Seconds()
		s.rates = map[string]float64{}
		for _, mt := range s.table.Visible() {
			if probes.IsPseudoFS(mt.FSType) {
				continue
			}
			if r, ok := probes.WriteRate(prev.Counters, cur, mt, dt); ok {
				s.rates[mt.MountPoint] = r
			}
		}
	}
	return s
}
