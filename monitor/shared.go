package monitor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"runwatch/config"
	"runwatch/internal/flight"
	"runwatch/probes"
	"runwatch/reports"
)

// sharedProbes are read once per status for every run: the mount table, open files and disk counters.
type sharedProbes struct {
	table    *probes.MountTable
	tableErr error
	// writers is the scan of open files this pass reads (shared with other passes: see scanWriters).
	writers *writerScan
	scan    *probes.WriterScan
	scanErr error
	rates   map[string]float64 // by mount point
	rateErr error
	// rateNote says why there are no write rates when there is nothing to measure them against.
	rateNote string
	// devicesFrom and devicesNow are the disk readings what the devices wrote is measured between (devices.go).
	devicesFrom, devicesNow *diskSample
}

// pass is one reading of the world that every run of a status or a sample shares: the shared
// probes (mount table, open files, disk counters), read while each run reads its own sources;
// each metrics URL scraped once and each mount statted once, however many runs list them.
type pass struct {
	done    chan struct{}
	shared  sharedProbes
	scrapes flight.Group[probes.Engine]
	usage   flight.Group[probes.Usage]
	// runs are the runs the pass reads for, and prom its questions to their Prometheus servers,
	// grouped (promgroup.go).
	runs []*config.Run
	prom promBatch
}

// wait returns the shared probes once they are read.
func (p *pass) wait() *sharedProbes {
	<-p.done
	return &p.shared
}

// newPass starts reading what every run shares. A sampler's pass (sampling) scans open files only
// every ScanEvery samples and reuses the last scan in between; any pass reuses a scan in flight or
// at most ScanReuse old.
func (m *Monitor) newPass(ctx context.Context, need Need, sampling bool) *pass {
	p := &pass{done: make(chan struct{})}
	p.scrapes.Keep, p.usage.Keep = true, true
	p.prom.history.Keep, p.prom.engines.Keep, p.prom.storage.Keep, p.prom.writers.Keep = true, true, true, true
	for i := range m.file.Runs {
		p.runs = append(p.runs, &m.file.Runs[i])
	}
	go func() {
		defer close(p.done)
		p.shared = m.probeShared(ctx, need, sampling)
	}()
	return p
}

// defaultScanReuse is Options.ScanReuse's default: a few seconds, so that a burst of questions (200
// people asking /storage at once, over 10 runs) reads one scan, while "are we writing now?" asked
// again a little later sees processes that started since.
const defaultScanReuse = 3 * time.Second

// writerScan is one scan of open files with the mount table read beside it (the scan's mount ids
// name that table's mounts). Every run and every answer that asks while it is in flight, or at
// most ScanReuse old, reads it; each run classifies it once (classify).
type writerScan struct {
	done    chan struct{} // closed once scan, table and err are set
	at      time.Time     // when it started, on the monitor's clock
	readAt  time.Time     // when it ended: what an answer from it is as of
	scan    *probes.WriterScan
	table   *probes.MountTable
	err     error
	samples int // samples that reused it; under Monitor.mu

	mu      sync.Mutex
	classes map[string]*reports.WriterClass // by run, then the paths it was classified against
}

// scanWriters returns the scan of open files a pass reads: the one in flight if there is one; for
// a sample within ScanEvery samples of the last scan, that one; the last one if it is at most
// ScanReuse old; else a new scan. The scan runs under its own deadline, not the asker's: others
// may be waiting for it, and an asker whose ctx ends stops waiting, not the scan.
func (m *Monitor) scanWriters(ctx context.Context, sampling bool) (*writerScan, error) {
	now := m.opts.Now()
	m.mu.Lock()
	ws := m.lastScan
	switch {
	case ws != nil && !ws.finished():
		if m.scanJoined != nil {
			m.scanJoined()
		}
	case ws != nil && sampling && ws.samples+1 < m.opts.ScanEvery:
		ws.samples++
	case ws != nil && !now.Before(ws.at) && now.Sub(ws.at) <= m.opts.ScanReuse:
	default:
		ws = &writerScan{done: make(chan struct{}), at: now}
		m.lastScan = ws
		go m.runScan(context.WithoutCancel(ctx), ws)
	}
	m.mu.Unlock()
	select {
	case <-ws.done:
		return ws, ws.err
	case <-ctx.Done():
		return nil, fmt.Errorf("scan of open files: %w", ctx.Err())
	}
}

func (ws *writerScan) finished() bool {
	select {
	case <-ws.done:
		return true
	default:
		return false
	}
}

// runScan scans /proc for open files, and reads the mount table their mount ids refer to.
func (m *Monitor) runScan(ctx context.Context, ws *writerScan) {
	defer close(ws.done)
	defer func() { ws.readAt = m.opts.Now() }()
	c, cancel := context.WithTimeout(ctx, 2*m.opts.ProbeTimeout)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Without it the writers are classified against the pass's own table (classify).
		ws.table, _ = m.mounts.Read(c)
	}()
	scan, err := flight.Safe(func() (probes.WriterScan, error) { return m.writers.Scan(c) })
	wg.Wait()
	if err != nil {
		ws.err = err
		return
	}
	ws.scan = &scan
}

