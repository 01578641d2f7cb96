package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// Writer is a process holding a file open for writing.
type Writer struct {
	PID     int
	Command string // from <proc>/<pid>/comm (read only for processes that have writers)
	FD      int
	File    string // the fd link target, e.g. /data/out/part-0001.jsonl (a " (deleted)" suffix kept)
	MountID int    // the mount id (statx STATX_MNT_ID, or mnt_id from fdinfo)
	// Flags are the open flags: all of them from fdinfo; only the access mode (O_WRONLY or
	// O_RDWR, from the fd link's mode bits) where statx gave the mount id.
	Flags uint64
}

// WriterScan is the result of one scan.
type WriterScan struct {
	Writers   []Writer // sorted by PID, then FD
	Processes int      // processes seen
	Invisible int      // processes whose fd directory could not be read (permission): counted, never silently skipped
	// Hidden names the first of the invisible processes (at most MaxHidden), so an answer can say which
	// process it could not inspect (often PID 1 of a container or sandbox).
	Hidden []HiddenProcess
	// AsRoot is true when the scan ran as root, so "run as root" is no advice.
	AsRoot bool
	// User is who the scan ran as; Owners are the owners of the invisible processes, the most first, so
	// that the advice fits: another user's processes need root, not "the job's user" when that is User.
	User   ProcessOwner
	Owners []ProcessOwner
	// KernelThreads counts the kernel threads met: they hold no files, so one whose fd directory cannot
	// be read is not a process that could not be inspected.
	KernelThreads int
}

// HiddenProcess is a process whose open files could not be read.
type HiddenProcess struct {
	PID     int    `json:"pid"`
	Command string `json:"command,omitempty"` // from <proc>/<pid>/comm, "" when that is unreadable too
}

// MaxHidden bounds WriterScan.Hidden.
const MaxHidden = 5

// Writers finds the processes holding files open for writing, by walking
// <procRoot>/<pid>/fd. In a real procfs an fd link's mode bits say how the
// file is open and statx(STATX_MNT_ID) through the link names its mount, two
// calls per written file; fdinfo (pos, flags, mnt_id) is the fallback where
// statx cannot tell (older kernels, fixture trees).
type Writers struct {
	procRoot string
	workers  int
	// fdinfoOnly turns the statx path off (tests and benchmarks compare the two).
	fdinfoOnly bool
	// openFdDir opens "<pid>/fd" relative to the open procRoot directory.
	// Tests replace it: root, who runs them, is never refused.
	openFdDir func(procFd int, name string) (int, error)
}

// NewWriters returns a probe that scans the process table under procRoot.
func NewWriters(procRoot string) *Writers {
	return &Writers{
		procRoot:  procRoot,
		workers:   min(max(runtime.GOMAXPROCS(0), 4), 8), // syscalls block briefly: a few more workers than cores help
		openFdDir: writersOpenDir,
	}
}

// Fdinfo is the parsed content of /proc/<pid>/fdinfo/<fd>.
type Fdinfo struct {
	Pos   int64
	Flags uint64
	MntID int
}

// writersProcSuperMagic is PROC_SUPER_MAGIC from statfs(2).
const writersProcSuperMagic = 0x9fa0

