package handlers

import (
	"testing"
	"time"
)

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
