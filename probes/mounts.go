package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Mount is one entry of a mount table (a line of /proc/<pid>/mountinfo).
type Mount struct {
	ID, Parent   int
	Major, Minor int
	Root         string // root of the mount within its filesystem
	MountPoint   string // unescaped (\040 -> space etc.)
	FSType       string
	Source       string // "device" in our JSON: /dev/sda1, server:/export, overlay, tmpfs
	Options      string // per-mount options
}

// Mounts reads the mount table of <procRoot>/self/mountinfo.
type Mounts struct {
	procRoot string
}

// NewMounts returns a probe that reads <procRoot>/self/mountinfo.
func NewMounts(procRoot string) *Mounts {
	return &Mounts{procRoot: procRoot}
}

// Read reads and parses the mount table of the calling process. Reading
// mountinfo never touches the mounted filesystems, so it cannot hang on a
// dead NFS server; ctx is only checked before starting.
func (m *Mounts) Read(ctx context.Context) (*MountTable, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path := filepath.Join(m.procRoot, "self", "mountinfo")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	ms, err := parseMountinfo(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return NewMountTable(ms), nil
}

// parseMountinfo parses the mountinfo format (proc(5)), keeping file order.
func parseMountinfo(r io.Reader) ([]Mount, error) {
	infos, err := mountinfo.GetMountsFromReader(r, nil)
	if err != nil {
		return nil, err
	}
	ms := make([]Mount, len(infos))
	for i, in := range infos {
		ms[i] = Mount{
			ID:         in.ID,
			Parent:     in.Parent,
			Major:      in.Major,
			Minor:      in.Minor,
			Root:       in.Root,
			MountPoint: in.Mountpoint,
			FSType:     in.FSType,
			Source:     in.Source,
			Options:    in.Options,
		}
	}
	return ms, nil
}

// MountTable answers which mount holds a path.
type MountTable struct {
	mounts  []Mount
	byID    map[int]int    // mount ID -> index; the later entry wins on a duplicate ID
	visible map[string]int // mount point -> index of the mount a path walk ends on
}

// NewMountTable indexes ms (in mountinfo order) for Lookup, ByID and Visible.
//
// A mount is visible when a path walk from / can end on it: each mount on
// the way must be reachable and not covered. A mount is covered when another
// mount is stacked on the same point (its parent is the covered mount), or
// when a sibling (same parent) sits on the same point later in the table or
// on an ancestor directory of it: mount /a/b, then mount /a, and /a/b is
// hidden under the new /a.
func NewMountTable(ms []Mount) *MountTable {
	t := &MountTable{
		mounts:  append([]Mount(nil), ms...),
		byID:    make(map[int]int, len(ms)),
		visible: make(map[string]int, len(ms)),
	}
	for i, m := range t.mounts {
		t.byID[m.ID] = i
	}
	g := newMountGraph(t.mounts, t.byID)
	for i, m := range t.mounts {
		if !g.reachable(i) {
			continue
		}
		covered := false // by a mount stacked on top of it
		for _, c := range g.childrenAt(i, m.MountPoint) {
			if c != i && g.reachable(c) {
				covered = true
				break
			}
		}
		if !covered {
			t.visible[m.MountPoint] = i // on a tie (corrupt table) the later entry wins
		}
	}
	return t
}

// mountGraph is the mount tree, for working out which mounts a path walk
// can reach.
type mountGraph struct {
	ms       []Mount
	parentOf []int                   // index of the parent, or mountNoParent
	children map[mountChildKey][]int // by parent and mount point, in table order
	reach    []uint8                 // memo for reachable
}

// mountChildKey groups the mounts of one parent on one mount point.
type mountChildKey struct {
	parent int
	point  string
}

// mountNoParent is the parent index of mounts whose parent is not in the
// table: the root of this namespace or chroot.
const mountNoParent = -1

// Memo states of mountGraph.reach.
const (
	mountReachUnknown = iota
	mountReachVisiting
	mountReachYes
	mountReachNo
)

func newMountGraph(ms []Mount, byID map[int]int) *mountGraph {
	g := &mountGraph{
		ms:       ms,
		parentOf: make([]int, len(ms)),
		children: make(map[mountChildKey][]int, len(ms)),
		reach:    make([]uint8, len(ms)),
	}
	for i, m := range ms {
		p, ok := byID[m.Parent]
		if !ok || p == i {
			p = mountNoParent
		}
		g.parentOf[i] = p
		k := mountChildKey{p, m.MountPoint}
		g.children[k] = append(g.children[k], i)
	}
	return g
}

// childrenAt returns the mounts of parent p on point, in table order.
func (g *mountGraph) childrenAt(p int, point string) []int {
	return g.children[mountChildKey{p, point}]
}

// reachable reports whether a path walk from / can reach mount i (it may
// still be covered by a mount stacked on it).
func (g *mountGraph) reachable(i int) bool {
	switch g.reach[i] {
	case mountReachYes:
		return true
	case mountReachNo:
		return false
	case mountReachVisiting:
		return true // a parent cycle only comes from a corrupt table; treat it as a root
	}
	g.reach[i] = mountReachVisiting
	ok := g.walkReaches(i)
	g.reach[i] = mountReachNo
	if ok {
		g.reach[i] = mountReachYes
	}
	return ok
}

// walkReaches does the work of reachable for mount i.
func (g *mountGraph) walkReaches(i int) bool {
	p := g.parentOf[i]
	point := g.ms[i].MountPoint
	// A later sibling on the same point hides this one.
	if same := g.childrenAt(p, point); same[len(same)-1] != i {
		return false
	}
	if p == mountNoParent {
		return true
	}
	if !g.reachable(p) {
		return false
	}
	// A sibling on a directory between the parent's mount point (inclusive)
	// and this mount point (exclusive) hides this one: it was mounted later
	// (else it would be the parent) over the path to this one.
	stop := g.ms[p].MountPoint
	for dir := point; dir != stop; {
		next, ok := mountParentDir(dir)
		if !ok {
			break
		}
		dir = next
		if len(g.childrenAt(p, dir)) > 0 {
			return false
		}
	}
	return true
}

// mountParentDir returns the parent directory of a clean absolute path
// without allocating; ok is false for "/" or a relative path.
func mountParentDir(p string) (string, bool) {
	if p == "/" || !strings.HasPrefix(p, "/") {
		return "", false
	}
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/", true
	}
	return p[:i], true
}