// Scan lists every process under procRoot and reports its write-mode file
// descriptors on paths (not sockets, pipes, anonymous inodes or memfds).
// Processes that exit during the scan are not errors. Scan checks ctx
// between processes; on cancellation, and on unexpected read errors, it
// returns what it found together with the error.
func (w *Writers) Scan(ctx context.Context) (WriterScan, error) {
	if err := ctx.Err(); err != nil {
		return WriterScan{}, fmt.Errorf("scan %s: %w", w.procRoot, err)
	}
	// Kernel threads are told apart by their stat flags, read with procfs; without it, none is.
	var pfs *procfs.FS
	if fs, err := procfs.NewFS(w.procRoot); err == nil {
		pfs = &fs
	}
	procFd, err := writersOpenDir(unix.AT_FDCWD, w.procRoot)
	if err != nil {
		return WriterScan{}, fmt.Errorf("scan %s: %w", w.procRoot, err)
	}
	defer unix.Close(procFd)

	pids, err := writersListPids(procFd)
	if err != nil {
		return WriterScan{}, fmt.Errorf("scan %s: %w", w.procRoot, err)
	}
	// In a real procfs the mode of an fd symlink says how the file is open
	// (S_IWUSR: writable), which lets read-only files skip the fdinfo read.
	// A fixture tree's symlinks are all 0777, so there fdinfo decides.
	var sfs unix.Statfs_t
	realProc := unix.Fstatfs(procFd, &sfs) == nil && sfs.Type == writersProcSuperMagic

	n := max(1, min(w.workers, len(pids)))
	workers := make([]*writersWorker, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := range workers {
		ww := newWritersWorker(procFd, realProc, w.openFdDir)
		ww.pfs = pfs
		ww.statx = realProc && !w.fdinfoOnly
		workers[i] = ww
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				j := int(next.Add(1) - 1)
				if j >= len(pids) {
					return
				}
				ww.scanPid(pids[j])
			}
		}()
	}
	wg.Wait()

	euid := uint32(unix.Geteuid())
	scan := WriterScan{Processes: len(pids), AsRoot: euid == 0, User: owner(euid, 0)}
	var errs []error
	owners := map[uint32]int{}
	for _, ww := range workers {
		scan.Writers = append(scan.Writers, ww.writers...)
		scan.Invisible += ww.invisible
		scan.KernelThreads += ww.kthreads
		scan.Hidden = append(scan.Hidden, ww.hidden...)
		for uid, n := range ww.owners {
			owners[uid] += n
		}
		if ww.err != nil {
			errs = append(errs, ww.err)
		}
	}
	for uid, n := range owners {
		scan.Owners = append(scan.Owners, owner(uid, n))
	}
	sort.Slice(scan.Owners, func(i, j int) bool {
		a, b := scan.Owners[i], scan.Owners[j]
		if a.Processes != b.Processes {
			return a.Processes > b.Processes
		}
		return a.UID < b.UID
	})
	sort.Slice(scan.Writers, func(i, j int) bool {
		a, b := scan.Writers[i], scan.Writers[j]
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		return a.FD < b.FD
	})
	sort.Slice(scan.Hidden, func(i, j int) bool { return scan.Hidden[i].PID < scan.Hidden[j].PID })
	if len(scan.Hidden) > MaxHidden {
		scan.Hidden = scan.Hidden[:MaxHidden]
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return scan, fmt.Errorf("scan %s: %w", w.procRoot, errors.Join(errs...))
	}
	return scan, nil
}

// writersOpenDir opens a directory for getdents.
func writersOpenDir(dirfd int, path string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// writersListPids returns the numeric entries of the open directory fd.
func writersListPids(fd int) ([]string, error) {
	var pids []string
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return pids, nil
		}
		writersEachDirent(buf[:n], func(name []byte) {
			if writersIsNumber(name) {
				pids = append(pids, string(name))
			}
		})
	}
}

// writersEachDirent calls fn with each name in a getdents64 buffer. The
// name slice is only valid during the call.
func writersEachDirent(buf []byte, fn func(name []byte)) {
	// struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
	const nameOff = 19
	for len(buf) >= nameOff {
		reclen := int(buf[16]) | int(buf[17])<<8
		if reclen < nameOff || reclen > len(buf) {
			return
		}
		name := buf[nameOff:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		buf = buf[reclen:]
		if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || (len(name) == 2 && name[1] == '.'))) {
			continue
		}
		fn(name)
	}
}

