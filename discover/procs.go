package discover

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/prometheus/procfs"

	"runwatch/probes"
)

// This file reads the process table: each process's parent, name, command line, the sockets it holds
// (to join /proc/net/tcp's inodes to their owners) and where its stdout and stderr go.

// process is one process as discovery sees it.
type process struct {
	pid, ppid int
	comm      string
	cmdline   []string
	// stdout and stderr are the targets of fds 1 and 2 ("/data/gen.log", "pipe:[123]", "/dev/pts/0").
	stdout, stderr string
	// hidden: its open files could not be read (another user's process, a container's init).
	hidden bool
}

// processTable is every process under the proc root, and which one holds each socket.
type processTable struct {
	procs map[int]*process
	owner map[uint64]int // socket inode -> pid
	// invisible counts the processes whose open files could not be read; hiddenProcs names the first few.
	invisible   int
	hiddenProcs []probes.HiddenProcess
}

// readProcesses walks the proc root. Processes that exit meanwhile are skipped; one whose fd directory is
// refused is kept (its name and parent still place it in a tree) and counted as invisible. ctx is checked
// between processes.
func readProcesses(ctx context.Context, p procfs.FS, root string) (processTable, error) {
	t := processTable{procs: map[int]*process{}, owner: map[uint64]int{}}
	all, err := p.AllProcs()
	if err != nil {
		return t, err
	}
	for _, pr := range all {
		if err := ctx.Err(); err != nil {
			return t, err
		}
		st, err := pr.Stat()
		if err != nil {
			continue // gone, or a fixture's half-made entry
		}
		ps := &process{pid: pr.PID, ppid: st.PPID, comm: st.Comm}
		ps.cmdline, _ = pr.CmdLine()
		fdDir := filepath.Join(root, strconv.Itoa(pr.PID), "fd")
		fds, err := pr.FileDescriptors()
		switch {
		case errors.Is(err, fs.ErrPermission):
			ps.hidden = true
			t.invisible++
			if len(t.hiddenProcs) < probes.MaxHidden {
				t.hiddenProcs = append(t.hiddenProcs, probes.HiddenProcess{PID: pr.PID, Command: ps.comm})
			}
		case err != nil:
			continue // exited
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(fdDir, strconv.FormatUint(uint64(fd), 10)))
			if err != nil {
				continue
			}
			switch fd {
			case 1:
				ps.stdout = target
			case 2:
				ps.stderr = target
			}
			if ino, ok := socketInode(target); ok {
				t.owner[ino] = pr.PID
			}
		}
		t.procs[pr.PID] = ps
	}
	sort.Slice(t.hiddenProcs, func(i, j int) bool { return t.hiddenProcs[i].PID < t.hiddenProcs[j].PID })
	return t, nil
}

// socketInode reads "socket:[12345]", an fd link's target for a socket.
func socketInode(target string) (uint64, bool) {
	rest, ok := strings.CutPrefix(target, "socket:[")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64)
	return n, err == nil
}

// within returns the pids of only and of every process descended from one of them; nil only means
// every process.
func (t processTable) within(only []int) map[int]bool {
	if only == nil {
		return nil
	}
	in := map[int]bool{}
	for _, pid := range only {
		in[pid] = true
	}
	for pid := range t.procs {
		seen := map[int]bool{}
		for p := pid; p > 0 && !seen[p]; {
			seen[p] = true
			if in[p] {
				in[pid] = true
				break
			}
			pp, ok := t.procs[p]
			if !ok {
				break
			}
			p = pp.ppid
		}
	}
	return in
}