// classify is the scan classified against a run's paths: computed once per scan, run and paths,
// and shared by every report built from this scan.
func (ws *writerScan) classify(run string, paths []reports.PathObservation, table *probes.MountTable, all bool) *reports.WriterClass {
	if ws.table != nil {
		table = ws.table
	}
	var key strings.Builder
	key.WriteString(run)
	for _, p := range paths {
		fmt.Fprintf(&key, "\x00%s\x00%s\x00%s\x00%t\x00%d\x00%d:%d\x00%s\x00%s", p.Role, p.Path, p.Resolved, p.HasMount,
			p.Mount.ID, p.Mount.Major, p.Mount.Minor, p.Mount.Source, p.Mount.MountPoint)
	}
	fmt.Fprintf(&key, "\x00%p\x00%t", table, all)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if wc := ws.classes[key.String()]; wc != nil {
		return wc
	}
	classify := reports.ClassifyWriters
	if all {
		classify = reports.ClassifyAllWriters
	}
	wc := classify(ws.scan, table, paths)
	if ws.classes == nil {
		ws.classes = map[string]*reports.WriterClass{}
	}
	ws.classes[key.String()] = &wc
	return &wc
}

// scrape reads a metrics endpoint once per pass.
func (m *Monitor) scrape(ctx context.Context, p *pass, run, url string) (probes.Engine, error) {
	key, scraper := url, m.metrics
	if s := m.runMetrics[run]; s != nil {
		key, scraper = url+"\x00"+run, s // its own metrics_max_body: its own scrape
	}
	return p.scrapes.Do(ctx, key, func() (probes.Engine, error) {
		c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
		defer cancel()
		return scraper.Scrape(c, url)
	})
}

// usage reads a mount's capacity once per pass.
func (m *Monitor) usage(ctx context.Context, p *pass, mountPoint string) (probes.Usage, error) {
	return p.usage.Do(ctx, mountPoint, func() (probes.Usage, error) {
		c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
		defer cancel()
		return m.statfs.Usage(c, mountPoint)
	})
}

// diskSample is a reading of the disk counters and when it was taken; the long-lived monitor
// persists the latest (diskStateFile) so that one-shot commands measure write rates against it
// instead of waiting for a second reading of their own.
type diskSample struct {
	At       time.Time           `json:"at"`
	Counters probes.DiskCounters `json:"counters"`
}

const diskStateFile = "disk.json"

// rateNeedsSample is a one-shot command's note when no earlier reading is there to measure against;
// rateFirstSample the long-lived bot's, whose own first reading this is.
const (
	rateNeedsSample = "write rate: needs a second sample (no reading from a running bot in the last 10 minutes)"
	rateFirstSample = "write rate: needs a second sample (this is the first reading of the disk counters; the next sample measures it)"
)

// noRateNote is the note for a status that has no reading to measure against.
func (m *Monitor) noRateNote() string {
	if m.opts.ReadOnly {
		return rateNeedsSample
	}
	return rateFirstSample
}

// usable reports whether prev is a reading to measure a rate at now against.
func (d *diskSample) usable(now time.Time) bool {
	if d == nil {
		return false
	}
	age := now.Sub(d.At)
	return age >= time.Second && age <= 10*time.Minute
}

// previousDisk is the reading to measure against: this monitor's own (the one before it when the
// last is under a second old), else the one a running bot left in the state directory.
func (m *Monitor) previousDisk(now time.Time) *diskSample {
	m.mu.Lock()
	prev, before := m.disk, m.diskBefore
	m.mu.Unlock()
	if !prev.usable(now) && before.usable(now) {
		return before
	}
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
	if m.disk != nil && cur.At.Sub(m.disk.At) >= time.Second {
		m.diskBefore = m.disk
	}
	m.disk = cur
	m.mu.Unlock()
	if m.opts.State != nil && !m.opts.ReadOnly {
		// Best effort: without it a one-shot command says it needs a second sample.
		_ = m.opts.State.Save(diskStateFile, cur)
	}
}

// probeShared reads what every run shares: the mount table (for storage and plans), and for
// storage also the open files and the disk counters.
func (m *Monitor) probeShared(ctx context.Context, need Need, sampling bool) sharedProbes {
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
		s.writers, s.scanErr = m.scanWriters(ctx, sampling)
		if s.writers != nil {
			s.scan = s.writers.scan
		}
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
	s.devicesFrom, s.devicesNow = m.noteDevices(now, cur), &diskSample{At: now, Counters: cur}
	if !prev.usable(now) {
		wait := m.opts.RateWindow
		if wait <= 0 {
			s.rateNote = m.noRateNote()
			return s
		}
		// Asked to measure: take a short second reading, bounded by the deadline.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 2*wait {
			s.rateNote = m.noRateNote()
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
		s.rates = probes.WriteRates(prev.Counters, cur, s.table, now.Sub(prev.At).Seconds())
	}
	return s
}
