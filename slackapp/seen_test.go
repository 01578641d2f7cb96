package slackapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"runwatch/config"
	"runwatch/internal/botmetrics"
	"runwatch/internal/testkit"
	"runwatch/state"
)

// TestHTTPEventAnsweredOnceAcrossRestart: a mention is answered, the process restarts over the same state
// directory, and Slack redelivers the event (its acknowledgement lost with the process): the new process
// acknowledges it and does not answer it a second time. A new event after the restart is answered.
func TestHTTPEventAnsweredOnceAcrossRestart(t *testing.T) {
	metrics := testkit.VLLM(t)
	e := newHTTPEnv(t, botOpts{Metrics: []string{metrics.URL + "/metrics"}})
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// One app and HTTP mode per "process", each restoring the delivered requests from the state directory.
	process := func() (*App, *httptest.Server) {
		ctx, cancel := context.WithCancel(context.Background())
		app := NewApp(ctx, e.bot, e.app.api, e.app.self, e.metrics, e.app.log)
		if err := app.seen.persist(dir, func(err error) { t.Errorf("seen journal: %v", err) }); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(NewHTTPMode(app, config.NewSecret(e.secret), e.metrics, e.app.log).Handler())
		t.Cleanup(func() { srv.Close(); cancel(); app.Wait(10 * time.Second) })
		return app, srv
	}
	deliver := func(srv *httptest.Server, body []byte, retry string) {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/slack/events", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", testkit.Sign(e.secret, ts, body))
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
	body := testkit.MentionEvent("Ev900", "<@U111> ETA?", "U222", "C0SYNTH", "1700000100.000100", "")

	first, srv1 := process()
	deliver(srv1, body, "")
	first.Wait(10 * time.Second)
	if n := len(e.fake.Calls("chat.postMessage")); n != 1 {
		t.Fatalf("answers before the restart = %d; want 1", n)
	}
	srv1.Close()

	second, srv2 := process()
	deliver(srv2, body, "1")
	second.Wait(10 * time.Second)
	if n := len(e.fake.Calls("chat.postMessage")); n != 1 {
		t.Errorf("answers after Slack redelivered the event across a restart = %d; want still 1", n)
	}
	deliver(srv2, testkit.MentionEvent("Ev901", "<@U111> ETA?", "U222", "C0SYNTH", "1700000200.000100", ""), "")
	second.Wait(10 * time.Second)
	if n := len(e.fake.Calls("chat.postMessage")); n != 2 {
		t.Errorf("answers after a new event = %d; want 2", n)
	}
}

