package slackapp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"runwatch/internal/redact"
	"runwatch/internal/testkit"
	"runwatch/reports"
	"runwatch/state"
)

// socketAck is an acknowledgement the client sent back.
type socketAck struct {
	EnvelopeID string          `json:"envelope_id"`
	Payload    json.RawMessage `json:"payload"`
}

// socketFake speaks Slack's side of Socket Mode on a local websocket: it greets each connection
// with a hello from the fixtures, pings like Slack, forwards envelopes and collects acks.
type socketFake struct {
	t     *testing.T
	srv   *httptest.Server
	hello [][]byte // hello per connection, in turn

	mu    sync.Mutex
	conn  *websocket.Conn
	conns int
	acks  []socketAck
	wmu   sync.Mutex // serialises writes to conn
	event chan struct{}
}

func newSocketFake(t *testing.T, hello ...[]byte) *socketFake {
	t.Helper()
	f := &socketFake{t: t, hello: hello, event: make(chan struct{}, 1)}
	// Slack's client sends Origin: https://api.slack.com; any origin is fine for the fake.
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		f.mu.Lock()
		h := f.hello[min(f.conns, len(f.hello)-1)]
		f.conn = c
		f.conns++
		f.mu.Unlock()
		f.write(c, websocket.TextMessage, h)
		f.wmu.Lock()
		c.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second))
		f.wmu.Unlock()
		f.signal()
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			var a socketAck
			if json.Unmarshal(msg, &a) == nil && a.EnvelopeID != "" {
				f.mu.Lock()
				f.acks = append(f.acks, a)
				f.mu.Unlock()
				f.signal()
			}
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *socketFake) URL() string { return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/link" }

func (f *socketFake) signal() {
	select {
	case f.event <- struct{}{}:
	default:
	}
}

func (f *socketFake) write(c *websocket.Conn, typ int, b []byte) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if err := c.WriteMessage(typ, b); err != nil {
		f.t.Errorf("websocket write: %v", err)
	}
}

// send pushes an envelope to the current connection.
func (f *socketFake) send(b []byte) {
	f.mu.Lock()
	c := f.conn
	f.mu.Unlock()
	f.write(c, websocket.TextMessage, b)
}

func (f *socketFake) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-f.event:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("waited 20s for %s", what)
		}
	}
}

func (f *socketFake) connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

// acksOf is the acknowledgements of an envelope so far, in order.
func (f *socketFake) acksOf(envelope string) []socketAck {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []socketAck
	for _, a := range f.acks {
		if a.EnvelopeID == envelope {
			out = append(out, a)
		}
	}
	return out
}

// waitAck waits for the acknowledgement of an envelope.
func (f *socketFake) waitAck(t *testing.T, envelope string) socketAck {
	t.Helper()
	var got socketAck
	f.waitFor(t, "the ack of "+envelope, func() bool {
		acks := f.acksOf(envelope)
		if len(acks) > 0 {
			got = acks[0]
		}
		return len(acks) > 0
	})
	return got
}

// etaMention is the app_mention envelope fixture asking "ETA?", as envelope env-ID carrying event Ev-ID.
func etaMention(t *testing.T, id string) []byte {
	return fixtureWith(t, "slack_socketmode_events_api_app_mention_envelope_pysdk.json", func(m map[string]any) {
		m["envelope_id"] = "env-" + id
		p := m["payload"].(map[string]any)
		p["event_id"] = "Ev-" + id
		p["event"].(map[string]any)["text"] = "<@U111> ETA?"
	})
}

// fixtureWith decodes a JSON fixture, lets edit change it, and encodes it again.
func fixtureWith(t *testing.T, name string, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readFixture(t, name), &m); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type socketEnv struct {
	*botEnv
	fake   *testkit.Slack
	ws     *socketFake
	app    *App
	done   chan error
	cancel context.CancelFunc
	logs   *testkit.LogBuffer
}

