package probes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseMountinfo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Mount
		wantErr bool
	}{
		{
			name: "root ext4 with optional field",
			in:   "1 0 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro\n",
			want: []Mount{{ID: 1, Parent: 0, Major: 259, Minor: 2, Root: "/", MountPoint: "/", FSType: "ext4", Source: "/dev/nvme0n1p2", Options: "rw,relatime"}},
		},
		{
			name: "no optional fields, nfs4 source",
			in:   "31 1 0:45 / /shared rw,relatime - nfs4 fileserver:/export/shared rw,vers=4.2,addr=10.0.0.2\n",
			want: []Mount{{ID: 31, Parent: 1, Major: 0, Minor: 45, Root: "/", MountPoint: "/shared", FSType: "nfs4", Source: "fileserver:/export/shared", Options: "rw,relatime"}},
		},
		{
			name: "several optional fields, bind mount root",
			in:   "32 1 259:3 /runs /home/ml/runs rw,noatime shared:20 master:3 - xfs /dev/nvme1n1 rw\n",
			want: []Mount{{ID: 32, Parent: 1, Major: 259, Minor: 3, Root: "/runs", MountPoint: "/home/ml/runs", FSType: "xfs", Source: "/dev/nvme1n1", Options: "rw,noatime"}},
		},
		{
			name: "octal escapes in mount point",
			in:   "33 1 8:1 / /media/usb\\040drive\\011tab rw - vfat /dev/sda1 rw\n",
			want: []Mount{{ID: 33, Parent: 1, Major: 8, Minor: 1, Root: "/", MountPoint: "/media/usb drive\ttab", FSType: "vfat", Source: "/dev/sda1", Options: "rw"}},
		},
		{
			name: "empty input",
			in:   "",
			want: []Mount{},
		},
		{
			name:    "too few fields",
			in:      "1 0 259:2 / / rw - ext4\n",
			wantErr: true,
		},
		{
			name:    "no separator",
			in:      "1 0 259:2 / / rw shared:1 master:2 ext4 /dev/sda1 rw\n",
			wantErr: true,
		},
		{
			name:    "bad major:minor",
			in:      "1 0 2592 / / rw - ext4 /dev/sda1 rw\n",
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMountinfo(strings.NewReader(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseMountinfo(%q) = %v, nil; want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseMountinfo(%q) error: %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseMountinfo(%q) = %+v; want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseMountinfoFedora(t *testing.T) {
	f, err := os.Open("testdata/mountinfo_fedora_host_tmpfs_nfsd_cifs_moby.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := parseMountinfo(f)
	if err != nil {
		t.Fatalf("parseMountinfo(fedora) error: %v", err)
	}
	if len(ms) != 58 {
		t.Fatalf("parseMountinfo(fedora) returned %d mounts; want 58", len(ms))
	}
	last := ms[len(ms)-1]
	want := Mount{ID: 31, Parent: 21, Major: 0, Minor: 23, Root: "/", MountPoint: "/DATA/foo_bla_bla",
		FSType: "cifs", Source: "//foo/BLA BLA BLA/", Options: "rw,relatime"}
	if last != want {
		t.Errorf("parseMountinfo(fedora) last entry = %+v; want %+v", last, want)
	}
	// Nothing is stacked or overmounted on that host: all 58 are visible.
	tab := NewMountTable(ms)
	if n := len(tab.Visible()); n != 58 {
		t.Errorf("Visible() on fedora = %d mounts; want 58", n)
	}
	if m, ok := tab.Lookup("/DATA/foo_bla_bla/report.xlsx"); !ok || m.FSType != "cifs" {
		t.Errorf("Lookup(/DATA/foo_bla_bla/report.xlsx) = %+v, %v; want the cifs mount", m, ok)
	}
}

// mountFixtureTable reads testdata/proc/self/mountinfo through the probe.
func mountFixtureTable(t testing.TB) *MountTable {
	t.Helper()
	tab, err := NewMounts("testdata/proc").Read(context.Background())
	if err != nil {
		t.Fatalf("Mounts.Read(testdata/proc): %v", err)
	}
	return tab
}

func TestMountTableLookup(t *testing.T) {
	tab := mountFixtureTable(t)
	tests := []struct {
		path   string
		wantID int
		wantOK bool
	}{
		{"/", 1, true},
		{"/etc/passwd", 1, true},
		{"/data", 30, true},
		{"/data/runs/gen-0412/logs/vllm.log", 30, true},
		{"/database/x", 1, true}, // /data is not a prefix on a component boundary
		{"/data/", 30, true},     // uncleaned paths are cleaned
		{"/shared/synth/gen-0412/part-0001.jsonl", 31, true},
		{"/sharedfoo", 1, true},
		{"/home/ml/runs/extract-07/hidden/shard-000.safetensors", 32, true}, // bind mount
		{"/home/ml", 1, true},
		{"/media/usb drive/export.csv", 33, true}, // unescaped mount point
		{"/mnt/ckpt/step-200.pt", 42, true},       // nfs4 stacked on tmpfs 40
		{"/mnt/ckpt/old/step-100.pt", 42, true},   // 41 sits on the covered tmpfs
		{"/var/lib/docker/overlay2/3f1c0e5a9b7d/merged/tmp/extract.log", 50, true},
		{"/dev/shm/vllm-ipc-3f2a", 26, true},
		{"/dev/null", 24, true},
		{"/proc/sys/fs/binfmt_misc/status", 28, true},
		{"relative/path", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := tab.Lookup(tt.path)
		if ok != tt.wantOK || got.ID != tt.wantID {
			t.Errorf("Lookup(%q) = %d (%s), %v; want %d, %v", tt.path, got.ID, got.MountPoint, ok, tt.wantID, tt.wantOK)
		}
	}
}

func TestMountTableVisible(t *testing.T) {
	tab := mountFixtureTable(t)
	var got []int
	for _, m := range tab.Visible() {
		got = append(got, m.ID)
	}
	// 40 is covered by 42 stacked on it; 41 is mounted on the covered 40.
	want := []int{1, 22, 23, 24, 25, 26, 27, 28, 30, 31, 32, 33, 42, 50, 51}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Visible() IDs = %v; want %v", got, want)
	}
}

func TestMountTableByID(t *testing.T) {
	tab := mountFixtureTable(t)
	tests := []struct {
		id        int
		wantPoint string
		wantOK    bool
	}{
		{31, "/shared", true},
		{41, "/mnt/ckpt/old", true}, // hidden mounts are still known by ID
		{40, "/mnt/ckpt", true},
		{999, "", false},
	}
	for _, tt := range tests {
		got, ok := tab.ByID(tt.id)
		if ok != tt.wantOK || got.MountPoint != tt.wantPoint {
			t.Errorf("ByID(%d) = %q, %v; want %q, %v", tt.id, got.MountPoint, ok, tt.wantPoint, tt.wantOK)
		}
	}
}

// mountTestLines builds a table from "id parent mountpoint" triples.
func mountTestLines(t *testing.T, lines ...string) []Mount {
	t.Helper()
	var ms []Mount
	for _, l := range lines {
		var m Mount
		if _, err := fmt.Sscanf(l, "%d %d %s", &m.ID, &m.Parent, &m.MountPoint); err != nil {
			t.Fatalf("bad test line %q: %v", l, err)
		}
		ms = append(ms, m)
	}
	return ms
}

func TestMountTableCovering(t *testing.T) {
	tests := []struct {
		name    string
		mounts  []string
		lookups map[string]int // path -> mount ID; 0 means not found
		visible []int
	}{
		{
			name:    "ancestor directory mounted over a child",
			mounts:  []string{"1 0 /", "2 1 /a/b", "3 1 /a"},
			lookups: map[string]int{"/a/b/c": 3, "/a/x": 3, "/z": 1},
			visible: []int{1, 3},
		},
		{
			name:    "child mounted after its ancestor stays visible",
			mounts:  []string{"1 0 /", "3 1 /a", "2 3 /a/b"},
			lookups: map[string]int{"/a/b/c": 2, "/a/x": 3},
			visible: []int{1, 3, 2},
		},
		{
			name:    "three stacked on one point",
			mounts:  []string{"1 0 /", "2 1 /m", "3 2 /m", "4 3 /m"},
			lookups: map[string]int{"/m/f": 4, "/m": 4},
			visible: []int{1, 4},
		},
		{
			name:    "stack on root hides everything under the old root",
			mounts:  []string{"1 0 /", "2 1 /data", "3 1 /"},
			lookups: map[string]int{"/data/x": 3, "/x": 3},
			visible: []int{3},
		},
		{
			name:    "siblings on one point: the later wins",
			mounts:  []string{"1 0 /", "2 1 /m", "3 1 /m"},
			lookups: map[string]int{"/m/f": 3},
			visible: []int{1, 3},
		},
		{
			name:    "parent outside the table (container root), listed after its children",
			mounts:  []string{"21 26 /proc", "23 26 /dev", "26 1 /"},
			lookups: map[string]int{"/proc/1/fd": 21, "/dev/null": 23, "/etc": 26},
			visible: []int{21, 23, 26},
		},
		{
			name:    "no root mount",
			mounts:  []string{"5 4 /data"},
			lookups: map[string]int{"/data/x": 5, "/etc": 0},
			visible: []int{5},
		},
		{
			name:    "parent cycle from a corrupt table",
			mounts:  []string{"1 2 /", "2 1 /a"},
			lookups: map[string]int{"/a/x": 2, "/b": 1},
			visible: []int{1, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := NewMountTable(mountTestLines(t, tt.mounts...))
			for path, want := range tt.lookups {
				got, ok := tab.Lookup(path)
				if ok != (want != 0) || got.ID != want {
					t.Errorf("Lookup(%q) = %d, %v; want %d", path, got.ID, ok, want)
				}
			}
			var vis []int
			for _, m := range tab.Visible() {
				vis = append(vis, m.ID)
			}
			if !reflect.DeepEqual(vis, tt.visible) {
				t.Errorf("Visible() = %v; want %v", vis, tt.visible)
			}
		})
	}
}

// TestMountsReadReal checks the probe against the kernel: the mount that
// Lookup picks for a real directory must carry the device number stat sees.
func TestMountsReadReal(t *testing.T) {
	tab, err := NewMounts("/proc").Read(context.Background())
	if err != nil {
		t.Fatalf("Mounts.Read(/proc): %v", err)
	}
	dir, err := Resolve(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, ok := tab.Lookup(dir)
	if !ok {
		t.Fatalf("Lookup(%q) found no mount", dir)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if int(unix.Major(st.Dev)) != m.Major || int(unix.Minor(st.Dev)) != m.Minor {
		t.Errorf("Lookup(%q) = mount %d on %s (%d:%d); stat says %d:%d", dir, m.ID, m.MountPoint,
			m.Major, m.Minor, unix.Major(st.Dev), unix.Minor(st.Dev))
	}
}

func TestMountsReadMissing(t *testing.T) {
	_, err := NewMounts(t.TempDir()).Read(context.Background())
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Mounts.Read(empty dir) error = %v; want ErrNotExist", err)
	}
}

func TestResolve(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(base, "real/out"), 0o755))
	must(os.WriteFile(filepath.Join(base, "real/out/f.jsonl"), nil, 0o644))
	must(os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "abs-link")))
	must(os.Symlink("real/out", filepath.Join(base, "rel-link")))
	must(os.Symlink(filepath.Join(base, "real/later"), filepath.Join(base, "dangling")))
	must(os.Symlink("../../real", filepath.Join(base, "real/out/up")))
	must(os.Symlink("loop-b", filepath.Join(base, "loop-a")))
	must(os.Symlink("loop-a", filepath.Join(base, "loop-b")))

	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "real/out/f.jsonl", want: "real/out/f.jsonl"},
		{in: "abs-link/out/f.jsonl", want: "real/out/f.jsonl"},
		{in: "rel-link/f.jsonl", want: "real/out/f.jsonl"},
		{in: "real/out/up/out", want: "real/out"},
		{in: "abs-link/out/new/dir/part-0001.jsonl", want: "real/out/new/dir/part-0001.jsonl"},
		{in: "rel-link/missing", want: "real/out/missing"},
		{in: "dangling", want: "real/later"},
		{in: "dangling/part-0001.jsonl", want: "real/later/part-0001.jsonl"},
		{in: "nowhere/at/all", want: "nowhere/at/all"},
		{in: "real/out/f.jsonl/x", wantErr: true}, // ENOTDIR is not "missing"
		{in: "loop-a/x", wantErr: true},
	}
	for _, tt := range tests {
		in := filepath.Join(base, tt.in)
		got, err := Resolve(context.Background(), in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("Resolve(%q) = %q, nil; want an error", tt.in, got)
			}
			continue
		}
		want := filepath.Join(base, tt.want)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tt.in, got, err, want)
		}
	}
}

