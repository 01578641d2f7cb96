package reports

import (
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"runwatch/probes"
)

// Roles of a configured path.
const (
	RoleOutput    = "output"
	RoleWatch     = "watch"
	RoleProtected = "protected"
)

// PathObservation is what the probes found for one configured path.
type PathObservation struct {
	Path       string
	Role       string
	Resolved   string
	Exists     bool
	ResolveErr error
	Mount      probes.Mount
	HasMount   bool
	Usage      *probes.Usage
	UsageErr   error
	// Host names the machine the figures come from, when they come from a remote source.
	Host string
}

// StorageInput is everything the storage report is built from.
type StorageInput struct {
	Paths   []PathObservation // outputs, watch paths and protected paths, in run-file order
	Scan    *probes.WriterScan
	ScanErr error
	Table   *probes.MountTable
	// WriteRates holds measured write rates in bytes/s by mount point.
	WriteRates map[string]float64
	// Writers is Scan already classified against Paths and Table (ClassifyWriters), shared by every
	// report built from the same scan for the same paths; nil classifies Scan here.
	Writers *WriterClass
	// FillRates holds how fast free space shrinks by mount point, from the history of free-space
	// samples (FillRate); only shrinking mounts are listed. A time to full is given only where the
	// trend is evidence enough for it (FillTrend.Forecast).
	FillRates map[string]FillTrend
	// Devices holds what each path's device wrote over the last minutes, by mount point: evidence that
	// needs no process inspection.
	Devices map[string]DeviceWrites
}

// DeviceWrites is what a mount's device (its block device or partition, or an NFS mount's client)
// wrote between two readings Seconds apart.
type DeviceWrites struct {
	Device  string
	Bytes   uint64
	Seconds float64
}

// Storage is the storage part of a run's status.
type Storage struct {
	Paths           []PathInfo   `json:"paths"`
	ProtectedMounts []PathInfo   `json:"protected_mounts"`
	Writers         []WriterInfo `json:"writers"`
	WritersOmitted  int          `json:"writers_omitted,omitempty"`
	// ProtectedProcesses counts the processes on this machine writing under each configured protected
	// path, over every writer the scan found: Writers is cut at maxWriters, these counts never are.
	ProtectedProcesses map[string]int `json:"protected_processes,omitempty"`
	// AllWriters is every writer the classification kept, uncut (WriterClass.All): only from a monitor
	// that keeps them (Options.AllWriters, `bot exporter`, which counts them all), never in JSON.
	AllWriters []WriterInfo `json:"-"`
	// Invisible counts this machine's processes whose open files could not be read; other hosts' are
	// in Coverage.
	Invisible int `json:"invisible_processes"`
	// Hidden names the first invisible processes; AsRoot says the scan already ran as root.
	Hidden []probes.HiddenProcess `json:"invisible,omitempty"`
	AsRoot bool                   `json:"scanned_as_root,omitempty"`
	// ScannedAs is the user the scan ran as; InvisibleOwners own the invisible processes, the most first:
	// the advice about them fits who runs runwatch. Kernel threads hold no files and are never invisible.
	ScannedAs       probes.ProcessOwner   `json:"scanned_as"`
	InvisibleOwners []probes.ProcessOwner `json:"invisible_owners,omitempty"`
	// AsOf is when what the storage part says was read: this machine's open-files scan (which a sample
	// may share with the samples after it), the other hosts' exporters and node_exporter through
	// Prometheus. An answer given later from the same evaluation is as of then, not of the answer
	// (StorageAge). Zero when not said.
	AsOf time.Time `json:"as_of,omitzero"`
	// ScanError is why the open-files scan failed (writers and protected_writes are then unknown).
	ScanError       string      `json:"scan_error,omitempty"`
	ProtectedWrites bool        `json:"protected_writes"`
	WriteRates      []WriteRate `json:"write_rates"`
	// RateNote says why there are no write rates (nothing to measure them against yet): a line for the
	// answers that show write rates (free space), not for every answer about the run.
	RateNote string           `json:"rate_note,omitempty"`
	Warnings []StorageWarning `json:"warnings,omitempty"`
	// Coverage is what the protected-path verdicts rest on: who answered, who should have and did not.
	Coverage Coverage `json:"coverage"`
	// RemoteError is why the other hosts' free space is unknown, when not one of them could be named
	// (the storage query to Prometheus failed and no host answered it lately): said, not left out.
	RemoteError string `json:"remote_storage_error,omitempty"`
}

