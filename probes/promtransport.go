package probes

// This file is the Prometheus client's transport: credentials for the server's own host only, and a
// bound on every response body.

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// promTransport authenticates requests to the server's host and bounds response bodies.
type promTransport struct {
	base       http.RoundTripper
	host       string
	maxBody    int64
	bearer     string
	user, pass string
}

func (t *promTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == t.host && (t.bearer != "" || t.user != "" || t.pass != "") {
		req = req.Clone(req.Context())
		if t.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+t.bearer)
		} else {
			req.SetBasicAuth(t.user, t.pass)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	received, _ := req.Context().Value(promReceivedKey{}).(*atomic.Bool)
	limit := t.maxBody * int64(promPartsOf(req.Context()))
	resp.Body = &promLimitedBody{rc: resp.Body, left: limit, limit: limit, received: received}
	return resp, nil
}

// promReceivedKey is the context key of the flag a query's body sets once it is read whole.
type promReceivedKey struct{}

// promLimitedBody fails with ErrPromTooLarge once more than limit bytes have been read, and sets
// received (when not nil) once it has been read to its end.
type promLimitedBody struct {
	rc          io.ReadCloser
	left, limit int64
	received    *atomic.Bool
}

func (b *promLimitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%w: more than %s", ErrPromTooLarge, logTailSize(b.limit))
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("%w: more than %s", ErrPromTooLarge, logTailSize(b.limit))
	}
	if err == io.EOF && b.received != nil {
		b.received.Store(true)
	}
	return n, err
}

func (b *promLimitedBody) Close() error { return b.rc.Close() }
