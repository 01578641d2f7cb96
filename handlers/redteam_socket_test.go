package handlers

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"runwatch/reports"
	"runwatch/state"
)

// TestSocketModePressNotActedOnTwiceAcrossRestart is the red team's attack on Socket Mode presses: an admin's
// "Snooze 1 day" press is delivered, then a non-admin's press of the same button, then, after a restart over
// the same state directory, the admin's envelope again and the same press in a new envelope (Slack's retry).
// The admin's press snoozes once; the non-admin's is refused, changing nothing; after the restart neither
// redelivery is acted on, though each is acknowledged.
func TestSocketModePressNotActedOnTwiceAcrossRestart(t *testing.T) {
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	process := func() *socketEnv {
		e := newSocketEnv(t, botOpts{})
		if err := e.app.seen.persist(dir, func(err error) { t.Errorf("seen journal: %v", err) }); err != nil {
			t.Fatal(err)
		}
		e.ws.waitFor(t, "the connection", func() bool { return e.ws.connections() == 1 })
		return e
	}
	envelope := func(id string, payload []byte) []byte {
		form, _ := url.ParseQuery(string(payload))
		return []byte(`{"envelope_id":"` + id + `","type":"interactive","accepts_response_payload":false,"payload":` + form.Get("payload") + `}`)
	}

	first := process()
	post, ts := first.statusPost(t)
	admin := pressPayload(t, first.fake, post, ts, "UADMIN", reports.MenuID, "snooze:1d")
	first.ws.send(envelope("env-admin", admin))
	first.ws.waitAck(t, "env-admin")
	first.app.wait(10 * time.Second)
	until, ok := first.Mon.SnoozedUntil("synth")
	if !ok {
		t.Fatalf("the admin's press did not snooze the run")
	}
	if err := first.Mon.Snooze("synth", time.Time{}); err != nil {
		t.Fatal(err)
	}
	first.ws.send(envelope("env-user", pressPayload(t, first.fake, post, ts, "U0SOMEONE", reports.MenuID, "snooze:1d")))
	first.ws.waitAck(t, "env-user")
	first.app.wait(10 * time.Second)
	if _, ok := first.Mon.SnoozedUntil("synth"); ok {
		t.Errorf("a non-admin's press snoozed the run")
	}
	refused := false
	for _, c := range first.fake.Calls("chat.postEphemeral") {
		refused = refused || c.Form.Get("user") == "U0SOMEONE" && strings.Contains(c.Form.Get("text"), "only runwatch admins")
	}
	if !refused {
		t.Errorf("the non-admin was not told why nothing changed: %v", first.fake.Methods())
	}

	second := process()
	second.ws.send(envelope("env-admin", admin))
	second.ws.send(envelope("env-admin-retry", admin))
	second.ws.waitFor(t, "both acks", func() bool {
		return len(second.ws.acksOf("env-admin")) == 1 && len(second.ws.acksOf("env-admin-retry")) == 1
	})
	second.app.wait(10 * time.Second)
	if again, ok := second.Mon.SnoozedUntil("synth"); ok {
		t.Errorf("after a restart the admin's press, delivered again, snoozed the run until %v (first: %v); want it acted on once", again, until)
	}
	if n := len(second.fake.Calls("chat.update")) + len(second.fake.Calls("chat.postEphemeral")); n != 0 {
		t.Errorf("Slack calls for the redelivered press after a restart = %d (%v); want none", n, second.fake.Methods())
	}
}
