package posts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"runwatch/internal/testkit"
	"runwatch/posts"
	"runwatch/reports"
)

// coalesce: up to burstMax posts of a kind to one place go as they are; more go as one listing each once
// (the same line with a count), at most posts.BurstList of them; posts to other places, of other kinds, or
// standing for others already (a lost-state note) are left alone.
func TestCoalesce(t *testing.T) {
	warn := func(ch, key, text string) posts.Post {
		return posts.Post{Run: "synth", Channel: ch, Kind: posts.AlertProtected, Key: key, Message: reports.Message{Title: "synth · protected write", Sections: []string{text}}}
	}
	var sent []posts.Post
	for i := range 3 {
		sent = append(sent, warn("C2", fmt.Sprint("k", i), "three"))
	}
	for i := range 14 {
		sent = append(sent, warn("C1", fmt.Sprint("h", i), fmt.Sprintf("On host n%d, 1 process is writing to protected /shared.", i%12)))
	}
	sent = append(sent, posts.Post{Run: "synth", Channel: "C1", Kind: posts.LostKind, Covers: []string{"x"}})
	out := posts.CoalesceWith(sent, nil)
	if len(out) != 5 {
		t.Fatalf("coalesce(3 to C2, 14 to C1, a note) = %d posts; want 5 (3, the burst, the note)", len(out))
	}
	b := out[3]
	if b.Key != "" || len(b.Covers) != 14 || b.Covers[13] != "h13" || b.Channel != "C1" {
		t.Errorf("the burst: key %q, covers %v, channel %s; want no key of its own, the 14 keys, C1", b.Key, b.Covers, b.Channel)
	}
	body := strings.Join(b.Message.Sections, "\n")
	for _, want := range []string{"14 at once", "n0, 1 process is writing to protected /shared. (×2)", "n9,", "…and 2 more.", "(14)"} {
		if !strings.Contains(body+b.Message.Title, want) {
			t.Errorf("the burst's text lacks %q:\n%s\n%s", want, b.Message.Title, body)
		}
	}
	if strings.Contains(body, "n10,") {
		t.Errorf("the burst lists more than %d lines:\n%s", posts.BurstList, body)
	}
	if out[4].Kind != posts.LostKind {
		t.Errorf("the note of a lost state was folded in: %+v", out[4])
	}
}

// A burst's "and N more" counts the warnings it leaves out: twenty protected writes, ten from ten hosts and ten
// alike from an eleventh, list the ten and say "and 10 more", not "and 1 more" (the lines left out).
func TestCoalesceCountsWarningsLeftOut(t *testing.T) {
	var sent []posts.Post
	for i := range 20 {
		text := fmt.Sprintf("On host n%d, 1 process is writing to protected /shared.", min(i, posts.BurstList))
		sent = append(sent, posts.Post{Run: "synth", Channel: "C1", Kind: posts.AlertProtected, Key: fmt.Sprint("h", i),
			Message: reports.Message{Title: "synth · protected write", Sections: []string{text}}})
	}
	out := posts.CoalesceWith(sent, nil)
	if len(out) != 1 {
		t.Fatalf("coalesce(20 to C1) = %d posts; want 1", len(out))
	}
	body := strings.Join(out[0].Message.Sections, "\n")
	if !strings.Contains(body, "20 at once") || !strings.Contains(body, "…and 10 more.") || strings.Contains(body, "n10,") {
		t.Errorf("the burst of 20, 10 of them alike and past the list:\n%s\nwant \"20 at once\", n0-n9 listed and \"…and 10 more.\"", body)
	}
}

