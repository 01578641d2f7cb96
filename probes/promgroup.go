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
	"maps"
	"regexp"
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

// promSplit splits the series of a grouped query of n parts by part, as index tells a series' part
// from its value of label (taken off when drop is set). Series of no part are returned apart. With
// one part every series is its.
func promSplit(series []PromSeries, n int, label string, index func(string) (int, bool), drop bool) (parts [][]PromSeries, untagged []PromSeries) {
	parts = make([][]PromSeries, n)
	if n == 1 {
		parts[0] = series
		return parts, nil
	}
	for _, s := range series {
		v, ok := s.Labels[label]
		i, found := index(v)
		if !ok || !found || i < 0 || i >= n {
			untagged = append(untagged, s)
			continue
		}
		if drop {
			delete(s.Labels, label)
		}
		parts[i] = append(parts[i], s)
	}
	return parts, untagged
}

// promTagIndex reads a part's index from its promPart tag.
func promTagIndex(v string) (int, bool) {
	i, err := strconv.Atoi(v)
	return i, err == nil
}

// promMatcher is one label matcher of a selector.
type promMatcher struct{ name, op, value string }

func (m promMatcher) String() string { return m.name + m.op + strconv.Quote(m.value) }

var promLabelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*`)

// promMatchers parses the label matchers of a selector without its braces (job="vllm",run=~"a.*").
// ok is false for anything it does not read exactly (single-quoted or quoted names, say): such a
// selector is asked as written, in a part of its own.
func promMatchers(inner string) ([]promMatcher, bool) {
	var out []promMatcher
	rest := strings.TrimSpace(inner)
	for rest != "" {
		name := promLabelName.FindString(rest)
		if name == "" {
			return nil, false
		}
		rest = strings.TrimSpace(rest[len(name):])
		op := ""
		for _, o := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(rest, o) {
				op = o
				break
			}
		}
		if op == "" {
			return nil, false
		}
		rest = strings.TrimSpace(rest[len(op):])
		if rest == "" || (rest[0] != '"' && rest[0] != '`') {
			return nil, false
		}
		end := 1
		for end < len(rest) && rest[end] != rest[0] {
			if rest[0] == '"' && rest[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(rest) {
			return nil, false
		}
		value, err := strconv.Unquote(rest[:end+1])
		if err != nil {
			return nil, false
		}
		out = append(out, promMatcher{name, op, value})
		rest = strings.TrimSpace(rest[end+1:])
		if r, ok := strings.CutPrefix(rest, ","); ok {
			rest = strings.TrimSpace(r)
		} else if rest != "" {
			return nil, false
		}
	}
	return out, true
}

// promPlan is how a grouped query tells its parts apart.
type promPlan struct {
	n int
	// label is the one label the selectors differ in, each with label="value": one selector with
	// label=~"value1|value2|…" (sel) picks every part's series at once, and a series' value of
	// label says whose it is. "" when the selectors are not all of that shape: each is then its
	// own part of the query, tagged with its index (promTagged).
	label string
	sel   string
	index map[string]int
}

// promPlanFor plans a query for the parts selectors (inner, distinct). Runs told apart by one
// label, the usual `{job="vllm",run="synth-25k"}`, are one selector: Prometheus looks the series
// up once, not once per run.
func promPlanFor(selectors []string) promPlan {
	p := promPlan{n: len(selectors)}
	if len(selectors) < 2 {
		return p
	}
	all := make([]map[string]promMatcher, len(selectors))
	for i, sel := range selectors {
		ms, ok := promMatchers(sel)
		if !ok {
			return p
		}
		all[i] = map[string]promMatcher{}
		for _, m := range ms {
			if _, dup := all[i][m.name]; dup {
				return p
			}
			all[i][m.name] = m
		}
		if len(all[i]) != len(all[0]) {
			return p
		}
	}
	label := ""
	for name, m0 := range all[0] {
		same := true
		for _, ms := range all[1:] {
			m, ok := ms[name]
			if !ok {
				return p
			}
			same = same && m == m0
		}
		if same {
			continue
		}
		if label != "" || name == "__name__" {
			return p // more than one label differs
		}
		label = name
	}
	if label == "" {
		return p
	}
	index := map[string]int{}
	var values []string
	for i, ms := range all {
		m := ms[label]
		if m.op != "=" || m.value == "" {
			return p
		}
		if _, dup := index[m.value]; dup {
			return p
		}
		index[m.value] = i
		values = append(values, m.value)
	}
	var common []string
	for _, name := range slices.Sorted(maps.Keys(all[0])) {
		if name != label {
			common = append(common, all[0][name].String())
		}
	}
	p.label, p.index = label, index
	p.sel = strings.Join(append(common, label+"=~"+promAlternation(values)), ",")
	return p
}

