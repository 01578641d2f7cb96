package probes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDiskIORead(t *testing.T) {
	got, err := NewDiskIO("testdata/proc").Read(context.Background())
	if err != nil {
		t.Fatalf("DiskIO.Read(testdata/proc): %v", err)
	}
	wantBlock := map[string]uint64{
		"7:0": 0, "7:1": 0,
		"8:0": 1489224 * 512, "8:1": 1489224 * 512,
		"259:0": 361987104 * 512, "259:1": 2 * 512, "259:2": 361987102 * 512,
		"259:3": 187350327296 * 512,
	}
	if !reflect.DeepEqual(got.Block, wantBlock) {
		t.Errorf("DiskIO.Read(testdata/proc).Block = %v; want %v", got.Block, wantBlock)
	}
	wantNFS := map[string]uint64{"/shared": 734003200000, "/mnt/ckpt": 96636764160}
	if !reflect.DeepEqual(got.NFS, wantNFS) {
		t.Errorf("DiskIO.Read(testdata/proc).NFS = %v; want %v", got.NFS, wantNFS)
	}
}

func TestWriteRate(t *testing.T) {
	ctx := context.Background()
	prev, err := NewDiskIO("testdata/proc").Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := NewDiskIO("testdata/proc-later").Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tab := mountFixtureTable(t)
	const dt = 10.0 // the two fixture readings are ten seconds apart
	tests := []struct {
		path   string
		want   float64
		wantOK bool
	}{
		{"/data/runs/gen-0412/out.jsonl", 2048000 * 512 / dt, true},          // xfs on nvme1n1
		{"/home/ml/runs/extract-07/shard.bin", 2048000 * 512 / dt, true},     // bind mount of the same device
		{"/shared/synth/gen-0412/part-0001.jsonl", 524288000 / dt, true},     // nfs4
		{"/mnt/ckpt/step-200.pt", 0, true},                                   // nfs4, idle
		{"/etc/hosts", 20480 * 512 / dt, true},                               // root on nvme0n1p2
		{"/media/usb drive/export.csv", 0, true},                             // vfat on sda1
		{"/dev/shm/ipc", 0, false},                                           // tmpfs: no counter
		{"/var/lib/docker/overlay2/3f1c0e5a9b7d/merged/tmp/x.log", 0, false}, // overlay: no counter
	}
	for _, tt := range tests {
		m, ok := tab.Lookup(tt.path)
		if !ok {
			t.Fatalf("Lookup(%q) found nothing", tt.path)
		}
		got, ok := WriteRate(prev, cur, m, dt)
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("WriteRate(%s on %s %s) = %v, %v; want %v, %v", tt.path, m.FSType, m.MountPoint, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestWriteRateNotMeasurable(t *testing.T) {
	data := Mount{Major: 259, Minor: 3, FSType: "xfs", MountPoint: "/data"}
	nfs := Mount{Major: 0, Minor: 45, FSType: "nfs4", MountPoint: "/shared"}
	c := func(block, nfs uint64) DiskCounters {
		return DiskCounters{Block: map[string]uint64{"259:3": block}, NFS: map[string]uint64{"/shared": nfs}}
	}
	tests := []struct {
		name      string
		prev, cur DiskCounters
		m         Mount
		dt        float64
		want      float64
		wantOK    bool
	}{
		{"block", c(1000, 0), c(3000, 0), data, 2, 1000, true},
		{"nfs", c(0, 100), c(0, 500), nfs, 4, 100, true},
		{"counter went backwards (reboot, remount)", c(3000, 0), c(1000, 0), data, 2, 0, false},
		{"nfs counter went backwards", c(0, 500), c(0, 100), nfs, 2, 0, false},
		{"zero interval", c(1000, 0), c(3000, 0), data, 0, 0, false},
		{"negative interval", c(1000, 0), c(3000, 0), data, -1, 0, false},
		{"device missing from the first reading", DiskCounters{}, c(3000, 0), data, 2, 0, false},
		{"nfs mount missing from the second reading", c(0, 100), DiskCounters{}, nfs, 2, 0, false},
		{"major 0 that is not nfs", c(1, 1), c(2, 2), Mount{Minor: 24, FSType: "tmpfs", MountPoint: "/shared"}, 2, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := WriteRate(tt.prev, tt.cur, tt.m, tt.dt)
			if ok != tt.wantOK || got != tt.want {
				t.Errorf("WriteRate(%v, %v, %s, %v) = %v, %v; want %v, %v", tt.prev, tt.cur, tt.m.MountPoint, tt.dt, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestDiskIOUnescape(t *testing.T) {
	tests := []struct{ in, want string }{
		{`/shared`, "/shared"},
		{`/media/usb\040drive`, "/media/usb drive"},
		{`/a\011b\012c\134d`, "/a\tb\nc\\d"},
		{`/trailing\04`, `/trailing\04`},
		{`/not\8octal`, `/not\8octal`},
		{`/too\777big`, `/too\777big`},
		{`\`, `\`},
	}
	for _, tt := range tests {
		if got := diskIOUnescape(tt.in); got != tt.want {
			t.Errorf("diskIOUnescape(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// diskIOTree writes a proc tree with the given diskstats and self/mountstats
// contents; an empty string leaves the file out.
func diskIOTree(t *testing.T, diskstats, mountstats string) string {
	t.Helper()
	root := t.TempDir()
	if diskstats != "" {
		if err := os.WriteFile(filepath.Join(root, "diskstats"), []byte(diskstats), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if mountstats != "" {
		if err := os.MkdirAll(filepath.Join(root, "77"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("77", filepath.Join(root, "self")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "77", "mountstats"), []byte(mountstats), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDiskIOReadPartial(t *testing.T) {
	const disk = " 259       3 nvme1n1 1 0 8 0 2 0 16 0 0 0 0 0 0 0 0 0 0\n"
	const stats = "device /dev/nvme1n1 mounted on /data with fstype xfs\n"
	const badStats = "device fs:/x mounted on /x with fstype nfs4 statvers=1.1\n\tbytes:\t1 2 3\n"
	tests := []struct {
		name      string
		disk      string
		stats     string
		wantBlock bool
		wantNFS   bool
		wantErr   bool
	}{
		{name: "both", disk: disk, stats: stats, wantBlock: true, wantNFS: true},
		{name: "no mountstats", disk: disk, wantBlock: true},
		{name: "no diskstats", stats: stats, wantNFS: true},
		{name: "neither", wantErr: true},
		{name: "corrupt mountstats is reported", disk: disk, stats: badStats, wantBlock: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewDiskIO(diskIOTree(t, tt.disk, tt.stats)).Read(context.Background())
			if (err != nil) != tt.wantErr {
				t.Errorf("Read error = %v; want error %v", err, tt.wantErr)
			}
			if (got.Block != nil) != tt.wantBlock || (got.NFS != nil) != tt.wantNFS {
				t.Errorf("Read = %+v; want Block %v, NFS %v", got, tt.wantBlock, tt.wantNFS)
			}
			if tt.wantBlock && got.Block["259:3"] != 16*512 {
				t.Errorf("Read Block[259:3] = %d; want %d", got.Block["259:3"], 16*512)
			}
		})
	}
}

// TestDiskIOReadReal writes and syncs a file and expects the device under
// t.TempDir() to count at least that many bytes.
func TestDiskIOReadReal(t *testing.T) {
	ctx := context.Background()
	dir, err := Resolve(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tab, err := NewMounts("/proc").Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := tab.Lookup(dir)
	if !ok {
		t.Fatalf("Lookup(%q) found nothing", dir)
	}
	d := NewDiskIO("/proc")
	prev, err := d.Read(ctx)
	if err != nil {
		t.Fatalf("DiskIO.Read(/proc): %v", err)
	}
	if _, ok := WriteRate(prev, prev, m, 1); !ok {
		t.Skipf("%s (%s %d:%d) has no write counter here", m.MountPoint, m.FSType, m.Major, m.Minor)
	}
	const size = 4 << 20
	f, err := os.Create(filepath.Join(dir, "blob"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fsync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	cur, err := d.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rate, ok := WriteRate(prev, cur, m, 1)
	if !ok || rate < size {
		t.Errorf("WriteRate(%s) after writing %d bytes = %v, %v; want at least %d", m.MountPoint, size, rate, ok, size)
	}
}

func TestDiskIOReadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewDiskIO("testdata/proc").Read(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("DiskIO.Read(cancelled) error = %v; want Canceled", err)
	}
}
