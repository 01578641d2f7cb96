package discover

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"slices"

	"github.com/prometheus/procfs"
)

// This file reads the host's TCP sockets: /proc/net/tcp and tcp6, through procfs.

// socket is one TCP socket of the host's network namespace.
type socket struct {
	local, remote         net.IP
	localPort, remotePort int
	state                 uint64
	inode                 uint64
}

// TCP states as /proc/net/tcp writes them (include/net/tcp_states.h).
const (
	tcpEstablished = 0x01
	tcpListen      = 0x0A
)

// readSockets reads the TCP tables under the proc root. A missing tcp6 (IPv6 turned off) is no error.
func readSockets(p procfs.FS) ([]socket, error) {
	var out []socket
	for _, t := range []struct {
		name string
		read func() (procfs.NetTCP, error)
	}{{"net/tcp", p.NetTCP}, {"net/tcp6", p.NetTCP6}} {
		lines, err := t.read()
		if errors.Is(err, fs.ErrNotExist) && t.name == "net/tcp6" {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("read %s: %w", t.name, err)
		}
		out = append(out, socketsOf(lines)...)
	}
	return out, nil
}

// socketsOf converts procfs's lines, keeping the listening and established sockets (the others are
// closing or opening and say nothing about who serves or uses what).
func socketsOf(lines procfs.NetTCP) []socket {
	out := make([]socket, 0, len(lines))
	for _, l := range lines {
		if l == nil || (l.St != tcpListen && l.St != tcpEstablished) {
			continue
		}
		out = append(out, socket{local: l.LocalAddr, remote: l.RemAddr, localPort: int(l.LocalPort),
			remotePort: int(l.RemPort), state: l.St, inode: l.Inode})
	}
	return out
}

// localAddrs are the addresses this host's sockets are bound to: a connection to one of them, or to a
// loopback address, stays on this host.
func localAddrs(socks []socket) []net.IP {
	var out []net.IP
	for _, s := range socks {
		if s.local.IsUnspecified() || slices.ContainsFunc(out, s.local.Equal) {
			continue
		}
		out = append(out, s.local)
	}
	return out
}

// isLocal says whether ip is loopback or one of this host's own addresses.
func isLocal(ip net.IP, own []net.IP) bool {
	return ip.IsLoopback() || slices.ContainsFunc(own, ip.Equal)
}

// probeHost is the address to send a listener's probe to: loopback for a socket bound to every
// address, else the address it is bound to (one of the host's own).
func probeHost(s socket) string {
	switch {
	case s.local.IsUnspecified() && s.local.To4() != nil:
		return "127.0.0.1"
	case s.local.IsUnspecified():
		return "::1"
	}
	if v4 := s.local.To4(); v4 != nil {
		return v4.String()
	}
	return s.local.String()
}
