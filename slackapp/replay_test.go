package slackapp

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/reports"
	"runwatch/state"
)

// TestHTTPReplayHexCaseAndRestart is the red team's finding 2: an admin's signed `snooze 14d`,
// then an unsnooze; the first request sent again with its digest upper-cased (Slack's check
// decodes hex in either case) and, after a restart over the same state directory, as it was. Both
// replays are refused and the run stays unsnoozed; a new request is answered.
func TestHTTPReplayHexCaseAndRestart(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// One HTTP mode per "process", each restoring the seen signatures from the state directory.
	serve := func() *httptest.Server {
		hm := NewHTTPMode(e.app, config.NewSecret(e.secret), e.metrics, e.app.log)
		if err := hm.replays.persist(dir, func(err error) { t.Errorf("replay journal: %v", err) }); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(hm.Handler())
		t.Cleanup(srv.Close)
		return srv
	}
	send := func(srv *httptest.Server, body []byte, ts, sig string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/slack/commands", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	snoozed := func() bool { _, ok := e.bot.Monitor().SnoozedUntil("synth"); return ok }
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	snooze := testkit.SlashBody("/runwatch", "snooze 14d synth", "C0SYNTH", "UADMIN", "")
	sig := testkit.Sign(e.secret, ts, snooze)
	upper := "v0=" + strings.ToUpper(strings.TrimPrefix(sig, "v0="))

	first := serve()
	if code := send(first, snooze, ts, sig); code != http.StatusOK || !snoozed() {
		t.Fatalf("snooze 14d = %d, snoozed %v; want 200 and snoozed", code, snoozed())
	}
	unsnooze := testkit.SlashBody("/runwatch", "unsnooze synth", "C0SYNTH", "UADMIN", "")
	if code := send(first, unsnooze, ts, testkit.Sign(e.secret, ts, unsnooze)); code != http.StatusOK || snoozed() {
		t.Fatalf("unsnooze = %d, snoozed %v; want 200 and not snoozed", code, snoozed())
	}
	refused := 0
	if code := send(first, snooze, ts, upper); code != http.StatusUnauthorized || snoozed() {
		t.Errorf("snooze replayed with the digest upper-cased = %d, snoozed %v; want 401 and not snoozed", code, snoozed())
	} else {
		refused++
	}
	first.Close()

	second := serve() // the restart: nothing in memory, the journal on disk
	for _, s := range []string{sig, upper} {
		if code := send(second, snooze, ts, s); code != http.StatusUnauthorized || snoozed() {
			t.Errorf("snooze replayed after a restart (%.8s…) = %d, snoozed %v; want 401 and not snoozed", s, code, snoozed())
		} else {
			refused++
		}
	}
	now := strconv.FormatInt(time.Now().Unix()+1, 10)
	status := testkit.SlashBody("/runwatch", "runs", "C0SYNTH", "UADMIN", "")
	if code := send(second, status, now, testkit.Sign(e.secret, now, status)); code != http.StatusOK {
		t.Errorf("a new request after the restart = %d; want 200", code)
	}
	if t.Failed() {
		return
	}
	t.Logf("figure: admin's snooze 14d replayed after an unsnooze (hex upper-cased, and as sent after a restart): %d of 3 replays refused with 401, run left unsnoozed", refused)
}

func TestReplayCacheExpiresAndCompacts(t *testing.T) {
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	c := newReplayCache(func() time.Time { return now })
	if err := c.persist(dir, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	old := strconv.FormatInt(now.Add(-10*time.Minute).Unix(), 10)
	fresh := strconv.FormatInt(now.Unix(), 10)
	if !c.first(old, "v0=aa") || !c.first(fresh, "v0=bb") || c.first(fresh, "v0=BB") {
		t.Fatal("first: want aa and bb new, BB the same as bb")
	}
	if c.first(fresh, "v0=zz") || c.first(fresh, "v1=bb") {
		t.Error("first(undecodable signature) = true; want false")
	}
	d := newReplayCache(func() time.Time { return now })
	if err := d.persist(dir, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	if d.keys.len() != 1 || d.first(fresh, "v0=bb") != false || d.first(old, "v0=aa") != true {
		t.Errorf("after a restart: %d keys; want only the fresh key kept", d.keys.len())
	}
}

func TestEventsWithoutEventIDAnswered(t *testing.T) {
	metrics := testkit.VLLM(t)
	e := newHTTPEnv(t, botOpts{Metrics: []string{metrics.URL + "/metrics"}})
	// The third is Slack redelivering the first, signed anew.
	now := time.Now().Unix()
	for i, ts := range []string{"1700000100.000100", "1700000200.000200", "1700000100.000100"} {
		body := testkit.MentionEvent("", "<@U111> ETA?", "U222", "C0SYNTH", ts, "")
		at := strconv.FormatInt(now+int64(i), 10)
		h := http.Header{"X-Slack-Request-Timestamp": {at}, "X-Slack-Signature": {testkit.Sign(e.secret, at, body)}}
		if resp := e.post(t, "/slack/events", body, h); resp.StatusCode != http.StatusOK {
			t.Fatalf("event %d = %d", i, resp.StatusCode)
		}
	}
	e.app.Wait(10 * time.Second)
	if n := len(e.fake.Calls("chat.postMessage")); n != 2 {
		t.Errorf("answers to 2 distinct mentions without event_id (one delivered twice) = %d; want 2", n)
	} else {
		t.Logf("figure: 3 deliveries of 2 mentions without event_id: %d answers", n)
	}
}

// TestReplayJournalFromBeforeTheMerge: a signature journal written before the replay cache and the delivered
// requests shared one mechanism ("<ts>:<digest>" lines) is read after an upgrade: its signatures in their
// window are still refused.
func TestReplayJournalFromBeforeTheMerge(t *testing.T) {
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	j, err := dir.OpenJournal(replayJournal)
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	if _, err := j.Append(ts + ":bb"); err != nil {
		t.Fatal(err)
	}
	j.Close()
	c := newReplayCache(func() time.Time { return now })
	if err := c.persist(dir, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	if c.first(ts, "v0=bb") || !c.first(ts, "v0=cc") {
		t.Error("after an upgrade: want the journaled signature refused and a new one accepted")
	}
}

// TestHTTPEveryEndpointRefusesForgeries sends an admin's `snooze 14d` through each of Slack's
// three endpoints (a mention, a slash command, a button press) in every shape a forger or a replay
// takes: unsigned, a timestamp without a signature, stale, signed over another body, oversized,
// and the genuine request twice. Each endpoint acts once, on its genuine request, and on nothing
// else: the run is snoozed only by it and no other request reaches Slack's API.
func TestHTTPEveryEndpointRefusesForgeries(t *testing.T) {
	e := newHTTPEnv(t, botOpts{})
	post, ts := postStatus(t, e)
	endpoints := []struct {
		path string
		body []byte
	}{
		{"/slack/events", testkit.MentionEvent("EvSnooze1", "<@U111> snooze 14d", "UADMIN", "C0SYNTH", "1700000500.000100", "")},
		{"/slack/commands", testkit.SlashBody("/runwatch", "snooze 14d synth", "C0SYNTH", "UADMIN", e.fake.ResponseURL("snooze"))},
		{"/slack/interactions", pressPayload(t, e.fake, post, ts, "UADMIN", reports.MenuID, "snooze:14d")},
	}
	snoozed := func() bool { _, ok := e.bot.Monitor().SnoozedUntil("synth"); return ok }
	for _, ep := range endpoints {
		now := strconv.FormatInt(time.Now().Unix(), 10)
		stale := strconv.FormatInt(time.Now().Add(-5*time.Minute-10*time.Second).Unix(), 10)
		big := append(append([]byte{}, ep.body...), make([]byte, maxSlackBody)...)
		forged := []struct {
			name   string
			body   []byte
			header http.Header
			status int
		}{
			{"unsigned", ep.body, http.Header{}, http.StatusUnauthorized},
			{"timestamp only", ep.body, http.Header{"X-Slack-Request-Timestamp": {now}}, http.StatusUnauthorized},
			{"stale", ep.body, http.Header{"X-Slack-Request-Timestamp": {stale}, "X-Slack-Signature": {testkit.Sign(e.secret, stale, ep.body)}}, http.StatusUnauthorized},
			{"body altered after signing", append(append([]byte{}, ep.body...), ' '), http.Header{"X-Slack-Request-Timestamp": {now},
				"X-Slack-Signature": {testkit.Sign(e.secret, now, ep.body)}}, http.StatusUnauthorized},
			{"oversized, signed", big, http.Header{"X-Slack-Request-Timestamp": {now}, "X-Slack-Signature": {testkit.Sign(e.secret, now, big)}}, http.StatusRequestEntityTooLarge},
		}
		calls := len(e.fake.Calls(""))
		for _, f := range forged {
			if resp := e.post(t, ep.path, f.body, f.header); resp.StatusCode != f.status {
				t.Errorf("%s %s = %d; want %d", ep.path, f.name, resp.StatusCode, f.status)
			}
		}
		e.waitIdle()
		if snoozed() || len(e.fake.Calls("")) != calls {
			t.Fatalf("%s: after forged requests snoozed %v, Slack calls %v; want nothing done", ep.path, snoozed(), e.fake.Methods()[calls:])
		}
		genuine := http.Header{"X-Slack-Request-Timestamp": {now}, "X-Slack-Signature": {testkit.Sign(e.secret, now, ep.body)}}
		if resp := e.post(t, ep.path, ep.body, genuine); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s genuine = %d; want 200", ep.path, resp.StatusCode)
		}
		if resp := e.post(t, ep.path, ep.body, genuine); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s genuine, replayed = %d; want 401", ep.path, resp.StatusCode)
		}
		e.waitIdle()
		if !snoozed() {
			t.Fatalf("%s: the genuine snooze 14d did not snooze the run", ep.path)
		}
		if err := e.bot.Monitor().Snooze("synth", time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
}
