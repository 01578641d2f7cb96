package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"runwatch/exporter"
	"runwatch/monitor"
)

// runExporter serves this node's writer facts on /metrics for a Prometheus server to scrape; a bot
// with `prometheus:` then answers "are we writing to /shared?" for every node, naming the host.
func runExporter(ctx context.Context, a *app, args []string) error {
	fs := a.flags()
	listen := fs.String("listen", "", "address to serve /metrics on, e.g. :9464 or 10.0.0.7:9464 (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *listen == "" {
		return usageError{"--listen is required"}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if err := a.setup(ctx, false); err != nil {
		return err
	}
	// Stateless: a scrape reads the node afresh and never waits for a second disk reading.
	m, _, err := monitor.New(a.file, monitor.Options{ProcRoot: a.env.ProcRoot, ProbeTimeout: a.env.ProbeTimeout, ReadOnly: true, RateWindow: -1})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", exporter.New(m, exporter.Options{}).Handler())
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