func TestResolveAbandonsHungCall(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hung := func(p string) (string, error) {
		<-release
		return p, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	got, err := mountResolveCtx(ctx, "/shared/out", hung)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("mountResolveCtx(hung) = %q, %v; want DeadlineExceeded", got, err)
	}
	if err != nil && !strings.Contains(err.Error(), "/shared/out") {
		t.Errorf("mountResolveCtx(hung) error %q does not name the path", err)
	}
}

func TestResolveCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := Resolve(ctx, "/"); !errors.Is(err, context.Canceled) {
		t.Errorf("Resolve(cancelled ctx) = %q, %v; want Canceled", got, err)
	}
}

func TestIsPseudoFS(t *testing.T) {
	tests := []struct {
		fstype string
		want   bool
	}{
		{"proc", true}, {"sysfs", true}, {"cgroup", true}, {"cgroup2", true},
		{"devpts", true}, {"mqueue", true}, {"debugfs", true}, {"tracefs", true},
		{"securityfs", true}, {"pstore", true}, {"bpf", true}, {"autofs", true},
		{"binfmt_misc", true}, {"configfs", true}, {"fusectl", true},
		{"hugetlbfs", true}, {"rpc_pipefs", true}, {"nsfs", true}, {"devtmpfs", true},
		{"nfsd", true}, {"selinuxfs", true},
		{"tmpfs", false}, {"overlay", false}, {"ext4", false}, {"xfs", false},
		{"nfs", false}, {"nfs4", false}, {"cifs", false}, {"fuse.gvfsd-fuse", false},
		{"lustre", false}, {"", false},
	}
	for _, tt := range tests {
		if got := IsPseudoFS(tt.fstype); got != tt.want {
			t.Errorf("IsPseudoFS(%q) = %v; want %v", tt.fstype, got, tt.want)
		}
	}
}

