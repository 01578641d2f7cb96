package probes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseFdinfo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Fdinfo
		wantErr bool
	}{
		{
			name: "regular file written with O_APPEND",
			in:   "pos:\t18733921\nflags:\t0102001\nmnt_id:\t30\nino:\t4398081\n",
			want: Fdinfo{Pos: 18733921, Flags: 0o102001, MntID: 30},
		},
		{
			name: "read-only, close-on-exec",
			in:   "pos:\t4976698672\nflags:\t02100000\nmnt_id:\t30\nino:\t8812003\n",
			want: Fdinfo{Pos: 4976698672, Flags: 0o2100000, MntID: 30},
		},
		{
			name: "flock line after the header",
			in:   "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t18\nlock:\t1: FLOCK  ADVISORY  WRITE 1001 00:18:18 0 EOF\n",
			want: Fdinfo{Pos: 0, Flags: 0o2100002, MntID: 26},
		},
		{
			name: "epoll with tfd lines that contain colons and pos",
			in:   "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\ntfd:        5 events:       19 data:                5  pos:0 ino:9c3a sdev:8\n",
			want: Fdinfo{Pos: 0, Flags: 0o2000002, MntID: 15},
		},
		{
			name: "no trailing newline, spaces instead of tabs",
			in:   "pos: 7\nflags: 01\nmnt_id: 3",
			want: Fdinfo{Pos: 7, Flags: 1, MntID: 3},
		},
		{name: "empty", in: "", wantErr: true},
		{name: "garbage", in: "hello world\n\x00\xff", wantErr: true},
		{name: "missing mnt_id (pre-3.15 kernel)", in: "pos:\t0\nflags:\t0100001\n", wantErr: true},
		{name: "flags not octal", in: "pos:\t0\nflags:\t0100009\nmnt_id:\t1\n", wantErr: true},
		{name: "flags overflow", in: "pos:\t0\nflags:\t7777777777777777777777777\nmnt_id:\t1\n", wantErr: true},
		{name: "mnt_id not a number", in: "pos:\t0\nflags:\t01\nmnt_id:\tx\n", wantErr: true},
		{name: "mnt_id too large", in: "pos:\t0\nflags:\t01\nmnt_id:\t99999999999\n", wantErr: true},
		{name: "duplicate flags", in: "pos:\t0\nflags:\t00\nflags:\t01\nmnt_id:\t1\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFdinfo([]byte(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseFdinfo(%q) = %+v, nil; want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("parseFdinfo(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestWritersIsFileTarget(t *testing.T) {
	tests := []struct {
		target string
		want   bool
	}{
		{"/data/out/part-0001.jsonl", true},
		{"/data/out/part-0000.jsonl (deleted)", true},
		{"/dev/shm/vllm-ipc", true},
		{"/dev/nvidia0", true},
		{"/dev/nullish", true},
		{"/dev/null", false},
		{"/dev/pts/3", false},
		{"/dev/tty", false},
		{"/memfd:cuda-ipc (deleted)", false},
		{"socket:[88231]", false},
		{"pipe:[9912]", false},
		{"anon_inode:[eventfd]", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := writersIsFileTarget([]byte(tt.target)); got != tt.want {
			t.Errorf("writersIsFileTarget(%q) = %v; want %v", tt.target, got, tt.want)
		}
	}
}

// writersFixtureWant is what testdata/proc holds (see testdata/SOURCES.md).
func writersFixtureWant() []Writer {
	return []Writer{
		{PID: 1001, Command: "python3", FD: 1, File: "/data/runs/gen-0412/logs/vllm.log", MountID: 30, Flags: 0o102001},
		{PID: 1001, Command: "python3", FD: 2, File: "/data/runs/gen-0412/logs/vllm.log", MountID: 30, Flags: 0o102001},
		{PID: 1001, Command: "python3", FD: 4, File: "/shared/synth/gen-0412/part-0001.jsonl", MountID: 31, Flags: 0o2100001},
		{PID: 1001, Command: "python3", FD: 8, File: "/shared/synth/gen-0412/part-0000.jsonl (deleted)", MountID: 31, Flags: 0o2100001},
		{PID: 1001, Command: "python3", FD: 9, File: "/mnt/ckpt/old/step-100.pt", MountID: 42, Flags: 0o2100002},
		{PID: 1001, Command: "python3", FD: 11, File: "/media/usb drive/export.csv", MountID: 33, Flags: 0o2100001},
		{PID: 1001, Command: "python3", FD: 12, File: "/dev/nvidia0", MountID: 24, Flags: 0o2100002},
		{PID: 1001, Command: "python3", FD: 13, File: "/dev/shm/vllm-ipc-3f2a", MountID: 26, Flags: 0o2100002},
		{PID: 1002, Command: "python", FD: 3, File: "/home/ml/runs/extract-07/hidden/shard-000.safetensors", MountID: 32, Flags: 0o2100002},
		{PID: 1002, Command: "python", FD: 5, File: "/var/lib/docker/overlay2/3f1c0e5a9b7d/merged/tmp/extract.log", MountID: 50, Flags: 0o102001},
	}
}

func TestWritersScanFixture(t *testing.T) {
	for _, workers := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			w := NewWriters("testdata/proc")
			w.workers = workers
			got, err := w.Scan(context.Background())
			if err != nil {
				t.Fatalf("Scan(testdata/proc) error: %v", err)
			}
			// 4242, 1001, 1002 and 1004 (exited: no fd directory, not an error).
			want := WriterScan{Writers: writersFixtureWant(), Processes: 4, Invisible: 0, AsRoot: unix.Geteuid() == 0, User: owner(uint32(unix.Geteuid()), 0)}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Scan(testdata/proc) =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// TestWritersFixtureMounts checks that every writer's mount ID in the
// fixture resolves through the fixture's mount table to the mount that
// Lookup gives for its path: the fixture is self-consistent, and the
// caller's pseudo-filesystem filter has what it needs.
func TestWritersFixtureMounts(t *testing.T) {
	tab := mountFixtureTable(t)
	for _, w := range writersFixtureWant() {
		byID, ok := tab.ByID(w.MountID)
		if !ok {
			t.Errorf("writer %s: ByID(%d) found nothing", w.File, w.MountID)
			continue
		}
		byPath, _ := tab.Lookup(strings.TrimSuffix(w.File, " (deleted)"))
		if byPath.ID != byID.ID {
			t.Errorf("writer %s: mnt_id %d (%s) but Lookup gives %d (%s)", w.File, byID.ID, byID.MountPoint, byPath.ID, byPath.MountPoint)
		}
	}
}

func TestWritersScanUnreadable(t *testing.T) {
	tests := []struct {
		name          string
		err           error
		wantInvisible int
		wantErr       bool
	}{
		{name: "permission denied", err: unix.EACCES, wantInvisible: 1},
		{name: "not permitted", err: unix.EPERM, wantInvisible: 1},
		{name: "exited", err: unix.ENOENT, wantInvisible: 0},
		{name: "i/o error", err: unix.EIO, wantInvisible: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWriters("testdata/proc")
			w.openFdDir = func(procFd int, name string) (int, error) {
				if name == "1002/fd" {
					return -1, tt.err
				}
				return writersOpenDir(procFd, name)
			}
			got, err := w.Scan(context.Background())
			if (err != nil) != tt.wantErr {
				t.Errorf("Scan error = %v; want error %v", err, tt.wantErr)
			}
			if got.Invisible != tt.wantInvisible || got.Processes != 4 {
				t.Errorf("Scan = %d processes, %d invisible; want 4, %d", got.Processes, got.Invisible, tt.wantInvisible)
			}
			// The invisible process is named, so an answer can say which one it could not inspect.
			if tt.wantInvisible > 0 && (len(got.Hidden) != 1 || got.Hidden[0] != (HiddenProcess{PID: 1002, Command: "python"})) {
				t.Errorf("Scan hidden = %+v; want pid 1002 (python)", got.Hidden)
			}
			var want []Writer
			for _, wr := range writersFixtureWant() {
				if wr.PID != 1002 {
					want = append(want, wr)
				}
			}
			if !reflect.DeepEqual(got.Writers, want) {
				t.Errorf("Scan writers = %+v; want %+v (1001 only)", got.Writers, want)
			}
		})
	}
}

// writersFixtureWithStat is a copy of testdata/proc where pid's stat file is stat: a process the test makes
// a kernel thread or a user's.
func writersFixtureWithStat(t *testing.T, pid, stat string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "proc")
	if out, err := exec.Command("cp", "-a", "testdata/proc", root).CombinedOutput(); err != nil {
		t.Fatalf("copy testdata/proc: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(root, pid, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestWritersKernelThreadsAreNotInvisible: a kernel thread's fd directory is refused to an ordinary user
// like any root process's, but it holds no files: it is counted apart, never named as a process that
// could not be inspected (62 of 180 in the measured answer were). Told by PF_KTHREAD in its stat flags,
// or by being kthreadd's child on a kernel that does not set it; a user's process refused the same way is
// invisible, with its owner counted.
func TestWritersKernelThreadsAreNotInvisible(t *testing.T) {
	tests := []struct {
		name, stat    string
		kthread, hide bool
	}{
		// kthreadd's and a kworker's stat lines as this machine's kernel (6.18) writes them.
		{"PF_KTHREAD", "1002 (kworker/0:0-events) I 2 0 0 0 -1 69238880 0 0 0 0 0 3 0 0 20 0 1 0 24 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", true, false},
		{"kthreadd's child without the flag", "1002 (old_kthread) S 2 0 0 0 -1 32832 0 0 0 0 0 0 0 0 20 0 1 0 23 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n", true, false},
		{"a user's process", "1002 (python) S 1 1002 1002 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 23 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWriters(writersFixtureWithStat(t, "1002", tt.stat))
			w.openFdDir = func(procFd int, name string) (int, error) {
				if name == "1002/fd" {
					return -1, unix.EACCES
				}
				return writersOpenDir(procFd, name)
			}
			got, err := w.Scan(context.Background())
			if err != nil {
				t.Fatalf("Scan error = %v", err)
			}
			if tt.kthread && (got.KernelThreads != 1 || got.Invisible != 0 || len(got.Hidden) != 0 || len(got.Owners) != 0) {
				t.Errorf("Scan = %d kernel threads, %d invisible %+v, owners %+v; want the kernel thread counted apart", got.KernelThreads, got.Invisible, got.Hidden, got.Owners)
			}
			var st unix.Stat_t
			unix.Stat(filepath.Join(w.procRoot, "1002"), &st)
			if tt.hide && (got.KernelThreads != 0 || got.Invisible != 1 || len(got.Owners) != 1 || got.Owners[0].UID != st.Uid || got.Owners[0].Processes != 1) {
				t.Errorf("Scan = %d kernel threads, %d invisible, owners %+v; want 1 invisible, owned by uid %d", got.KernelThreads, got.Invisible, got.Owners, st.Uid)
			}
		})
	}
}

func TestWritersScanCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewWriters("testdata/proc").Scan(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Scan(cancelled) error = %v; want Canceled", err)
	}
}

func TestWritersScanMissingRoot(t *testing.T) {
	if _, err := NewWriters(filepath.Join(t.TempDir(), "nope")).Scan(context.Background()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Scan(missing root) error = %v; want ErrNotExist", err)
	}
}

// writersStartHolder starts `sleep` holding files as descriptors 3, 4, ...
// (the open file descriptions are shared, so flags such as O_APPEND carry
// over), closes the parent's copies, and kills the child when the test
// ends. It returns the child's pid; its descriptors are in place once
// Start returns, since Start waits for the exec.
func writersStartHolder(t testing.TB, files ...*os.File) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.ExtraFiles = files
	err := cmd.Start()
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd.Process.Pid
}

// writersOpen opens name with flag or fails the test.
func writersOpen(t testing.TB, name string, flag int) *os.File {
	t.Helper()
	f, err := os.OpenFile(name, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestWritersScanRealProcesses(t *testing.T) {
	dir, err := Resolve(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "part-0001.jsonl")
	in := filepath.Join(dir, "prompts.jsonl")
	rw := filepath.Join(dir, "hidden.bin")
	for _, f := range []string{in, rw} {
		if err := os.WriteFile(f, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	appender := writersStartHolder(t, writersOpen(t, out, os.O_WRONLY|os.O_APPEND|os.O_CREATE))
	reader := writersStartHolder(t, writersOpen(t, in, os.O_RDONLY))
	updater := writersStartHolder(t, writersOpen(t, rw, os.O_RDWR))

	// The statx path and the fdinfo fallback report the same writers.
	for _, fdinfoOnly := range []bool{false, true} {
		w := NewWriters("/proc")
		w.fdinfoOnly = fdinfoOnly
		writersCheckRealHolders(t, w, dir, appender, updater, reader, out, rw)
	}
}

func writersCheckRealHolders(t *testing.T, probe *Writers, dir string, appender, updater, reader int, out, rw string) {
	t.Helper()
	scan, err := probe.Scan(context.Background())
	if err != nil {
		t.Fatalf("Scan(/proc): %v", err)
	}
	tab, err := NewMounts("/proc").Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantMount, ok := tab.Lookup(dir)
	if !ok {
		t.Fatalf("Lookup(%q) found no mount", dir)
	}

	found := map[string]Writer{}
	for _, w := range scan.Writers {
		if w.PID == reader {
			t.Errorf("read-only holder %d reported as writer: %+v", reader, w)
		}
		if (w.PID == appender || w.PID == updater) && w.FD == 3 {
			found[w.File] = w
		}
	}
	for _, c := range []struct {
		pid  int
		file string
		acc  uint64
	}{{appender, out, unix.O_WRONLY}, {updater, rw, unix.O_RDWR}} {
		w, ok := found[c.file]
		if !ok {
			t.Errorf("Scan(/proc) did not report pid %d writing %s", c.pid, c.file)
			continue
		}
		if w.PID != c.pid || w.Command != "sleep" || w.Flags&unix.O_ACCMODE != c.acc {
			t.Errorf("fdinfoOnly=%v: writer for %s = %+v; want pid %d, command sleep, access mode %o", probe.fdinfoOnly, c.file, w, c.pid, c.acc)
		}
		if w.MountID != wantMount.ID {
			m, _ := tab.ByID(w.MountID)
			t.Errorf("fdinfoOnly=%v: writer for %s on mount %d (%s); want %d (%s)", probe.fdinfoOnly, c.file, w.MountID, m.MountPoint, wantMount.ID, wantMount.MountPoint)
		}
	}
	if scan.Processes < 3 {
		t.Errorf("Scan(/proc).Processes = %d; want at least our 3 holders", scan.Processes)
	}
}

// TestWritersScanManyFds covers a process whose fd directory takes several
// getdents calls to list.
func TestWritersScanManyFds(t *testing.T) {
	root, writers := writersBenchTree(t, 1, 1500)
	scan, err := NewWriters(root).Scan(context.Background())
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if scan.Processes != 1 || len(scan.Writers) != writers {
		t.Fatalf("Scan = %d processes, %d writers; want 1, %d", scan.Processes, len(scan.Writers), writers)
	}
	for i, w := range scan.Writers {
		want := fmt.Sprintf("/data/out/run-%d/part-%04d.jsonl", w.PID-10000, w.FD)
		if w.File != want || w.Command != "python3" || w.MountID != 29 {
			t.Fatalf("Scan writer %d = %+v; want File %s, python3, mount 29", i, w, want)
		}
	}
}

// writersBenchTree builds a /proc-like tree of procs processes with fds
// file descriptors each: half are files (a third of those written), the
// rest sockets, pipes and /dev/null, as on a busy host. It returns the
// root and the number of writers in it.
func writersBenchTree(b testing.TB, procs, fds int) (string, int) {
	b.Helper()
	root := b.TempDir()
	writers := 0
	for p := range procs {
		pid := fmt.Sprint(10000 + p)
		for _, d := range []string{"fd", "fdinfo"} {
			if err := os.MkdirAll(filepath.Join(root, pid, d), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, pid, "comm"), []byte("python3\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		for fd := range fds {
			var target, flags string
			switch {
			case fd == 0:
				target, flags = "/dev/null", "0100000"
			case fd%2 == 1:
				target, flags = fmt.Sprintf("socket:[%d]", 100000+p*fds+fd), "02"
			case fd%6 == 2:
				target, flags = fmt.Sprintf("/data/out/run-%d/part-%04d.jsonl", p, fd), "0100001"
				writers++
			default:
				target, flags = fmt.Sprintf("/data/models/shard-%04d.safetensors", fd), "0100000"
			}
			name := fmt.Sprint(fd)
			if err := os.Symlink(target, filepath.Join(root, pid, "fd", name)); err != nil {
				b.Fatal(err)
			}
			info := fmt.Sprintf("pos:\t0\nflags:\t%s\nmnt_id:\t29\nino:\t%d\n", flags, 1234+fd)
			if err := os.WriteFile(filepath.Join(root, pid, "fdinfo", name), []byte(info), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return root, writers
}

func BenchmarkWritersScan(b *testing.B) {
	const procs, fds = 2000, 50
	root, writers := writersBenchTree(b, procs, fds)
	for _, workers := range []int{1, 2, 4, 8, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			w := NewWriters(root)
			w.workers = workers
			var scan WriterScan
			for b.Loop() {
				var err error
				scan, err = w.Scan(context.Background())
				if err != nil {
					b.Fatal(err)
				}
			}
			if scan.Processes != procs || len(scan.Writers) != writers {
				b.Fatalf("Scan = %d processes, %d writers; want %d, %d", scan.Processes, len(scan.Writers), procs, writers)
			}
		})
	}
}

// BenchmarkWritersScanRealProc scans the real /proc with 500 extra
// processes holding 50 descriptors each: a third written files, a third
// read-only files, a third /dev/null. Here the fd link mode bits let
// read-only files skip the fdinfo read.
func BenchmarkWritersScanRealProc(b *testing.B) {
	const procs, fds = 500, 50
	dir := b.TempDir()
	shared := filepath.Join(dir, "prompts.jsonl")
	if err := os.WriteFile(shared, []byte("{}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for p := range procs {
		files := make([]*os.File, 0, fds)
		for fd := 3; fd < 3+fds; fd++ {
			switch fd % 3 {
			case 0:
				files = append(files, writersOpen(b, filepath.Join(dir, fmt.Sprintf("out-%d-%d.jsonl", p, fd)), os.O_WRONLY|os.O_APPEND|os.O_CREATE))
			case 1:
				files = append(files, writersOpen(b, shared, os.O_RDONLY))
			default:
				files = append(files, writersOpen(b, os.DevNull, os.O_WRONLY))
			}
		}
		writersStartHolder(b, files...)
	}
	// The default (statx for the mount id) beside the fdinfo fallback it replaces.
	for _, fdinfoOnly := range []bool{false, true} {
		name := "statx"
		if fdinfoOnly {
			name = "fdinfo"
		}
		b.Run(name, func(b *testing.B) {
			w := NewWriters("/proc")
			w.fdinfoOnly = fdinfoOnly
			var scan WriterScan
			for b.Loop() {
				var err error
				if scan, err = w.Scan(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			if scan.Processes < procs || len(scan.Writers) < procs*(fds/3) {
				b.Fatalf("Scan(/proc) = %d processes, %d writers; want at least %d, %d", scan.Processes, len(scan.Writers), procs, procs*(fds/3))
			}
		})
	}
}

func FuzzParseFdinfo(f *testing.F) {
	seeds, err := filepath.Glob("testdata/proc/*/fdinfo/*")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no fdinfo seeds: %v", err)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fi, err := parseFdinfo(in)
		if err != nil {
			return
		}
		// What parsed must survive a round trip through the kernel's format.
		again, err := parseFdinfo(fmt.Appendf(nil, "pos:\t%d\nflags:\t0%o\nmnt_id:\t%d\n", fi.Pos, fi.Flags, fi.MntID))
		if err != nil || again != fi {
			t.Fatalf("parseFdinfo(%q) = %+v, but its rendering parses to %+v, %v", in, fi, again, err)
		}
	})
}