// OutputsInProtected are the configured outputs that resolve inside a protected mount: the one list the
// status headline, the where, writes and safe answers count from.
func (st Storage) OutputsInProtected() []PathInfo {
	var out []PathInfo
	for _, p := range st.Paths {
		if p.Role == RoleOutput && p.Protected {
			out = append(out, p)
		}
	}
	return out
}

// PathInfo is one configured path and where it really lands.
type PathInfo struct {
	Path       string  `json:"path"`
	Resolved   string  `json:"resolved"`
	Exists     bool    `json:"exists"`
	Mount      string  `json:"mount"`
	Device     string  `json:"device"`
	FSType     string  `json:"fstype"`
	FreeBytes  *uint64 `json:"free_bytes"`
	TotalBytes *uint64 `json:"total_bytes"`
	UsedBytes  *uint64 `json:"used_bytes"`
	Protected  bool    `json:"protected"`
	// ProtectedPath is the configured protected path this one lands on.
	ProtectedPath string   `json:"protected_path,omitempty"`
	Role          string   `json:"role"`
	Host          string   `json:"host,omitempty"`
	FillsInS      *float64 `json:"fills_in_s,omitempty"`
	Error         string   `json:"error,omitempty"`
}

// WriterInfo is a process writing a file, and where the file lands.
type WriterInfo struct {
	PID       int    `json:"pid"`
	Command   string `json:"command"`
	File      string `json:"file"`
	Mount     string `json:"mount"`
	Protected bool   `json:"protected"`
	// ProtectedPath is the configured protected path the file lands on.
	ProtectedPath string `json:"protected_path,omitempty"`
	Output        bool   `json:"output"`

	// Host is set for writers another node's `bot exporter` reported through Prometheus; such an
	// entry stands for Processes processes of one command (no pid or file: the exporter keeps
	// label values bounded), and File is the protected path.
	Host      string `json:"host,omitempty"`
	Processes int    `json:"processes,omitempty"`
}

// WriteRate is measured write activity on a mount.
type WriteRate struct {
	Mount      string  `json:"mount"`
	BytesPerS  float64 `json:"bytes_per_s"`
	Host       string  `json:"host,omitempty"`
	FromSource string  `json:"source,omitempty"`
}

// StorageWarning is a storage condition worth telling people about unprompted.
type StorageWarning struct {
	Kind    string `json:"kind"` // protected_write, output_on_protected, disk_full
	Mount   string `json:"mount"`
	Message string `json:"message"` // mrkdwn
}

// The severities of the protected-mount facts, decided here once: every answer that states one (where,
// writes, safe, storage, status, the warnings and their alerts) takes its glyph from ProtectedSeverity or
// StorageWarning.Glyph, so one fact reads the same in each.
const (
	// SeverityLanding: an output resolves inside a protected mount but nothing writes there yet. The
	// job's writes will land there: worth fixing before they start, not yet a breach.
	SeverityLanding = ":warning:"
	// SeverityWriting: a process writes to a protected mount now, whether or not through an output.
	SeverityWriting = ":rotating_light:"
)

// ProtectedSeverity is the glyph for the protected mounts' state: SeverityWriting while a process
// writes there, SeverityLanding while outputs only resolve there, "" when neither.
func ProtectedSeverity(writing bool, landing int) string {
	switch {
	case writing:
		return SeverityWriting
	case landing > 0:
		return SeverityLanding
	}
	return ""
}

// WarningSeverity is the glyph of one of st's warnings: a protected write and a disk that fills before
// the job ends are alarms; an output resolving inside a protected mount is a landing, an alarm once
// a process writes to that mount (ProtectedSeverity).
func (st Storage) WarningSeverity(w StorageWarning) string {
	switch w.Kind {
	case "output_on_protected":
		return ProtectedSeverity(st.writingTo(w.Mount), 1)
	case "protected_write":
		return ProtectedSeverity(true, 0)
	}
	return ":rotating_light:"
}

// writingTo reports whether a process writes to the configured protected path pp.
func (st Storage) writingTo(pp string) bool {
	for _, w := range st.Writers {
		if w.Protected && w.ProtectedPath == pp {
			return true
		}
	}
	return false
}