// mountBenchTable builds a table like a busy GPU host: the Fedora sample
// (58 mounts) plus container overlays, per-run scratch tmpfs and NFS
// shares, about 300 mounts in all.
func mountBenchTable(b *testing.B) (*MountTable, []string) {
	b.Helper()
	data, err := os.ReadFile("testdata/mountinfo_fedora_host_tmpfs_nfsd_cifs_moby.txt")
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	buf.Write(data)
	buf.WriteString("\n")
	id := 1000
	for i := range 120 {
		fmt.Fprintf(&buf, "%d 35 0:%d / /var/lib/docker/overlay2/%064x/merged rw,relatime - overlay overlay rw,lowerdir=/l/%d\n", id, 100+i, i, i)
		id++
		fmt.Fprintf(&buf, "%d 35 0:%d / /run/containerd/io.containerd.runtime.v2.task/k8s.io/%064x/rootfs rw - overlay overlay rw\n", id, 300+i, i)
		id++
	}
	for i := range 40 {
		fmt.Fprintf(&buf, "%d 35 0:%d / /shared/team%02d rw,relatime - nfs4 fs%d:/export/team%02d rw,vers=4.2\n", id, 500+i, i, i%4, i)
		id++
	}
	ms, err := parseMountinfo(&buf)
	if err != nil {
		b.Fatal(err)
	}
	paths := make([]string, 0, 1000)
	for i := range 1000 {
		switch i % 5 {
		case 0:
			paths = append(paths, fmt.Sprintf("/shared/team%02d/synth/gen-%04d/part-%05d.jsonl", i%40, i, i))
		case 1:
			paths = append(paths, fmt.Sprintf("/var/lib/docker/overlay2/%064x/merged/workspace/out/%d.log", i%120, i))
		case 2:
			paths = append(paths, fmt.Sprintf("/home/user/runs/extract-%03d/hidden/layer-%02d/shard-%05d.safetensors", i%50, i%32, i))
		case 3:
			paths = append(paths, fmt.Sprintf("/tmp/mnt/scratch/%d", i))
		default:
			paths = append(paths, fmt.Sprintf("/DATA/foo_bla_bla/%d/x", i))
		}
	}
	return NewMountTable(ms), paths
}

