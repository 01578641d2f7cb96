package probes

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestPromSelector(t *testing.T) {
	tests := []struct {
		names []string
		sel   string
		extra []string
		want  string
	}{
		{nil, "", nil, "{}"},
		{[]string{"up"}, "", nil, `{__name__=~"up"}`},
		{[]string{"up", "vllm:num_requests_running"}, promInner(`{job="vllm", run="synth-25k"}`), nil,
			`{__name__=~"up|vllm:num_requests_running",job="vllm", run="synth-25k"}`},
		{[]string{"a.b"}, promInner("{}"), []string{`mountpoint=~"/"`}, `{__name__=~"a\\.b",mountpoint=~"/"}`},
	}
	for _, tt := range tests {
		if got := promSelector(tt.names, tt.sel, tt.extra...); got != tt.want {
			t.Errorf("promSelector(%q, %q, %q) = %s; want %s", tt.names, tt.sel, tt.extra, got, tt.want)
		}
	}
}

func TestPromAncestors(t *testing.T) {
	got := strings.Join(promAncestors([]string{"/data/run/out/", "/shared", "/data/x"}), " ")
	if want := "/ /data /data/run /data/run/out /data/x /shared"; got != want {
		t.Errorf("promAncestors = %q; want %q", got, want)
	}
}

