package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"runwatch/exporter"
)

// defaultExporterListen is where the exporter listens unless told otherwise: loopback, because its
// series name the runs' paths and the commands writing under protected paths.
var defaultExporterListen = net.JoinHostPort("127.0.0.1", strconv.Itoa(exporter.DefaultPort))

// runExporter serves this node's writer facts on /metrics for a Prometheus server to scrape; a bot
// with `prometheus:` then answers "are we writing to /shared?" for every node, naming the host.
// It speaks for this node only, whatever run file it is given: a run's `prometheus:` is not asked.
func runExporter(ctx context.Context, a *app, args []string) error {
	fs := a.flags()
	listen := fs.String("listen", defaultExporterListen,
		"address to serve /metrics on; the default is loopback only: give the node's address on the network Prometheus scrapes from, e.g. 10.0.0.7:"+strconv.Itoa(exporter.DefaultPort))
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if err := a.setup(ctx, false); err != nil {
		return err
	}
	for _, r := range a.file.Runs {
		if r.Prometheus != nil {
			a.log.Info("exporter reports this node only; the run's prometheus: is not read here", "run", r.Name)
		}
	}
	m, err := exporter.NodeMonitor(a.file, a.env.ProcRoot, a.env.ProbeTimeout)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", exporter.New(m, exporter.Options{Log: a.log}).Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "runwatch exporter: this node's writer facts are on /metrics")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	a.log.Info("exporter listening", "addr", ln.Addr().String(), "runs", len(a.file.Runs))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve %s: %w", *listen, err)
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shut); err != nil {
			return fmt.Errorf("shut down: %w", err)
		}
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
