package probes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"
)

// DiskCounters are cumulative bytes written, read once.
type DiskCounters struct {
	Block map[string]uint64 // "major:minor" -> bytes written (sectors x 512) from <procRoot>/diskstats
	NFS   map[string]uint64 // mount point -> bytes written from <procRoot>/self/mountstats (NFS mounts)
}

// DiskIO reads write counters per block device and per NFS mount.
type DiskIO struct {
	procRoot string
}

// NewDiskIO returns a probe that reads <procRoot>/diskstats and
// <procRoot>/self/mountstats.
func NewDiskIO(procRoot string) *DiskIO {
	return &DiskIO{procRoot: procRoot}
}

// Read reads both counter files. It returns what it could read; the error
// names what failed. A file that does not exist is not an error as long as
// the other one was read.
func (d *DiskIO) Read(ctx context.Context) (DiskCounters, error) {
	if err := ctx.Err(); err != nil {
		return DiskCounters{}, err
	}
	var c DiskCounters
	blockErr := d.readBlock(&c)
	nfsErr := d.readNFS(&c)
	missing := func(err error) bool { return errors.Is(err, fs.ErrNotExist) }
	switch {
	case blockErr == nil && nfsErr == nil:
		return c, nil
	case blockErr != nil && nfsErr != nil:
		return c, errors.Join(blockErr, nfsErr)
	case blockErr != nil && !missing(blockErr):
		return c, blockErr
	case nfsErr != nil && !missing(nfsErr):
		return c, nfsErr
	}
	return c, nil
}

// readBlock fills c.Block from diskstats.
func (d *DiskIO) readBlock(c *DiskCounters) error {
	// ProcDiskstats reads only the proc side; passing procRoot as the sys
	// root too spares fixture trees a /sys they do not need.
	bfs, err := blockdevice.NewFS(d.procRoot, d.procRoot)
	if err != nil {
		return fmt.Errorf("read %s: %w", d.procRoot, err)
	}
	stats, err := bfs.ProcDiskstats()
	if err != nil {
		return fmt.Errorf("read %s/diskstats: %w", d.procRoot, err)
	}
	c.Block = diskIOBlockCounters(stats)
	return nil
}

// readNFS fills c.NFS from self/mountstats.
func (d *DiskIO) readNFS(c *DiskCounters) error {
	pfs, err := procfs.NewFS(d.procRoot)
	if err != nil {
		return fmt.Errorf("read %s: %w", d.procRoot, err)
	}
	self, err := pfs.Self()
	if err != nil {
		return fmt.Errorf("read %s/self: %w", d.procRoot, err)
	}
	ms, err := self.MountStats()
	if err != nil {
		return fmt.Errorf("read %s/self/mountstats: %w", d.procRoot, err)
	}
	c.NFS = diskIONFSCounters(ms)
	return nil
}

// diskIOBlockCounters maps "major:minor" to bytes written.
func diskIOBlockCounters(stats []blockdevice.Diskstats) map[string]uint64 {
	out := make(map[string]uint64, len(stats))
	for _, s := range stats {
		key := strconv.FormatUint(uint64(s.MajorNumber), 10) + ":" + strconv.FormatUint(uint64(s.MinorNumber), 10)
		out[key] = s.WriteSectors * procfs.SectorSize
	}
	return out
}

// diskIONFSCounters maps NFS mount points to bytes sent to the server
// (WriteTotal: buffered, direct and mmap writes alike).
func diskIONFSCounters(ms []*procfs.Mount) map[string]uint64 {
	out := make(map[string]uint64)
	for _, m := range ms {
		st, ok := m.Stats.(*procfs.MountStatsNFS)
		if !ok {
			continue
		}
		// Later entries win: mountstats lists mounts in mount order, so
		// the last one on a point is the one stacked on top.
		out[diskIOUnescape(m.Mount)] = st.Bytes.WriteTotal
	}
	return out
}

// diskIOUnescape undoes the kernel's octal escapes in mountstats paths
// (space as \040, tab \011, newline \012, backslash \134), so keys match
// Mount.MountPoint.
func diskIOUnescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) && s[i+1] >= '0' && s[i+1] <= '3' && diskIOOctal(s[i+2]) && diskIOOctal(s[i+3]) {
			v := (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			b.WriteByte(v)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// diskIOOctal reports whether c is an octal digit.
func diskIOOctal(c byte) bool { return c >= '0' && c <= '7' }

// WriteRate returns bytes/s written to mount m between two readings dt
// seconds apart; ok=false when not measurable (no counter for it, e.g.
// overlay/tmpfs with major 0, or a counter that went backwards). Block
// counters are per device, so every mount of a device (bind mounts,
// btrfs subvolumes on it) shows the device's rate.
func WriteRate(prev, cur DiskCounters, m Mount, dt float64) (bytesPerS float64, ok bool) {
	if !(dt > 0) {
		return 0, false
	}
	n, ok := DeviceWritten(prev, cur, m)
	if !ok {
		return 0, false
	}
	return float64(n) / dt, true
}

// DeviceWritten returns the bytes written to mount m's device between two readings: its block device's (a
// partition's own counter for a partition) or, for NFS, the client's bytes sent to the server for that
// mount. ok=false when there is no counter for it in both readings (tmpfs, overlay, btrfs subvolumes:
// major 0) or the counter went backwards (a device re-attached).
func DeviceWritten(prev, cur DiskCounters, m Mount) (bytes uint64, ok bool) {
	var a, b uint64
	var okA, okB bool
	switch {
	case m.FSType == "nfs" || m.FSType == "nfs4":
		a, okA = prev.NFS[m.MountPoint]
		b, okB = cur.NFS[m.MountPoint]
	case m.Major != 0:
		key := strconv.Itoa(m.Major) + ":" + strconv.Itoa(m.Minor)
		a, okA = prev.Block[key]
		b, okB = cur.Block[key]
	}
	if !okA || !okB || b < a {
		return 0, false
	}
	return b - a, true
}

// WriteRates is WriteRate for every visible mount of table that is not a pseudo filesystem, by
// mount point; mounts without both readings are left out.
func WriteRates(prev, cur DiskCounters, table *MountTable, dt float64) map[string]float64 {
	out := map[string]float64{}
	for _, mt := range table.Visible() {
		if IsPseudoFS(mt.FSType) {
			continue
		}
		if r, ok := WriteRate(prev, cur, mt, dt); ok {
			out[mt.MountPoint] = r
		}
	}
	return out
}
