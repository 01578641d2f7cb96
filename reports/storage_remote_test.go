package reports

import (
	"errors"
	"math"
	"strings"
	"testing"

	"runwatch/probes"
)

// A host's filesystems read through node_exporter carry no mount ids: mounts are told apart by
// mount point, and one filesystem mounted twice by its device or export.
func TestBuildStorageRemoteMountsWithoutIDs(t *testing.T) {
	mount := func(mp, src string) probes.Mount { return probes.Mount{MountPoint: mp, Source: src, FSType: "xfs"} }
	obs := func(path, role string, m probes.Mount) PathObservation {
		return PathObservation{Path: path, Role: role, Resolved: path, Exists: true, Host: "gpu-node-1", HasMount: true, Mount: m}
	}
	tests := []struct {
		name      string
		out       probes.Mount
		protected bool
	}{
		{"another disk", mount("/data", "/dev/nvme1n1"), false},
		{"the same export mounted elsewhere", mount("/mnt/shared", "nfs:/export"), true},
		{"another tmpfs", mount("/scratch", "tmpfs"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := StorageInput{Paths: []PathObservation{
				obs("/shared", RoleProtected, mount("/shared", "nfs:/export")),
				obs(tt.out.MountPoint+"/run", RoleOutput, tt.out),
			}}
			if tt.out.Source == "tmpfs" {
				in.Paths[0] = obs("/shared", RoleProtected, mount("/shared", "tmpfs"))
			}
			st := BuildStorage(in, func(string) (float64, bool) { return 0, false })
			if len(st.Paths) != 1 || st.Paths[0].Protected != tt.protected {
				t.Errorf("output on %s (%s): paths = %+v; want protected %v", tt.out.MountPoint, tt.out.Source, st.Paths, tt.protected)
			}
		})
	}
}

func TestPlaceOnHosts(t *testing.T) {
	usage := func(free, total, used uint64) *probes.Usage {
		return &probes.Usage{Free: free, Total: total, Used: used}
	}
	hosts := []probes.RemoteHost{
		{Name: "gpu-node-1", Filesystems: []probes.RemoteFS{
			{Instance: "gpu-node-1:9100", Mount: probes.Mount{MountPoint: "/", Source: "/dev/nvme0n1p2", FSType: "ext4"}, Usage: usage(10, 100, 85)},
			{Instance: "gpu-node-1:9100", Mount: probes.Mount{MountPoint: "/data", Source: "/dev/nvme1n1", FSType: "xfs"}, Usage: usage(500, 1000, 500)},
			{Instance: "gpu-node-1:9100", Mount: probes.Mount{MountPoint: "/shared", Source: "nfs:/export", FSType: "nfs4"},
				Err: errors.New("node_exporter on gpu-node-1:9100 could not stat /shared (node_filesystem_device_error = 1)")},
		}},
		{Name: "gpu-node-2"},
	}
	specs := []PathObservation{{Path: "/data/run/out", Role: RoleOutput}, {Path: "/tmp/x", Role: RoleWatch}, {Path: "/shared", Role: RoleProtected}}
	got := PlaceOnHosts(specs, hosts)
	type row struct {
		host, path, mount string
		free, used        uint64
		err               string
	}
	want := []row{
		{"gpu-node-1", "/data/run/out", "/data", 500, 500, ""},
		{"gpu-node-1", "/tmp/x", "/", 10, 85, ""},
		{"gpu-node-1", "/shared", "/shared", 0, 0, "could not stat /shared"},
		{"gpu-node-2", "/data/run/out", "", 0, 0, "no filesystem that holds it"},
		{"gpu-node-2", "/tmp/x", "", 0, 0, "no filesystem that holds it"},
		{"gpu-node-2", "/shared", "", 0, 0, "no filesystem that holds it"},
	}
	if len(got) != len(want) {
		t.Fatalf("PlaceOnHosts = %d observations; want %d", len(got), len(want))
	}
	for i, w := range want {
		o := got[i]
		r := row{host: o.Host, path: o.Path, mount: o.Mount.MountPoint}
		if o.Usage != nil {
			r.free, r.used = o.Usage.Free, o.Usage.Used
		}
		if o.UsageErr != nil {
			r.err = o.UsageErr.Error()
		}
		if r.host != w.host || r.path != w.path || r.mount != w.mount || r.free != w.free || r.used != w.used || !strings.Contains(r.err, w.err) || (w.err == "") != (r.err == "") {
			t.Errorf("observation %d = %+v; want %+v", i, r, w)
		}
		if o.Mount.ID != 0 || o.Mount.Major != 0 {
			t.Errorf("observation %d mount = %+v; want no mount ids (node_exporter has none)", i, o.Mount)
		}
	}
}

func TestFillRatesByHost(t *testing.T) {
	now := 10_000.0
	// Free space shrinking 1 MB/s for 10 minutes, sampled every 15 s.
	var avail []probes.PromSample
	for t := now - 600; t <= now; t += 15 {
		avail = append(avail, probes.PromSample{T: t, V: 1e12 - 1e6*(t-now+600)})
	}
	fill := FillRatesByHost(map[string]map[string][]probes.PromSample{"h": {"/data": avail}}, now, 1800)
	if r := fill["h"]["/data"].Rate; math.Abs(r-1e6) > 1 {
		t.Errorf("fill rate = %g; want 1e6", r)
	}
}