// Lookup returns the visible mount holding path, which must be absolute and
// already symlink-resolved (see Resolve): the longest visible mount point
// that is path or one of its ancestor directories.
func (t *MountTable) Lookup(path string) (Mount, bool) {
	if !strings.HasPrefix(path, "/") {
		return Mount{}, false
	}
	p := filepath.Clean(path) // does not allocate when path is already clean
	for {
		if i, ok := t.visible[p]; ok {
			return t.mounts[i], true
		}
		next, ok := mountParentDir(p)
		if !ok {
			return Mount{}, false
		}
		p = next
	}
}

// ByID returns the mount with the given mount ID (mnt_id in fdinfo).
func (t *MountTable) ByID(id int) (Mount, bool) {
	i, ok := t.byID[id]
	if !ok {
		return Mount{}, false
	}
	return t.mounts[i], true
}

// Visible returns the topmost mount at each mount point, in table order,
// leaving out mounts hidden under a later mount.
func (t *MountTable) Visible() []Mount {
	out := make([]Mount, 0, len(t.visible))
	for i, m := range t.mounts {
		if j, ok := t.visible[m.MountPoint]; ok && j == i {
			out = append(out, m)
		}
	}
	return out
}

// mountMaxLinks bounds how many dangling symlinks Resolve follows, like the
// kernel's ELOOP limit.
const mountMaxLinks = 40