// maxFillHorizon is the longest time to full worth reporting: 30 days.
const maxFillHorizon = 30 * 24 * 3600

// maxWriters bounds the writers listed in a report.
const maxWriters = 200

type protectedSpot struct {
	path, resolved string
	mount          probes.Mount
	hasMount       bool
	isMountPoint   bool
}

func (p protectedSpot) covers(file string, m probes.Mount, hasMount bool) bool {
	if Under(file, p.resolved) || Under(file, p.path) {
		return true
	}
	if !hasMount || !p.hasMount {
		return false
	}
	if sameMount(m, p.mount) && p.isMountPoint {
		return true
	}
	// The same filesystem mounted elsewhere (a bind mount of /shared, the same NFS export twice) is
	// still the protected filesystem, but only when the protected path is a whole mount.
	return p.isMountPoint && sameFilesystem(m, p.mount)
}

// sameMount reports whether a and b are one mount: by id in a local mount table; by mount point
// among a host's filesystems read through node_exporter, which have no ids.
func sameMount(a, b probes.Mount) bool {
	if a.ID != 0 || b.ID != 0 {
		return a.ID == b.ID
	}
	return a.MountPoint == b.MountPoint
}

// sameFilesystem reports whether a and b mount one filesystem: the same device numbers and source
// locally; without device numbers (node_exporter), the same source when it names a device or an
// export (tmpfs, overlay and the like are one filesystem per mount).
func sameFilesystem(a, b probes.Mount) bool {
	if a.ID != 0 || b.ID != 0 {
		return a.Major == b.Major && a.Minor == b.Minor && a.Source == b.Source
	}
	return a.Source == b.Source && (strings.HasPrefix(a.Source, "/dev/") || strings.Contains(a.Source, ":/"))
}

