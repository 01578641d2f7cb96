package probes

// Grouped queries: many runs read from one Prometheus server ask one query per kind (engines,
// filesystems, free space, disk writes, writers) per sample, not one per run. Each run's part of
// a grouped query is its own expression, tagged with the part's index; the answer is split back
// by that tag. Runs that ask the same thing (the same selector, the same paths) are one part.
// The answer of a grouped query may be as large as its parts' together, so its limits are the
// client's times the number of parts; its time budget is one query's.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// promPart is the label a grouped query tags each part's series with.
const promPart = "runwatch_part"

// promTagged joins exprs into one query whose answer tells them apart by promPart; one expression
// is asked as it is.
func promTagged(exprs []string) string {
	if len(exprs) == 1 {
		return exprs[0]
	}
	parts := make([]string, len(exprs))
	for i, e := range exprs {
		parts[i] = fmt.Sprintf(`label_replace(%s, %q, "%d", "", "")`, e, promPart, i)
	}
	return strings.Join(parts, " or ")
}

// promSplit splits the series of a grouped query of n parts by part, the tag taken off. Series of
// no part (untagged) are returned apart. With one part nothing is tagged: every series is its.
func promSplit(series []PromSeries, n int) (parts [][]PromSeries, untagged []PromSeries) {
	parts = make([][]PromSeries, n)
	if n == 1 {
		parts[0] = series
		return parts, nil
	}
	for _, s := range series {
		v, ok := s.Labels[promPart]
		i, err := strconv.Atoi(v)
		if !ok || err != nil || i < 0 || i >= n {
			untagged = append(untagged, s)
			continue
		}
		delete(s.Labels, promPart)
		parts[i] = append(parts[i], s)
	}
	return parts, untagged
}

// EngineReadings reads the engines of the runs whose series selectors are selectors, in one query:
// the reading of each selector, in order. An answer cut at the series limits is an error, as for
// one run: part of the servers would undercount the totals.
func (p *Prometheus) EngineReadings(ctx context.Context, selectors []string, at time.Time) ([]PromEngineReading, error) {
	exprs := make([]string, len(selectors))
	for i, sel := range selectors {
		exprs[i] = promEngineQuery(promInner(sel))
	}
	res, err := p.queryParts(ctx, promTagged(exprs), at, len(exprs))
	if err != nil {
		return nil, err
	}
	if res.Truncated != "" {
		return nil, fmt.Errorf("engine series not used: %s", res.Truncated)
	}
	parts, _ := promSplit(res.Series, len(exprs))
	out := make([]PromEngineReading, len(parts))
	for i, part := range parts {
		out[i] = promEngineReading(part)
	}
	return out, nil
}

// promHostsOf are the hosts each part's markers (a grouped query's promRunHosts series) name.
func promHostsOf(markers [][]PromSeries) []map[string]bool {
	out := make([]map[string]bool, len(markers))
	for i, ms := range markers {
		out[i] = map[string]bool{}
		for _, s := range ms {
			if h := s.Labels["host"]; h != "" {
				out[i][h] = true
			}
		}
	}
	return out
}

// promGroupedOnHosts is facts (series with a host label) on the hosts of any of the selectors,
// followed by each selector's hosts tagged as its part, for the split to tell which facts are whose.
// One selector needs no markers: every fact is its.
func promGroupedOnHosts(facts string, selectors []string) string {
	if len(selectors) == 1 {
		return facts + " and on(host) " + promRunHosts(promInner(selectors[0]))
	}
	hosts := make([]string, len(selectors))
	for i, sel := range selectors {
		hosts[i] = promRunHosts(promInner(sel))
	}
	return facts + " and on(host) (" + strings.Join(hosts, " or ") + ") or " + promTagged(hosts)
}

// promSplitOnHosts splits the answer of promGroupedOnHosts: the facts on each selector's hosts.
func promSplitOnHosts(series []PromSeries, n int) [][]PromSeries {
	if n == 1 {
		return [][]PromSeries{series}
	}
	markers, facts := promSplit(series, n)
	hosts := promHostsOf(markers)
	out := make([][]PromSeries, n)
	for _, s := range facts {
		for i := range n {
			if hosts[i][s.Labels["host"]] {
				out[i] = append(out[i], s)
			}
		}
	}
	return out
}

// PromFSRequest is one run's question about its storage on the hosts of its targets.
type PromFSRequest struct {
	Selector string
	Paths    []string
}