// part is the index of the part whose value of p.label is v.
func (p promPlan) part(v string) (int, bool) {
	i, ok := p.index[v]
	return i, ok
}

// EngineReadings reads the engines of the runs whose series selectors are selectors, in one query:
// the reading of each selector, in order. An answer cut at the series limits is an error, as for
// one run: part of the servers would undercount the totals.
func (p *Prometheus) EngineReadings(ctx context.Context, selectors []string, at time.Time) ([]PromEngineReading, error) {
	inner := make([]string, len(selectors))
	for i, sel := range selectors {
		inner[i] = promInner(sel)
	}
	plan := promPlanFor(inner)
	var query string
	if plan.label != "" {
		query = promEngineQuery(plan.sel, plan.label)
	} else {
		exprs := make([]string, len(inner))
		for i, sel := range inner {
			exprs[i] = promEngineQuery(sel)
		}
		query = promTagged(exprs)
	}
	res, err := p.queryParts(ctx, query, at, len(inner))
	if err != nil {
		return nil, err
	}
	if res.Truncated != "" {
		return nil, fmt.Errorf("engine series not used: %s", res.Truncated)
	}
	var parts [][]PromSeries
	if plan.label != "" {
		parts, _ = promSplit(res.Series, len(inner), plan.label, plan.part, false)
	} else {
		parts, _ = promSplit(res.Series, len(inner), promPart, promTagIndex, true)
	}
	out := make([]PromEngineReading, len(parts))
	for i, part := range parts {
		out[i] = promEngineReading(part)
	}
	return out, nil
}

