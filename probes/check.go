package probes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"
)

// ErrBadRequest marks a check whose request could not be made (a malformed URL): a failure, not
// an endpoint that is not up yet.
var ErrBadRequest = errors.New("bad request")

// badRequest keeps the cause's own text and is ErrBadRequest.
type badRequest struct{ err error }

func (b badRequest) Error() string   { return b.err.Error() }
func (b badRequest) Unwrap() []error { return []error{ErrBadRequest, b.err} }

// HTTPAnswer is how an endpoint answered a GET.
type HTTPAnswer struct {
	Code   int
	Status string
	Took   time.Duration
}

// CheckHTTP GETs url once under ctx, for `http` stage checks; the body is not read. Neither the
// error nor the answer's Status shows the URL's password or query values.
func CheckHTTP(ctx context.Context, client *http.Client, url string) (HTTPAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return HTTPAnswer{}, badRequest{fmt.Errorf("%s: %w", RedactURL(url), metricsUnwrapURL(err))}
	}
	start := time.Now()
	// Like every probe, it follows no redirect to another host, and its errors carry the URL
	// only as RedactURL names it.
	resp, err := WithProbeRedirects(client).Do(req)
	secrets := urlSecrets(url)
	if err != nil {
		return HTTPAnswer{}, withoutSecrets(metricsUnwrapURL(err), secrets)
	}
	resp.Body.Close()
	// The status line is the server's own text, which may echo the URL's key or password, and be as long
	// as the server likes.
	return HTTPAnswer{Code: resp.StatusCode, Status: clipLine(secretsRedacted(resp.Status, secrets)), Took: time.Since(start)}, nil
}

// dirSizeMaxEntries bounds the entries DirSize looks at.
const dirSizeMaxEntries = 100000

// DirSize is the total size and count of the regular files directly in dir (at most the first
// 100,000 entries), one read per directory at a time like every path call of the Guard.
func (g *Guard) DirSize(ctx context.Context, dir string) (size int64, files int, err error) {
	type res struct {
		size  int64
		files int
	}
	v, err := g.do(ctx, "dirsize\x00"+dir, func() (any, error) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		var r res
		for i, e := range ents {
			if i >= dirSizeMaxEntries {
				break
			}
			if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
				r.size += info.Size()
				r.files++
			}
		}
		return r, nil
	})
	if err != nil {
		return 0, 0, err
	}
	r := v.(res)
	return r.size, r.files, nil
}
