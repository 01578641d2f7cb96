package probes

// PromQL for a run's series. Every query runwatch sends to a Prometheus server is built here, from
// the engine metric table a direct scrape reads (metricsSources), so both read the same names.
//
// Rates are never taken from rate() or increase(): over a window longer than a series has existed
// they divide by the whole window and under-report a job that just started. Counters are read as
// values (instant queries and query_range); rates come from their differences over the time the
// raw samples really span (PromRate).

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// promResetsName names the series the engine query adds: resets of each server's token counter
// in the last hour.
const promResetsName = "runwatch_resets_1h"

// promScrapedName names the series the engine and history queries add: when each server's series
// were last scraped (unix seconds). An instant query answers with the last scrape's values at the
// time it is asked; after a gap in Prometheus's data (a restart, missed scrapes) those values are
// older than the answer says, and a rate taken over the time asked would be wrong.
const promScrapedName = "runwatch_scraped"

// promScraped is the series of promScrapedName: when each instance of the run's targets was last
// scraped, the time of its `up` sample (written at every scrape, with the scrape's time).
// timestamp() gives a sample's own time only when applied to a selector itself. A selector that
// picks series by labels the targets' `up` does not carry finds none: such a run's samples stay at
// the time asked.
func promScraped(sel string, by ...string) string {
	return `label_replace(label_replace(max by (` + promBy(by) + `) (timestamp(` + promSelector([]string{"up"}, sel) + `)), "__name__", "` +
		promScrapedName + `", "", ""), "runwatch", "scraped", "", "")`
}

// promBy is the labels of a per-instance aggregation: instance, and by, the label a grouped
// query's parts differ in (promPlan), kept so that the answer can be split by it.
func promBy(by []string) string {
	return strings.Join(append([]string{"instance"}, by...), ", ")
}

// promInner strips the braces of a selector: `{job="vllm"}` -> `job="vllm"`.
func promInner(sel string) string {
	sel = strings.TrimSpace(sel)
	sel = strings.TrimPrefix(sel, "{")
	sel = strings.TrimSuffix(sel, "}")
	return strings.TrimSpace(sel)
}

