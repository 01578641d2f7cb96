package handlers

import (
	"testing"
	"time"
)

func TestShareKey(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	b := e.bot
	eta := Request{Command: "eta", Channel: "C1", User: "U222", Source: "slash"}
	k1, ok1 := b.shareKey(eta)
	other := eta
	other.User = "U333"
	k2, ok2 := b.shareKey(other)
	if !ok1 || !ok2 || k1 != k2 {
		t.Errorf("shareKey(/eta by two non-admins) = %q %v, %q %v; want one shared key", k1, ok1, k2, ok2)
	}
	admin := eta
	admin.User = "UADMIN"
	if k, _ := b.shareKey(admin); k == k1 {
		t.Errorf("an admin's /eta shares a non-admin's key; want them apart (refusals differ)")
	}
	elsewhere := eta
	elsewhere.Channel = "C2"
	if k, _ := b.shareKey(elsewhere); k == k1 {
		t.Errorf("/eta in another channel shares the key; want them apart (allow-lists differ)")
	}
	for _, text := range []string{"snooze 2h", "unsnooze", "stage review done"} {
		if k, ok := b.shareKey(Request{Text: text, Channel: "C1", User: "UADMIN", Source: "slash"}); ok {
			t.Errorf("shareKey(%q) = %q; want a mutating command never shared", text, k)
		}
	}
}

func TestUserLimiter(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := newUserLimiter()
	l.now = func() time.Time { return now }
	for i := range defaultUserBurst {
		if ok, _, _ := l.allow("U1"); !ok {
			t.Fatalf("question %d of a burst refused", i+1)
		}
	}
	ok, wait, warned := l.allow("U1")
	if ok || wait != defaultUserEvery || warned {
		t.Errorf("past the burst = %v, wait %v, warned %v; want refused, wait %v, not yet warned", ok, wait, warned, defaultUserEvery)
	}
	if _, _, warned := l.allow("U1"); !warned {
		t.Errorf("second refusal: warned = false; want true (events are told once)")
	}
	if ok, _, _ := l.allow("U2"); !ok {
		t.Errorf("another user refused; want each user their own bucket")
	}
	now = now.Add(defaultUserEvery)
	if ok, _, _ := l.allow("U1"); !ok {
		t.Errorf("after %v: refused; want one more question allowed", defaultUserEvery)
	}
}
