package reports

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"runwatch/probes"
)

// Other hosts' storage, read through Prometheus: node_exporter's filesystems and the writers other
// nodes' `bot exporter`s report. The local report speaks for this machine; these entries carry
// their host.

// RemoteInput is what was read about other hosts for one run.
type RemoteInput struct {
	// Paths are the run's paths placed on each host's filesystems (PlaceOnHosts).
	Paths []PathObservation
	// WriteRates are bytes/s by host, then mount point; FillRates the free-space trends, the same way.
	WriteRates map[string]map[string]float64
	FillRates  map[string]map[string]FillTrend
	// Writers are other hosts' processes writing under protected paths (Host set).
	Writers []WriterInfo
	// Exporters are the hosts whose `bot exporter` answered; Invisible counts, by host, the processes
	// each could not inspect.
	Exporters []string
	Invisible map[string]int
	// Silent are the hosts whose exporters should have answered and did not.
	Silent []SilentHost
	// Unexported are the hosts the run spans (its targets') where no exporter answered lately, this
	// machine left out (its own scan speaks for it): no process there was inspected.
	Unexported []string
	// WritersErr is why the writer query failed, "" when Prometheus answered it; KnownHosts are the
	// hosts whose exporters answered lately, which that failure leaves unseen.
	WritersErr string
	KnownHosts []string
	// Devices is what node_exporter's disk counters say each host's devices wrote, by host, then mount
	// point: a protected path whose device wrote nothing is covered on that host, exporter or not.
	Devices map[string]map[string]DeviceWrites
	// StorageErr is why the other hosts' filesystems could not be read when no host is known to place
	// the run's paths on (a one-shot command, a bot started while Prometheus is down): Storage.RemoteError.
	StorageErr string
}

// SilentHost is a host whose `bot exporter` should have answered and did not, and why.
type SilentHost struct {
	Host string
	Why  string // "its exporter did not answer Prometheus's last scrape (up = 0)"
}

// PlaceOnHosts places each path (Path and Role set) on the filesystem of each host that holds it,
// as the local probes place it on the mount table; on a host whose filesystems are unknown (Err),
// each path is there with that error. Exists is left true (node_exporter cannot say,
// and an answer should not claim "not created yet" on that) and Resolved is the path as
// configured (symlinks on the host cannot be followed from here).
func PlaceOnHosts(paths []PathObservation, hosts []probes.RemoteHost) []PathObservation {
	var out []PathObservation
	for _, h := range hosts {
		for _, p := range paths {
			o := PathObservation{Path: p.Path, Role: p.Role, Resolved: filepath.Clean(p.Path), Exists: true, Host: h.Name}
			if h.Err != nil {
				o.UsageErr = h.Err
				out = append(out, o)
				continue
			}
			f, ok := h.Lookup(p.Path)
			if !ok {
				o.UsageErr = probes.ErrNoRemoteFS
				out = append(out, o)
				continue
			}
			o.HasMount, o.Mount, o.Usage, o.UsageErr = true, f.Mount, f.Usage, f.Err
			out = append(out, o)
		}
	}
	return out
}

// FillRatesByHost fits free space against time (FillRate over the window before now) for each
// host and mount point, as for local disks.
func FillRatesByHost(free map[string]map[string][]probes.PromSample, now, window float64) map[string]map[string]FillTrend {
	out := map[string]map[string]FillTrend{}
	for host, mounts := range free {
		for mp, samples := range mounts {
			pts := make([]FreePoint, 0, len(samples))
			for _, smp := range samples {
				if smp.V >= 0 && smp.V == smp.V { // not NaN
					pts = append(pts, FreePoint{T: smp.T, Free: uint64(smp.V)})
				}
			}
			trend, ok := FillRate(pts, now-window)
			if !ok {
				continue
			}
			if out[host] == nil {
				out[host] = map[string]FillTrend{}
			}
			out[host][mp] = trend
		}
	}
	return out
}

// remoteCoverage adds to c what the other hosts' exporters covered and what they left unseen. A host
// whose protected paths' devices wrote nothing (node_exporter's counters) is covered there, whatever
// its exporter said or did not say.
func remoteCoverage(c *Coverage, in RemoteInput) {
	for _, h := range in.Exporters {
		c.addHost(h)
	}
	quiet := map[string]bool{} // hosts whose quiet devices are recorded
	// open is the protected paths on host h no quiet device covers; nil when that is every one.
	open := func(h string) (paths []string, none bool) {
		var all []string
		for _, p := range in.Paths {
			if p.Host != h || p.Role != RoleProtected {
				continue
			}
			pp := filepath.Clean(p.Path)
			all = append(all, pp)
			d, ok := in.Devices[h][p.Mount.MountPoint]
			if p.HasMount && ok && d.Bytes == 0 && d.Seconds >= minQuietSeconds {
				if !quiet[h] {
					c.Quiet = append(c.Quiet, QuietDevice{Host: h, Path: pp, Mount: p.Mount.MountPoint, Device: d.Device, Seconds: d.Seconds})
				}
				continue
			}
			paths = append(paths, pp)
		}
		quiet[h] = true
		if len(all) > 0 && len(paths) == 0 {
			return nil, true
		}
		if len(paths) == len(all) {
			return nil, false
		}
		return paths, false
	}
	for _, h := range slices.Sorted(maps.Keys(in.Invisible)) {
		if n := in.Invisible[h]; n > 0 {
			if paths, none := open(h); !none {
				c.addGap(Gap{Source: GapProcesses, Hosts: []string{h}, Processes: n, Paths: paths, Why: "could not be inspected by its exporter"})
			}
		}
	}
	for _, s := range in.Silent {
		if paths, none := open(s.Host); !none {
			c.addGap(Gap{Source: GapExporter, Hosts: []string{s.Host}, Paths: paths, Why: s.Why})
		}
	}
	noExporters(c, in, open)
	if in.WritersErr != "" {
		why := "the writer query to Prometheus failed: " + in.WritersErr
		if d, ok := strings.CutPrefix(in.WritersErr, "no answer within "); ok {
			why = "Prometheus did not answer within " + d
		}
		c.addGap(Gap{Source: GapPrometheus, Hosts: slices.Clone(in.KnownHosts), Why: why})
	}
}

