package slackapp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"runwatch/config"
	"runwatch/internal/testkit"
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
// slowly. Only as many large bodies as their pool holds are read at once; the others wait a moment for room,
// then are turned away (503, Retry-After), before they send their body.
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
	// Slack's own small payloads are read meanwhile: the slow large bodies hold a pool of their own.
	if resp := e.post(t, "/slack/commands", testkit.SlashBody("/runwatch", "help", "C0SYNTH", "U222", e.fake.ResponseURL("h")), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a signed slash command while slow large bodies are read = %d; want 200", resp.StatusCode)
	}
	for _, c := range conns {
		c.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if reading > maxLargeBodies {
		t.Errorf("%d of %d slow bodies were being read at once; want at most %d", reading, clients, maxLargeBodies)
	}
	if statuses[http.StatusServiceUnavailable] != clients-reading {
		t.Errorf("statuses = %v; want the %d not being read turned away with 503", statuses, clients-reading)
	}
	t.Logf("figure: %d clients with signed-looking headers announcing 1 MiB each, sending slowly: %d read at once, %d turned away (503) before their body; heap grew %.1f MiB",
		clients, reading, statuses[http.StatusServiceUnavailable], float64(held)/(1<<20))
}

// droppingSocket is a Socket Mode endpoint that says hello and hangs up, on every connection.
func droppingSocket(t *testing.T) string {
	hello := readFixture(t, "slack_socketmode_hello_pysdk.json")
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	ws := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		c.WriteMessage(websocket.TextMessage, hello)
		c.Close()
	}))
	t.Cleanup(ws.Close)
	return "ws" + strings.TrimPrefix(ws.URL, "http") + "/link"
}

// TestSocketModeBacksOffAfterDrops runs Socket Mode against an endpoint that drops every connection after
// its hello, on a clock that the waits step: the reconnections come at once, then after 1 s, 2 s, 4 s…, a
// handful in the first 5 s rather than thousands.
func TestSocketModeBacksOffAfterDrops(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	fake := testkit.NewSlack(t)
	fake.WSURL = droppingSocket(t)
	logs := &testkit.LogBuffer{}
	api, _ := newTestAPI(t, fake, logs.Logger(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := NewApp(ctx, e.bot, api, Identity{UserID: "U111"}, nil, logs.Logger())
	sm := NewSocketMode(app, testkit.AppToken, testkit.BotToken, fake.APIURL(), nil, logs.Logger())
	var mu sync.Mutex
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var opensAt []time.Duration // clock time of each apps.connections.open since the first
	sm.gate.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	sm.gate.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(d)
		return ctx.Err()
	}
	const opens = 10
	done := make(chan error, 1)
	go func() { done <- sm.Run(ctx) }()
	fake.Wait(t, "apps.connections.open", opens)
	cancel()
	<-done
	// The clock of each open: the sum of the waits before it.
	waits := sm.gate.waits()
	var at time.Duration
	in5s := 0
	for i, w := range waits[:opens] {
		at += w
		opensAt = append(opensAt, at)
		if at < 5*time.Second {
			in5s++
		}
		if i >= 3 && w != 2*waits[i-1] && w != maxReconnectWait {
			t.Errorf("wait before open %d = %v after %v; want it doubled", i+1, w, waits[i-1])
		}
	}
	if in5s > 4 {
		t.Errorf("opens in the first 5 s = %d (at %v); want at most 4", in5s, opensAt)
	}
	// Said when the waits start, and again at each wait at the cap (at most one line per 2 min). The opens
	// that slipped in after the tenth, before the cancel, waited at the cap too.
	atCap := 0
	for _, w := range sm.gate.waits() {
		if w == maxReconnectWait {
			atCap++
		}
	}
	if n := strings.Count(logs.String(), "keep dropping"); n != 1+atCap {
		t.Errorf("'keep dropping' logged %d times; want %d (from the 3rd open, and at each of the %d waits at the cap):\n%s", n, 1+atCap, atCap, logs.String())
	}
	t.Logf("figure: a Socket Mode endpoint dropping every connection after hello: %d opens in the first 5 s (at %v); waits %v", in5s, opensAt, waits[:opens])
}

// TestSocketModeStopsOnTokenErrors gives Socket Mode an app token Slack refuses for good: each stops Run
// with an error naming SLACK_APP_TOKEN, the code and what to do, after one try.
func TestSocketModeStopsOnTokenErrors(t *testing.T) {
	for _, code := range []string{"missing_scope", "not_allowed_token_type", "invalid_auth", "token_revoked"} {
		t.Run(code, func(t *testing.T) {
			e := newBotEnv(t, botOpts{})
			fake := testkit.NewSlack(t)
			fake.OpenErr = code
			log := (&testkit.LogBuffer{}).Logger()
			api, _ := newTestAPI(t, fake, log, nil)
			app := NewApp(context.Background(), e.bot, api, Identity{UserID: "U111"}, nil, log)
			sm := NewSocketMode(app, testkit.AppToken, testkit.BotToken, fake.APIURL(), nil, log)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- sm.Run(ctx) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("Socket Mode still running 20 s after Slack refused the token (%s): %d opens", code, len(fake.Calls("apps.connections.open")))
			}
			if err == nil || !strings.Contains(err.Error(), "SLACK_APP_TOKEN") || !strings.Contains(err.Error(), code) {
				t.Errorf("Run = %v; want an error naming SLACK_APP_TOKEN and %s", err, code)
			}
			if n := len(fake.Calls("apps.connections.open")); n != 1 {
				t.Errorf("apps.connections.open calls = %d; want 1", n)
			}
		})
	}
}

