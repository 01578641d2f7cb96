package slackapp

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
)

// dutyInstance is one instance of the app over the shared fake Slack: its own token (so the fake tells its
// calls apart), its own clock, its Duty.
type dutyInstance struct {
	token string
	clock *testkit.Clock
	duty  *Duty
}

func newDutyInstance(t *testing.T, f *testkit.Slack, name string) *dutyInstance {
	t.Helper()
	token := "xoxb-" + name + "-1111-AbCdEf"
	api := NewAPI(APIOptions{Token: config.NewSecret(token), APIURL: f.APIURL(), Sleep: func(context.Context, time.Duration) error { return nil }})
	clock := testkit.NewClock(time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC))
	d := NewDuty(api, "#synth-25k", "host-"+name+":/state", "host-"+name, 100)
	d.Clock = clock
	return &dutyInstance{token: token, clock: clock, duty: d}
}

// look moves the instance's clock one Renew on (its Duty waits on it: the test saw it call After) and
// waits until the Duty waits again, having looked or renewed, or done gets its result.
func (i *dutyInstance) look(t *testing.T, done chan error) (returned bool, err error) {
	t.Helper()
	i.clock.Add(i.duty.Renew)
	select {
	case <-i.clock.Waits():
		return false, nil
	case err := <-done:
		return true, err
	case <-time.After(30 * time.Second):
		t.Fatal("the instance neither waits on its clock again nor returned")
		return false, nil
	}
}

func (i *dutyInstance) calls(f *testkit.Slack, method string) []testkit.Call {
	var out []testkit.Call
	for _, c := range f.Calls(method) {
		if c.Token == i.token {
			out = append(out, c)
		}
	}
	return out
}

// roleOf is the role the metadata of a chat call gives ("" when it has none).
func roleOf(c testkit.Call) string {
	var md struct {
		EventType    string         `json:"event_type"`
		EventPayload map[string]any `json:"event_payload"`
	}
	if json.Unmarshal([]byte(c.Form.Get("metadata")), &md) != nil || md.EventType != dutyMetadataType {
		return ""
	}
	r, _ := md.EventPayload["role"].(string)
	return r
}

// acquire runs d.Acquire in the background; its result arrives on the channel.
func acquire(ctx context.Context, d *Duty) chan error {
	done := make(chan error, 1)
	go func() { done <- d.Acquire(ctx) }()
	return done
}

func awaitErr(t *testing.T, what string, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return", what)
		return nil
	}
}

func notYet(t *testing.T, what string, done chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v); want it still standing by", what, err)
	default:
	}
}