// command is a process's command line as a person reads it: the program's name and, for an interpreter,
// its script or module ("python3 generate.py", "python3 -m vllm.entrypoints.openai.api_server"),
// else its first arguments; at most 80 bytes, control characters shown as '?'.
func (p *process) command() string {
	if len(p.cmdline) == 0 {
		return printable(p.comm)
	}
	words := []string{filepath.Base(p.cmdline[0])}
	if script, ok := p.script(); ok {
		words = append(words, script)
	} else {
		// Whole arguments while they fit: "--model" without its value said less than nothing.
		n := len(words[0])
		for i, a := range p.cmdline[1:] {
			if n+1+len(a) > commandMax {
				if i < len(p.cmdline)-1 {
					words = append(words, "…")
				}
				break
			}
			words, n = append(words, a), n+1+len(a)
		}
	}
	return probes.ClipText(printable(strings.Join(words, " ")), commandMax+4)
}

// commandMax is how long a shown command line grows with whole arguments.
const commandMax = 60

// script is what an interpreter runs: "-m module" or the script's base name; false for a process that is
// no interpreter or runs none (python3 alone, a REPL).
func (p *process) script() (string, bool) {
	if len(p.cmdline) < 2 || !interpreter(filepath.Base(p.cmdline[0])) {
		return "", false
	}
	args := p.cmdline[1:]
	sh := p.shell()
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-m" && i+1 < len(args) && !sh:
			return "-m " + args[i+1], true
		case a == "-c":
			return "-c …", true
		case sh && (a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file"):
			i++ // a shell's option and its value
			continue
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+") && sh:
			continue // -u, -X dev, -O: an option of the interpreter's
		}
		if !strings.ContainsFunc(filepath.Base(a), unicode.IsLetter) {
			// "bash 3": a bare argument is no script, and no name for a run.
			return "", false
		}
		return filepath.Base(a), true
	}
	return "", false
}

// shells are the programs a job is started from, which hold its log as their stdout while the job runs
// and after it stops: never the job themselves unless they write a file that grows.
var shells = []string{"bash", "sh", "dash", "zsh", "ksh", "mksh", "fish", "tcsh", "csh", "busybox"}

// launchers hold a job's log the same way without writing it: wrappers that start the job, and what a
// script runs beside it (`python3 gen.py; sleep 600` leaves sleep holding the log after the job died).
var launchers = []string{"sleep", "timeout", "nohup", "setsid", "env", "time", "stdbuf", "nice", "ionice", "taskset", "numactl", "flock"}

// shell says whether the process runs a shell.
func (p *process) shell() bool {
	return slices.Contains(shells, strings.TrimPrefix(p.prog(), "-"))
}

// holder says whether the process holds the files it inherits without writing them: a shell or a launcher.
func (p *process) holder() bool {
	return p.shell() || slices.Contains(launchers, p.prog())
}

// prog is the program's name: its command line's first word, else its comm.
func (p *process) prog() string {
	if len(p.cmdline) > 0 {
		return filepath.Base(p.cmdline[0])
	}
	return p.comm
}

// name is what a run made of this process is called: its script's name without the extension, a module's
// last part, else the program's name, in the letters a run name takes.
func (p *process) name() string {
	s, ok := p.script()
	switch {
	case ok && strings.HasPrefix(s, "-m "):
		mod := strings.TrimPrefix(s, "-m ")
		return runName(mod[strings.LastIndexByte(mod, '.')+1:])
	case ok && s != "-c …":
		return runName(strings.TrimSuffix(s, filepath.Ext(s)))
	case len(p.cmdline) > 0:
		return runName(filepath.Base(p.cmdline[0]))
	}
	return runName(p.comm)
}

// interpreter says whether a program runs a script given as its argument.
func interpreter(prog string) bool {
	for _, p := range []string{"python", "pypy", "node", "ruby", "perl", "bash", "sh", "Rscript", "julia", "uv", "deno", "bun"} {
		if prog == p || (strings.HasPrefix(prog, p) && strings.Trim(prog[len(p):], "0123456789.") == "") {
			return true
		}
	}
	return false
}

// runName turns s into a run name: letters, digits, '.', '_' and '-', at most 40 bytes, never empty.
func runName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	n := strings.Trim(b.String(), "-.")
	if len(n) > 40 {
		n = n[:40]
	}
	if n == "" {
		return "job"
	}
	return n
}

// printable replaces control characters (a terminal's escape sequences among them) with '?'.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}
