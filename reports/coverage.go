package reports

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Coverage is what a verdict about writes to the protected paths rests on: the hosts whose writers
// were seen, device counters that show nothing was written, and what should have answered and did
// not, with why. A verdict says "No" only when nothing it asks about is missing (Covers); otherwise
// its first line says what it saw and what it could not see. Silence is never evidence: a source
// that failed, a host that went quiet and processes that could not be inspected are all gaps.
type Coverage struct {
	// Hosts are the hosts whose open files were read, "" for this machine (first), the others sorted.
	Hosts []string `json:"hosts"`
	// Quiet are protected paths whose device wrote nothing over a window: evidence that needs no process
	// inspection, so a gap of processes that could not be inspected does not hold for them.
	Quiet []QuietDevice `json:"quiet,omitempty"`
	// Missing is what should have answered and did not.
	Missing []Gap `json:"missing,omitempty"`
}

// Sources of a Gap.
const (
	// GapPrometheus: the Prometheus server did not answer the writer query; every other host is unseen.
	GapPrometheus = "prometheus"
	// GapExporter: a host's `bot exporter` did not answer Prometheus's last scrape, or vanished.
	GapExporter = "exporter"
	// GapNoExporter: a host the run spans (one of its targets is there) where no `bot exporter` has
	// answered: none was ever run there, or not within the last hour.
	GapNoExporter = "no_exporter"
	// GapScan: the scan of open files failed on the host.
	GapScan = "scan"
	// GapProcesses: processes on the host whose open files could not be read.
	GapProcesses = "processes"
)

// Gap is a source that should have answered and did not.
type Gap struct {
	Source string `json:"source"`
	// Hosts are the hosts it leaves unseen, "" for this machine. A Prometheus gap leaves every other host
	// unseen: Hosts are then the hosts the run had lately (none when not known).
	Hosts []string `json:"hosts,omitempty"`
	// Processes is how many processes could not be inspected (GapProcesses).
	Processes int `json:"processes,omitempty"`
	// Paths are the protected paths it leaves open; none: every one.
	Paths []string `json:"paths,omitempty"`
	// Why says why, for a person, without a leading capital or a final period: "Prometheus did not
	// answer within 2s".
	Why string `json:"why"`
}

// QuietDevice is a protected path whose device (a block device's partition, an NFS mount) wrote no
// byte over a window: nothing writes there, whoever the processes are.
type QuietDevice struct {
	Host    string  `json:"host,omitempty"`
	Path    string  `json:"path"`   // the protected path
	Mount   string  `json:"mount"`  // its mount point
	Device  string  `json:"device"` // the device or export
	Seconds float64 `json:"seconds"`
}

// concerns reports whether g leaves path on host unseen; host "*" is any host.
func (g Gap) concerns(host, path string) bool {
	if len(g.Paths) > 0 && path != "" && !slices.Contains(g.Paths, path) {
		return false
	}
	switch {
	case host == "*":
		return true
	case g.Source == GapPrometheus:
		return host != ""
	}
	return slices.Contains(g.Hosts, host)
}

