package handlers

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/state"
)

// TestHTTPEventAnsweredOnceAcrossRestart: a mention is answered, the process restarts over the same state
// directory, and Slack redelivers the event (its acknowledgement lost with the process): the new process
// acknowledges it and does not answer it a second time. A new event after the restart is answered.
func TestHTTPEventAnsweredOnceAcrossRestart(t *testing.T) {
	metrics := vllmMetrics(t)
	e := newHTTPEnv(t, botOpts{metrics: []string{metrics.URL + "/metrics"}})
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// One app and HTTP mode per "process", each restoring the delivered requests from the state directory.
	process := func() (*slackApp, *httptest.Server) {
		ctx, cancel := context.WithCancel(context.Background())
		app := newSlackApp(ctx, e.bot, e.app.api, e.app.self, e.metrics, e.app.log)
		if err := app.seen.persist(dir, func(err error) { t.Errorf("seen journal: %v", err) }); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(newHTTPMode(app, config.NewSecret(e.secret), e.metrics, e.app.log).handler())
		t.Cleanup(func() { srv.Close(); cancel(); app.wait(10 * time.Second) })
		return app, srv
	}
	deliver := func(srv *httptest.Server, body []byte, retry string) {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/slack/events", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", slackSign(e.secret, ts, body))
		if retry != "" {
			req.Header.Set("X-Slack-Retry-Num", retry)
			req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("delivery (retry %q) = %d; want 200", retry, resp.StatusCode)
		}
	}
	body := mentionEvent("Ev900", "<@U111> ETA?", "U222", "C0SYNTH", "1700000100.000100", "")

	first, srv1 := process()
	deliver(srv1, body, "")
	first.wait(10 * time.Second)
	if n := len(e.fake.Calls("chat.postMessage")); n != 1 {
		t.Fatalf("answers before the restart = %d; want 1", n)
	}
	srv1.Close()

	second, srv2 := process()
	deliver(srv2, body, "1")
	second.wait(10 * time.Second)
	if n := len(e.fake.Calls("chat.postMessage")); n != 1 {
		t.Errorf("answers after Slack redelivered the event across a restart = %d; want still 1", n)
	}
	deliver(srv2, mentionEvent("Ev901", "<@U111> ETA?", "U222", "C0SYNTH", "1700000200.000100", ""), "")
	second.wait(10 * time.Second)
	if n := len(e.fake.Calls("chat.postMessage")); n != 2 {
		t.Errorf("answers after a new event = %d; want 2", n)
	}
}

// TestSeenJournalWindowAndBound: keys older than the window are not restored, the newest max are, and the
// journal is compacted to them.
func TestSeenJournalWindowAndBound(t *testing.T) {
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	s := newSlackSeen(3)
	s.now = func() time.Time { return now }
	if err := s.persist(dir, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	s.first("event:old")
	now = now.Add(seenWindow / 2)
	for _, k := range []string{"event:a", "event:b", "event:c", "event:d"} {
		s.first(k)
	}
	now = now.Add(seenWindow/2 + time.Second) // "event:old" is past the window now
	r := newSlackSeen(3)
	r.now = func() time.Time { return now }
	if err := r.persist(dir, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  string
		want bool
	}{{"event:b", false}, {"event:c", false}, {"event:d", false}, {"event:old", true}, {"event:a", true}} {
		if got := r.first(c.key); got != c.want {
			t.Errorf("after a restart, first(%q) = %v; want %v", c.key, got, c.want)
		}
	}
}