func BenchmarkMountLookup(b *testing.B) {
	tab, paths := mountBenchTable(b)
	b.ReportMetric(float64(len(tab.mounts)), "mounts")
	for b.Loop() {
		for _, p := range paths {
			if _, ok := tab.Lookup(p); !ok {
				b.Fatalf("Lookup(%q) found nothing", p)
			}
		}
	}
}

func BenchmarkMountTableBuild(b *testing.B) {
	tab, _ := mountBenchTable(b)
	ms := tab.mounts
	for b.Loop() {
		NewMountTable(ms)
	}
}

// BenchmarkResolveLookup resolves 1,000 real paths (a third through
// symlinks, a third not yet created) and looks each up in the real mount
// table.
func BenchmarkResolveLookup(b *testing.B) {
	tab, err := NewMounts("/proc").Read(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	base := b.TempDir()
	paths := make([]string, 0, 1000)
	for i := range 1000 {
		dir := filepath.Join(base, fmt.Sprintf("run-%02d/shard-%02d", i%20, i%7))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		f := filepath.Join(dir, fmt.Sprintf("part-%04d.jsonl", i))
		switch i % 3 {
		case 0:
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				b.Fatal(err)
			}
			paths = append(paths, f)
		case 1:
			link := filepath.Join(base, fmt.Sprintf("link-%04d", i))
			if err := os.Symlink(dir, link); err != nil {
				b.Fatal(err)
			}
			paths = append(paths, filepath.Join(link, "out.jsonl"))
		default:
			paths = append(paths, filepath.Join(dir, "not-yet", fmt.Sprintf("part-%04d.jsonl", i)))
		}
	}
	ctx := context.Background()
	for b.Loop() {
		for _, p := range paths {
			r, err := Resolve(ctx, p)
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := tab.Lookup(r); !ok {
				b.Fatalf("Lookup(%q) found nothing", r)
			}
		}
	}
}

func FuzzParseMountinfo(f *testing.F) {
	for _, name := range []string{"testdata/proc/self/mountinfo", "testdata/mountinfo_fedora_host_tmpfs_nfsd_cifs_moby.txt"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			f.Add(sc.Text())
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		ms, err := parseMountinfo(strings.NewReader(in))
		if err != nil {
			return
		}
		if lines := strings.Count(in, "\n") + 1; len(ms) > lines {
			t.Fatalf("parseMountinfo returned %d mounts from %d lines", len(ms), lines)
		}
		tab := NewMountTable(ms)
		seen := make(map[string]bool)
		for _, m := range tab.Visible() {
			if seen[m.MountPoint] {
				t.Fatalf("Visible() lists %q twice", m.MountPoint)
			}
			seen[m.MountPoint] = true
			if got, ok := tab.Lookup(m.MountPoint); strings.HasPrefix(m.MountPoint, "/") && filepath.Clean(m.MountPoint) == m.MountPoint && (!ok || got.MountPoint != m.MountPoint) {
				t.Fatalf("Lookup(%q) = %q, %v; want the visible mount itself", m.MountPoint, got.MountPoint, ok)
			}
		}
	})
}
