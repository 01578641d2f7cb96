package posts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/internal/botmetrics"
	"runwatch/internal/testkit"
	"runwatch/posts"
	"runwatch/reports"
	"runwatch/slackapp"
	"runwatch/state"
)

// lostEnv is a sampler posting to the fake Slack over a state directory, and how to start another
// one over the same directory (a restart).
type lostEnv struct {
	*botEnv
	fake  *testkit.Slack
	api   *slackapp.API
	clock *testkit.Clock
	ep    *testkit.FaultEndpoint
	logs  *testkit.LogBuffer
}

func (e *lostEnv) sampler(t *testing.T) *posts.Sampler {
	t.Helper()
	s := posts.NewSampler(e.bot, time.Second, e.logs.Logger())
	dir, err := state.Open(e.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	s.State = dir
	s.Deliver = slackapp.Deliver(e.bot, e.api, botmetrics.New(), 0)
	s.Find = slackapp.Find(e.bot, e.api)
	s.LoadState()
	return s
}

func (e *lostEnv) tick(s *posts.Sampler, at time.Duration) {
	e.clock.Set(schedT0.Add(at))
	s.Tick(context.Background())
}

// topLevel is the top-level posts whose text has want (the note of the loss only when asked for).
func (e *lostEnv) topLevel(want string) []testkit.Call {
	var out []testkit.Call
	for _, c := range e.fake.Calls("chat.postMessage") {
		text := c.Form.Get("text")
		if strings.Contains(text, "lost its record") && !strings.Contains(want, "lost its record") {
			continue
		}
		if c.Form.Get("thread_ts") == "" && strings.Contains(text, want) {
			out = append(out, c)
		}
	}
	return out
}

// replies are the posts in the thread of the message ts.
func (e *lostEnv) replies(ts string) []testkit.Call {
	var out []testkit.Call
	for _, c := range e.fake.Calls("chat.postMessage") {
		if c.Form.Get("thread_ts") == ts {
			out = append(out, c)
		}
	}
	return out
}

// A corrupt or truncated alerts.json on start: the bot starts, says what it lost, and does not
// post the warnings it had already posted as new ones. It posted every open warning again, at the
// first confirmation, as if for the first time.
func TestLostAlertStateDoesNotRepost(t *testing.T) {
	for _, damage := range []struct {
		name string
		do   func(b []byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"garbage", func([]byte) []byte { return []byte("\x00\x00\x00\x00") }},
	} {
		t.Run(damage.name, func(t *testing.T) {
			ep := testkit.NewFaultEndpoint(t)
			clock := testkit.NewClock(schedT0)
			e := &lostEnv{botEnv: newBotEnv(t, botOpts{Metrics: []string{ep.URL()}, Timeout: 500 * time.Millisecond, Clock: clock}),
				fake: testkit.NewSlack(t), clock: clock, ep: ep, logs: &testkit.LogBuffer{}}
			e.api, _ = newTestAPI(t, e.fake, nil, nil)
			first := e.sampler(t)
			e.tick(first, 0)
			ep.Down()
			e.tick(first, time.Second)
			e.tick(first, 2*time.Second)
			if n := len(e.topLevel("source down")); n != 1 {
				t.Fatalf("source down warnings before the restart = %d; want 1", n)
			}
			p := filepath.Join(e.StateDir, posts.AlertStateFile)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, damage.do(b), 0o600); err != nil {
				t.Fatal(err)
			}

			second := e.sampler(t)
			for i := range 4 {
				e.tick(second, time.Duration(3+i)*time.Second)
			}
			if n := len(e.topLevel("source down")); n != 1 {
				t.Errorf("source down warnings after a restart over a %s alerts.json = %d; want still 1", damage.name, n)
			}
			notes := e.topLevel("lost its record")
			if len(notes) != 1 || !strings.Contains(notes[0].Form.Get("text"), "source down") || !strings.Contains(notes[0].Form.Get("text"), "alerts.json") {
				t.Errorf("notes of the loss = %d (%v); want one naming the file and the warning open now", len(notes), notes)
			}
			if logs := e.logs.String(); !strings.Contains(logs, "alerts.json.corrupt-") {
				t.Errorf("log does not say where the corrupt file went:\n%s", logs)
			}
			// The source's recovery follows in the note's thread.
			ep.Up()
			for i := range 3 {
				e.tick(second, time.Duration(8+i)*time.Second)
			}
			var resolved int
			for _, c := range e.fake.Calls("chat.postMessage") {
				if len(notes) == 1 && c.Form.Get("thread_ts") == notes[0].TS {
					resolved++
				}
			}
			if resolved == 0 {
				t.Errorf("no follow-up under the note once the source recovered: %v", e.fake.Methods())
			}
			if len(notes) == 1 && strings.Contains(notes[0].Form.Get("blocks"), `"actions"`) {
				t.Errorf("the note carries a warning's buttons: %s", notes[0].Form.Get("blocks"))
			}
		})
	}
}