func newSocketEnv(t *testing.T, o botOpts) *socketEnv {
	t.Helper()
	e := &socketEnv{botEnv: newBotEnv(t, o), fake: testkit.NewSlack(t), logs: &testkit.LogBuffer{}, done: make(chan error, 1)}
	e.ws = newSocketFake(t, readFixture(t, "slack_socketmode_hello_pysdk.json"), readFixture(t, "slack_socketmode_hello_slackgo.json"))
	e.fake.WSURL = e.ws.URL()
	log := redact.Logger(e.logs.Logger(), redact.New(testkit.BotToken.Reveal(), testkit.AppToken.Reveal()))
	api, _ := newTestAPI(t, e.fake, log, nil)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.app = NewApp(ctx, e.bot, api, Identity{UserID: "U111"}, nil, log)
	sm := NewSocketMode(e.app, testkit.AppToken, testkit.BotToken, e.fake.APIURL(), nil, log)
	go func() { e.done <- sm.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-e.done:
			if err != nil {
				t.Errorf("socket mode run = %v; want nil after cancel", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("socket mode did not stop")
		}
		e.app.Wait(10 * time.Second)
		if l := e.logs.String(); strings.Contains(l, testkit.AppToken.Reveal()) || strings.Contains(l, testkit.BotToken.Reveal()) {
			t.Errorf("a token reached the log:\n%s", l)
		}
	})
	return e
}

