package probes

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestScrapeRefusesCrossHostRedirects is the red team's finding 3: a metrics URL that redirects to
// another host (here a stand-in for a cloud metadata service) must not be followed, and the error
// must say where it pointed without quoting anything that host says; a body that is not an
// exposition is never quoted either.
func TestScrapeRefusesCrossHostRedirects(t *testing.T) {
	const secret = `{"AccessKeyId":"ASIAEXAMPLESECRET","SecretAccessKey":"wJalrXUtnFEMI"}`
	var metadataHits atomic.Int32
	metadata := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		metadataHits.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(secret + "\n"))
	}))
	defer metadata.Close()
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			http.Redirect(w, r, metadata.URL+"/latest/meta-data/iam?token=T0KEN", http.StatusFound)
		case "/moved":
			http.Redirect(w, r, "/real", http.StatusMovedPermanently)
		case "/real":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("vllm:num_requests_running 3\n"))
		case "/json":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(secret + "\n"))
		}
	}))
	defer engine.Close()
	m := NewMetrics(nil, 0)

	_, err := m.Scrape(context.Background(), engine.URL+"/metrics")
	if err == nil || !strings.Contains(err.Error(), "redirected to "+metadata.URL+"/latest/meta-data/iam?token=[redacted]") {
		t.Errorf("Scrape(redirect to another host) = %v; want the refusal naming where it redirected", err)
	}
	if n := metadataHits.Load(); n != 0 {
		t.Errorf("the other host was asked %d times; want 0", n)
	}
	if err != nil && (strings.Contains(err.Error(), "AccessKeyId") || strings.Contains(err.Error(), "T0KEN")) {
		t.Errorf("error quotes the other host or the token: %v", err)
	}

	e, err := m.Scrape(context.Background(), engine.URL+"/moved")
	if err != nil || e.Running != 3 {
		t.Errorf("Scrape(redirect on the same host) = %v running, %v; want 3, followed", e.Running, err)
	}

	_, err = m.Scrape(context.Background(), engine.URL+"/json")
	if err == nil || strings.Contains(err.Error(), "AccessKeyId") || strings.Contains(err.Error(), "ASIA") {
		t.Errorf("Scrape(a JSON body as text/plain) = %v; want an error quoting nothing of the body", err)
	}
	t.Logf("figure: metrics URL redirecting to another host: refused before asking it (%d requests there), the error naming where it pointed with its token redacted; a JSON body served as text/plain: error quotes none of it", metadataHits.Load())
}

func TestSameOrigin(t *testing.T) {
	tests := []struct {
		from, to string
		want     bool
	}{
		{"http://h/metrics", "https://h/metrics", true},
		{"http://h:80/metrics", "https://h/metrics", true},
		{"http://h:8000/a", "http://H:8000/b", true},
		{"http://h:8000/a", "http://h:8001/b", false},
		{"http://h/a", "http://169.254.169.254/latest", false},
		{"http://h/a", "http://h.evil/a", false},
		{"https://h/metrics", "https://h/other", true},
		{"https://h/metrics", "http://h/metrics", false},
		{"https://h:9090/api", "http://h:9090/api", false},
		{"https://h:443/a", "http://h:80/a", false},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, tt.to, nil)
		via, _ := http.NewRequest(http.MethodGet, tt.from, nil)
		err := SameHostRedirects(req, []*http.Request{via})
		if (err == nil) != tt.want {
			t.Errorf("SameHostRedirects(%s -> %s) = %v; want allowed %v", tt.from, tt.to, err, tt.want)
		}
		// Only a redirect from https to http is called a downgrade: one to another port on plain http is not.
		downgrade := strings.EqualFold(via.URL.Scheme, "https") && strings.EqualFold(req.URL.Scheme, "http")
		if err != nil && strings.Contains(err.Error(), "downgrade") != downgrade {
			t.Errorf("SameHostRedirects(%s -> %s) = %v; want a downgrade named %v", tt.from, tt.to, err, downgrade)
		}
	}
}

