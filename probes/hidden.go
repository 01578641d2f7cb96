package probes

// Who a scan of open files could not inspect: kernel threads, which hold no files and so are never
// "processes I could not inspect", and the owners of the processes that are, so that an answer's
// advice fits who runs runwatch.

import (
	"fmt"
	"os/user"
	"strconv"
)

// ProcessOwner is a user and how many of the invisible processes are theirs.
type ProcessOwner struct {
	UID       uint32 `json:"uid"`
	User      string `json:"user"` // the name, "uid N" when it has none
	Processes int    `json:"processes,omitempty"`
}

// pfKthread is PF_KTHREAD, the flag of a kernel thread in /proc/PID/stat.
const pfKthread = 0x00200000

// kernelThread reports whether pid is a kernel thread: PF_KTHREAD in its stat flags, or kthreadd (pid 2)
// and its children on a kernel that does not set the flag. Such a thread holds no files.
func (ww *writersWorker) kernelThread(pid string) bool {
	if ww.pfs == nil {
		return false
	}
	n, err := strconv.Atoi(pid)
	if err != nil {
		return false
	}
	p, err := ww.pfs.Proc(n)
	if err != nil {
		return false
	}
	st, err := p.Stat()
	if err != nil {
		return false
	}
	return st.Flags&pfKthread != 0 || n == 2 || st.PPID == 2
}

// owner is the user uid with its name, for n processes.
func owner(uid uint32, n int) ProcessOwner {
	o := ProcessOwner{UID: uid, User: fmt.Sprintf("uid %d", uid), Processes: n}
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil && u.Username != "" {
		o.User = u.Username
	}
	return o
}