// TestDutyOneInstanceOnDutyAndTakeover: a second instance stands by while the first renews, however long;
// it takes over once the first stops renewing (a crash) after Expire of its own clock, and the first, if it
// was only cut off, gives way at its next renewal.
func TestDutyOneInstanceOnDutyAndTakeover(t *testing.T) {
	t.Parallel()
	f := testkit.NewSlack(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := newDutyInstance(t, f, "a"), newDutyInstance(t, f, "b")
	if err := awaitErr(t, "A's Acquire", acquire(ctx, a.duty)); err != nil {
		t.Fatalf("A's Acquire = %v; want on duty", err)
	}
	held := make(chan error, 1)
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	go func() { held <- a.duty.Hold(hctx) }()

	a.clock.AwaitAfter(t) // A's Hold waits to renew
	bDone := acquire(ctx, b.duty)
	f.WaitMatch(t, 0, "B standing by", func(c testkit.Call) bool { return c.Token == b.token && roleOf(c) == roleStandby })
	b.clock.AwaitAfter(t)
	// Ten looks of B (200 s, past Expire) while A renews between them: B stays passive.
	for range 10 {
		if returned, err := a.look(t, held); returned {
			t.Fatalf("A's Hold returned %v while it was the only one on duty", err)
		}
		if returned, err := b.look(t, bDone); returned {
			t.Fatalf("B's Acquire returned %v while A renewed", err)
		}
	}
	if n := len(b.calls(f, "chat.postMessage")); n != 1 {
		t.Errorf("B posted %d messages while A was on duty; want 1 (its own duty message)", n)
	}

	// A stops renewing (its clock no longer moves: a crash or a cut-off host). B takes over within Expire.
	looks := 0
	for {
		looks++
		returned, err := b.look(t, bDone)
		if returned {
			if err != nil {
				t.Fatalf("B's Acquire = %v; want on duty", err)
			}
			break
		}
		if looks > 10 {
			t.Fatal("B did not take over after 10 looks without A's renewal")
		}
	}
	if want := int(b.duty.Expire / b.duty.Renew); looks < want || looks > want+1 {
		t.Errorf("B took over after %d looks of %s; want %d or %d (Expire %s)", looks, b.duty.Renew, want, want+1, b.duty.Expire)
	}
	posts := b.calls(f, "chat.postMessage")
	if last := posts[len(posts)-1]; roleOf(last) != roleOnDuty {
		t.Errorf("B's takeover message has role %q; want a new on_duty message (the newest)", roleOf(last))
	}
	// A was only cut off: at its next renewal it sees B's newer message and gives way.
	if returned, err := a.look(t, held); !returned || !errors.Is(err, ErrLostDuty) {
		t.Fatalf("A's Hold after B took over = %v (returned %v); want LostDuty", err, returned)
	}
	last := a.calls(f, "chat.update")
	if r := roleOf(last[len(last)-1]); r != roleOffDuty {
		t.Errorf("A's last edit has role %q; want off_duty", r)
	}
}

// TestDutyStopHandsOver: an instance on duty that stops says so, and the one standing by takes over at its
// next look, not after Expire.
func TestDutyStopHandsOver(t *testing.T) {
	t.Parallel()
	f := testkit.NewSlack(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := newDutyInstance(t, f, "a"), newDutyInstance(t, f, "b")
	if err := awaitErr(t, "A's Acquire", acquire(ctx, a.duty)); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	hctx, hcancel := context.WithCancel(ctx)
	go func() { held <- a.duty.Hold(hctx) }()
	bDone := acquire(ctx, b.duty)
	f.WaitMatch(t, 0, "B standing by", func(c testkit.Call) bool { return c.Token == b.token && roleOf(c) == roleStandby })
	hcancel()
	if err := awaitErr(t, "A's Hold", held); err != nil {
		t.Fatalf("A's Hold after its stop = %v; want nil", err)
	}
	b.clock.AwaitAfter(t)
	if returned, err := b.look(t, bDone); !returned || err != nil {
		t.Fatalf("B's Acquire = %v (returned %v); want on duty at its first look after A went off duty", err, returned)
	}
}

// TestDutyRestartResumes: the same instance started again (same host and state directory) is on duty at
// once, and marks its earlier process's message off duty.
func TestDutyRestartResumes(t *testing.T) {
	t.Parallel()
	f := testkit.NewSlack(t)
	ctx := context.Background()
	a := newDutyInstance(t, f, "a")
	if err := awaitErr(t, "A's Acquire", acquire(ctx, a.duty)); err != nil {
		t.Fatal(err)
	}
	again := newDutyInstance(t, f, "a")
	if err := awaitErr(t, "A's second Acquire", acquire(ctx, again.duty)); err != nil {
		t.Fatalf("the restarted instance's Acquire = %v; want on duty at once", err)
	}
	retired := false
	for _, c := range f.Calls("chat.update") {
		retired = retired || c.Form.Get("ts") == a.duty.ts && roleOf(c) == roleOffDuty
	}
	if !retired {
		t.Errorf("the earlier process's duty message was not marked off duty")
	}
}

// TestDutyTwoStartAtOnce: two instances starting together end with one on duty and one standing by.
func TestDutyTwoStartAtOnce(t *testing.T) {
	t.Parallel()
	f := testkit.NewSlack(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := newDutyInstance(t, f, "a"), newDutyInstance(t, f, "b")
	aDone, bDone := acquire(ctx, a.duty), acquire(ctx, b.duty)
	var waiting *dutyInstance
	var waitingDone chan error
	select {
	case err := <-aDone:
		waiting, waitingDone = b, bDone
		if err != nil {
			t.Fatal(err)
		}
	case err := <-bDone:
		waiting, waitingDone = a, aDone
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("neither instance went on duty")
	}
	f.WaitMatch(t, 0, "the other standing by", func(c testkit.Call) bool { return c.Token == waiting.token && roleOf(c) == roleStandby })
	notYet(t, "the other's Acquire", waitingDone)
}
