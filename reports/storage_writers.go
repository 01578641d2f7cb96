package reports

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"

	"runwatch/probes"
)

// WriterClass is a writer scan classified against one run's paths: the writers a storage report
// lists (protected first, then outputs, then by mount, pid and file; at most maxWriters, in a
// slice of their own) and what is counted over all of them before that cut. It depends on the
// scan, the mount table and the paths only, so a monitor classifies each scan once per run and
// every report from that scan shares it.
type WriterClass struct {
	Writers []WriterInfo
	// Omitted is how many writers the cut left out.
	Omitted int
	// ProtectedWrites says whether any writer, listed or not, writes under a protected path;
	// ProtectedProcesses counts the processes doing so, per configured protected path.
	ProtectedWrites    bool
	ProtectedProcesses map[string]int
	// All is every writer the classification kept, uncut, in Writers' order: set by
	// ClassifyAllWriters only, for a reader that counts them all (`bot exporter`'s per-mount and
	// per-command series); a report that lists writers keeps the cut copy alone.
	All []WriterInfo
}

// ClassifyWriters sorts the writers of scan (which names mounts of table) into the ones a report
// on paths lists: those writing under a protected path, under an output, or on a mount a path is
// on; writes to pseudo filesystems (/proc, /sys) are never listed.
func ClassifyWriters(scan *probes.WriterScan, table *probes.MountTable, paths []PathObservation) WriterClass {
	return classifyWriters(scan, table, paths, false)
}

// ClassifyAllWriters is ClassifyWriters keeping every writer in All too: on a node with more than
// maxWriters open files on the watched mounts, counts taken from Writers would undercount.
func ClassifyAllWriters(scan *probes.WriterScan, table *probes.MountTable, paths []PathObservation) WriterClass {
	return classifyWriters(scan, table, paths, true)
}

func classifyWriters(scan *probes.WriterScan, table *probes.MountTable, paths []PathObservation, keepAll bool) WriterClass {
	var wc WriterClass
	if scan == nil {
		return wc
	}
	prot := protectedSpots(paths)
	var outputs []string
	watched := map[int]bool{}
	for _, p := range paths {
		if p.HasMount {
			watched[p.Mount.ID] = true
		}
		if p.Role == RoleOutput {
			outputs = append(outputs, p.Resolved, filepath.Clean(p.Path))
		}
	}
	var kept []WriterInfo
	for _, w := range scan.Writers {
		var m probes.Mount
		var ok bool
		if table != nil {
			m, ok = table.ByID(w.MountID)
		}
		if ok && probes.IsPseudoFS(m.FSType) {
			continue
		}
		file := fileOf(w)
		info := WriterInfo{PID: w.PID, Command: w.Command, File: w.File}
		if ok {
			info.Mount = m.MountPoint
		}
		info.ProtectedPath = protectedBy(prot, file, m, ok)
		info.Protected = info.ProtectedPath != ""
		for _, o := range outputs {
			if Under(file, o) {
				info.Output = true
				break
			}
		}
		if !info.Protected && !info.Output && !(ok && watched[m.ID]) {
			continue
		}
		kept = append(kept, info)
	}
	slices.SortStableFunc(kept, func(a, b WriterInfo) int {
		if a.Protected != b.Protected {
			return boolFirst(a.Protected)
		}
		if a.Output != b.Output {
			return boolFirst(a.Output)
		}
		return cmp.Or(strings.Compare(a.Mount, b.Mount), cmp.Compare(a.PID, b.PID), strings.Compare(a.File, b.File))
	})
	// Counted before the cut: 500 processes writing 9,000 files under /shared are 500 processes,
	// not the dozen whose files fill the first maxWriters entries.
	pids := map[string]map[int]bool{}
	for _, w := range kept {
		if w.Protected {
			wc.ProtectedWrites = true
			if pids[w.ProtectedPath] == nil {
				pids[w.ProtectedPath] = map[int]bool{}
			}
			pids[w.ProtectedPath][w.PID] = true
		}
	}
	for pp, set := range pids {
		if wc.ProtectedProcesses == nil {
			wc.ProtectedProcesses = map[string]int{}
		}
		wc.ProtectedProcesses[pp] = len(set)
	}
	// A copy of the kept ones: a report outlives the scan, and a slice of the sorted list would
	// keep every writer of every watched mount with it.
	n := min(len(kept), maxWriters)
	wc.Omitted = len(kept) - n
	wc.Writers = append(make([]WriterInfo, 0, n), kept[:n]...)
	if keepAll {
		wc.All = kept
	}
	return wc
}

// boolFirst orders true before false, for a comparison of two values that differ.
func boolFirst(a bool) int {
	if a {
		return -1
	}
	return 1
}

// protectedSpots are the protected paths among paths, each with where it resolves.
func protectedSpots(paths []PathObservation) []protectedSpot {
	var prot []protectedSpot
	for _, p := range paths {
		if p.Role != RoleProtected {
			continue
		}
		prot = append(prot, protectedSpot{
			path: filepath.Clean(p.Path), resolved: p.Resolved, mount: p.Mount, hasMount: p.HasMount,
			isMountPoint: p.HasMount && p.Resolved == p.Mount.MountPoint,
		})
	}
	return prot
}

// protectedBy names the configured protected path a file (on mount m, when hasMount) lands on, ""
// when none.
func protectedBy(prot []protectedSpot, file string, m probes.Mount, hasMount bool) string {
	for _, p := range prot {
		if p.covers(file, m, hasMount) {
			return p.path
		}
	}
	return ""
}