func TestSocketMode(t *testing.T) {
	metrics := testkit.VLLM(t)
	e := newSocketEnv(t, botOpts{Metrics: []string{metrics.URL + "/metrics"}})
	e.ws.waitFor(t, "the first connection", func() bool { return e.ws.connections() == 1 })
	if opens := e.fake.Calls("apps.connections.open"); len(opens) != 1 {
		t.Fatalf("apps.connections.open calls = %d; want 1", len(opens))
	}

	// The real app_mention envelope: it mentions only the bot, so the answer is the short help,
	// shown to the asker in the thread of the mention.
	mention := readFixture(t, "slack_socketmode_events_api_app_mention_envelope_pysdk.json")
	e.ws.send(mention)
	e.ws.waitAck(t, "cda4159a-72a5-4744-aba3-4d66eb52682b")
	e.app.Wait(10 * time.Second)
	eph := e.fake.Wait(t, "chat.postEphemeral", 1)
	if c := eph[0]; c.Form.Get("channel") != "C111" || c.Form.Get("user") != "U222" || c.Form.Get("thread_ts") != "1610241741.000200" ||
		!strings.Contains(c.Form.Get("text"), "Try one of these") {
		t.Errorf("answer to the fixture mention = %v; want the short help to U222 in C111, thread 1610241741.000200", c.Form)
	}

	// Redelivered: the same envelope, then the same event in a new envelope (Slack's retry).
	e.ws.send(mention)
	retry := fixtureWith(t, "slack_socketmode_events_api_app_mention_envelope_pysdk.json", func(m map[string]any) {
		m["envelope_id"] = "retry-envelope-1"
		m["retry_attempt"] = 1
		m["retry_reason"] = "timeout"
	})
	e.ws.send(retry)
	e.ws.waitAck(t, "retry-envelope-1")
	e.app.Wait(10 * time.Second)
	if n := len(e.fake.Calls("chat.postEphemeral")) + len(e.fake.Calls("chat.postMessage")); n != 1 {
		t.Errorf("answers after two redeliveries = %d; want still 1", n)
	}

	// A question in the same shape, asked by a person; and the same mention written by the bot.
	eta := fixtureWith(t, "slack_socketmode_events_api_app_mention_envelope_pysdk.json", func(m map[string]any) {
		m["envelope_id"] = "env-eta"
		p := m["payload"].(map[string]any)
		p["event_id"] = "Ev-eta"
		p["event"].(map[string]any)["text"] = "<@U111> ETA?"
	})
	self := fixtureWith(t, "slack_socketmode_events_api_app_mention_envelope_pysdk.json", func(m map[string]any) {
		m["envelope_id"] = "env-self"
		p := m["payload"].(map[string]any)
		p["event_id"] = "Ev-self"
		p["event"].(map[string]any)["user"] = "U111"
	})
	e.ws.send(self)
	e.ws.send(eta)
	e.ws.waitAck(t, "env-eta")
	e.ws.waitAck(t, "env-self")
	e.app.Wait(10 * time.Second)
	sent := e.fake.Wait(t, "chat.postMessage", 1)
	if len(sent) != 1 || sent[0].Form.Get("thread_ts") != "1610241741.000200" || !strings.Contains(sent[0].BlocksText(t), "synth · ETA") {
		t.Errorf("posts = %d; want one ETA answer in the mention's thread (and nothing for the bot's own mention)", len(sent))
	}

	// Slash commands: the answer rides in the acknowledgement.
	tests := []struct {
		name, command, envelope string
		ephemeral               bool
		want                    string
	}{
		{"not ours", "", "1d3c79ab-0ffb-41f3-a080-d19e85f53649", true, "Try one of these"},
		{"eta", "/eta", "slash-eta", false, "synth · ETA"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := fixtureWith(t, "slack_socketmode_slash_commands_envelope_pysdk.json", func(m map[string]any) {
				m["envelope_id"] = tc.envelope
				if tc.command != "" {
					m["payload"].(map[string]any)["command"] = tc.command
				}
			})
			e.ws.send(env)
			ack := e.ws.waitAck(t, tc.envelope)
			var msg struct {
				Text         string            `json:"text"`
				ResponseType string            `json:"response_type"`
				Blocks       []json.RawMessage `json:"blocks"`
			}
			if err := json.Unmarshal(ack.Payload, &msg); err != nil {
				t.Fatalf("ack payload %s: %v", ack.Payload, err)
			}
			if (msg.ResponseType == "ephemeral") != tc.ephemeral || !strings.Contains(msg.Text, tc.want) || len(msg.Blocks) == 0 {
				t.Errorf("ack payload = %+v; want ephemeral %v with %q and blocks", msg, tc.ephemeral, tc.want)
			}
		})
	}

	// Interactivity is acknowledged, without a payload.
	e.ws.send(readFixture(t, "slack_socketmode_interactive_shortcut_envelope_pysdk.json"))
	if ack := e.ws.waitAck(t, "57d6a792-4d35-4d0b-b6aa-3361493e1caf"); len(ack.Payload) != 0 && string(ack.Payload) != "null" {
		t.Errorf("interactive ack payload = %s; want none", ack.Payload)
	}

	// Slack asks the client to reconnect: it opens a new connection and keeps answering.
	e.ws.send(readFixture(t, "slack_socketmode_disconnect_slackgo.json"))
	e.ws.waitFor(t, "the second connection", func() bool { return e.ws.connections() == 2 })
	if opens := e.fake.Calls("apps.connections.open"); len(opens) != 2 {
		t.Errorf("apps.connections.open calls = %d; want 2 after the disconnect", len(opens))
	}
	dm := []byte(`{"envelope_id":"env-dm","type":"events_api","accepts_response_payload":false,"payload":{"type":"event_callback","team_id":"T111","event_id":"Ev-dm",` +
		`"event":{"type":"message","channel_type":"im","channel":"D111","user":"U222","text":"is it stuck?","ts":"1610241800.000100"}}}`)
	e.ws.send(dm)
	e.ws.waitAck(t, "env-dm")
	e.app.Wait(10 * time.Second)
	sent = e.fake.Wait(t, "chat.postMessage", 2)
	if p := sent[1]; p.Form.Get("channel") != "D111" || !strings.Contains(p.BlocksText(t), "synth · progress") {
		t.Errorf("DM answer after reconnecting = %v; want the progress answer in D111", p.Form)
	}
}

func TestSocketModeRejectedAppToken(t *testing.T) {
	e := &socketEnv{botEnv: newBotEnv(t, botOpts{}), fake: testkit.NewSlack(t)}
	e.fake.OpenErr = "invalid_auth"
	log := (&testkit.LogBuffer{}).Logger()
	api, _ := newTestAPI(t, e.fake, log, nil)
	app := NewApp(context.Background(), e.bot, api, Identity{UserID: "U111"}, nil, log)
	sm := NewSocketMode(app, testkit.AppToken, testkit.BotToken, e.fake.APIURL(), nil, log)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := sm.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "SLACK_APP_TOKEN") || !strings.Contains(err.Error(), "invalid_auth") {
		t.Fatalf("run with a rejected app token = %v; want an error naming SLACK_APP_TOKEN", err)
	}
	if strings.Contains(err.Error(), testkit.AppToken.Reveal()) {
		t.Errorf("error shows the token: %v", err)
	}
}

