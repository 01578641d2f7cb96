package reports

import (
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
