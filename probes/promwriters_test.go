package probes

import (
	"reflect"
	"testing"
)

// TestPromWritersOfTellsSilenceFromNone: an exporter that answered within the hour and does not now is
// silent, with why (down, answering without facts, no longer scraped); a host that never had one is
// not a gap; a host whose exporter answered is one of Hosts with its writers and uninspected processes,
// unless its scan of open files failed (runwatch_exporter_scan_success = 0): then it is silent too.
func TestPromWritersOfTellsSilenceFromNone(t *testing.T) {
	series := func(name, inst string, v float64, labels ...string) PromSeries {
		l := map[string]string{"instance": inst, "host": promHost(inst)}
		if name != "" {
			l["__name__"] = name
		}
		for i := 0; i+1 < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		return PromSeries{Labels: l, Samples: []PromSample{{T: 1, V: v}}}
	}
	got := promWritersOf([]PromSeries{
		// gpu-1 answers: one writer, two processes it could not inspect.
		series("runwatch_invisible_processes", "gpu-1:9464", 2),
		series("runwatch_protected_writer_processes", "gpu-1:9464", 1, "path", "/shared", "mount", "/shared", "command", "extract"),
		series("runwatch_protected_writer_processes", "gpu-1:9464", 0, "path", "/shared", "mount", "/shared", "command", "gone"),
		series("", "gpu-1:9464", 1, "runwatch", "seen"),
		series("up", "gpu-1:9464", 1, "runwatch", "up"),
		// gpu-2's exporter is stopped: seen, up = 0, no facts.
		series("", "gpu-2:9464", 1, "runwatch", "seen"),
		series("up", "gpu-2:9464", 0, "runwatch", "up"),
		// gpu-3's answers without the writer facts; gpu-4's target is gone from Prometheus.
		series("", "gpu-3:9464", 1, "runwatch", "seen"),
		series("up", "gpu-3:9464", 1, "runwatch", "up"),
		series("", "gpu-4:9464", 1, "runwatch", "seen"),
		// gpu-5's exporter answers, but its scan of /proc failed: what it counts is no evidence.
		series("runwatch_invisible_processes", "gpu-5:9464", 0),
		series("", "gpu-5:9464", 1, "runwatch", "seen"),
		series("up", "gpu-5:9464", 1, "runwatch", "up"),
		series("runwatch_exporter_scan_success", "gpu-5:9464", 0, "runwatch", "scan"),
		series("runwatch_exporter_scan_success", "gpu-1:9464", 1, "runwatch", "scan"),
	})
	want := RemoteWriters{
		Writers:   []RemoteWriter{{Host: "gpu-1", Command: "extract", Path: "/shared", Mount: "/shared", Processes: 1}},
		Invisible: map[string]int{"gpu-1": 2},
		Hosts:     []string{"gpu-1"},
		Silent: []SilentExporter{
			{Host: "gpu-2", Instance: "gpu-2:9464", Err: ErrExporterDown},
			{Host: "gpu-3", Instance: "gpu-3:9464", Err: ErrExporterNoFacts},
			{Host: "gpu-4", Instance: "gpu-4:9464", Err: ErrExporterGone},
			{Host: "gpu-5", Instance: "gpu-5:9464", Err: ErrExporterScanFailed},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("promWritersOf =\n%+v\nwant\n%+v", got, want)
	}
}
