package discover

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// procTree builds a proc root in a temporary directory: processes with their stat, command line, fds
// (sockets, and links to real files the test writes) and fdinfo, the TCP tables and a mount table. The
// sockets point at real listeners the test starts, so the probes and the tails run for real.
type procTree struct {
	t    testing.TB
	root string
	tcp  []string // /proc/net/tcp lines after the header
	next uint64   // next socket inode
}

func newProcTree(t testing.TB) *procTree {
	t.Helper()
	root := filepath.Join(t.TempDir(), "proc")
	p := &procTree{t: t, root: root, next: 1000}
	p.mkdir("self")
	// One mount, id 25, at /: every file the tree points at is on it.
	p.write("self/mountinfo", "25 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n")
	return p
}

func (p *procTree) mkdir(rel string) {
	if err := os.MkdirAll(filepath.Join(p.root, rel), 0o755); err != nil {
		p.t.Fatal(err)
	}
}

func (p *procTree) write(rel, text string) {
	p.mkdir(filepath.Dir(rel))
	if err := os.WriteFile(filepath.Join(p.root, rel), []byte(text), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// proc adds a process: its stat (comm, ppid) and command line.
func (p *procTree) proc(pid, ppid int, cmdline ...string) {
	comm := filepath.Base(cmdline[0])
	if len(comm) > 15 {
		comm = comm[:15]
	}
	p.write(fmt.Sprintf("%d/stat", pid), fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		pid, comm, ppid, pid, pid))
	p.write(fmt.Sprintf("%d/comm", pid), comm+"\n")
	p.write(fmt.Sprintf("%d/cmdline", pid), strings.Join(cmdline, "\x00")+"\x00")
	p.mkdir(fmt.Sprintf("%d/fd", pid))
	p.mkdir(fmt.Sprintf("%d/fdinfo", pid))
}

// fd links a process's fd to target with the open flags (octal, as fdinfo writes them).
func (p *procTree) fd(pid, fd int, target string, flags string) {
	link := filepath.Join(p.root, strconv.Itoa(pid), "fd", strconv.Itoa(fd))
	if err := os.Symlink(target, link); err != nil {
		p.t.Fatal(err)
	}
	p.write(fmt.Sprintf("%d/fdinfo/%d", pid, fd), fmt.Sprintf("pos:\t0\nflags:\t%s\nmnt_id:\t25\nino:\t1\n", flags))
}

// Open flags as fdinfo shows them.
const (
	flagsRead   = "0100000"
	flagsAppend = "0102001" // O_WRONLY|O_APPEND|O_LARGEFILE
)

// listen adds a listening socket at addr (as "127.0.0.1:8000" or "[::]:8000") held by pid's fd.
func (p *procTree) listen(pid, fd int, addr string) {
	p.socket(pid, fd, addr, "0.0.0.0:0", "0A")
}

// connect adds an established connection from local to remote held by pid's fd.
func (p *procTree) connect(pid, fd int, local, remote string) {
	p.socket(pid, fd, local, remote, "01")
}

func (p *procTree) socket(pid, fd int, local, remote, state string) {
	ino := p.next
	p.next++
	if pid > 0 {
		p.fd(pid, fd, fmt.Sprintf("socket:[%d]", ino), "02")
	}
	p.tcp = append(p.tcp, fmt.Sprintf("%4d: %s %s %s 00000000:00000000 00:00000000 00000000     0        0 %d 1 0000000000000000 100 0 0 10 0",
		len(p.tcp), hexAddr(p.t, local), hexAddr(p.t, remote), state, ino))
	p.write("net/tcp", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+
		strings.Join(p.tcp, "\n")+"\n")
}

// hexAddr writes an IPv4 host:port as /proc/net/tcp does: the address's bytes little-endian, in hex.
func hexAddr(t testing.TB, hostport string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP(host).To4()
	n, _ := strconv.Atoi(port)
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], n)
}

// serve starts an HTTP server on loopback answering /metrics with the recorded exposition in file
// (under probes/testdata), or with code and body when file is "". It returns its port.
func serve(t testing.TB, file string, code int, body string) int {
	t.Helper()
	if file != "" {
		b, err := os.ReadFile(filepath.Join("..", "probes", "testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		body, code = string(b), 200
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code == 200 {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		}
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

// writeFile writes a real file the tree's fds point at.
func writeFile(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