// TestSocketModeRedeliveredSlashCommand sends one slash command envelope twice, then a snooze by an
// admin twice: each delivery is acknowledged once, the answer rides in the first acknowledgement
// only, and the snooze is done once.
func TestSocketModeRedeliveredSlashCommand(t *testing.T) {
	e := newSocketEnv(t, botOpts{})
	e.ws.waitFor(t, "the first connection", func() bool { return e.ws.connections() == 1 })
	acks := e.ws.acksOf
	env := func(id, command, text, user string) []byte {
		return fixtureWith(t, "slack_socketmode_slash_commands_envelope_pysdk.json", func(m map[string]any) {
			m["envelope_id"] = id
			p := m["payload"].(map[string]any)
			p["command"], p["text"], p["user_id"] = command, text, user
		})
	}
	eta := env("slash-twice", "/eta", "", "U222")
	e.ws.send(eta)
	e.ws.waitAck(t, "slash-twice")
	e.ws.send(eta)
	e.ws.waitFor(t, "the second ack", func() bool { return len(acks("slash-twice")) == 2 })
	got := acks("slash-twice")
	if !strings.Contains(string(got[0].Payload), "synth · ETA") || (len(got[1].Payload) != 0 && string(got[1].Payload) != "null") {
		t.Errorf("acks of a redelivered /eta = %s, %s; want the answer in the first only", got[0].Payload, got[1].Payload)
	}

	snooze := env("slash-snooze", "/runwatch", "snooze 2h", "UADMIN")
	e.ws.send(snooze)
	e.ws.waitAck(t, "slash-snooze")
	first, ok := e.Mon.SnoozedUntil("synth")
	if !ok {
		t.Fatalf("the admin's snooze was not done: %s", acks("slash-snooze")[0].Payload)
	}
	e.ws.send(snooze)
	e.ws.waitFor(t, "the second ack", func() bool { return len(acks("slash-snooze")) == 2 })
	if again, _ := e.Mon.SnoozedUntil("synth"); !again.Equal(first) {
		t.Errorf("the redelivered snooze moved the snooze from %v to %v; want it done once", first, again)
	}
	e.app.Wait(5 * time.Second)
	if n := len(e.fake.Calls("response_url")) + len(e.fake.Calls("chat.postMessage")); n != 0 {
		t.Errorf("Slack calls after the redeliveries = %d; want none (the answers rode in the acks)", n)
	}
}

// TestSocketModeAcksWhatItCannotParse: an envelope the SDK cannot parse (an event type it does not
// know, a payload of the wrong shape) is acknowledged all the same, once, as HTTP mode acknowledges
// such an event: unacknowledged, Slack would deliver it again and again.
func TestSocketModeAcksWhatItCannotParse(t *testing.T) {
	e := newSocketEnv(t, botOpts{})
	e.ws.waitFor(t, "the first connection", func() bool { return e.ws.connections() == 1 })
	envelopes := map[string]string{
		"env-unknown-event": `{"envelope_id":"env-unknown-event","type":"events_api","accepts_response_payload":false,"payload":{"type":"event_callback",` +
			`"team_id":"T111","event_id":"Ev-unknown","event":{"type":"some_future_event","user":"U222"}}}`,
		"env-bad-slash": `{"envelope_id":"env-bad-slash","type":"slash_commands","accepts_response_payload":true,"payload":"not an object"}`,
	}
	for id, env := range envelopes {
		e.ws.send([]byte(env))
		e.ws.waitAck(t, id)
	}
	e.app.Wait(5 * time.Second)
	if n := len(e.fake.Calls("chat.postMessage")) + len(e.fake.Calls("chat.postEphemeral")); n != 0 {
		t.Errorf("answers to envelopes that do not parse = %d; want none", n)
	}
}