// TestSeenJournalWindowAndBound: keys older than the window are not restored, the newest max are (the bound
// gave up the oldest, past seenKeep, for room), and the journal is compacted to them.
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
	s.first("event:a")
	now = now.Add(seenKeep + time.Second) // "event:old" and "event:a" may go for room now, oldest first
	for _, k := range []string{"event:b", "event:c", "event:d"} {
		if !s.first(k) {
			t.Fatalf("first(%q) = false; want room made by dropping a key past seenKeep", k)
		}
	}
	now = now.Add(seenWindow / 2) // "event:old" is past the window now
	r := newSlackSeen(3)
	r.now = func() time.Time { return now }
	if err := r.persist(dir, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	lines, err := os.ReadFile(filepath.Join(dir.Path(), seenJournal))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(lines, []byte("\n")); n != 3 {
		t.Errorf("journal after the restart holds %d lines; want the 3 restored keys", n)
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

// TestSlackSeenKeepsReplayWindow: 5,000 distinct deliveries inside Slack's redelivery window (20 a second
// for 250 s, on an injected clock), none refused, and a redelivery of the first is recognised: a bound
// that forgets the least recent key (4,096 of them) answered it again. After the window, memory shrinks
// to what is new. The journal keeps every key across a restart and is compacted.
func TestSlackSeenKeepsReplayWindow(t *testing.T) {
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_800_000_000, 0)
	now := start
	s := newSlackSeen(seenMax)
	s.now = func() time.Time { return now }
	if err := s.persist(dir, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	const n = 5000
	for i := range n {
		now = start.Add(time.Duration(i) * time.Second / 20)
		if got := s.admit(fmt.Sprintf("event:Ev%05d", i)); got != admitNew {
			t.Fatalf("delivery %d: admit = %v; want new", i, got)
		}
	}
	if got := s.admit("event:Ev00000"); got != admitSeen {
		t.Errorf("redelivery of the first of %d events %v after it: admit = %v; want seen", n, now.Sub(start), got)
	}
	r := newSlackSeen(seenMax)
	r.now = func() time.Time { return now }
	if err := r.persist(dir, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	if r.len() != n || r.admit("event:Ev00000") != admitSeen {
		t.Errorf("after a restart: %d keys, first event new again = %v; want %d, seen", r.len(), r.admit("event:Ev00000") != admitSeen, n)
	}
	now = now.Add(seenWindow + time.Second)
	if got := r.admit("event:later"); got != admitNew || r.len() != 1 {
		t.Errorf("past the window: admit = %v, %d keys; want new, 1 key", got, r.len())
	}
	// Compaction is by lines appended past four per key kept: at 1 key every 36 s about 100 are kept, and
	// 1,500 more lines rewrite the file to them.
	for i := range 1500 {
		now = now.Add(seenWindow / 100)
		r.admit(fmt.Sprintf("event:late%05d", i))
	}
	lines, err := os.ReadFile(filepath.Join(dir.Path(), seenJournal))
	if err != nil {
		t.Fatal(err)
	}
	if got := bytes.Count(lines, []byte("\n")); got > 4*r.len()+1024+r.len() || bytes.Contains(lines, []byte("event:Ev00000")) {
		t.Errorf("journal holds %d lines (first event in it: %v) for %d keys; want it compacted to the keys kept",
			got, bytes.Contains(lines, []byte("event:Ev00000")), r.len())
	}
}

// TestKeyJournalFullShrinks: with every key inside keep the journal refuses new keys, without scanning
// again until one can go; a refused key is not recorded; when the window passes, memory goes back to one key.
func TestKeyJournalFullShrinks(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := newKeyJournal("test.log", seenWindow, seenKeep, 100)
	s.now = func() time.Time { return now }
	for i := range 100 {
		s.admit(strconv.Itoa(i))
	}
	for i := range 50 {
		if got := s.admit("new" + strconv.Itoa(i)); got != admitFull {
			t.Fatalf("admit(new%d) with 100 keys inside keep = %v; want full", i, got)
		}
	}
	if got := s.admit("0"); got != admitSeen || s.len() != 100 {
		t.Errorf("admit(0) when full = %v (%d keys); want seen, 100 keys", got, s.len())
	}
	now = now.Add(seenKeep + time.Second)
	if got := s.admit("new0"); got != admitNew {
		t.Errorf("admit(new0) once the others are past keep = %v; want new (it was refused, not recorded)", got)
	}
	now = now.Add(seenWindow + time.Second)
	s.admit("new1")
	if s.len() != 1 {
		t.Errorf("keys after the window = %d; want 1", s.len())
	}
}

// TestHTTPEventRefusedWhenFull: with the delivered-request memory full of keys inside seenKeep, a new event
// is answered 503 with Retry-After (Slack retries it), not acknowledged and not answered; the retry, once a
// key is past seenKeep, is acknowledged and answered once, and only the oldest key went for it.
func TestHTTPEventRefusedWhenFull(t *testing.T) {
	metrics := testkit.VLLM(t)
	e := newHTTPEnv(t, botOpts{Metrics: []string{metrics.URL + "/metrics"}})
	now := time.Unix(1_800_000_000, 0)
	e.app.seen.mu.Lock()
	e.app.seen.max = 2
	e.app.seen.now = func() time.Time { return now }
	e.app.seen.mu.Unlock()
	deliver := func(id string, want int) {
		t.Helper()
		resp := e.post(t, "/slack/events", testkit.MentionEvent(id, "<@U111> ETA?", "U222", "C0SYNTH", "1700000100."+id[2:], ""), nil)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("delivery of %s = %d; want %d", id, resp.StatusCode, want)
		}
		if want == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			t.Errorf("delivery of %s refused without Retry-After", id)
		}
		e.app.Wait(10 * time.Second)
	}
	deliver("Ev000001", http.StatusOK)
	deliver("Ev000002", http.StatusOK)
	deliver("Ev000003", http.StatusServiceUnavailable)
	if n := len(e.fake.Calls("chat.postMessage")); n != 2 {
		t.Errorf("answers with the memory full = %d; want 2", n)
	}
	now = now.Add(seenKeep + time.Second)
	deliver("Ev000003", http.StatusOK) // the same body, signed in the same second: its signature was not kept
	if n := len(e.fake.Calls("chat.postMessage")); n != 3 {
		t.Errorf("answers after the retry = %d; want 3", n)
	}
	if got := e.app.seen.admit("event:Ev000002"); got != admitSeen {
		t.Errorf("Ev000002 after room was made = %v; want still seen (Ev000001, the oldest, went)", got)
	}
	if !strings.Contains(e.logs.String(), "too many requests inside the redelivery window") {
		t.Errorf("log has no word of the refusal:\n%s", e.logs.String())
	}
}

// TestBusyCommandSaysWhy: a slash command refused for want of room to remember it is answered, to its user
// alone, with why and what to do (Slack does not send a command again, and shows a 503 only as "failed");
// an event still gets the 503 with Retry-After that Slack retries.
func TestBusyCommandSaysWhy(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec := httptest.NewRecorder()
	busy(rec, botmetrics.New(), log, "/slack/commands")
	var msg slack.WebhookMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &msg); rec.Code != http.StatusOK || err != nil ||
		msg.ResponseType != slack.ResponseTypeEphemeral || !strings.Contains(msg.Text, "Ask again in a minute") {
		t.Errorf("busy command = %d %s; want 200 with an ephemeral word of why", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	busy(rec, botmetrics.New(), log, "/slack/events")
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("busy event = %d, Retry-After %q; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// TestSocketModeFullCommandSaysWhy: over Socket Mode the same command is acknowledged with that answer, and
// nothing is done for it.
func TestSocketModeFullCommandSaysWhy(t *testing.T) {
	e := newSocketEnv(t, botOpts{})
	now := time.Unix(1_800_000_000, 0)
	e.app.seen.mu.Lock()
	e.app.seen.max = 1
	e.app.seen.now = func() time.Time { return now }
	e.app.seen.mu.Unlock()
	e.ws.waitFor(t, "the first connection", func() bool { return e.ws.connections() == 1 })
	env := func(id string) []byte {
		return fixtureWith(t, "slack_socketmode_slash_commands_envelope_pysdk.json", func(m map[string]any) {
			m["envelope_id"] = id
			p := m["payload"].(map[string]any)
			p["command"], p["text"], p["user_id"] = "/eta", "", "U222"
		})
	}
	e.ws.send(env("slash-1"))
	e.ws.waitAck(t, "slash-1")
	e.ws.send(env("slash-2")) // no room to remember it
	e.ws.waitAck(t, "slash-2")
	e.ws.mu.Lock()
	var first, second string
	for _, a := range e.ws.acks {
		switch a.EnvelopeID {
		case "slash-1":
			first = string(a.Payload)
		case "slash-2":
			second = string(a.Payload)
		}
	}
	e.ws.mu.Unlock()
	if !strings.Contains(first, "synth · ETA") {
		t.Errorf("the first /eta's ack = %s; want the answer", first)
	}
	if !strings.Contains(second, "Ask again in a minute") || strings.Contains(second, "ETA") {
		t.Errorf("the refused /eta's ack = %s; want why, and no answer", second)
	}
}

// TestSeenJournalForgetSurvivesRestart: a key forgotten after its line was written stays forgotten across a
// restart (its tombstone line removes it on loading), a key admitted again after its tombstone is seen, and
// loading compacts the tombstones away. A journal from before tombstones, and the signature journal's older
// "<unix>:<digest>" lines, still load.
func TestSeenJournalForgetSurvivesRestart(t *testing.T) {
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	old := "1799999990 event:old\n1799999991:0badc0de\n"
	if err := os.WriteFile(filepath.Join(dir.Path(), seenJournal), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	restart := func() *keyJournal {
		s := newSlackSeen(seenMax)
		s.now = func() time.Time { return now }
		if err := s.persist(dir, func(err error) { t.Error(err) }); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := restart()
	for _, k := range []string{"envelope:refused", "envelope:again", "event:kept"} {
		if got := s.admit(k); got != admitNew {
			t.Fatalf("admit(%q) = %v; want new", k, got)
		}
	}
	s.forget("envelope:refused")
	s.forget("envelope:again")
	s.forget("envelope:never-admitted") // nothing to forget: no line
	if got := s.admit("envelope:again"); got != admitNew {
		t.Fatalf("admit(envelope:again) after forget = %v; want new", got)
	}
	lines, err := os.ReadFile(filepath.Join(dir.Path(), seenJournal))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(lines, []byte("\n"+seenTombstone)); n != 2 {
		t.Errorf("journal before the restart has %d tombstones; want 2:\n%s", n, lines)
	}

	r := restart()
	for _, c := range []struct {
		key  string
		want admission
	}{
		{"envelope:refused", admitNew}, // forgotten: Slack's redelivery is acted on
		{"envelope:again", admitSeen},  // admitted again after its tombstone
		{"event:kept", admitSeen},
		{"event:old", admitSeen},           // a line from before tombstones
		{"1799999991:0badc0de", admitSeen}, // a signature journal's older line
	} {
		if got := r.admit(c.key); got != c.want {
			t.Errorf("after a restart, admit(%q) = %v; want %v", c.key, got, c.want)
		}
	}
	if lines, err = os.ReadFile(filepath.Join(dir.Path(), seenJournal)); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(lines, []byte(seenTombstone+"envelope")) {
		t.Errorf("journal after loading still holds tombstones:\n%s", lines)
	}
}

// TestSeenJournalCloseErrorLogged: a journal whose close fails at the end of a serve is named in the log,
// not dropped; a clean close logs nothing.
func TestSeenJournalCloseErrorLogged(t *testing.T) {
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var out testkit.LogBuffer
	s := newSlackSeen(seenMax)
	if err := s.persist(dir, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	s.journal.Close() // the file's close fails from now on, as one that lost a late write would
	s.closeOrLog(out.Logger())
	if got := out.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "journal="+seenJournal) || !strings.Contains(got, "already closed") {
		t.Errorf("log after a failed close = %q; want a warning naming %s and the error", got, seenJournal)
	}
	if s.journal != nil {
		t.Errorf("journal kept after close; want keys in memory only")
	}

	out = testkit.LogBuffer{}
	r := newSlackSeen(seenMax)
	if err := r.persist(dir, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	r.closeOrLog(out.Logger())
	r.closeOrLog(out.Logger()) // closed already: nothing to close, nothing to say
	if got := out.String(); got != "" {
		t.Errorf("log after a clean close = %q; want nothing", got)
	}
}
