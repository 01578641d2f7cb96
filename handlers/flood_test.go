package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
)

// floodRequest is one signed request of the flood and what came back.
type floodRequest struct {
	path, kind, user, respName string
	body                       []byte
	status                     int
	ack                        string
	took                       time.Duration
}

// TestHTTPFloodAcksNeverWait is the red team's finding 5: 1,000 concurrent signed requests of every
// command kind (each slash command, admin mutations, mentions and DMs) from 100 users, then one
// user flooding 30 more slash commands and another 15 mentions. Every request is acknowledged with 200; a slash command is answered
// inline, or told "working on it" and answered through its response_url, or (the flooder past
// its burst of 10) politely told to wait; every mention and DM within the limit is answered.
// Identical questions share one evaluation. Ack times are logged, not asserted (house rule).
func TestHTTPFloodAcksNeverWait(t *testing.T) {
	// The engine's /metrics, counting scrapes: shared evaluations show as few scrapes.
	inner := testkit.VLLM(t).Config.Handler
	var scrapes atomic.Int64
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scrapes.Add(1)
		inner.ServeHTTP(w, r)
	}))
	defer metrics.Close()
	var users, admins []string
	for i := range 100 {
		users = append(users, fmt.Sprintf("U%03d", i))
	}
	admins = append(admins, users...)
	e := newHTTPEnv(t, botOpts{Metrics: []string{metrics.URL + "/metrics"}, Env: config.Env{Admins: admins}})
	frozen := time.Now()
	e.app.limiter.now = func() time.Time { return frozen } // no refill: the limit's counts are exact
	out := filepath.Join(e.Dir, "out")
	slash := []struct{ kind, command, text, want string }{
		{"eta", "/eta", "", "synth · ETA"}, {"eta run", "/eta", "synth", "synth · ETA"}, {"storage", "/storage", "", "synth · storage"},
		{"storage path", "/storage", out, "synth · space"}, {"status", "/runwatch", "status", "synth · status"},
		{"help", "/runwatch", "help", "runwatch help"}, {"runs", "/runwatch", "runs", "*Runs*"}, {"chart", "/runwatch", "chart", "chart"},
		{"snooze", "/runwatch", "snooze 1h", "snoozed for 1 h"}, {"unsnooze", "/runwatch", "unsnooze", "on."}, // "are back on." or "were not snoozed: they are on.", in whichever order it ran with snooze
		{"stage", "/runwatch", "stage review done", "review"},
	}
	want := map[string]string{}
	for _, k := range slash {
		want[k.kind] = k.want
	}
	kinds := len(slash) + 2 // and mentions, DMs
	var reqs []*floodRequest
	add := func(user string, i int) {
		r := &floodRequest{user: user}
		switch k := i % kinds; {
		case k < len(slash):
			r.path, r.kind, r.respName = "/slack/commands", slash[k].kind, fmt.Sprintf("r%d", len(reqs))
			r.body = testkit.SlashBody(slash[k].command, slash[k].text, "C0SYNTH", user, e.fake.ResponseURL(r.respName))
		case k == len(slash):
			r.path, r.kind = "/slack/events", "mention"
			r.body = testkit.MentionEvent(fmt.Sprintf("Ev%d", len(reqs)), "<@U111> ETA?", user, "C0SYNTH", fmt.Sprintf("1700000100.%06d", len(reqs)), "")
		default:
			r.path, r.kind = "/slack/events", "dm"
			r.body, _ = json.Marshal(map[string]any{"type": "event_callback", "event_id": fmt.Sprintf("Ev%d", len(reqs)), "team_id": "T111",
				"event": map[string]any{"type": "message", "channel_type": "im", "channel": "D" + user, "user": user, "text": "how fast are we going?", "ts": fmt.Sprintf("1700000200.%06d", len(reqs))}})
		}
		reqs = append(reqs, r)
	}
	for i := range 1000 {
		add(users[i%len(users)], i/len(users)+i) // each user sends 10, of different kinds
	}
	for i := range 30 {
		add("UFLOOD", i*kinds) // the flooder asks /eta 30 times
	}
	for range 15 {
		add("UFLOODM", len(slash)) // and another mentions the bot 15 times
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1100}}
	var wg sync.WaitGroup
	startFlood := make(chan struct{})
	for _, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+r.path, bytes.NewReader(r.body))
			ct := "application/x-www-form-urlencoded"
			if r.path == "/slack/events" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
			req.Header.Set("X-Slack-Request-Timestamp", ts)
			req.Header.Set("X-Slack-Signature", testkit.Sign(e.secret, ts, r.body))
			<-startFlood
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			resp.Body.Close()
			r.took, r.status, r.ack = time.Since(start), resp.StatusCode, b.String()
		}()
	}
	close(startFlood)
	wg.Wait()

	var working, inline, limited, events []*floodRequest
	for _, r := range reqs {
		if r.status != http.StatusOK {
			t.Fatalf("%s from %s = %d %q; want 200", r.kind, r.user, r.status, r.ack)
		}
		if r.path == "/slack/events" {
			events = append(events, r)
			continue
		}
		var msg struct{ Text string }
		if err := json.Unmarshal([]byte(r.ack), &msg); err != nil {
			t.Fatalf("%s ack is not JSON: %v\n%s", r.kind, err, r.ack)
		}
		switch {
		case strings.Contains(msg.Text, "Working on it"):
			working = append(working, r)
		case strings.Contains(msg.Text, "Ask again in"):
			limited = append(limited, r)
			if r.user != "UFLOOD" {
				t.Errorf("%s from %s was rate limited; want only the flooder limited", r.kind, r.user)
			}
		default:
			inline = append(inline, r)
			if !strings.Contains(msg.Text, want[r.kind]) {
				t.Errorf("inline answer to %s = %q; want it to contain %q", r.kind, msg.Text, want[r.kind])
			}
		}
	}
	if len(limited) != 20 {
		t.Errorf("rate-limited /eta of the flooder = %d; want 20 (30 asked, a burst of 10)", len(limited))
	}
	// Every "working on it" gets its answer through its own response_url.
	e.fake.Wait(t, "response_url", len(working))
	answers := map[string]string{}
	for _, c := range e.fake.Calls("response_url") {
		var m struct{ Text string }
		json.Unmarshal(c.Body, &m)
		answers[strings.TrimPrefix(c.Form.Get("_path"), "/response/")] = m.Text
	}
	for _, r := range working {
		if a, ok := answers[r.respName]; !ok || !strings.Contains(a, want[r.kind]) {
			t.Errorf("follow-up to %s via its response_url = %q (sent %v); want it to contain %q", r.kind, a, ok, want[r.kind])
		}
	}
	// Every mention and DM within the limit is answered where it was asked.
	e.app.wait(60 * time.Second)
	answered := len(e.fake.Calls("chat.postMessage")) + len(e.fake.Calls("chat.postEphemeral"))
	// The mention flooder: 10 answered, told once to wait, 4 left unanswered.
	if answered != len(events)-4 {
		t.Errorf("mention and DM answers = %d; want %d, one per event within the limit and one 'ask again' to the flooder", answered, len(events)-4)
	}
	told := 0
	for _, c := range e.fake.Calls("") {
		if (c.Method == "chat.postMessage" || c.Method == "chat.postEphemeral") && strings.Contains(c.Form.Get("text"), "Ask again in") {
			told++
		}
	}
	if told != 1 {
		t.Errorf("the mention flooder was told to wait %d times; want once", told)
	}
	if n := len(e.fake.Calls("response_url")); n != len(working) {
		t.Errorf("response_url follow-ups = %d; want %d, one per 'working on it'", n, len(working))
	}
	durs := make([]time.Duration, 0, len(reqs))
	for _, r := range reqs {
		durs = append(durs, r.took)
	}
	slices.Sort(durs)
	pct := func(p float64) time.Duration { return durs[int(p*float64(len(durs)-1))].Round(time.Millisecond) }
	scraping := 0
	for _, r := range reqs {
		if r.kind == "eta" || r.kind == "eta run" || r.kind == "status" || r.kind == "mention" || r.kind == "dm" {
			scraping++
		}
	}
	t.Logf("figure: %d concurrent signed requests (%d kinds: %d slash, %d events; 100 users + 2 flooders): all 200; slash %d inline, %d 'working on it' then answered via response_url, %d rate limited (flooder: 30 asked, burst 10); %d mention/DM answers (a mention flooder: 15 asked, 10 answered, told once to wait); %d metrics scrapes for %d questions that read them; ack p50 %v, p99 %v, max %v",
		len(reqs), kinds, len(reqs)-len(events), len(events), len(inline), len(working), len(limited), answered, scrapes.Load(), scraping, pct(0.5), pct(0.99), durs[len(durs)-1].Round(time.Millisecond))
}