// Four warnings of one burst, taken from the App Home within one sample, are reminded together: one reply in
// the burst's thread. When it cannot be posted, every one of the four is reminded on the next sample; only the
// first was, and the other three waited another cooldown.
func TestBurstOfRemindersUndeliveredRearmsEach(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	a := posts.NewAlerter(time.UTC, func(string) string { return "C1" })
	claims := posts.NewClaims(nil, nil)
	var keys []string
	for i := range 4 {
		k := fmt.Sprintf("synth/%s/n%d", posts.AlertProtected, i)
		keys = append(keys, k)
		a.State.Active[k] = &posts.ActiveAlert{Kind: posts.AlertProtected, Run: "synth", Since: t0, Posted: t0, Ref: "100.1", Summary: fmt.Sprintf("n%d writes to /shared", i)}
		if _, err := claims.Take(k, "UADMIN", t0, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	never := func(string) bool { return false }
	now := t0.Add(2 * time.Hour)
	sent := posts.CoalesceWith(claims.Apply(a, nil, now, never), nil)
	if len(sent) != 1 || sent[0].Kind != posts.AlertProtected+"_reminder" || sent[0].ThreadRef != "100.1" {
		t.Fatalf("reminders due for 4 claimed warnings of one burst = %+v; want one reply in the burst's thread", sent)
	}
	claims.Undelivered(sent[0], now) // Slack refused it
	var again []string
	for _, p := range claims.Apply(a, nil, now.Add(time.Minute), never) {
		again = append(again, p.Key)
	}
	if !slices.Equal(again, keys) {
		t.Errorf("reminders on the next sample after the burst of them failed = %v; want all four %v", again, keys)
	}
}

// A burst goes on only in the sample after it: the same kind of warning a while later is news of its own.
func TestBurstGoesOnOnlyWithinItsWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	a := posts.NewAlerter(time.UTC, func(string) string { return "C1" })
	warns := func(from, n int) []posts.Post {
		var ps []posts.Post
		for i := range n {
			ps = append(ps, posts.Post{Run: "synth", Channel: "C1", Kind: posts.AlertProtected, Key: fmt.Sprintf("synth/%s/n%d", posts.AlertProtected, from+i),
				Message: reports.Message{Title: "synth · protected write", Sections: []string{fmt.Sprintf("n%d writes to /shared", from+i)}}})
		}
		return ps
	}
	window := posts.BurstWindow(30 * time.Second)
	first := a.CoalesceBursts(warns(0, 5), t0, window)
	if len(first) != 1 || first[0].ThreadRef != "" {
		t.Fatalf("coalesceBursts(5) = %+v; want one top-level burst", first)
	}
	a.Delivered(first[0], "1700000000.000100")
	next := a.CoalesceBursts(warns(5, 1), t0.Add(30*time.Second), window)
	if len(next) != 1 || next[0].ThreadRef != "1700000000.000100" {
		t.Fatalf("coalesceBursts(1 more, the next sample) = %+v; want one reply in the burst's thread", next)
	}
	a.Delivered(next[0], "1700000000.000200")
	later := a.CoalesceBursts(warns(6, 1), t0.Add(30*time.Second+window+time.Second), window)
	if len(later) != 1 || later[0].ThreadRef != "" || len(later[0].Covers) != 0 {
		t.Errorf("coalesceBursts(1 more, past the window) = %+v; want it posted as itself", later)
	}
	if len(a.State.Bursts) != 0 {
		t.Errorf("burst records past their window = %v; want none kept", a.State.Bursts)
	}
}

// newFleetEnv is a bot watching n inference servers, each an endpoint a test can take down, talking to a
// Slack fake: the endpoints and their URLs, in the run file's order.
func newFleetEnv(t *testing.T, n int) (*lostEnv, []*testkit.FaultEndpoint, []string) {
	t.Helper()
	var eps []*testkit.FaultEndpoint
	var urls []string
	for range n {
		ep := testkit.NewFaultEndpoint(t)
		eps = append(eps, ep)
		urls = append(urls, ep.URL())
	}
	clock := testkit.NewClock(schedT0)
	e := &lostEnv{botEnv: newBotEnv(t, botOpts{Metrics: urls, Timeout: 500 * time.Millisecond, Clock: clock}),
		fake: testkit.NewSlack(t), clock: clock, logs: &testkit.LogBuffer{}}
	e.api, _ = newTestAPI(t, e.fake, nil, nil)
	return e, eps, urls
}

// Five inference servers going down together (a preempted node pool) are five source-down warnings in one
// evaluation: the channel gets one post naming the five, and their recoveries one reply in its thread. It
// got five posts, then five replies, each in its own thread.
func TestBurstOfWarningsIsOnePost(t *testing.T) {
	e, eps, urls := newFleetEnv(t, 5)
	s := e.sampler(t)
	e.tick(s, 0)
	for _, ep := range eps {
		ep.Down()
	}
	e.tick(s, time.Second)
	e.tick(s, 2*time.Second)
	sent := e.topLevel("")
	if len(sent) != 1 {
		t.Fatalf("top-level posts after 5 servers went down = %d; want 1:\n%s", len(sent), texts(sent))
	}
	text := sent[0].Form.Get("text")
	for _, u := range urls {
		if !strings.Contains(text, strings.TrimPrefix(u, "http://")) {
			t.Errorf("the one post does not name %s:\n%s", u, text)
		}
	}
	if !strings.Contains(text, "5 at once") {
		t.Errorf("the post does not say how many it stands for:\n%s", text)
	}
	// Every covered warning threads under the one post: still down an hour later is one reply there.
	for _, al := range s.Alerter.State.Active {
		if al.Ref != sent[0].TS {
			t.Errorf("warning %s threads under %q; want the burst's post %q", al.Summary, al.Ref, sent[0].TS)
		}
	}
	for _, ep := range eps {
		ep.Up()
	}
	for i := range 3 {
		e.tick(s, time.Duration(3+i)*time.Second)
	}
	replies := e.replies(sent[0].TS)
	if len(replies) != 1 || !strings.Contains(replies[0].Form.Get("text"), "5 of them at once") {
		t.Errorf("replies to the burst after the servers came back = %d; want 1 saying all 5 recovered:\n%s", len(replies), texts(replies))
	}
	if n := len(e.topLevel("")); n != 1 {
		t.Errorf("top-level posts at the end = %d; want still 1", n)
	}
}

// texts is the calls' message texts, one per line.
func texts(calls []testkit.Call) string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Form.Get("text"))
	}
	return strings.Join(out, "\n")
}