// TestCheapCommandsAheadOfTheQueue fills every answer slot (as slow probes would) and sends 2,000 slash
// commands at once, from 2,000 people: help, a command in a channel the allow-lists leave out, a
// non-admin's snooze, a question nobody can answer, and an ETA. The cheap ones (help, refusals, an
// unknown question) need no slot: every one is answered in its acknowledgement or, when the machine could
// not finish it within the inline budget, through its response_url while every slot is still taken; the
// ETAs, which need a slot, are acknowledged with "working on it" at once. It counts; it does not time.
func TestCheapCommandsAheadOfTheQueue(t *testing.T) {
	e := newHTTPEnv(t, botOpts{Env: config.Env{Admins: []string{"UADMIN"}, AllowedChannels: []string{"C0SYNTH"}}})
	for range cap(e.app.slots) {
		e.app.slots <- struct{}{} // every slot taken by an evaluation that is slow to finish
	}
	var freed sync.Once
	free := func() {
		freed.Do(func() {
			for range cap(e.app.slots) {
				<-e.app.slots
			}
		})
	}
	defer free()
	kinds := []struct{ name, command, text, channel, want string }{
		{"help", "/runwatch", "help", "C0SYNTH", "runwatch help"},
		{"channel not allowed", "/eta", "", "C0OTHER", "allowed_channels"},
		{"not an admin", "/runwatch", "snooze 2h", "C0SYNTH", "only runwatch admins"},
		{"unknown", "/runwatch", "make me a sandwich", "C0SYNTH", "Try one of these"},
		{"eta", "/eta", "", "C0SYNTH", "Working on it"},
	}
	const n = 2000
	type result struct {
		kind   int
		status int
		text   string
		took   time.Duration
	}
	results := make([]result, n)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		k := i % len(kinds)
		body := testkit.SlashBody(kinds[k].command, kinds[k].text, kinds[k].channel, fmt.Sprintf("U%05d", i), e.fake.ResponseURL(fmt.Sprint(i)))
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/slack/commands", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", testkit.Sign(e.secret, ts, body))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			began := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var msg struct{ Text string }
			json.NewDecoder(resp.Body).Decode(&msg)
			results[i] = result{kind: k, status: resp.StatusCode, text: msg.Text, took: time.Since(began)}
		}()
	}
	close(start)
	wg.Wait()
	// A cheap answer the bot could not finish within its inline budget (the machine busy with 2,000 requests)
	// is acknowledged "working on it" and follows through its response_url, as any late answer does; it
	// needs no slot either, so it follows while every slot is still taken. The test waits for those
	// follow-ups (not for a time) before the slow evaluations end.
	followed := map[string]string{}
	pending := func() int {
		followed = map[string]string{}
		for _, c := range e.fake.Calls("response_url") {
			followed[strings.TrimPrefix(c.Form.Get("_path"), "/response/")] += string(c.Body)
		}
		n := 0
		for i, r := range results {
			if kinds[r.kind].name != "eta" && !strings.Contains(r.text, kinds[r.kind].want) && !strings.Contains(followed[fmt.Sprint(i)], kinds[r.kind].want) {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); pending() > 0 && time.Now().Before(deadline); {
		select {
		case <-e.fake.Notify:
		case <-time.After(100 * time.Millisecond):
		}
	}
	wrong := map[string]int{}
	var durs []time.Duration
	late := 0
	for i, r := range results {
		durs = append(durs, r.took)
		want := kinds[r.kind].want
		switch {
		case r.status == http.StatusOK && strings.Contains(r.text, want):
		case r.status == http.StatusOK && kinds[r.kind].name != "eta" && strings.Contains(followed[fmt.Sprint(i)], want):
			late++ // followed with every slot still taken
		default:
			wrong[kinds[r.kind].name]++
		}
	}
	free() // the slow evaluations end: the ETAs' answers follow, and the bot goes idle
	e.app.Wait(30 * time.Second)
	for name, c := range wrong {
		t.Errorf("%s: %d of %d acknowledgements were not %q", name, c, n/len(kinds), kinds[slices.IndexFunc(kinds, func(k struct{ name, command, text, channel, want string }) bool { return k.name == name })].want)
	}
	slices.Sort(durs)
	over := 0
	for _, d := range durs {
		if d > 3*time.Second {
			over++
		}
	}
	t.Logf("figure: 2,000 slash commands at once, every answer slot busy: help, refusals and unknown questions all answered in their acknowledgement, ETAs acknowledged \"working on it\"; ack p50 %v, p99 %v, max %v; %d over 3 s (%d cheap answers not ready within the inline budget, followed through their response_url while every slot was taken)",
		durs[n/2].Round(time.Millisecond), durs[n*99/100].Round(time.Millisecond), durs[n-1].Round(time.Millisecond), over, late)
}