// TestSocketModeFullLeavesUnacknowledged: with the delivered-request memory full of keys inside seenKeep,
// a new envelope is left unacknowledged (Slack delivers it again) and not answered; delivered again once
// a key is past seenKeep, it is acknowledged and answered once.
func TestSocketModeFullLeavesUnacknowledged(t *testing.T) {
	metrics := testkit.VLLM(t)
	e := newSocketEnv(t, botOpts{Metrics: []string{metrics.URL + "/metrics"}})
	now := time.Unix(1_800_000_000, 0)
	e.app.seen.mu.Lock()
	e.app.seen.max = 2 // one mention: its envelope and its event
	e.app.seen.now = func() time.Time { return now }
	e.app.seen.mu.Unlock()
	e.ws.waitFor(t, "the first connection", func() bool { return e.ws.connections() == 1 })
	mention := func(id string) []byte { return etaMention(t, id) }
	acks := func(envelope string) int { return len(e.ws.acksOf(envelope)) }
	answers := func() int { return len(e.fake.Calls("chat.postEphemeral")) + len(e.fake.Calls("chat.postMessage")) }
	e.ws.send(mention("1"))
	e.ws.waitAck(t, "env-1")
	e.ws.send(mention("2")) // no room: left unacknowledged
	e.ws.send(mention("1")) // a duplicate, acknowledged after env-2 was handled (one loop, in order)
	e.ws.waitFor(t, "the duplicate's ack", func() bool { return acks("env-1") == 2 })
	e.app.Wait(10 * time.Second)
	if n := acks("env-2"); n != 0 {
		t.Errorf("acks of an envelope with no room to remember it = %d; want 0", n)
	}
	if n := answers(); n != 1 {
		t.Errorf("answers with the memory full = %d; want 1", n)
	}
	now = now.Add(seenKeep + time.Second)
	e.ws.send(mention("2"))
	e.ws.waitAck(t, "env-2")
	e.app.Wait(10 * time.Second)
	if n := answers(); n != 2 {
		t.Errorf("answers after the envelope came again = %d; want 2", n)
	}
}

// TestSocketModeRefusedEventAnsweredAfterRestart: an envelope whose event there was no room to remember is
// left unacknowledged and its envelope key forgotten, but the key's journal line was already written. After a
// restart (a new app restoring the journal from the state directory), Slack's redelivery of that envelope is
// answered: a restored key made it a duplicate, acknowledged and never answered.
func TestSocketModeRefusedEventAnsweredAfterRestart(t *testing.T) {
	metrics := testkit.VLLM(t)
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	// process is one runwatch over dir: its delivered-request journal restored, at most max keys.
	process := func(max int) *socketEnv {
		e := newSocketEnv(t, botOpts{Metrics: []string{metrics.URL + "/metrics"}})
		e.app.seen.mu.Lock()
		e.app.seen.max = max
		e.app.seen.now = func() time.Time { return now }
		e.app.seen.mu.Unlock()
		if err := e.app.seen.persist(dir, func(err error) { t.Errorf("seen journal: %v", err) }); err != nil {
			t.Fatal(err)
		}
		e.ws.waitFor(t, "the first connection", func() bool { return e.ws.connections() == 1 })
		return e
	}
	mention := func(id string) []byte { return etaMention(t, id) }
	answers := func(e *socketEnv) int {
		return len(e.fake.Calls("chat.postEphemeral")) + len(e.fake.Calls("chat.postMessage"))
	}

	// Room for three keys: env-1 and Ev-1, then env-2 (written to the journal) but not Ev-2.
	first := process(3)
	first.ws.send(mention("1"))
	first.ws.waitAck(t, "env-1")
	first.ws.send(mention("2"))
	first.ws.send(mention("1")) // a duplicate, acknowledged after env-2 was handled (one loop, in order)
	acks := func(envelope string) int { return len(first.ws.acksOf(envelope)) }
	first.ws.waitFor(t, "the duplicate's ack", func() bool { return acks("env-1") == 2 })
	first.app.Wait(10 * time.Second)
	if n, a := answers(first), acks("env-2"); n != 1 || a != 0 {
		t.Fatalf("before the restart: %d answers, env-2 acknowledged %d times; want 1 and 0 (env-2 refused)", n, a)
	}

	second := process(seenMax)
	second.ws.send(mention("2")) // Slack delivers env-2 again, on the new connection
	second.ws.waitAck(t, "env-2")
	second.app.Wait(10 * time.Second)
	if n := answers(second); n != 1 {
		t.Errorf("answers to env-2 delivered again after a restart = %d; want 1 (it was never answered)", n)
	}
}