// TestPrometheusRefusesCrossHostRedirects: the Prometheus client, which carries credentials, must
// not follow a redirect to another host either.
func TestPrometheusRefusesCrossHostRedirects(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	defer other.Close()
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer prom.Close()
	p, err := NewPrometheus(PrometheusOptions{URL: prom.URL, BearerToken: "PROMTOKEN"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Query(context.Background(), "up", time.Now())
	if err == nil || !strings.Contains(err.Error(), "redirected to "+other.URL) || otherHits.Load() != 0 {
		t.Errorf("Query through a cross-host redirect = %v, other host asked %d times; want refused, naming it, 0 asks", err, otherHits.Load())
	}
}

// recordingTransport records the scheme and Authorization header of every request it carries.
type recordingTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.seen = append(t.seen, req.URL.Scheme+" "+req.Header.Get("Authorization"))
	t.mu.Unlock()
	return t.base.RoundTrip(req)
}

// TestPrometheusRefusesDowngradeRedirects: an https Prometheus that redirects to http on its own host
// and port must not get the bearer token in clear text: the redirect is refused before it is sent.
func TestPrometheusRefusesDowngradeRedirects(t *testing.T) {
	prom := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+r.Host+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer prom.Close()
	rec := &recordingTransport{base: prom.Client().Transport}
	p, err := NewPrometheus(PrometheusOptions{URL: prom.URL, BearerToken: "PROMTOKEN", Client: &http.Client{Transport: rec}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Query(context.Background(), "up", time.Now())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, s := range rec.seen {
		if strings.HasPrefix(s, "http ") {
			t.Errorf("Query through an https -> http redirect sent %q; want no plain-http request", s)
		}
	}
	if !errors.Is(err, ErrRedirectRefused) || !strings.Contains(err.Error(), "downgrade") {
		t.Errorf("Query through an https -> http redirect = %v; want the redirect refused", err)
	}
}

// TestPrometheusNeverQuotesOtherBodies: what a proxy or login page in front of Prometheus says is
// not quoted in the error, whether it comes with an error status or 200.
func TestPrometheusNeverQuotesOtherBodies(t *testing.T) {
	for _, code := range []int{http.StatusBadGateway, http.StatusOK} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(code)
			w.Write([]byte(`<html>session=SECRETCOOKIE AccessKeyId=ASIALEAK</html>`))
		}))
		p, err := NewPrometheus(PrometheusOptions{URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Query(context.Background(), "up", time.Now())
		srv.Close()
		if err == nil || strings.Contains(err.Error(), "SECRETCOOKIE") || strings.Contains(err.Error(), "ASIALEAK") {
			t.Errorf("Query against an HTML page (HTTP %d) = %v; want an error quoting none of it", code, err)
		}
	}
}

// echoServer answers every request on a raw connection with the response head head(requestURI):
// a status line and headers no httptest handler can write (a reason phrase of its own).
func echoServer(t *testing.T, head func(uri string) string) string {
	t.Helper()
	return echoRequestServer(t, func(r *http.Request) string { return head(r.URL.RequestURI()) })
}

// echoRequestServer is echoServer with the whole request in hand (its headers, say).
func echoRequestServer(t *testing.T, head func(r *http.Request) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.WriteString(c, head(req)+"Content-Length: 0\r\nConnection: close\r\n\r\n")
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestProbesNeverEchoURLSecrets: a server that names the key or password of the URL it was asked
// at, in its status line or a header a probe quotes, does not get them into the probe's error or
// answer.
func TestProbesNeverEchoURLSecrets(t *testing.T) {
	const key, pass = "SECRETKEY123", "PASSW0RD99"
	heads := map[string]func(uri string) string{
		"status line": func(uri string) string { return "HTTP/1.1 401 refused " + uri + " for " + pass + "\r\n" },
		"content type": func(uri string) string {
			return "HTTP/1.1 200 OK\r\nContent-Type: text/html; echo=\"" + uri + " " + pass + "\"\r\n"
		},
	}
	for name, head := range heads {
		base := echoServer(t, head)
		raw := strings.Replace(base, "http://", "http://admin:"+pass+"@", 1) + "/metrics?api_key=" + key
		_, err := NewMetrics(nil, 0).Scrape(context.Background(), raw)
		if err == nil || strings.Contains(err.Error(), key) || strings.Contains(err.Error(), pass) {
			t.Errorf("%s: Scrape = %v; want an error without the key or the password", name, err)
		}
		a, err := CheckHTTP(context.Background(), nil, raw)
		if err != nil || strings.Contains(a.Status, key) || strings.Contains(a.Status, pass) {
			t.Errorf("%s: CheckHTTP = %+v, %v; want an answer whose status has neither the key nor the password", name, a, err)
		}
	}
}

// TestProbesNeverEchoPathTokens: a token in the URL's path (a Telegram-style /bot<id>:<token>/, a
// hosted Prometheus's key segment) is neither named in the probe's error nor let through when the
// server echoes the path back, as written or decoded.
func TestProbesNeverEchoPathTokens(t *testing.T) {
	const token = "AAH4xk9Zq0LmNoPqRsTu77"
	heads := map[string]func(uri string) string{
		"status line": func(uri string) string { return "HTTP/1.1 404 no route " + uri + "\r\n" },
		"content type": func(uri string) string {
			return "HTTP/1.1 200 OK\r\nContent-Type: text/html; echo=\"" + uri + "\"\r\n"
		},
	}
	for name, head := range heads {
		for _, path := range []string{"/bot123456:" + token + "/metrics", "/api/prom/k" + token + "/metrics"} {
			raw := echoServer(t, head) + path
			_, err := NewMetrics(nil, 0).Scrape(context.Background(), raw)
			if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("%s: Scrape(%s) = %v; want an error naming the URL redacted", name, path, err)
			}
			a, err := CheckHTTP(context.Background(), nil, raw)
			if err != nil || strings.Contains(a.Status, token) {
				t.Errorf("%s: CheckHTTP(%s) = %+v, %v; want an answer without the token", name, path, a, err)
			}
		}
	}
}

// TestProbesNeverEchoBasicAuth: a password travels as the Authorization header's base64 of
// user:password, and a server (or a proxy) that names the header it was sent, in its status line or
// its error answer, must not get that encoding into a probe's error or answer either: decoding it is
// one command.
func TestProbesNeverEchoBasicAuth(t *testing.T) {
	const user, pass = "admin", "PASSW0RD99"
	encoded := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	base := echoRequestServer(t, func(r *http.Request) string {
		return "HTTP/1.1 401 refused " + r.Header.Get("Authorization") + "\r\n"
	})
	raw := strings.Replace(base, "http://", "http://"+user+":"+pass+"@", 1) + "/metrics"
	_, err := NewMetrics(nil, 0).Scrape(context.Background(), raw)
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), encoded) {
		t.Errorf("Scrape(a server echoing Authorization) = %v; want a 401 error without %q", err, encoded)
	}
	a, err := CheckHTTP(context.Background(), nil, raw)
	if err != nil || a.Code != 401 || strings.Contains(a.Status, encoded) {
		t.Errorf("CheckHTTP(a server echoing Authorization) = %+v, %v; want a 401 whose status has no %q", a, err, encoded)
	}

	// A token given as the user alone (https://TOKEN@host) goes as the base64 of "TOKEN:".
	const token = "glpat-Sekr3tUserToken"
	tokenOnly := strings.Replace(base, "http://", "http://"+token+"@", 1) + "/metrics"
	encodedToken := base64.StdEncoding.EncodeToString([]byte(token + ":"))
	if _, err := NewMetrics(nil, 0).Scrape(context.Background(), tokenOnly); err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), encodedToken) {
		t.Errorf("Scrape(a token as the URL's user, echoed) = %v; want a 401 error without %q", err, encodedToken)
	}
	if a, err := CheckHTTP(context.Background(), nil, tokenOnly); err != nil || a.Code != 401 || strings.Contains(a.Status, encodedToken) {
		t.Errorf("CheckHTTP(a token as the URL's user, echoed) = %+v, %v; want a 401 whose status has no %q", a, err, encodedToken)
	}

	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":"refused %s"}`, r.Header.Get("Authorization"))
	}))
	defer prom.Close()
	withUserinfo := strings.Replace(prom.URL, "http://", "http://"+user+":"+pass+"@", 1)
	for name, o := range map[string]PrometheusOptions{
		"user:password in the URL":   {URL: withUserinfo},
		"username_env, password_env": {URL: prom.URL, Username: user, Password: pass},
	} {
		p, err := NewPrometheus(o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Query(context.Background(), "up", time.Now())
		if err == nil || !strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), encoded) {
			t.Errorf("%s: Query(a server echoing Authorization) = %v; want its error without %q", name, err, encoded)
		}
	}
}