// Histories reads the histories of the runs whose series selectors are selectors, from from to now,
// in one query_range (and one more, with a finer step, when all of them are young): for each
// selector, in order, what PromEngines.History reads for one. A span shorter than two steps has no
// history: nil, nil.
func (p *Prometheus) Histories(ctx context.Context, selectors []string, from, now time.Time) ([][]PromStep, error) {
	if now.Sub(from) < 2*promMinStep {
		return nil, nil
	}
	inner := make([]string, len(selectors))
	for i, sel := range selectors {
		inner[i] = promInner(sel)
	}
	n := len(inner)
	plan := promPlanFor(inner)
	var q string
	if plan.label != "" {
		q = promHistoryQuery(plan.sel, plan.label)
	} else {
		exprs := make([]string, n)
		for i, sel := range inner {
			exprs[i] = promHistoryQuery(sel)
		}
		q = promTagged(exprs)
	}
	query := func(span time.Duration) (PromResult, time.Duration, error) {
		step := promStep(span)
		k := span / step
		res, err := p.queryRangeParts(ctx, q, now.Add(-k*step), now, step, n)
		return res, step, err
	}
	res, step, err := query(now.Sub(from))
	if err == nil && res.Truncated == "" {
		// Runs younger than a few dozen steps are asked again with a step fitted to the oldest's
		// age, so that their first minutes are measured too.
		if first := promFirstT(res.Series); first > 0 {
			age := now.Sub(UnixTime(first)) + step
			if age < 60*step && promStep(age) < step {
				if fine, _, err := query(age); err == nil && fine.Truncated == "" {
					res = fine
				}
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if res.Truncated != "" {
		return nil, fmt.Errorf("history not used: %s", res.Truncated)
	}
	var parts [][]PromSeries
	if plan.label != "" {
		parts, _ = promSplit(res.Series, n, plan.label, plan.part, true)
	} else {
		parts, _ = promSplit(res.Series, n, promPart, promTagIndex, true)
	}
	out := make([][]PromStep, n)
	for i, part := range parts {
		out[i] = promSteps(part)
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
// followed by each selector's hosts marked as its part (promPart: the part's index, or its value
// of the plan's label), and the split of its answer: the facts on each selector's hosts, and those
// hosts. One selector needs no markers, every fact being its, unless marked asks for its hosts
// too (a host with no facts is news: a host of the run no exporter speaks for).
func promGroupedOnHosts(facts string, selectors []string, marked bool) (string, func([]PromSeries) ([][]PromSeries, []map[string]bool)) {
	inner := make([]string, len(selectors))
	for i, sel := range selectors {
		inner[i] = promInner(sel)
	}
	n := len(inner)
	if n == 1 && !marked {
		return facts + " and on(host) " + promRunHosts(inner[0]), func(series []PromSeries) ([][]PromSeries, []map[string]bool) {
			return [][]PromSeries{series}, nil
		}
	}
	plan := promPlanFor(inner)
	var query string
	index := promTagIndex
	switch {
	case n == 1:
		hosts := promRunHosts(inner[0])
		query = facts + " and on(host) " + hosts + " or " + fmt.Sprintf(`label_replace(%s, %q, "0", "", "")`, hosts, promPart)
	case plan.label != "":
		query = facts + " and on(host) " + promRunHosts(plan.sel) + " or " +
			fmt.Sprintf(`label_replace(%s, %q, "$1", %q, "(.*)")`, promRunHostsBy(plan.sel, plan.label), promPart, plan.label)
		index = plan.part
	default:
		hosts := make([]string, n)
		for i, sel := range inner {
			hosts[i] = promRunHosts(sel)
		}
		query = facts + " and on(host) (" + strings.Join(hosts, " or ") + ") or " + promTagged(hosts)
	}
	return query, func(series []PromSeries) ([][]PromSeries, []map[string]bool) {
		var markers [][]PromSeries
		var facts []PromSeries
		if n == 1 {
			// promSplit takes every series of a one-part answer as the part's: the markers are told apart here.
			markers = make([][]PromSeries, 1)
			for _, s := range series {
				if _, ok := s.Labels[promPart]; ok {
					delete(s.Labels, promPart)
					markers[0] = append(markers[0], s)
				} else {
					facts = append(facts, s)
				}
			}
		} else {
			markers, facts = promSplit(series, n, promPart, index, true)
		}
		hosts := promHostsOf(markers)
		out := make([][]PromSeries, n)
		for _, s := range facts {
			for i := range n {
				if hosts[i][s.Labels["host"]] {
					out[i] = append(out[i], s)
				}
			}
		}
		return out, hosts
	}
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
	mountpoints := "mountpoint=~" + promAlternation(promAncestors(all))
	fs := promSelector([]string{"node_filesystem_avail_bytes", "node_filesystem_size_bytes", "node_filesystem_free_bytes", "node_filesystem_device_error"},
		"", mountpoints)
	// The hosts whose filesystems answered within the hour: one of them with none now vanished, and
	// is named, rather than left out of the answers as though it never held a path.
	seenFS := fmt.Sprintf(`label_replace(group by (instance) (last_over_time(node_filesystem_avail_bytes{%s}[%ds])), "runwatch", "seen", "", "")`,
		mountpoints, int(PromExporterMemory.Seconds()))
	c, cancel := context.WithTimeout(ctx, timeout)
	query, split := promGroupedOnHosts(promHostLabel(fs+" or "+seenFS), selectors, false)
	res, err := p.queryParts(c, query, at, n)
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
	fsParts, _ := split(res.Series)
	for i, part := range fsParts {
		mps := promAncestors(reqs[i].Paths)
		was := map[string]bool{}
		part = slices.DeleteFunc(slices.Clone(part), func(s PromSeries) bool {
			if s.Labels["runwatch"] == "seen" {
				was[s.Labels["host"]] = true
				return true
			}
			_, found := slices.BinarySearch(mps, s.Labels["mountpoint"])
			return !found
		})
		out[i].Hosts = promHosts(part)
		for _, h := range slices.Sorted(maps.Keys(was)) {
			if h != "" && !slices.ContainsFunc(out[i].Hosts, func(rh RemoteHost) bool { return rh.Name == h }) {
				out[i].Vanished = append(out[i].Vanished, h)
			}
		}
		if len(out[i].Hosts) == 0 {
			fail(i, fmt.Errorf("storage: %w on the hosts of %s", ErrNoNodeExporter, promSelector(nil, promInner(reqs[i].Selector))))
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
	query, split := promGroupedOnHosts(promHostLabel(promWriterFacts(slices.Compact(protected))), selectors, true)
	res, err := p.queryParts(ctx, query, at, n)
	if err != nil {
		return nil, err
	}
	if res.Truncated != "" {
		// A cut answer may have left out any host's writers: no part of it is evidence of silence.
		return nil, fmt.Errorf("the answer was cut: %s", res.Truncated)
	}
	out := make([]RemoteWriters, n)
	parts, hosts := split(res.Series)
	for i, part := range parts {
		paths := reqs[i].Protected
		part = slices.DeleteFunc(slices.Clone(part), func(s PromSeries) bool {
			return s.Labels["__name__"] == "runwatch_protected_writer_processes" && !slices.Contains(paths, s.Labels["path"])
		})
		out[i] = promWritersOf(part)
		out[i].Unexported = unexported(out[i], hosts[i])
	}
	return out, nil
}