// Under reports whether path is dir or inside it, on component boundaries (both clean).
func Under(path, dir string) bool {
	if dir == "" || path == "" {
		return false
	}
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

func fileOf(w probes.Writer) string {
	return strings.TrimSuffix(w.File, " (deleted)")
}

// BuildStorage turns probe results into the storage report.
func BuildStorage(in StorageInput, ttfTarget func(mount string) (float64, bool)) Storage {
	st := Storage{Paths: []PathInfo{}, ProtectedMounts: []PathInfo{}, Writers: []WriterInfo{}, WriteRates: []WriteRate{}, Coverage: Coverage{Hosts: []string{}}}
	prot := protectedSpots(in.Paths)
	protectedBy := func(file string, m probes.Mount, hasMount bool) string { return protectedBy(prot, file, m, hasMount) }

	outputMounts := map[int]bool{}
	for _, p := range in.Paths {
		info := PathInfo{Path: p.Path, Resolved: p.Resolved, Exists: p.Exists, Role: p.Role, Host: p.Host}
		if p.HasMount {
			info.Mount, info.Device, info.FSType = p.Mount.MountPoint, p.Mount.Source, p.Mount.FSType
			if p.Role != RoleProtected {
				outputMounts[p.Mount.ID] = outputMounts[p.Mount.ID] || p.Role == RoleOutput
			}
		}
		if p.Usage != nil {
			u := *p.Usage
			info.FreeBytes, info.TotalBytes, info.UsedBytes = &u.Free, &u.Total, &u.Used
			// A disk that would take more than a month to fill is not filling, as far as a run
			// is concerned; a figure like "fills in 384 d" is noise.
			if s, firm := in.FillRates[info.Mount].Forecast(u.Free); firm && s < maxFillHorizon {
				info.FillsInS = &s
			}
		}
		var errs []string
		if p.ResolveErr != nil {
			errs = append(errs, p.ResolveErr.Error())
		}
		if p.UsageErr != nil {
			errs = append(errs, p.UsageErr.Error())
		}
		info.Error = strings.Join(errs, "; ")
		if p.Role == RoleProtected {
			info.Protected = true
			st.ProtectedMounts = append(st.ProtectedMounts, info)
			continue
		}
		info.ProtectedPath = protectedBy(p.Resolved, p.Mount, p.HasMount)
		info.Protected = info.ProtectedPath != ""
		if p.Role == RoleOutput {
			if info.Protected {
				st.Warnings = append(st.Warnings, StorageWarning{
					Kind: "output_on_protected", Mount: info.ProtectedPath,
					Message: fmt.Sprintf("Output %s resolves to %s, inside protected %s.", Code(p.Path), Code(p.Resolved), Code(info.ProtectedPath)),
				})
			}
		}
		st.Paths = append(st.Paths, info)
	}

	if in.ScanErr != nil {
		st.ScanError = in.ScanErr.Error()
	}
	if in.Scan != nil {
		st.Invisible = in.Scan.Invisible
		st.Hidden, st.AsRoot = in.Scan.Hidden, in.Scan.AsRoot
		st.ScannedAs, st.InvisibleOwners = in.Scan.User, in.Scan.Owners
		wc := in.Writers
		if wc == nil {
			c := ClassifyWriters(in.Scan, in.Table, in.Paths)
			wc = &c
		}
		st.Writers, st.WritersOmitted = append(make([]WriterInfo, 0, len(wc.Writers)), wc.Writers...), wc.Omitted
		st.ProtectedWrites, st.ProtectedProcesses = wc.ProtectedWrites, maps.Clone(wc.ProtectedProcesses)
		st.AllWriters = wc.All
		if st.ProtectedWrites {
			byPath := map[string][]WriterInfo{}
			var paths []string
			for _, w := range st.Writers {
				if w.Protected {
					if _, seen := byPath[w.ProtectedPath]; !seen {
						paths = append(paths, w.ProtectedPath)
					}
					byPath[w.ProtectedPath] = append(byPath[w.ProtectedPath], w)
				}
			}
			for _, pp := range paths {
				ws := byPath[pp]
				via := ""
				if ws[0].Mount != "" && !Under(strings.TrimSuffix(ws[0].File, " (deleted)"), pp) {
					via = fmt.Sprintf(" through %s (the same filesystem)", Code(ws[0].Mount))
				}
				st.Warnings = append(st.Warnings, StorageWarning{
					Kind: "protected_write", Mount: pp,
					Message: fmt.Sprintf("%s writing to protected %s%s, e.g. %s (pid %d) → %s.",
						Plural(st.writingCount(ws, pp), "process is", "processes are"), Code(pp), via, Code(ws[0].Command), ws[0].PID, Code(ws[0].File)),
				})
			}
		}
	}

	st.Coverage = localCoverage(in, st, prot)

	mounts := make([]string, 0, len(in.WriteRates))
	for m := range in.WriteRates {
		mounts = append(mounts, m)
	}
	sort.Strings(mounts)
	for _, m := range mounts {
		st.WriteRates = append(st.WriteRates, WriteRate{Mount: m, BytesPerS: in.WriteRates[m]})
	}

	// Free space running out before the job ends.
	if ttfTarget != nil {
		seen := map[string]bool{}
		for _, p := range st.Paths {
			if p.Role != RoleOutput || p.FillsInS == nil || seen[p.Mount] {
				continue
			}
			seen[p.Mount] = true
			need, ok := ttfTarget(p.Mount)
			if ok && *p.FillsInS < need {
				st.Warnings = append(st.Warnings, StorageWarning{
					Kind: "disk_full", Mount: p.Mount,
					Message: fmt.Sprintf("%s%s has %s free and fills in %s at the current rate; the job needs %s more.",
						Code(p.Mount), onHost(p.Host), Bytes(float64(*p.FreeBytes)), Duration(*p.FillsInS), Duration(need)),
				})
			}
		}
	}
	return st
}

// writingCount is how many processes ws, writers st lists under the protected paths paths (every
// writer st lists there), stand for. When the list was cut, this machine's share is the count taken
// before the cut; other hosts' entries count their processes.
func (st Storage) writingCount(ws []WriterInfo, paths ...string) int {
	local := map[int]bool{}
	remote := 0
	for _, w := range ws {
		if w.Host != "" {
			remote += w.Processes
			continue
		}
		local[w.PID] = true
	}
	n := len(local)
	if st.WritersOmitted > 0 {
		known := 0
		for _, p := range paths {
			known += st.ProtectedProcesses[p]
		}
		n = max(n, known)
	}
	return n + remote
}

// protectedPaths are the configured paths of protected mounts, as writers name them (ProtectedPath).
func protectedPaths(mounts []PathInfo) []string {
	out := make([]string, len(mounts))
	for i, p := range mounts {
		out[i] = filepath.Clean(p.Path)
	}
	return out
}

func onHost(h string) string {
	if h == "" {
		return ""
	}
	return " on " + Esc(h)
}