// Gaps are the gaps that leave any of paths unseen on host ("*": any host); with no paths, every gap
// on host.
func (c Coverage) Gaps(host string, paths ...string) []Gap {
	var out []Gap
	for _, g := range c.Missing {
		if len(paths) == 0 && g.concerns(host, "") {
			out = append(out, g)
			continue
		}
		for _, p := range paths {
			if g.concerns(host, p) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// Covers reports whether what answered covers path on host ("*": every host): nothing that should
// have answered for it is missing. A warning about path on host is resolved only when this holds.
func (c Coverage) Covers(host, path string) bool { return len(c.Gaps(host, path)) == 0 }

// QuietFor is the device evidence for path on host, if any.
func (c Coverage) QuietFor(host, path string) (QuietDevice, bool) {
	for _, q := range c.Quiet {
		if q.Host == host && q.Path == path {
			return q, true
		}
	}
	return QuietDevice{}, false
}

// Covers reports whether st's evidence covers a warning's mount: a protected path on this machine,
// or "host:path" for one on another host (MergeRemote's keys). The posts' resolve check asks it.
func (st Storage) Covers(mount string) bool {
	if h, p, ok := strings.Cut(mount, ":"); ok && !strings.HasPrefix(mount, "/") {
		return st.Coverage.Covers(h, p)
	}
	return st.Coverage.Covers("", mount)
}

// Answered reports whether every source that speaks for a warning's mount answered: no Prometheus,
// exporter or scan gap leaves it unseen. Processes that could not be inspected aside (they were as
// unseen when the warning was raised): Unseen names them for the resolution to say. A protected-write
// warning is resolved only when this holds; Covers is the stricter test a "No" verdict needs.
func (st Storage) Answered(mount string) bool {
	host, path := "", mount
	if h, p, ok := strings.Cut(mount, ":"); ok && !strings.HasPrefix(mount, "/") {
		host, path = h, p
	}
	return len(hostGaps(st.Coverage.Gaps(host, path))) == 0 && !scanFailed(st.Coverage.Gaps(host, path))
}

// Unseen says, for a resolution, what a mount's evidence still could not see: "12 processes could not be
// inspected". "" when it covers the mount.
func (st Storage) Unseen(mount string) string {
	host, path := "", mount
	if h, p, ok := strings.Cut(mount, ":"); ok && !strings.HasPrefix(mount, "/") {
		host, path = h, p
	}
	var parts []string
	for _, g := range processGaps(st.Coverage.Gaps(host, path)) {
		parts = append(parts, fmt.Sprintf("%s could not be inspected", Plural(g.Processes, "process", "processes")))
	}
	return strings.Join(parts, "; ")
}

// addGap adds g, merged with a gap of the same source and why (their hosts and paths joined).
func (c *Coverage) addGap(g Gap) {
	for i, o := range c.Missing {
		// Processes are counted per host: their gaps stay apart.
		if o.Source == g.Source && o.Source != GapProcesses && o.Why == g.Why && slices.Equal(o.Paths, g.Paths) {
			for _, h := range g.Hosts {
				if !slices.Contains(o.Hosts, h) {
					o.Hosts = append(o.Hosts, h)
				}
			}
			sortHosts(o.Hosts)
			o.Processes += g.Processes
			c.Missing[i] = o
			return
		}
	}
	sortHosts(g.Hosts)
	c.Missing = append(c.Missing, g)
}

// addHost records that host's open files were read.
func (c *Coverage) addHost(host string) {
	if !slices.Contains(c.Hosts, host) {
		c.Hosts = append(c.Hosts, host)
		sortHosts(c.Hosts)
	}
}

// sortHosts sorts hosts with this machine ("") first.
func sortHosts(hs []string) { sort.Strings(hs) }

// unseenHosts says which hosts gaps leave unseen: "host `gpu-3`", "3 hosts", "the other hosts"
// (Prometheus failed and the run's hosts are not known).
func unseenHosts(gaps []Gap) string {
	var hosts []string
	other := false
	for _, g := range gaps {
		for _, h := range g.Hosts {
			if h != "" && !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
		if g.Source == GapPrometheus && len(g.Hosts) == 0 {
			other = true
		}
	}
	switch {
	case other && len(hosts) == 0:
		return "the other hosts"
	case len(hosts) == 1:
		return "host " + Code(hosts[0])
	case len(hosts) == 2:
		var names []string
		for _, h := range hosts {
			names = append(names, Code(h))
		}
		return "hosts " + names[0] + " and " + names[1]
	}
	return fmt.Sprintf("%d hosts", len(hosts))
}

// hostGaps are the gaps that leave other hosts unseen (Prometheus, an exporter, a host's scan), apart
// from processes that could not be inspected.
func hostGaps(gaps []Gap) []Gap {
	var out []Gap
	for _, g := range gaps {
		if g.Source == GapPrometheus || g.Source == GapExporter || g.Source == GapNoExporter || (g.Source == GapScan && !slices.Contains(g.Hosts, "")) {
			out = append(out, g)
		}
	}
	return out
}

// cantTell is the first words of a verdict that other hosts went unseen: "Can't tell* for 3 hosts:
// Prometheus did not answer within 2s" (the caller puts the glyph and the opening "*"). Several reasons
// are each said once, with the hosts they leave out when there is more than one reason.
func cantTell(gaps []Gap) string {
	var whys []string
	for _, g := range gaps {
		w := g.Why
		if len(gaps) > 1 && len(g.Hosts) > 0 {
			w = unseenHosts([]Gap{g}) + ": " + w
		}
		if !slices.Contains(whys, w) {
			whys = append(whys, w)
		}
	}
	return "Can't tell* for " + unseenHosts(gaps) + ": " + Esc(strings.Join(whys, "; "))
}

// remoteAnswered says how many other hosts answered, for the part of a verdict after what could not be
// seen: "nor on the 3 other hosts whose exporters answered". "" when none did.
func (c Coverage) remoteAnswered() int {
	n := 0
	for _, h := range c.Hosts {
		if h != "" {
			n++
		}
	}
	return n
}

// processGaps are the gaps of processes that could not be inspected, on any host.
func processGaps(gaps []Gap) []Gap {
	var out []Gap
	for _, g := range gaps {
		if g.Source == GapProcesses {
			out = append(out, g)
		}
	}
	return out
}

// minQuietSeconds is the shortest window over which a device that wrote nothing is evidence that
// nothing writes to it: longer than the page cache holds a dirty page before writeback (30 s by
// default), so a write made before the window began has reached the device within it.
const minQuietSeconds = 60

// localCoverage is what this machine's evidence covers: this host when the scan of open files ran
// whole, a gap when it failed, a gap for the processes it could not inspect; and the protected paths
// whose device wrote nothing over the window, which neither gap holds for.
func localCoverage(in StorageInput, st Storage, prot []protectedSpot) Coverage {
	c := Coverage{Hosts: []string{}}
	var open []string // protected paths no device evidence covers
	for _, p := range prot {
		if d, ok := in.Devices[p.mount.MountPoint]; ok && p.hasMount && d.Bytes == 0 && d.Seconds >= minQuietSeconds {
			c.Quiet = append(c.Quiet, QuietDevice{Path: p.path, Mount: p.mount.MountPoint, Device: d.Device, Seconds: d.Seconds})
			continue
		}
		open = append(open, p.path)
	}
	if len(prot) > 0 && len(open) == 0 {
		// The devices answer for every protected path: whatever the scan could not see wrote nothing there.
		if in.Scan != nil && in.ScanErr == nil {
			c.addHost("")
		}
		return c
	}
	if len(open) == len(prot) {
		open = nil // every path: the gap needs no list
	}
	switch {
	case in.ScanErr != nil:
		c.addGap(Gap{Source: GapScan, Hosts: []string{""}, Paths: open, Why: "I could not scan open files: " + in.ScanErr.Error()})
	case in.Scan != nil:
		c.addHost("")
	}
	if st.Invisible > 0 {
		c.addGap(Gap{Source: GapProcesses, Hosts: []string{""}, Processes: st.Invisible, Paths: open,
			Why: Plural(st.Invisible, "process", "processes") + " could not be inspected"})
	}
	return c
}

// gapWhys is each gap's why once, joined: "Prometheus did not answer within 2s".
func gapWhys(gaps []Gap) string {
	var whys []string
	for _, g := range gaps {
		if !slices.Contains(whys, g.Why) {
			whys = append(whys, g.Why)
		}
	}
	return strings.Join(whys, "; ")
}

// scanFailed reports whether gaps hold this machine's failed scan of open files.
func scanFailed(gaps []Gap) bool {
	return slices.ContainsFunc(gaps, func(g Gap) bool { return g.Source == GapScan && slices.Contains(g.Hosts, "") })
}

// quietFor is this machine's device evidence for the protected paths t is about (every one when t is zero).
func (st Storage) quietFor(t Target) []QuietDevice {
	var out []QuietDevice
	if t.Path != "" {
		t.Path = filepath.Clean(t.Path)
	}
	for _, pm := range st.ProtectedMounts {
		if pp := filepath.Clean(pm.Path); t.Path == "" || pp == t.Path || pp == t.Resolved || Under(t.Path, pp) || Under(t.Resolved, pp) || Under(pp, t.Path) {
			if q, ok := st.Coverage.QuietFor("", pp); ok {
				out = append(out, q)
			}
		}
	}
	return out
}

// quietClause says what the devices wrote: "`/shared`'s device (`/dev/nvme0n1p3`) wrote 0 B in the last 5 min".
func quietClause(qs []QuietDevice) string {
	var parts []string
	for _, q := range qs {
		parts = append(parts, fmt.Sprintf("%s's device (%s) wrote 0 B in the last %s", Code(q.Path), Code(q.Device), Duration(q.Seconds)))
	}
	return strings.Join(parts, "; ")
}

// unseenNeedNot says what the device evidence made unnecessary: the processes the scan could not
// inspect, or the scan that failed.
func (st Storage) unseenNeedNot() string {
	switch {
	case st.ScanError != "":
		return ", so it needs no scan of open files (which failed: " + Esc(st.ScanError) + ")"
	case st.Invisible == 1:
		return ", so the process I could not inspect does not write there either"
	case st.Invisible > 1:
		return fmt.Sprintf(", so none of the %d processes I could not inspect writes there", st.Invisible)
	}
	return ""
}

// remoteQuiet says which other hosts the devices' counters answered for, where their exporters could
// not: " On host `gpu-2` `/shared`'s device (`/dev/sdb`) wrote 0 B in the last 5 min." "" when none.
func (st Storage) remoteQuiet(t Target) string {
	if t.Path != "" {
		t.Path = filepath.Clean(t.Path)
	}
	var parts []string
	for _, q := range st.Coverage.Quiet {
		if q.Host == "" || (t.Path != "" && q.Path != t.Path && !Under(t.Path, q.Path) && !Under(q.Path, t.Path)) {
			continue
		}
		parts = append(parts, fmt.Sprintf("on host %s %s", Code(q.Host), quietClause([]QuietDevice{q})))
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + upperFirst(strings.Join(parts, "; ")) + "."
}

// ReadsAsNow is how old evidence may be and still read as now to the person asking: a few seconds old is
// "now"; a sample interval old (30 s by default) is not, and reads as now unless the answer says when it is
// from. An answer about storage reads storage evidence at most this old (monitor), and an answer that quotes
// older evidence says how old (StorageAge here, the progress notice in monitor).
const ReadsAsNow = 10 * time.Second

// StorageAge is the small print of an answer that rests on the storage part of an evaluation (writers,
// exporters, free space), when it is ReadsAsNow old or more at now: "writers and free space as of
// 25 s ago". "" for a fresher one, or one that does not say when it was read.
func StorageAge(st Storage, now time.Time) string {
	if st.AsOf.IsZero() {
		return ""
	}
	age := now.Sub(st.AsOf)
	if age < ReadsAsNow {
		return ""
	}
	return "writers and free space as of " + Duration(math.Round(age.Seconds())) + " ago"
}