// maxFixHosts bounds the hosts the advice to run `bot exporter` names; the rest are counted.
const maxFixHosts = 3

// noExporters adds a gap for the hosts of the run no exporter speaks for (in.Unexported), but for
// the protected paths their devices' counters cover (open). The gap says how to close it: "no `bot
// exporter` reports its processes: run `bot exporter` on `gpu-3`"; a run none of whose hosts
// exports says so once, not once per host.
func noExporters(c *Coverage, in RemoteInput, open func(string) ([]string, bool)) {
	type group struct {
		paths []string
		hosts []string
	}
	var groups []group
	for _, h := range in.Unexported {
		paths, none := open(h)
		if none {
			continue
		}
		i := slices.IndexFunc(groups, func(g group) bool { return slices.Equal(g.paths, paths) })
		if i < 0 {
			groups = append(groups, group{paths: paths})
			i = len(groups) - 1
		}
		groups[i].hosts = append(groups[i].hosts, h)
	}
	all := len(in.Exporters) == 0 && len(in.Silent) == 0 && len(groups) == 1 && len(groups[0].hosts) == len(in.Unexported)
	for _, g := range groups {
		var why string
		switch {
		case all && len(g.hosts) > 1:
			why = "none of them runs `bot exporter`, so I see this machine's processes only; run it on each (docs/multi-host.md)"
		case len(g.hosts) == 1:
			why = "no `bot exporter` reports its processes; run `bot exporter` on " + Code(g.hosts[0])
		default:
			var names []string
			for _, h := range g.hosts[:min(len(g.hosts), maxFixHosts)] {
				names = append(names, Code(h))
			}
			if rest := len(g.hosts) - len(names); rest > 0 {
				names = append(names, fmt.Sprintf("%d more", rest))
			}
			why = "no `bot exporter` reports their processes; run `bot exporter` on " + joinAnd(names)
		}
		c.addGap(Gap{Source: GapNoExporter, Hosts: slices.Clone(g.hosts), Paths: g.paths, Why: why})
	}
}

// MergeRemote adds other hosts' entries to the local storage report: each host's paths are built
// like local ones (capacity, time to full, warnings), then appended with their host; other hosts'
// protected writers are added with a warning per host and path, so "are we writing to /shared?"
// answers for every node that exports. A host's protected paths also flag outputs that land on
// them: the local answer "no writes to /shared" speaks for this machine's processes only.
func MergeRemote(local Storage, in RemoteInput, ttf func(string) (float64, bool)) Storage {
	byHost := map[string][]PathObservation{}
	for _, o := range in.Paths {
		byHost[o.Host] = append(byHost[o.Host], o)
	}
	hosts := make([]string, 0, len(byHost))
	for h := range byHost {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, host := range hosts {
		st := BuildStorage(StorageInput{Paths: byHost[host], WriteRates: in.WriteRates[host], FillRates: in.FillRates[host]}, ttf)
		local.Paths = append(local.Paths, st.Paths...)
		for _, w := range st.WriteRates {
			w.Host, w.FromSource = host, "node_exporter"
			local.WriteRates = append(local.WriteRates, w)
		}
		local.Warnings = append(local.Warnings, st.Warnings...)
	}

	remoteCoverage(&local.Coverage, in)
	local.RemoteError = in.StorageErr
	warned := map[string]int{}
	for _, w := range in.Writers {
		local.Writers = append(local.Writers, w)
		local.ProtectedWrites = true
		warned[w.Host+"\x00"+w.ProtectedPath] += w.Processes
	}
	keys := make([]string, 0, len(warned))
	for k := range warned {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		host, path, _ := strings.Cut(k, "\x00")
		local.Warnings = append(local.Warnings, StorageWarning{
			Kind: "protected_write", Mount: host + ":" + path,
			Message: fmt.Sprintf("On host %s, %s writing to protected %s.", Code(host), Plural(warned[k], "process is", "processes are"), Code(path)),
		})
	}
	return local
}
