package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
)

// startProxy serves on a loopback port and sends each request to the next of backends in turn, as a
// Kubernetes Service in front of replicas does: a client, and a scraper, see one address whose /metrics
// comes from whichever replica took the request.
func startProxy(backends []string) (addr string, stop func(), err error) {
	var targets []*url.URL
	for _, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			return "", nil, fmt.Errorf("proxy backend %s: %w", b, err)
		}
		targets = append(targets, u)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("proxy: %w", err)
	}
	var n atomic.Uint64
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(targets[n.Add(1)%uint64(len(targets))]) },
		Transport: &http.Transport{MaxIdleConnsPerHost: 512},
	}
	srv := &http.Server{Handler: rp}
	go srv.Serve(l)
	return "http://" + l.Addr().String(), func() { srv.Close() }, nil
}
