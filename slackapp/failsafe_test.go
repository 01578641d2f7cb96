package slackapp

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawRequest sends only the head of a POST announcing a body of size bytes (no body) on a raw TCP
// connection, and reads the response before sending a byte of it: a server that reads the body before it
// answers never answers, and the read fails at the connection's deadline.
func rawRequest(t *testing.T, addr, path string, size int, headers ...string) (*http.Response, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: runwatch\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, size)
	for _, h := range headers {
		head += h + "\r\n"
	}
	if _, err := c.Write([]byte(head + "\r\n")); err != nil {
		t.Fatal(err)
	}
	// A safety net, not a measurement: the answer is expected at once.
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("POST %s announcing %d bytes, no body sent: no response (%v); want a 4xx before the body", path, size, err)
	}
	resp.Body.Close()
	return resp, c
}

func TestHTTPRefusesBeforeTheBody(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	addr := e.srv.Listener.Addr().String()
	now := strconv.FormatInt(time.Now().Unix(), 10)
	stale := strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)
	wellFormed := "v0=" + strings.Repeat("ab", 32)
	tests := []struct {
		name    string
		size    int
		headers []string
		status  int
	}{
		{"unsigned, 1 MiB announced", 1 << 20, nil, http.StatusUnauthorized},
		{"timestamp only", 1 << 20, []string{"X-Slack-Request-Timestamp: " + now}, http.StatusUnauthorized},
		{"stale timestamp", 1 << 10, []string{"X-Slack-Request-Timestamp: " + stale, "X-Slack-Signature: " + wellFormed}, http.StatusUnauthorized},
		{"timestamp not a number", 1 << 10, []string{"X-Slack-Request-Timestamp: soon", "X-Slack-Signature: " + wellFormed}, http.StatusUnauthorized},
		{"signature not hex", 1 << 10, []string{"X-Slack-Request-Timestamp: " + now, "X-Slack-Signature: v0=not-a-signature"}, http.StatusUnauthorized},
		{"signed headers, body over the cap", maxSlackBody + 1, []string{"X-Slack-Request-Timestamp: " + now, "X-Slack-Signature: " + wellFormed}, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/slack/events", "/slack/commands", "/slack/interactions"} {
				resp, _ := rawRequest(t, addr, path, tc.size, tc.headers...)
				if resp.StatusCode != tc.status {
					t.Errorf("POST %s (%s) = %d; want %d before the body", path, tc.name, resp.StatusCode, tc.status)
				}
				if !resp.Close {
					t.Errorf("POST %s (%s): the connection is kept open; want it closed (its body is never read)", path, tc.name)
				}
			}
		})
	}
}

// TestHTTPBodiesReadAtOnceAreBounded is 400 clients whose headers look signed (a current timestamp, a
// well-formed signature: only the body can tell them from Slack) each announcing 1 MiB and sending it
// slowly. Only as many bodies as the budget holds are read at once; the others are turned away at once
// (503, Retry-After), before they send their body.
func TestHTTPBodiesReadAtOnceAreBounded(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	addr := e.srv.Listener.Addr().String()
	const clients = 400
	now := strconv.FormatInt(time.Now().Unix(), 10)
	var mu sync.Mutex
	statuses := map[int]int{}
	var conns []net.Conn
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	for i := range clients {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		head := fmt.Sprintf("POST /slack/events HTTP/1.1\r\nHost: runwatch\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
			"X-Slack-Request-Timestamp: %s\r\nX-Slack-Signature: v0=%064x\r\n\r\n{", maxSlackBody, now, i)
		if _, err := c.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
		go func() {
			// A body being read gets no answer until the client gives up; one turned away gets its answer at once.
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return
			}
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	// Every client is either being read or was answered.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		answered := 0
		for _, n := range statuses {
			answered += n
		}
		mu.Unlock()
		reading := e.hm.bodies.inFlight()
		if answered+reading == clients {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %d answered, %d bodies being read, of %d clients", answered, reading, clients)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.ReadMemStats(&ms)
	held := int64(ms.HeapInuse) - int64(before)
	reading := e.hm.bodies.inFlight()
	for _, c := range conns {
		c.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if reading > maxBodiesInFlight {
		t.Errorf("%d of %d slow bodies were being read at once; want at most %d", reading, clients, maxBodiesInFlight)
	}
	if statuses[http.StatusServiceUnavailable] != clients-reading {
		t.Errorf("statuses = %v; want the %d not being read turned away with 503", statuses, clients-reading)
	}
	t.Logf("figure: %d clients with signed-looking headers announcing 1 MiB each, sending slowly: %d read at once, %d turned away (503) before their body; heap grew %.1f MiB",
		clients, reading, statuses[http.StatusServiceUnavailable], float64(held)/(1<<20))
}
