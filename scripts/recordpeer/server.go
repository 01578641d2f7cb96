package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	"runwatch/internal/peersim"
)

// unpack writes the gzipped simulator binary at gz to an executable file in dir (peersim.Unpack).
func unpack(gz, dir string) (string, error) { return peersim.Unpack(gz, dir) }

// server is one simulator process serving ranks ports (one port per data-parallel rank).
type server struct {
	bin   string
	args  []string // flags without --port and --seed
	port  int
	ranks int
	seed  int64
	log   string // the process's output file
	cmd   *exec.Cmd
	exit  chan error
}

// start runs the process; ready waits until it answers.
func (s *server) start() error {
	args := append([]string{"--port", strconv.Itoa(s.port), "--seed", strconv.FormatInt(s.seed, 10)}, s.args...)
	if s.ranks > 1 {
		args = append(args, "--data-parallel-size", strconv.Itoa(s.ranks))
	}
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("simulator log: %w", err)
	}
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start simulator: %w", err)
	}
	s.exit = make(chan error, 1)
	go func() { s.exit <- s.cmd.Wait(); logf.Close() }()
	return nil
}

// stop kills the process and waits for it to exit.
func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exit
	s.cmd = nil
}

// urls are the ranks' base addresses.
func (s *server) urls() []string {
	var u []string
	for r := 0; r < s.ranks; r++ {
		u = append(u, "http://127.0.0.1:"+strconv.Itoa(s.port+r))
	}
	return u
}

// ready polls every rank's /health/ready until each answers 200, the process exits, or ctx ends.
func (s *server) ready(ctx context.Context, c *http.Client) error {
	for _, u := range s.urls() {
		for {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u+"/health/ready", nil)
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case err := <-s.exit:
				s.exit <- err
				return fmt.Errorf("simulator exited before it was ready (%v); see %s", err, s.log)
			case <-ctx.Done():
				return fmt.Errorf("simulator at %s not ready: %w", u, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// freePorts finds n consecutive free loopback ports.
func freePorts(n int) (int, error) {
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		ls := []net.Listener{l}
		ok := true
		for i := 1; i < n; i++ {
			li, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, li)
		}
		for _, li := range ls {
			li.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("find free ports: none found")
}