// promSelector is a series selector for any of names (none: any name) with the run's matchers and
// extra ones.
func promSelector(names []string, sel string, extra ...string) string {
	var parts []string
	if len(names) > 0 {
		parts = append(parts, "__name__=~"+promAlternation(names))
	}
	parts = append(parts, extra...)
	if sel != "" {
		parts = append(parts, sel)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// promAlternation is a regex matcher value for exactly the given strings.
func promAlternation(values []string) string {
	alt := make([]string, len(values))
	for i, v := range values {
		alt[i] = regexp.QuoteMeta(v)
	}
	return strconv.Quote(strings.Join(alt, "|"))
}

// promRestartCounters are the counters whose reset means a server restarted: each engine's
// generated-token counter, or the count of its generated-token histogram.
func promRestartCounters() []string {
	var out []string
	for _, s := range metricsSources {
		switch {
		case s.generation != "":
			out = append(out, s.generation)
		case s.generationHist != "":
			out = append(out, s.generationHist+"_count")
		}
	}
	return out
}

// promBatchGauges are the engines' running-requests gauges: a host that exports one runs a server.
func promBatchGauges() []string {
	var out []string
	for _, s := range metricsSources {
		if s.running != "" {
			out = append(out, s.running)
		}
	}
	return out
}

// promEngineQuery reads every engine series of the run at once, the targets' up, and how often
// each server's token counter was reset in the last hour.
func promEngineQuery(sel string, by ...string) string {
	names := append([]string{"up"}, PromEngineNames()...)
	// `or` matches series on their labels without the name: a label of its own keeps the right side.
	return promSelector(names, sel) + ` or label_replace(label_replace(max by (` + promBy(by) + `) (resets(` +
		promSelector(promRestartCounters(), sel) + `[1h])), "__name__", "` + promResetsName + `", "", ""), "runwatch", "resets", "", "")` +
		` or ` + promScraped(sel, by...)
}

// promHistoryQuery reads the series the history is built from, summed per instance (the history
// needs neither the data-parallel engines apart nor why requests ended), which makes the answer a
// few series per server. Start times are the latest per instance, not a sum.
func promHistoryQuery(sel string, by ...string) string {
	var sums, starts []string
	for _, n := range append([]string{"up"}, PromProgressNames()...) {
		if n == "process_start_time_seconds" || strings.HasSuffix(n, "_created") {
			starts = append(starts, n)
		} else {
			sums = append(sums, n)
		}
	}
	// `or` matches series on their labels without the name: a label of its own keeps the right side.
	by = append([]string{"__name__"}, by...)
	return `sum by (` + promBy(by) + `) (` + promSelector(sums, sel) + `) or label_replace(max by (` + promBy(by) + `) (` +
		promSelector(starts, sel) + `), "runwatch", "start", "", "")` +
		` or ` + promScraped(sel, by[1:]...)
}

// promHostLabel adds a `host` label: the instance without its port, so that node_exporter on
// gpu-node-3:9100 and vLLM on gpu-node-3:8000 meet on gpu-node-3.
func promHostLabel(expr string) string {
	return `label_replace(label_replace(` + expr + `, "host", "$1", "instance", "(.*)"), "host", "$1", "instance", "(.+):[0-9]+")`
}

// promRunHosts is the hosts of the run's targets (any `up` or engine batch series the selector
// matches), one series per instance with its `host` label, to join other hosts' facts on.
func promRunHosts(sel string) string {
	return promRunHostsBy(sel)
}

// promRunHostsBy is promRunHosts keeping the labels by as well.
func promRunHostsBy(sel string, by ...string) string {
	return promHostLabel(`group by (` + promBy(by) + `) (` + promSelector(append([]string{"up"}, promBatchGauges()...), sel) + `)`)
}

// promFSQuery reads node_exporter's filesystems at the mount points that can hold the paths, on the
// hosts of the run's targets.
func promFSQuery(sel string, mountpoints []string) string {
	fs := promSelector([]string{"node_filesystem_avail_bytes", "node_filesystem_size_bytes", "node_filesystem_free_bytes", "node_filesystem_device_error"},
		"", "mountpoint=~"+promAlternation(mountpoints))
	return promHostLabel(fs) + " and on(host) " + promRunHosts(sel)
}

// promFreeQuery reads free space at the mounts over window, raw samples for a trend.
func promFreeQuery(instances, mounts []string, window time.Duration) string {
	return fmt.Sprintf(`node_filesystem_avail_bytes{instance=~%s,mountpoint=~%s}[%ds]`,
		promAlternation(instances), promAlternation(mounts), int(window.Seconds()))
}

// promDiskQuery reads the disks' written-bytes counters over window, raw samples for a rate.
func promDiskQuery(instances, disks []string, window time.Duration) string {
	return fmt.Sprintf(`node_disk_written_bytes_total{instance=~%s,device=~%s}[%ds]`,
		promAlternation(instances), promAlternation(disks), int(window.Seconds()))
}

// promSpan is a whole number of hours or minutes as a person says it in a sentence ("hour", "2 hours",
// "10 min"), not Go's 1h0m0s.
func promSpan(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	}
	return d.String()
}

// PromExporterMemory is how long an exporter that answered counts as one of the run's: a host whose
// exporter answered within it and does not now is silent, not gone.
const PromExporterMemory = time.Hour

// promWriterQuery reads, per exporting host of the run, the processes writing under the protected
// paths and the processes the exporter could not inspect; and, to tell a silent exporter from none,
// the exporters that answered within PromExporterMemory ("seen") and their targets' `up` now; and
// whether each exporter's scan of open files ran whole ("scan": runwatch_exporter_scan_success). The
// exporters' own series carry no run label (a protected path means the same on every node): they
// are scoped like storage, joined on the hosts of the run's targets, so that two runs on disjoint
// hosts never list each other's writers.
func promWriterQuery(sel string, protected []string) string {
	return promHostLabel(promWriterFacts(protected)) + " and on(host) " + promRunHosts(sel)
}

// promWriterFacts are the writer facts of promWriterQuery on every host, before the join on the run's.
func promWriterFacts(protected []string) string {
	window := fmt.Sprintf("[%ds]", int(PromExporterMemory.Seconds()))
	seen := `group by (instance) (last_over_time(runwatch_invisible_processes` + window + `))`
	// `or` matches series on their labels without the name: a label of its own keeps the right side.
	return fmt.Sprintf(`runwatch_protected_writer_processes{path=~%s} or runwatch_invisible_processes`, promAlternation(protected)) +
		` or label_replace(` + seen + `, "runwatch", "seen", "", "")` +
		` or label_replace(up and on(instance) ` + seen + `, "runwatch", "up", "", "")` +
		` or label_replace(runwatch_exporter_scan_success, "runwatch", "scan", "", "")`
}
