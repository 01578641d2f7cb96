package probes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// PromFilesystems reads what node_exporter reports about the filesystems on the hosts of a run's
// targets, in the terms of the local probes: per host, the mounts (without the ids of a local
// mount table, which node_exporter does not export) with their usage; write rates per mount from
// the disks' raw counters; free-space samples for a trend.
type PromFilesystems struct {
	client *Prometheus
	sel    string
}

// NewPromFilesystems returns the remote-storage source of the run whose series selector is selector.
func NewPromFilesystems(client *Prometheus, selector string) *PromFilesystems {
	return &PromFilesystems{client: client, sel: promInner(selector)}
}

// RemoteFS is one filesystem node_exporter reports on a host.
type RemoteFS struct {
	Instance string // the node_exporter target, e.g. gpu-node-3:9100
	Mount    Mount  // MountPoint, FSType and Source (the device); no ids
	Usage    *Usage // nil when Err says why
	Err      error
}

// RemoteHost is one host's filesystems, sorted by mount point.
type RemoteHost struct {
	Name        string // the instance without its port
	Filesystems []RemoteFS
	// Err says why the host has no filesystems to place a path on, when it should have some: its
	// series vanished (ErrFSVanished).
	Err error
}

// ErrFSVanished: a host of the run whose node_exporter filesystem series were in Prometheus within
// PromExporterMemory has none now (node_exporter stopped, the host down, its target dropped): its
// free space is unknown, not gone.
var ErrFSVanished = fmt.Errorf("its node_exporter's filesystem series are gone from Prometheus (they were there within the last %s)", promSpan(PromExporterMemory))

// Lookup is the filesystem that holds path on the host: the longest mount point that is path or
// one of its ancestors, walked up the way MountTable.Lookup walks. node_exporter cannot say
// whether the path itself exists, only where it would land.
func (h RemoteHost) Lookup(path string) (RemoteFS, bool) {
	if !strings.HasPrefix(path, "/") {
		return RemoteFS{}, false
	}
	for p := filepath.Clean(path); ; {
		for _, f := range h.Filesystems {
			if f.Mount.MountPoint == p {
				return f, true
			}
		}
		next, ok := mountParentDir(p)
		if !ok {
			return RemoteFS{}, false
		}
		p = next
	}
}

// RemoteStorage is what node_exporter says about the filesystems that hold a run's paths.
type RemoteStorage struct {
	Hosts []RemoteHost // sorted by name
	// WriteRates is bytes/s written, by host and mount point, over the write window; Written is the
	// bytes behind each rate and the time its samples span (a device that wrote 0 B over minutes is
	// evidence that nothing writes there, whoever the processes are).
	WriteRates map[string]map[string]float64
	Written    map[string]map[string]PromWritten
	// Free is the free bytes over the trend window, by host and mount point.
	Free map[string]map[string][]PromSample
	// Vanished are the hosts of the run's targets whose filesystem series Prometheus held within
	// PromExporterMemory and holds no more (ErrFSVanished), sorted.
	Vanished []string
}

// Windows of the raw samples read for a trend and for write rates.
const (
	PromFreeWindow  = 30 * time.Minute // free-space trend, as for local disks
	PromWriteWindow = 5 * time.Minute  // disk write rate
)

// Read reads the filesystems that can hold paths on every host of the run's targets; then, for the
// ones that do hold a path, free-space samples over PromFreeWindow and disk writes over
// PromWriteWindow. Each query may take timeout. It returns what it read and, for each part that
// failed, an error naming the part.
func (p *PromFilesystems) Read(ctx context.Context, at time.Time, paths []string, timeout time.Duration) (RemoteStorage, []error) {
	out, errs := p.client.Filesystems(ctx, []PromFSRequest{{Selector: p.sel, Paths: paths}}, at, timeout)
	return out[0], errs[0]
}

// promAncestors lists every directory a path's mount point can be: the path and its parents.
func promAncestors(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		p = filepath.Clean(p)
		for {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			parent := filepath.Dir(p)
			if parent == p {
				break
			}
			p = parent
		}
	}
	sort.Strings(out)
	return out
}