// Resolve follows symlinks in path. For a path that does not exist yet, it
// resolves the nearest existing ancestor and appends the missing rest; a
// dangling symlink on the way is followed to where it points, since that is
// where a write would land. It runs the filesystem calls where ctx can
// abandon them (a hung NFS lstat must not block the caller past its
// deadline); an abandoned call finishes in the background.
func Resolve(ctx context.Context, path string) (string, error) {
	return mountResolveCtx(ctx, path, mountResolve)
}

// mountResolveCtx runs resolve(path) where ctx can abandon it.
func mountResolveCtx(ctx context.Context, path string, resolve func(string) (string, error)) (string, error) {
	return NewGuardFunc(resolve, 0).Resolve(ctx, path)
}

// mountResolve is Resolve without the ctx guard.
func mountResolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	for links := 0; ; links++ {
		if links > mountMaxLinks {
			return "", fmt.Errorf("resolve %s: too many dangling symlinks", path)
		}
		next, done, err := mountResolveOnce(abs)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", path, err)
		}
		if done {
			return next, nil
		}
		abs = next
	}
}

// mountResolveOnce resolves abs. When the walk ends on a dangling symlink it
// returns the path with that link replaced by its target and done=false.
func mountResolveOnce(abs string) (string, bool, error) {
	// Most paths exist, or their parent does: let the kernel resolve the nearest
	// existing ancestor in one open, as long as the first missing component is
	// really missing and not a dangling symlink (the careful walk below handles
	// those).
	for cur, rest := abs, ""; ; {
		if r, ok := mountRealpath(cur); ok {
			if rest == "" {
				return r, true, nil
			}
			first, _, _ := strings.Cut(rest, "/")
			if _, err := os.Lstat(filepath.Join(cur, first)); errors.Is(err, fs.ErrNotExist) {
				return filepath.Join(r, rest), true, nil
			}
			break
		}
		if cur == "/" {
			break
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = filepath.Dir(cur)
	}
	// Find the nearest ancestor that exists (one lstat per level), then
	// resolve it once.
	cur, rest := abs, ""
	for {
		fi, err := os.Lstat(cur)
		if err == nil {
			r, err := filepath.EvalSymlinks(cur)
			if err == nil {
				return filepath.Join(r, rest), true, nil
			}
			if fi.Mode()&fs.ModeSymlink == 0 || !errors.Is(err, fs.ErrNotExist) {
				return "", false, err
			}
			// cur is a symlink that points nowhere (yet).
			target, err := os.Readlink(cur)
			if err != nil {
				return "", false, err
			}
			if !filepath.IsAbs(target) {
				dir, err := filepath.EvalSymlinks(filepath.Dir(cur))
				if err != nil {
					return "", false, err
				}
				target = filepath.Join(dir, target)
			}
			return filepath.Join(target, rest), false, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", false, err
		}
		parent, ok := mountParentDir(cur)
		if !ok {
			return "", false, err
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// mountRealpath resolves an existing path with three syscalls whatever its
// depth: open it with O_PATH (following every symlink) and read back the
// path the kernel holds for the descriptor. ok is false when the path does
// not exist or the trick is unavailable; the caller then walks.
func mountRealpath(abs string) (string, bool) {
	fd, err := unix.Open(abs, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer unix.Close(fd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf)
	if err != nil || n <= 0 || n >= len(buf) || buf[0] != '/' {
		return "", false
	}
	r := string(buf[:n])
	if strings.HasSuffix(r, " (deleted)") {
		return "", false
	}
	return r, true
}

// IsPseudoFS reports whether fstype never holds job output: kernel
// interfaces and control filesystems. tmpfs, ramfs and overlay are not
// pseudo: jobs do write to /dev/shm and container layers.
func IsPseudoFS(fstype string) bool {
	switch fstype {
	case "proc", "procfs", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue",
		"debugfs", "tracefs", "securityfs", "pstore", "bpf", "autofs",
		"binfmt_misc", "configfs", "fusectl", "hugetlbfs", "rpc_pipefs",
		"nsfs", "devtmpfs", "efivarfs", "selinuxfs", "smackfs", "nfsd",
		"resctrl", "cpuset", "rdma", "usbfs", "ipathfs", "binder":
		return true
	}
	return false
}