func TestPromHostAndDisks(t *testing.T) {
	hosts := map[string]string{"gpu-node-3:9100": "gpu-node-3", "gpu-node-3": "gpu-node-3", "[::1]:9100": "::1", "10.0.0.7:8000": "10.0.0.7"}
	for in, want := range hosts {
		if got := promHost(in); got != want {
			t.Errorf("promHost(%q) = %q; want %q", in, got, want)
		}
	}
	disks := map[string]string{"/dev/sda1": "sda1 sda", "/dev/nvme0n1p2": "nvme0n1p2 nvme0n1", "/dev/nvme1n1": "nvme1n1",
		"/dev/vda": "vda", "/dev/mmcblk0p1": "mmcblk0p1 mmcblk0", "/dev/mapper/vg-data": "mapper/vg-data", "overlay": "", "server:/export": ""}
	for in, want := range disks {
		if got := strings.Join(promDiskNames(in), " "); got != want {
			t.Errorf("promDiskNames(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestPromCheckVerdict(t *testing.T) {
	one := func(v float64) PromSeries {
		return PromSeries{Labels: map[string]string{"__name__": "x", "job": "vllm"}, Samples: []PromSample{{T: 1, V: v}}}
	}
	tests := []struct {
		series []PromSeries
		done   bool
		detail string
	}{
		{nil, false, "the query returns no series"},
		{[]PromSeries{one(0), one(0)}, false, "the query returns 2 series, all 0"},
		{[]PromSeries{one(math.NaN())}, false, "the query returns 1 series, all 0"},
		{[]PromSeries{one(0), one(3)}, true, `x{job="vllm"} = 3`},
		{[]PromSeries{one(1), one(2), one(3)}, true, `x{job="vllm"} = 1 (and 2 more)`},
		// blackbox_exporter's instance is the probed URL, key and password included.
		{[]PromSeries{{Labels: map[string]string{"__name__": "probe_success", "instance": "https://bob:HUNTER2@svc/health?token=SECRET"},
			Samples: []PromSample{{T: 1, V: 1}}}}, true, `probe_success{instance="https://svc/health?token=[redacted]"} = 1`},
		// count(...) and other aggregates without by(): no labels to name, so not "{} = 1".
		{[]PromSeries{{Labels: map[string]string{}, Samples: []PromSample{{T: 1, V: 8}}}}, true, "the query returns 8"},
	}
	for _, tt := range tests {
		done, detail, err := promCheckVerdict(PromResult{Series: tt.series})
		if err != nil || done != tt.done || detail != tt.detail {
			t.Errorf("promCheckVerdict(%v) = %v, %q, %v; want %v, %q", tt.series, done, detail, err, tt.done, tt.detail)
		}
	}
}

func TestPromWriteRates(t *testing.T) {
	now := 10_000.0
	// A disk counter 90 s old read over a 5-minute window: the rate over the 90 s it spans.
	var written []PromSample
	for t := now - 90; t <= now; t += 15 {
		written = append(written, PromSample{T: t, V: 2e6 * (t - now + 90)})
	}
	diskOf := map[string]map[string][]promDiskMount{"h:9100": {"nvme1n1": {{"/data", false}}, "nvme1n1p1": {{"/data", true}}}}
	diskOf["q:9100"] = map[string][]promDiskMount{"sdb": {{"/shared", true}}}
	rates, bytes := promWriteRates([]PromSeries{
		{Labels: map[string]string{"instance": "h:9100", "device": "nvme1n1p1"}, Samples: written},
		{Labels: map[string]string{"instance": "h:9100", "device": "nvme1n1"}, Samples: []PromSample{{T: now - 60, V: 0}, {T: now, V: 6e9}}},
		{Labels: map[string]string{"instance": "q:9100", "device": "sdb"}, Samples: []PromSample{{T: now - 300, V: 7e9}, {T: now - 150, V: 7e9}, {T: now, V: 7e9}}},
	}, diskOf)
	if r := rates["h"]["/data"]; math.Abs(r-2e6) > 1 {
		t.Errorf("write rate = %g; want 2e6 (the partition's own counter, over the 90 s it exists)", r)
	}
	if w := bytes["h"]["/data"]; math.Abs(w.Bytes-180e6) > 1 || w.Seconds != 90 {
		t.Errorf("written = %+v; want 180 MB over 90 s", w)
	}
	// A disk that wrote nothing over five minutes: evidence that nothing writes to /shared there.
	if w := bytes["q"]["/shared"]; w.Bytes != 0 || w.Seconds != 300 {
		t.Errorf("written on a quiet disk = %+v; want 0 B over 300 s", w)
	}
}

func TestPromEngineReading(t *testing.T) {
	s := func(name, inst string, v float64) PromSeries {
		return PromSeries{Labels: map[string]string{"__name__": name, "instance": inst}, Samples: []PromSample{{T: 1, V: v}}}
	}
	rd := promEngineReading([]PromSeries{
		s("up", "a:8000", 1), s("vllm:generation_tokens_total", "a:8000", 100), s("vllm:num_requests_running", "a:8000", 5),
		s("up", "b:8000", 0),
		s("up", "n:9100", 1), // node_exporter matching the selector: not an engine
		s(promResetsName, "a:8000", 2),
	})
	var got []string
	for _, pi := range rd.Instances {
		got = append(got, fmt.Sprintf("%s kind=%q down=%v tokens=%g", pi.Name, pi.Engine.Kind, pi.Down(), pi.Engine.GenerationTokens))
	}
	if want := `a:8000 kind="vllm" down=false tokens=100, b:8000 kind="" down=true tokens=0, n:9100 kind="" down=false tokens=0`; strings.Join(got, ", ") != want {
		t.Errorf("instances = %s; want %s", strings.Join(got, ", "), want)
	}
	if rd.Restarts["a:8000"] != 2 || len(rd.Restarts) != 1 {
		t.Errorf("restarts = %v; want a:8000: 2", rd.Restarts)
	}
}

func TestRemoteHostLookup(t *testing.T) {
	h := RemoteHost{Name: "gpu-node-1", Filesystems: []RemoteFS{
		{Mount: Mount{MountPoint: "/"}}, {Mount: Mount{MountPoint: "/data"}}, {Mount: Mount{MountPoint: "/data/run"}},
	}}
	for path, want := range map[string]string{"/data/run/out/": "/data/run", "/data/x": "/data", "/database": "/", "/tmp": "/"} {
		if f, ok := h.Lookup(path); !ok || f.Mount.MountPoint != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", path, f.Mount.MountPoint, ok, want)
		}
	}
	if f, ok := (RemoteHost{}).Lookup("/data"); ok {
		t.Errorf("Lookup on a host without filesystems = %+v; want none", f)
	}
}

func TestPromHosts(t *testing.T) {
	s := func(name, inst, mp, dev string, v float64) PromSeries {
		return PromSeries{Labels: map[string]string{"__name__": name, "instance": inst, "mountpoint": mp, "device": dev, "fstype": "xfs"},
			Samples: []PromSample{{T: 1, V: v}}}
	}
	hosts := promHosts([]PromSeries{
		s("node_filesystem_avail_bytes", "gpu-node-1:9100", "/", "/dev/nvme0n1p2", 10),
		s("node_filesystem_size_bytes", "gpu-node-1:9100", "/", "/dev/nvme0n1p2", 100),
		s("node_filesystem_free_bytes", "gpu-node-1:9100", "/", "/dev/nvme0n1p2", 15),
		s("node_filesystem_avail_bytes", "gpu-node-1:9100", "/data", "/dev/nvme1n1", 500),
		s("node_filesystem_size_bytes", "gpu-node-1:9100", "/data", "/dev/nvme1n1", 1000),
		s("node_filesystem_device_error", "gpu-node-1:9100", "/shared", "nfs:/export", 1),
		s("node_filesystem_avail_bytes", "gpu-node-2:9100", "/", "/dev/sda1", 7),
	})
	var got []string
	for _, h := range hosts {
		for _, f := range h.Filesystems {
			u := "-"
			if f.Usage != nil {
				u = fmt.Sprintf("%d/%d used %d", f.Usage.Free, f.Usage.Total, f.Usage.Used)
			}
			e := ""
			if f.Err != nil {
				e = " err: " + f.Err.Error()
			}
			got = append(got, fmt.Sprintf("%s %s %s %s%s", h.Name, f.Mount.MountPoint, f.Mount.Source, u, e))
		}
	}
	want := []string{
		"gpu-node-1 / /dev/nvme0n1p2 10/100 used 85",
		"gpu-node-1 /data /dev/nvme1n1 500/1000 used 500",
		"gpu-node-1 /shared nfs:/export - err: node_exporter on gpu-node-1:9100 could not stat /shared (node_filesystem_device_error = 1)",
		"gpu-node-2 / /dev/sda1 - err: node_exporter on gpu-node-2:9100 gives no size or free space for /",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("promHosts =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A query_range answer replayed step by step puts each step at the time its values were scraped,
// and leaves out the steps of a gap in Prometheus's data, which repeat the values from before it.
func TestPromStepsAtTheirScrapeTime(t *testing.T) {
	series := func(name string, points ...float64) PromSeries {
		s := PromSeries{Labels: map[string]string{"__name__": name, "instance": "a:8000"}}
		for i := 0; i < len(points); i += 2 {
			s.Samples = append(s.Samples, PromSample{T: points[i], V: points[i+1]})
		}
		return s
	}
	// Steps every 10 s; scrapes at 5, 15, then nothing until 55 (the gap), then 65.
	steps := promSteps([]PromSeries{
		series("vllm:generation_tokens_total", 10, 500, 20, 1500, 30, 1500, 40, 1500, 50, 1500, 60, 5500, 70, 6500),
		series("vllm:num_requests_running", 10, 8, 20, 8, 30, 8, 40, 8, 50, 8, 60, 8, 70, 8),
		series(promScrapedName, 10, 5, 20, 15, 30, 15, 40, 15, 50, 15, 60, 55, 70, 65),
	})
	var got []float64
	for _, st := range steps {
		got = append(got, st.T, st.Instances[0].Engine.GenerationTokens)
	}
	want := []float64{5, 500, 15, 1500, 55, 5500, 65, 6500}
	if !slices.Equal(got, want) {
		t.Errorf("steps (time, tokens) = %v; want %v", got, want)
	}
}

// A grouped query's answer goes back to its parts: the facts on each part's hosts, a fact on hosts
// of two parts to both, and the markers themselves to none; whether the parts are one selector
// split by the label they differ in, or tagged by index.
func TestPromGroupedOnHosts(t *testing.T) {
	s := func(labels ...string) PromSeries {
		l := map[string]string{}
		for i := 0; i < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		return PromSeries{Labels: l, Samples: []PromSample{{T: 1, V: 1}}}
	}
	facts := []PromSeries{
		s("__name__", "node_filesystem_avail_bytes", "host", "n1", "mountpoint", "/data"),
		s("__name__", "node_filesystem_avail_bytes", "host", "n2", "mountpoint", "/data"),
		s("__name__", "node_filesystem_avail_bytes", "host", "n3", "mountpoint", "/data"),
		s("__name__", "node_filesystem_avail_bytes", "host", "n4", "mountpoint", "/data"),
	}
	for _, tc := range []struct {
		name      string
		selectors []string
		want      []string // in the query
		marks     [2]string
	}{
		{"one label apart", []string{`{job="vllm",run="a"}`, `{run="b", job="vllm"}`}, []string{`run=~"a|b"`, `group by (instance, run)`, `"runwatch_part", "$1", "run"`}, [2]string{"a", "b"}},
		{"tagged", []string{`{run="a"}`, `{job="other"}`}, []string{`"runwatch_part", "0"`, `"runwatch_part", "1"`, `run="a"`, `job="other"`}, [2]string{"0", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, split := promGroupedOnHosts("facts", tc.selectors, false)
			for _, want := range tc.want {
				if !strings.Contains(q, want) {
					t.Errorf("grouped query %q lacks %q", q, want)
				}
			}
			series := append([]PromSeries{
				s("host", "n1", "instance", "n1:8000", promPart, tc.marks[0]),
				s("host", "n2", "instance", "n2:8000", promPart, tc.marks[0]),
				s("host", "n2", "instance", "n2:8000", promPart, tc.marks[1]),
				s("host", "n3", "instance", "n3:8000", promPart, tc.marks[1]),
			}, facts...)
			parts, hosts := split(series)
			if !hosts[0]["n1"] || !hosts[0]["n2"] || hosts[0]["n3"] || !hosts[1]["n3"] {
				t.Errorf("hosts = %v; want n1, n2 for part 0 and n2, n3 for part 1", hosts)
			}
			hostsOf := func(ss []PromSeries) []string {
				var out []string
				for _, x := range ss {
					if x.Labels[promPart] != "" {
						t.Errorf("a marker %v went to a part", x.Labels)
					}
					out = append(out, x.Labels["host"])
				}
				return out
			}
			if got := hostsOf(parts[0]); !slices.Equal(got, []string{"n1", "n2"}) {
				t.Errorf("part 0 = %v; want the facts of n1 and n2", got)
			}
			if got := hostsOf(parts[1]); !slices.Equal(got, []string{"n2", "n3"}) {
				t.Errorf("part 1 = %v; want the facts of n2 and n3", got)
			}
		})
	}
	// One part is asked and answered as before grouping.
	if q, _ := promGroupedOnHosts("facts", []string{`{run="a"}`}, false); strings.Contains(q, promPart) {
		t.Errorf("a one-part query %q is tagged", q)
	}
	// Unless its hosts are asked for: then they are marked, and told apart from the facts.
	q, split := promGroupedOnHosts("facts", []string{`{run="a"}`}, true)
	if !strings.Contains(q, `"runwatch_part", "0"`) {
		t.Errorf("a one-part query asking for its hosts %q marks none", q)
	}
	parts, hosts := split(append([]PromSeries{s("host", "n1", "instance", "n1:8000", promPart, "0"), s("host", "n5", "instance", "n5:8000", promPart, "0")}, facts...))
	if len(parts[0]) != 1 || parts[0][0].Labels["host"] != "n1" || len(hosts[0]) != 2 || !hosts[0]["n5"] {
		t.Errorf("one marked part = %v, hosts %v; want n1's fact alone, hosts n1 and n5", parts, hosts)
	}
}

// Selectors that differ in one label's value are one selector; any other shape is not.
func TestPromPlanFor(t *testing.T) {
	for _, tc := range []struct {
		selectors []string
		label     string
		sel       string
	}{
		{[]string{`job="vllm",run="a"`, `job="vllm", run="b"`, "run=`c`,job=\"vllm\""}, "run", `job="vllm",run=~"a|b|c"`},
		{[]string{`run="a.b"`, `run="c"`}, "run", `run=~"a\\.b|c"`},
		{[]string{`run="a"`}, "", ""},
		{[]string{`run="a"`, `run=~"b"`}, "", ""},                // not an equality
		{[]string{`run="a",job="x"`, `run="b",job="y"`}, "", ""}, // two labels differ
		{[]string{`run="a"`, `run="b",job="x"`}, "", ""},         // not the same labels
		{[]string{`run='a'`, `run='b'`}, "", ""},                 // single quotes: not read
		{[]string{`run="a"`, `run=""`}, "", ""},                  // an empty value is a missing label
		{[]string{`__name__="a"`, `__name__="b"`}, "", ""},       // names are not a part's label
		{[]string{`run="a" job="x"`, `run="b" job="x"`}, "", ""}, // no comma
	} {
		p := promPlanFor(tc.selectors)
		if p.label != tc.label || p.sel != tc.sel {
			t.Errorf("promPlanFor(%q) = label %q, selector %q; want %q, %q", tc.selectors, p.label, p.sel, tc.label, tc.sel)
		}
	}
}