// Filesystems reads the storage of several runs from node_exporter's series: for each request, in
// order, what PromFilesystems.Read reads for one, and the errors of its parts. The filesystems are
// one query, the free-space trends one and the disk writes one, whatever the number of requests;
// each may take timeout.
func (p *Prometheus) Filesystems(ctx context.Context, reqs []PromFSRequest, at time.Time, timeout time.Duration) ([]RemoteStorage, [][]error) {
	n := len(reqs)
	out := make([]RemoteStorage, n)
	errs := make([][]error, n)
	fail := func(i int, err error) { errs[i] = append(errs[i], err) }
	failAll := func(err error) {
		for i := range reqs {
			fail(i, err)
		}
	}
	var all []string
	selectors := make([]string, n)
	for i, r := range reqs {
		all = append(all, r.Paths...)
		selectors[i] = r.Selector
	}
	fs := promSelector([]string{"node_filesystem_avail_bytes", "node_filesystem_size_bytes", "node_filesystem_free_bytes", "node_filesystem_device_error"},
		"", "mountpoint=~"+promAlternation(promAncestors(all)))
	c, cancel := context.WithTimeout(ctx, timeout)
	res, err := p.queryParts(c, promGroupedOnHosts(promHostLabel(fs), selectors), at, n)
	cancel()
	if err != nil {
		failAll(fmt.Errorf("storage: %w", NoAnswer(err, timeout)))
		return out, errs
	}
	if res.Truncated != "" {
		failAll(fmt.Errorf("storage: %s", res.Truncated))
	}

	// Each request's hosts and the filesystems there that can hold its paths; then, for the ones that
	// do hold a path, what the trend and write-rate queries must ask.
	var instances, mounts, disks []string
	seen := map[string]bool{}
	add := func(list *[]string, kind, v string) {
		if v != "" && !seen[kind+v] {
			seen[kind+v] = true
			*list = append(*list, v)
		}
	}
	type used struct{ instances, mounts map[string]bool }
	uses := make([]used, n)
	diskOf := make([]map[string]map[string][]promDiskMount, n) // per request: instance -> disk -> mount points
	for i, part := range promSplitOnHosts(res.Series, n) {
		mps := promAncestors(reqs[i].Paths)
		part = slices.DeleteFunc(slices.Clone(part), func(s PromSeries) bool {
			_, found := slices.BinarySearch(mps, s.Labels["mountpoint"])
			return !found
		})
		out[i].Hosts = promHosts(part)
		if len(out[i].Hosts) == 0 {
			fail(i, fmt.Errorf("storage: no node_exporter filesystem series on the hosts of %s", promSelector(nil, promInner(reqs[i].Selector))))
			continue
		}
		uses[i] = used{map[string]bool{}, map[string]bool{}}
		diskOf[i] = map[string]map[string][]promDiskMount{}
		done := map[string]bool{}
		for _, h := range out[i].Hosts {
			for _, path := range reqs[i].Paths {
				f, ok := h.Lookup(path)
				if !ok || done[h.Name+"\x00"+f.Mount.MountPoint] {
					continue
				}
				done[h.Name+"\x00"+f.Mount.MountPoint] = true
				add(&instances, "instance", f.Instance)
				add(&mounts, "mount", f.Mount.MountPoint)
				uses[i].instances[f.Instance], uses[i].mounts[f.Mount.MountPoint] = true, true
				for k, d := range promDiskNames(f.Mount.Source) {
					add(&disks, "disk", d)
					if diskOf[i][f.Instance] == nil {
						diskOf[i][f.Instance] = map[string][]promDiskMount{}
					}
					diskOf[i][f.Instance][d] = append(diskOf[i][f.Instance][d], promDiskMount{f.Mount.MountPoint, k == 0})
				}
			}
		}
	}
	if len(instances) == 0 {
		return out, errs
	}
	var wg sync.WaitGroup
	var fill, disk PromResult
	var fillErr, diskErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		fill, fillErr = p.queryParts(c, promFreeQuery(instances, mounts, PromFreeWindow), at, n)
	}()
	if len(disks) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			disk, diskErr = p.queryParts(c, promDiskQuery(instances, disks, PromWriteWindow), at, n)
		}()
	}
	wg.Wait()
	for i := range reqs {
		if uses[i].instances == nil {
			continue
		}
		if fillErr != nil {
			fail(i, fmt.Errorf("free-space trend: %w", NoAnswer(fillErr, timeout)))
		} else {
			mine := slices.DeleteFunc(slices.Clone(fill.Series), func(s PromSeries) bool {
				return !uses[i].instances[s.Labels["instance"]] || !uses[i].mounts[s.Labels["mountpoint"]]
			})
			out[i].Free = promFreeSamples(mine)
		}
		if diskErr != nil {
			fail(i, fmt.Errorf("disk writes: %w", NoAnswer(diskErr, timeout)))
		} else if len(diskOf[i]) > 0 {
			out[i].WriteRates, out[i].Written = promWriteRates(disk.Series, diskOf[i])
		}
	}
	return out, errs
}

// PromWritersRequest is one run's question about writers under its protected paths on the hosts of
// its targets.
type PromWritersRequest struct {
	Selector  string
	Protected []string
}

// WritersOf asks for the exporters' writer facts of several runs in one query: for each request, in
// order, what Writers answers for one.
func (p *Prometheus) WritersOf(ctx context.Context, reqs []PromWritersRequest, at time.Time) ([]RemoteWriters, error) {
	n := len(reqs)
	var protected []string
	selectors := make([]string, n)
	for i, r := range reqs {
		protected = append(protected, r.Protected...)
		selectors[i] = r.Selector
	}
	sort.Strings(protected)
	res, err := p.queryParts(ctx, promGroupedOnHosts(promHostLabel(promWriterFacts(slices.Compact(protected))), selectors), at, n)
	if err != nil {
		return nil, err
	}
	if res.Truncated != "" {
		// A cut answer may have left out any host's writers: no part of it is evidence of silence.
		return nil, fmt.Errorf("the answer was cut: %s", res.Truncated)
	}
	out := make([]RemoteWriters, n)
	for i, part := range promSplitOnHosts(res.Series, n) {
		paths := reqs[i].Protected
		part = slices.DeleteFunc(slices.Clone(part), func(s PromSeries) bool {
			return s.Labels["__name__"] == "runwatch_protected_writer_processes" && !slices.Contains(paths, s.Labels["path"])
		})
		out[i] = promWritersOf(part)
	}
	return out, nil
}