// drop closes the current connection without a close frame, as a dying proxy or NAT does.
func (f *socketFake) drop() {
	f.mu.Lock()
	c := f.conn
	f.mu.Unlock()
	c.NetConn().Close()
}

// TestFaultSocketModeDrops drops the Socket Mode connection without warning, with Slack refusing
// the first reconnections, and an envelope lost in the drop. The bot reconnects by itself, and the
// event Slack redelivers on the new connection is answered once.
func TestFaultSocketModeDrops(t *testing.T) {
	t.Parallel()
	vllm := testkit.VLLM(t)
	e := newSocketEnv(t, botOpts{Metrics: []string{vllm.URL + "/metrics"}})
	e.ws.waitFor(t, "the first connection", func() bool { return e.ws.connections() == 1 })

	envelope := func(id, event string) []byte {
		return fmt.Appendf(nil, `{"envelope_id":%q,"type":"events_api","accepts_response_payload":false,"retry_attempt":0,"payload":{"type":"event_callback","team_id":"T111","event_id":%q,`+
			`"event":{"type":"app_mention","channel":"C111","user":"U222","text":"<@U111> ETA?","ts":"1610241800.000100"}}}`, id, event)
	}
	e.fake.FailNext("apps.connections.open", testkit.Failure{Status: 503, Body: "busy"}, testkit.Failure{Status: 429, RetryAfter: "1", Body: `{"ok":false,"error":"ratelimited"}`})
	e.ws.send(envelope("env-lost", "Ev-drop"))
	dropped := time.Now()
	e.ws.drop()
	e.ws.waitFor(t, "a new connection after the drop", func() bool { return e.ws.connections() == 2 })
	reconnected := time.Since(dropped)
	if opens := e.fake.Calls("apps.connections.open"); len(opens) != 4 {
		t.Errorf("apps.connections.open calls = %d; want the first, two refused and the one that worked", len(opens))
	}
	// Slack had no ack for the first envelope (or lost it): it sends the event again.
	e.ws.send(envelope("env-again", "Ev-drop"))
	e.ws.waitAck(t, "env-again")
	e.ws.send(envelope("env-next", "Ev-next"))
	e.ws.waitAck(t, "env-next")
	e.app.Wait(10 * time.Second)
	sent := e.fake.Calls("chat.postMessage")
	if len(sent) != 2 {
		t.Fatalf("answers = %d; want 2: the event lost in the drop once, and the next one", len(sent))
	}
	for _, p := range sent {
		if !strings.Contains(p.BlocksText(t), "synth · ETA") {
			t.Errorf("answer = %q; want the ETA", p.BlocksText(t))
		}
	}
	if l := e.logs.String(); !strings.Contains(l, "Socket Mode connection failed; retrying") || !strings.Contains(l, "connected to Slack (Socket Mode)") {
		t.Errorf("log lacks the refused reconnections or the reconnection:\n%s", l)
	}
	t.Logf("figure: Socket Mode dropped (2 reconnections refused): reconnected in %v; the event lost in the drop answered once", reconnected.Round(time.Millisecond))
}

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
	first.app.Wait(10 * time.Second)
	until, ok := first.Mon.SnoozedUntil("synth")
	if !ok {
		t.Fatalf("the admin's press did not snooze the run")
	}
	if err := first.Mon.Snooze("synth", time.Time{}); err != nil {
		t.Fatal(err)
	}
	first.ws.send(envelope("env-user", pressPayload(t, first.fake, post, ts, "U0SOMEONE", reports.MenuID, "snooze:1d")))
	first.ws.waitAck(t, "env-user")
	first.app.Wait(10 * time.Second)
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
	second.app.Wait(10 * time.Second)
	if again, ok := second.Mon.SnoozedUntil("synth"); ok {
		t.Errorf("after a restart the admin's press, delivered again, snoozed the run until %v (first: %v); want it acted on once", again, until)
	}
	if n := len(second.fake.Calls("chat.update")) + len(second.fake.Calls("chat.postEphemeral")); n != 0 {
		t.Errorf("Slack calls for the redelivered press after a restart = %d (%v); want none", n, second.fake.Methods())
	}
}