// writersIsNumber reports whether b is a non-empty run of ASCII digits.
func writersIsNumber(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// writersWorker scans processes one at a time, reusing its buffers.
type writersWorker struct {
	procFd    int
	realProc  bool
	openFdDir func(procFd int, name string) (int, error)

	dents []byte
	link  []byte
	info  []byte
	// statx is false once statx has failed to give a mount id: fdinfo from then on.
	statx bool

	pfs *procfs.FS // to tell kernel threads; nil: none is told

	writers   []Writer
	invisible int
	kthreads  int
	owners    map[uint32]int  // invisible processes by owner
	hidden    []HiddenProcess // the first MaxHidden invisible processes this worker met
	err       error           // first unexpected error
}

func newWritersWorker(procFd int, realProc bool, openFdDir func(int, string) (int, error)) *writersWorker {
	return &writersWorker{
		procFd:    procFd,
		realProc:  realProc,
		openFdDir: openFdDir,
		dents:     make([]byte, 16<<10),
		link:      make([]byte, unix.PathMax),
		info:      make([]byte, 4<<10),
		owners:    map[uint32]int{},
	}
}

// writersGone reports whether err means the process or fd went away.
func writersGone(err error) bool {
	return err == unix.ENOENT || err == unix.ESRCH
}

// fail classifies a per-process error: gone is fine, permission makes the
// process invisible, anything else is also recorded for the caller.
func (ww *writersWorker) fail(pid string, what string, err error) {
	if writersGone(err) {
		return
	}
	refused := err == unix.EACCES || err == unix.EPERM
	if refused && ww.kernelThread(pid) {
		ww.kthreads++
		return
	}
	ww.invisible++
	var st unix.Stat_t
	if unix.Fstatat(ww.procFd, pid, &st, 0) == nil {
		ww.owners[st.Uid]++
	}
	if len(ww.hidden) < MaxHidden {
		h := HiddenProcess{}
		h.PID, _ = strconv.Atoi(pid)
		if comm, cerr := ww.readAt(ww.procFd, pid+"/comm"); cerr == nil {
			h.Command = string(bytes.TrimRight(comm, "\n"))
		}
		ww.hidden = append(ww.hidden, h)
	}
	if refused {
		return
	}
	if ww.err == nil {
		ww.err = fmt.Errorf("read %s/%s: %w", pid, what, err)
	}
}

// scanPid appends the writers of one process.
func (ww *writersWorker) scanPid(pid string) {
	fdDir, err := ww.openFdDir(ww.procFd, pid+"/fd")
	if err != nil {
		ww.fail(pid, "fd", err)
		return
	}
	defer unix.Close(fdDir)
	fdinfoDir := -1
	defer func() {
		if fdinfoDir >= 0 {
			unix.Close(fdinfoDir)
		}
	}()

	pidNum, _ := strconv.Atoi(pid)
	first := len(ww.writers)
	var failed error
	var failedWhat string
	for failed == nil {
		n, err := unix.Getdents(fdDir, ww.dents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			failed, failedWhat = err, "fd"
			break
		}
		if n <= 0 {
			break
		}
		writersEachDirent(ww.dents[:n], func(name []byte) {
			if failed != nil || !writersIsNumber(name) {
				return
			}
			fdName := string(name)
			target, err := ww.readlink(fdDir, fdName)
			if err != nil {
				if !writersGone(err) {
					failed, failedWhat = err, "fd/"+fdName
				}
				return
			}
			if !writersIsFileTarget(target) {
				return
			}
			if ww.realProc {
				var st unix.Stat_t
				if err := unix.Fstatat(fdDir, fdName, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					if !writersGone(err) {
						failed, failedWhat = err, "fd/"+fdName
					}
					return
				}
				if st.Mode&unix.S_IWUSR == 0 {
					return
				}
				if ww.statx {
					mnt, ok, err := writersStatxMount(fdDir, fdName)
					switch {
					case writersGone(err):
						return
					case ok:
						acc := uint64(unix.O_WRONLY)
						if st.Mode&unix.S_IRUSR != 0 {
							acc = unix.O_RDWR
						}
						fd, _ := strconv.Atoi(fdName)
						ww.writers = append(ww.writers, Writer{PID: pidNum, FD: fd, File: string(target), MountID: mnt, Flags: acc})
						return
					}
					ww.statx = false // not supported here: fdinfo, which always says
				}
			}
			if fdinfoDir < 0 {
				fdinfoDir, err = writersOpenDir(ww.procFd, pid+"/fdinfo")
				if err != nil {
					fdinfoDir = -1
					if !writersGone(err) {
						failed, failedWhat = err, "fdinfo"
					}
					return
				}
			}
			info, err := ww.readAt(fdinfoDir, fdName)
			if err != nil {
				if !writersGone(err) {
					failed, failedWhat = err, "fdinfo/"+fdName
				}
				return
			}
			fi, err := parseFdinfo(info)
			if err != nil {
				if ww.err == nil {
					ww.err = fmt.Errorf("read %s/fdinfo/%s: %w", pid, fdName, err)
				}
				return
			}
			if acc := fi.Flags & unix.O_ACCMODE; acc != unix.O_WRONLY && acc != unix.O_RDWR {
				return
			}
			fd, _ := strconv.Atoi(fdName)
			ww.writers = append(ww.writers, Writer{
				PID:     pidNum,
				FD:      fd,
				File:    string(target),
				MountID: fi.MntID,
				Flags:   fi.Flags,
			})
		})
	}
	if failed != nil {
		// Half a process is worse than none: its writers would look complete.
		ww.writers = ww.writers[:first]
		ww.fail(pid, failedWhat, failed)
		return
	}
	if len(ww.writers) == first {
		return
	}
	comm, err := ww.readAt(ww.procFd, pid+"/comm")
	if err != nil && !writersGone(err) && ww.err == nil {
		ww.err = fmt.Errorf("read %s/comm: %w", pid, err)
	}
	command := string(bytes.TrimRight(comm, "\n"))
	for i := first; i < len(ww.writers); i++ {
		ww.writers[i].Command = command
	}
}

// writersStatxMount is the mount id of the file an fd link points to, from statx through the link.
// AT_STATX_DONT_SYNC and a mask of the mount id alone keep it from asking a network filesystem's
// server: the id is the VFS's own. ok is false when the kernel does not report it.
func writersStatxMount(fdDir int, fdName string) (mnt int, ok bool, err error) {
	var sx unix.Statx_t
	for {
		err = unix.Statx(fdDir, fdName, unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &sx)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return 0, false, err
	}
	if sx.Mask&unix.STATX_MNT_ID == 0 {
		return 0, false, nil
	}
	return int(sx.Mnt_id), true, nil
}

// readlink reads the symlink name in dirfd into ww.link.
func (ww *writersWorker) readlink(dirfd int, name string) ([]byte, error) {
	for {
		n, err := unix.Readlinkat(dirfd, name, ww.link)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return ww.link[:n], nil
	}
}

// readAt reads up to len(ww.info) bytes of the file name in dirfd. One
// read is enough: procfs hands out small files whole, and the fields we
// need come first.
func (ww *writersWorker) readAt(dirfd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n, err := unix.Read(fd, ww.info)
	for err == unix.EINTR {
		n, err = unix.Read(fd, ww.info)
	}
	if err != nil {
		return nil, err
	}
	return ww.info[:n], nil
}

// writersIsFileTarget reports whether an fd link target is a file worth
// reading fdinfo for: a path, but not a memfd and not one of the character
// devices every daemon holds (/dev/null as stdout, a terminal).
func writersIsFileTarget(t []byte) bool {
	if len(t) == 0 || t[0] != '/' {
		return false // socket:[..], pipe:[..], anon_inode:..., net:[..]
	}
	if bytes.HasPrefix(t, []byte("/memfd:")) || bytes.HasPrefix(t, []byte("/dev/pts/")) {
		return false
	}
	switch string(t) {
	case "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
		"/dev/tty", "/dev/console", "/dev/ptmx":
		return false
	}
	return true
}

// parseFdinfo parses the pos, flags (octal) and mnt_id lines of an fdinfo
// file; other lines (ino, lock, inotify, eventfd ...) are ignored.
func parseFdinfo(b []byte) (Fdinfo, error) {
	var fi Fdinfo
	var seenPos, seenFlags, seenMnt bool
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		key, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		val = bytes.Trim(val, " \t")
		var err error
		switch string(key) {
		case "pos":
			if seenPos {
				return Fdinfo{}, fmt.Errorf("parse fdinfo: duplicate pos")
			}
			seenPos = true
			fi.Pos, err = strconv.ParseInt(string(val), 10, 64)
		case "flags":
			if seenFlags {
				return Fdinfo{}, fmt.Errorf("parse fdinfo: duplicate flags")
			}
			seenFlags = true
			fi.Flags, err = strconv.ParseUint(string(val), 8, 64)
		case "mnt_id":
			if seenMnt {
				return Fdinfo{}, fmt.Errorf("parse fdinfo: duplicate mnt_id")
			}
			seenMnt = true
			var id int64
			id, err = strconv.ParseInt(string(val), 10, 32)
			fi.MntID = int(id)
		}
		if err != nil {
			return Fdinfo{}, fmt.Errorf("parse fdinfo %s: %w", key, err)
		}
	}
	if !seenPos || !seenFlags || !seenMnt {
		return Fdinfo{}, fmt.Errorf("parse fdinfo: missing pos, flags or mnt_id")
	}
	return fi, nil
}