// State files that decode but hold null entries (a hand edit, a bug in an older version) do not
// crash the bot at its first sample: a null warning or a null run's schedule was dereferenced.
func TestNullStateEntriesDoNotCrash(t *testing.T) {
	e := newSchedEnv(t, "new", "@hourly", "")
	for name, body := range map[string]string{
		posts.AlertStateFile:    `{"active": {"synth/stall": null, "gone/probe_down/x": null}}`,
		posts.ScheduleStateFile: `{"runs": {"synth": null, "gone": null}}`,
	} {
		if err := os.WriteFile(filepath.Join(e.StateDir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sched, err := posts.NewScheduler(e.bot, e.api, mustOpen(t, e.StateDir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := posts.NewSampler(e.bot, time.Second, (&testkit.LogBuffer{}).Logger())
	s.State = mustOpen(t, e.StateDir)
	s.Deliver = slackapp.Deliver(e.bot, e.api, botmetrics.New(), 0)
	s.OnSample = sched.RetryPending
	s.LoadState()
	e.Clock.Set(schedT0)
	s.Tick(context.Background())
	startSched(t, sched, testkit.NewClock(schedT0))
	if err := sched.Fire(context.Background(), "synth", schedT0); err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.Calls("chat.postMessage")); n != 1 {
		t.Errorf("posts = %d; want the status once", n)
	}
}

// A bot that dies while posting the note of the loss (its intent recorded, the post not made) leaves
// the warnings the note stood for to the next start: they were never posted, so they are posted then.
// The restarted bot settled only the note itself, which names no warning, and the warnings it had
// taken out of the posts stayed marked as posted: none of them was ever posted.
func TestLostNoteInterruptedByACrash(t *testing.T) {
	ep := testkit.NewFaultEndpoint(t)
	clock := testkit.NewClock(schedT0)
	e := &lostEnv{botEnv: newBotEnv(t, botOpts{Metrics: []string{ep.URL()}, Timeout: 500 * time.Millisecond, Clock: clock}),
		fake: testkit.NewSlack(t), clock: clock, ep: ep, logs: &testkit.LogBuffer{}}
	e.api, _ = newTestAPI(t, e.fake, nil, nil)
	p := filepath.Join(e.StateDir, posts.AlertStateFile)
	if err := os.WriteFile(p, []byte("\x00\x00"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The first start lost its record; the source goes down, and the bot dies posting the note: what
	// is on disk then is the intent to post it.
	first := e.sampler(t)
	var atCrash []byte
	deliver := first.Deliver
	first.Deliver = func(ctx context.Context, post posts.Post) (string, error) {
		if post.Kind == posts.LostKind && atCrash == nil {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			atCrash = b
			return "", fmt.Errorf("the process died here")
		}
		return deliver(ctx, post)
	}
	ep.Down()
	for i := 0; i < 4 && atCrash == nil; i++ {
		e.tick(first, time.Duration(i)*time.Second)
	}
	if atCrash == nil {
		t.Fatal("no note of the loss was attempted")
	}
	if err := os.WriteFile(p, atCrash, 0o600); err != nil {
		t.Fatal(err)
	}

	second := e.sampler(t)
	for i := range 3 {
		e.tick(second, time.Duration(60+i)*time.Second) // past the interrupted call's timeout
	}
	if n := len(e.topLevel("source down")) + len(e.topLevel("lost its record")); n == 0 {
		t.Errorf("the source-down warning was never posted, alone or in a note, after a crash while posting the note: %v", e.fake.Methods())
	}
}

// A note standing for many warnings stays within Slack's limits.
func TestLostAlertsNoteWithinLimits(t *testing.T) {
	a := posts.NewAlerter(time.UTC, nil)
	var sent []posts.Post
	for i := range 60 {
		key := fmt.Sprintf("run-%02d/%s", i, posts.AlertStall)
		a.State.Active[key] = &posts.ActiveAlert{Kind: posts.AlertStall, Summary: strings.Repeat("no progress ", 300)}
		sent = append(sent, posts.Post{Run: fmt.Sprintf("run-%02d", i), Channel: "#c", Kind: posts.AlertStall, Key: key,
			Message: reports.Message{Title: strings.Repeat("stalled ", 20)}})
	}
	out := posts.LostNote(a, sent)
	if len(out) != 1 || out[0].Kind != posts.LostKind {
		t.Fatalf("gather(60 warnings in one channel) = %d posts; want one note", len(out))
	}
	testkit.CheckMessage(t, "note of the lost alert state", out[0].Message, nil)
	raw, _ := json.Marshal(out[0].Message.Blocks())
	if !strings.Contains(string(raw), "and 40 more") {
		t.Errorf("note blocks %s; want 20 warnings and \"and 40 more\"", raw)
	}
}