// A node pool failing over two samples (four servers down in one, four more in the next) is one post: the
// second sample's four go on in the first post's thread, and every warning's follow-ups thread under it. It
// was two top-level posts. The burst survives a restart between the samples, and a kill -9 after Slack took
// the reply but before the bot recorded it posts it once.
func TestBurstOverTwoSamplesIsOnePost(t *testing.T) {
	for _, restart := range []string{"none", "between samples", "killed mid-reply"} {
		t.Run(restart, func(t *testing.T) {
			e, eps, urls := newFleetEnv(t, 8)
			s := e.sampler(t)
			e.tick(s, 0)
			for _, ep := range eps[:4] {
				ep.Down()
			}
			e.tick(s, time.Second)
			for _, ep := range eps[4:] {
				ep.Down()
			}
			e.tick(s, 2*time.Second) // the first four confirmed: the burst
			alerts := filepath.Join(e.StateDir, posts.AlertStateFile)
			switch restart {
			case "between samples":
				s = e.sampler(t)
			case "killed mid-reply":
				// The reply reaches Slack; the bot dies before it records that: the state on disk is the intent.
				deliver := s.Deliver
				var atIntent []byte
				s.Deliver = func(ctx context.Context, p posts.Post) (string, error) {
					atIntent, _ = os.ReadFile(alerts)
					return deliver(ctx, p)
				}
				e.tick(s, 3*time.Second)
				if atIntent == nil {
					t.Fatal("nothing was delivered in the sample after the burst")
				}
				if err := os.WriteFile(alerts, atIntent, 0o600); err != nil {
					t.Fatal(err)
				}
				s = e.sampler(t)
			}
			e.tick(s, 3*time.Second) // the next four confirmed: the same burst going on
			e.tick(s, 4*time.Second)
			e.tick(s, 40*time.Second) // past the interrupted reply's call timeout: it is looked up
			top := e.topLevel("source down")
			if len(top) != 1 {
				t.Fatalf("top-level posts after 4 + 4 servers went down over two samples = %d; want 1:\n%s", len(top), texts(top))
			}
			replies := e.replies(top[0].TS)
			if len(replies) != 1 || !strings.Contains(replies[0].Form.Get("text"), "4 more since the post above") {
				t.Fatalf("replies in the burst's thread = %d; want 1 naming the 4 more:\n%s", len(replies), texts(replies))
			}
			for _, u := range urls[4:] {
				if !strings.Contains(replies[0].Form.Get("text"), strings.TrimPrefix(u, "http://")) {
					t.Errorf("the reply does not name %s:\n%s", u, replies[0].Form.Get("text"))
				}
			}
			if n := len(e.fake.Calls("conversations.replies")); restart == "killed mid-reply" && n == 0 {
				t.Errorf("the restarted bot did not look the interrupted reply up in the burst's thread (conversations.replies: %d calls)", n)
			}
			for _, al := range s.Alerter.State.Active {
				if al.Kind != posts.AlertProbe {
					continue // the job's log is flat for these 40 s: a stall of its own, not the burst's
				}
				if al.Ref != top[0].TS {
					t.Errorf("warning %s threads under %q; want the burst's post %q", al.Summary, al.Ref, top[0].TS)
				}
			}
		})
	}
}