// promHosts groups node_exporter series into filesystems by host and mount point.
func promHosts(series []PromSeries) []RemoteHost {
	type fsData struct {
		instance, mountpoint, device, fstype       string
		avail, size, free                          float64
		haveAvail, haveSize, haveFree, deviceError bool
	}
	type key struct{ host, mp string }
	byKey := map[key]*fsData{}
	var order []key
	for _, s := range series {
		if len(s.Samples) == 0 {
			continue
		}
		l := s.Labels
		k := key{promHost(l["instance"]), l["mountpoint"]}
		f := byKey[k]
		if f == nil {
			f = &fsData{instance: l["instance"], mountpoint: l["mountpoint"], device: l["device"], fstype: l["fstype"]}
			byKey[k] = f
			order = append(order, k)
		}
		v := s.Samples[len(s.Samples)-1].V
		switch l["__name__"] {
		case "node_filesystem_avail_bytes":
			f.avail, f.haveAvail = v, true
		case "node_filesystem_size_bytes":
			f.size, f.haveSize = v, true
		case "node_filesystem_free_bytes":
			f.free, f.haveFree = v, true
		case "node_filesystem_device_error":
			f.deviceError = v != 0
		}
	}
	byHost := map[string][]RemoteFS{}
	for _, k := range order {
		f := byKey[k]
		r := RemoteFS{Instance: f.instance, Mount: Mount{MountPoint: f.mountpoint, FSType: f.fstype, Source: f.device}}
		switch {
		case f.deviceError:
			r.Err = fmt.Errorf("node_exporter on %s could not stat %s (node_filesystem_device_error = 1)", f.instance, f.mountpoint)
		case !f.haveAvail || !f.haveSize:
			r.Err = fmt.Errorf("node_exporter on %s gives no size or free space for %s", f.instance, f.mountpoint)
		default:
			u := Usage{Total: uint64(f.size), Free: uint64(f.avail)}
			freeBlocks := f.avail
			if f.haveFree {
				freeBlocks = f.free
			}
			u.Used = uint64(math.Max(0, f.size-freeBlocks))
			r.Usage = &u
		}
		byHost[k.host] = append(byHost[k.host], r)
	}
	out := make([]RemoteHost, 0, len(byHost))
	for _, name := range slices.Sorted(maps.Keys(byHost)) {
		fss := byHost[name]
		sort.Slice(fss, func(i, j int) bool { return fss[i].Mount.MountPoint < fss[j].Mount.MountPoint })
		out = append(out, RemoteHost{Name: name, Filesystems: fss})
	}
	return out
}

// promHost is an instance without its port.
func promHost(instance string) string {
	if h, _, err := net.SplitHostPort(instance); err == nil {
		return h
	}
	return instance
}

// promPartition matches a partition's name; its first group is the whole disk's (with a trailing
// "p" for nvme and mmc).
var promPartition = regexp.MustCompile(`^((?:nvme\d+n\d+|mmcblk\d+)p|(?:s|v|xv|h)d[a-z]+)\d+$`)

// promDiskNames lists the node_disk device names a filesystem's device may be counted under: its
// own name, and the whole disk for a partition (node_exporter leaves partitions out by default).
func promDiskNames(device string) []string {
	name, ok := strings.CutPrefix(device, "/dev/")
	if !ok || name == "" {
		return nil
	}
	out := []string{name}
	if m := promPartition.FindStringSubmatch(name); m != nil {
		out = append(out, strings.TrimSuffix(m[1], "p"))
	}
	return out
}

// promFreeSamples is the free-space samples of each host and mount point.
func promFreeSamples(series []PromSeries) map[string]map[string][]PromSample {
	out := map[string]map[string][]PromSample{}
	for _, s := range series {
		host := promHost(s.Labels["instance"])
		if out[host] == nil {
			out[host] = map[string][]PromSample{}
		}
		out[host][s.Labels["mountpoint"]] = s.Samples
	}
	return out
}

// promDiskMount is a mount point on a disk, counted under the partition itself (exact) or its disk.
type promDiskMount struct {
	mountpoint string
	exact      bool
}

// PromWritten is what a disk counter rose by over the time its raw samples span.
type PromWritten struct {
	Bytes, Seconds float64
}

// promWriteRates turns raw disk counters into write rates per host and mount point, with the bytes and
// span behind each; diskOf maps an instance's disk names to the mount points on them. A partition's
// own counter wins over its whole disk's when node_exporter reports both.
func promWriteRates(series []PromSeries, diskOf map[string]map[string][]promDiskMount) (map[string]map[string]float64, map[string]map[string]PromWritten) {
	out := map[string]map[string]float64{}
	written := map[string]map[string]PromWritten{}
	exact := map[string]bool{}
	for _, s := range series {
		inst := s.Labels["instance"]
		rate, ok := PromRate(s.Samples)
		if !ok {
			continue
		}
		span := s.Samples[len(s.Samples)-1].T - s.Samples[0].T
		host := promHost(inst)
		for _, dm := range diskOf[inst][s.Labels["device"]] {
			if out[host] == nil {
				out[host] = map[string]float64{}
				written[host] = map[string]PromWritten{}
			}
			key := host + "\x00" + dm.mountpoint
			if dm.exact || !exact[key] {
				out[host][dm.mountpoint] = rate
				written[host][dm.mountpoint] = PromWritten{Bytes: rate * span, Seconds: span}
				exact[key] = exact[key] || dm.exact
			}
		}
	}
	return out, written
}

// ErrNoNodeExporter: Prometheus answered, with no node_exporter filesystem series on the run's hosts
// (none runs there, or it is scraped under other hosts' names): a setup to fix, not a query that failed.
var ErrNoNodeExporter = errors.New("no node_exporter filesystem series")

// ErrNoRemoteFS is the error of a path that no filesystem node_exporter reports on its host holds.
var ErrNoRemoteFS = errors.New("node_exporter reports no filesystem that holds it")