// TestProbesClipWhatServersSay: a status line's reason, a content type and a Prometheus error message
// are the server's own text, and a hostile endpoint makes them as long as it likes (300 KB of reason
// phrase became the whole of a status answer, pushing the ETA and the storage out of the post). An
// error quotes at most one short line of each, redacted before it is cut, so that a password at the
// cut is not left half shown.
func TestProbesClipWhatServersSay(t *testing.T) {
	const pass = "PASSW0RD99"
	long := strings.Repeat("X", 190) + pass + strings.Repeat("Y", 300_000)
	heads := map[string]string{
		"status line":  "HTTP/1.1 503 " + long + "\r\n",
		"content type": "HTTP/1.1 200 OK\r\nContent-Type: text/" + long + "\r\n",
	}
	for name, head := range heads {
		base := echoServer(t, func(string) string { return head })
		raw := strings.Replace(base, "http://", "http://admin:"+pass+"@", 1) + "/metrics"
		_, err := NewMetrics(nil, 0).Scrape(context.Background(), raw)
		if err == nil || len(err.Error()) > 400 || strings.Contains(err.Error(), pass[:4]) {
			t.Errorf("%s: Scrape = %d bytes of error (%.120q…); want at most 400, without the password or a piece of it", name, len(err.Error()), err)
		}
	}
	// A redirect refused names where it pointed: a line, however long the Location.
	heads["redirect"] = "HTTP/1.1 302 Found\r\nLocation: http://other.invalid/" + long + "\r\n"
	base := echoServer(t, func(string) string { return heads["redirect"] })
	if _, err := NewMetrics(nil, 0).Scrape(context.Background(), base+"/metrics"); !errors.Is(err, ErrRedirectRefused) || len(err.Error()) > 400 {
		t.Errorf("Scrape(a long redirect) = %d bytes of error (%.120q…); want the redirect refused in at most 400", len(err.Error()), err)
	}
	base = echoServer(t, func(string) string { return heads["status line"] })
	raw := strings.Replace(base, "http://", "http://admin:"+pass+"@", 1) + "/ready"
	a, err := CheckHTTP(context.Background(), nil, raw)
	if err != nil || a.Code != 503 || len(a.Status) > 300 || strings.Contains(a.Status, pass[:4]) {
		t.Errorf("CheckHTTP = %d, %d bytes of status, %v; want 503 with at most 300 bytes, without the password or a piece of it", a.Code, len(a.Status), err)
	}

	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprintf(w, `{"status":"error","errorType":"execution","error":"%s"}`, long)
	}))
	defer prom.Close()
	p, err := NewPrometheus(PrometheusOptions{URL: prom.URL, Username: "admin", Password: pass})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Query(context.Background(), "up", time.Now())
	if err == nil || len(err.Error()) > 400 || strings.Contains(err.Error(), pass[:4]) {
		t.Errorf("Query = %d bytes of error; want at most 400, without the password or a piece of it", len(err.Error()))
	}
}
