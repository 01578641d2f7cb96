package posts_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/botmetrics"
	"runwatch/internal/redact"
	"runwatch/internal/testkit"
	"runwatch/posts"
	"runwatch/probes"
	"runwatch/reports"
	"runwatch/slackapp"
	"runwatch/state"
)

var schedT0 = time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)

// schedEnv is a scheduler over a bot whose clock the test sets, posting to the fake Slack.
type schedEnv struct {
	*botEnv
	fake  *testkit.Slack
	api   *slackapp.API
	sched *posts.Scheduler
}

func newSchedEnv(t *testing.T, mode, spec, stateDir string) *schedEnv {
	t.Helper()
	return newSchedEnvWith(t, botOpts{StateDir: stateDir, Run: func(r *config.Run) {
		r.PostMode, r.Schedule = mode, spec
	}})
}

// newSchedEnvWith is newSchedEnv with the bot's options as given, on the test's clock.
func newSchedEnvWith(t *testing.T, o botOpts) *schedEnv {
	t.Helper()
	o.Clock = testkit.NewClock(schedT0)
	e := &schedEnv{botEnv: newBotEnv(t, o), fake: testkit.NewSlack(t)}
	e.api, _ = newTestAPI(t, e.fake, nil, nil)
	dir, err := state.Open(e.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	e.sched, err = posts.NewScheduler(e.bot, e.api, dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// fireAt sets the clocks to t and fires the run's schedule.
func (e *schedEnv) fireAt(t *testing.T, at time.Time) {
	t.Helper()
	e.Clock.Set(at)
	if err := e.sched.Fire(context.Background(), "synth", at); err != nil {
		t.Fatalf("fire at %s = %v", at.Format(time.DateTime), err)
	}
}

func TestScheduleModes(t *testing.T) {
	type step struct {
		at     time.Duration // after schedT0
		done   int           // progress in the log
		method string        // the call expected, "" for none
		thread int           // reply under the status posted at this step (1-based), 0 for none
		update int           // edit of the status posted at this step (1-based)
		parent int           // after the reply, the day's parent (posted at this step, 1-based) edited to the same figures
	}
	tests := []struct {
		mode  string
		steps []step
	}{
		{"new", []step{
			{0, 300, "chat.postMessage", 0, 0, 0},
			{30 * time.Minute, 400, "", 0, 0, 0}, // not due: @hourly
			{time.Hour, 600, "chat.postMessage", 0, 0, 0},
			{2 * time.Hour, 25000, "chat.postMessage", 0, 0, 0},
			{3 * time.Hour, 25000, "", 0, 0, 0}, // finished, unchanged: not posted again
		}},
		{"update", []step{
			{0, 300, "chat.postMessage", 0, 0, 0},
			{time.Hour, 600, "chat.update", 0, 1, 0},
			{2 * time.Hour, 25000, "chat.update", 0, 1, 0},
			{3 * time.Hour, 25000, "", 0, 0, 0},
		}},
		{"thread", []step{
			{0, 300, "chat.postMessage", 0, 0, 0}, // the day's parent
			{time.Hour, 600, "chat.postMessage", 1, 0, 1},
			{2 * time.Hour, 900, "chat.postMessage", 1, 0, 1},
			{24 * time.Hour, 1200, "chat.postMessage", 0, 0, 0}, // a new day, a new parent
			{25 * time.Hour, 1500, "chat.postMessage", 4, 0, 4},
		}},
		// No post_mode: one living message, edited in place.
		{"", []step{
			{0, 300, "chat.postMessage", 0, 0, 0},
			{time.Hour, 600, "chat.update", 0, 1, 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			e := newSchedEnv(t, tc.mode, "@hourly", "")
			var posted []string // ts of each step's post
			for i, st := range tc.steps {
				before := len(e.fake.Calls(""))
				e.WriteLog(t, st.done, 25000)
				e.fireAt(t, schedT0.Add(st.at))
				calls := e.fake.Calls("")[before:]
				if st.method == "" {
					if len(calls) != 0 {
						t.Errorf("step %d (+%s): calls %v; want none", i, st.at, e.fake.Methods()[before:])
					}
					posted = append(posted, "")
					continue
				}
				want := 1
				if st.parent > 0 {
					want = 2 // the reply, then the parent edited
				}
				if len(calls) != want || calls[0].Method != st.method {
					t.Fatalf("step %d (+%s): calls %v; want one %s (and the parent edited: %v)", i, st.at, e.fake.Methods()[before:], st.method, st.parent > 0)
				}
				if st.parent > 0 {
					p := calls[1]
					if p.Method != "chat.update" || p.Form.Get("ts") != posted[st.parent-1] || !strings.Contains(p.Form.Get("text"), fmt.Sprintf("*%s / 25,000*", reports.Count(float64(st.done)))) ||
						!strings.Contains(p.Form.Get("text"), "status for") {
						t.Errorf("step %d: after the reply %s %s = %q; want the day's parent %s edited to %d done", i, p.Method, p.Form.Get("ts"), p.Form.Get("text"), posted[st.parent-1], st.done)
					}
				}
				c := calls[0]
				if ch := c.Form.Get("channel"); (i == 0 && ch != "#synth") || (i > 0 && ch != "CSYNTH") {
					t.Errorf("step %d: channel %q; want #synth first, then the id Slack returned", i, ch)
				}
				if !strings.Contains(c.Form.Get("text"), "synth · status") || !strings.Contains(c.Form.Get("text"), "Checklist") {
					t.Errorf("step %d: text %q; want the status with its checklist", i, c.Form.Get("text"))
				}
				if got, want := c.Form.Get("thread_ts"), ""; st.thread > 0 {
					want = posted[st.thread-1]
					if got != want {
						t.Errorf("step %d: thread_ts %q; want %q (the parent)", i, got, want)
					}
				} else if got != want {
					t.Errorf("step %d: thread_ts %q; want none", i, got)
				}
				if st.update > 0 && c.Form.Get("ts") != posted[st.update-1] {
					t.Errorf("step %d: chat.update ts %q; want %q (the living message)", i, c.Form.Get("ts"), posted[st.update-1])
				}
				// The fake numbers its messages by call: this step's call is call before+1.
				posted = append(posted, fmt.Sprintf("1700000000.%06d", before+1))
			}
		})
	}
}

func TestScheduleRestartKeepsLivingMessage(t *testing.T) {
	t.Parallel()
	first := newSchedEnv(t, "update", "@hourly", "")
	first.fireAt(t, schedT0)
	sent := first.fake.Calls("chat.postMessage")
	if len(sent) != 1 {
		t.Fatalf("first post: %v", first.fake.Methods())
	}

	// The process restarts: a new bot, scheduler and Slack connection over the same state directory.
	second := newSchedEnv(t, "update", "@hourly", first.StateDir)
	if got := second.bot.ChannelID("#synth"); got != "CSYNTH" {
		t.Errorf("after restart ChannelID(#synth) = %q; want the id learned before (CSYNTH)", got)
	}
	second.fireAt(t, schedT0.Add(20*time.Minute))
	if calls := second.fake.Calls(""); len(calls) != 0 {
		t.Fatalf("restart 20 min after an @hourly post made calls %v; want none", second.fake.Methods())
	}
	second.WriteLog(t, 900, 25000)
	second.fireAt(t, schedT0.Add(time.Hour))
	calls := second.fake.Calls("")
	if len(calls) != 1 || calls[0].Method != "chat.update" {
		t.Fatalf("first post after the restart = %v; want one chat.update of the living message", second.fake.Methods())
	}
	if calls[0].Form.Get("channel") != "CSYNTH" || calls[0].Form.Get("ts") != "1700000000.000001" {
		t.Errorf("chat.update of %s/%s; want CSYNTH/1700000000.000001 (the message posted before the restart)", calls[0].Form.Get("channel"), calls[0].Form.Get("ts"))
	}
}

func TestScheduleLivingMessageGone(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t, "update", "@hourly", "")
	e.fireAt(t, schedT0)
	e.fake.FailNext("chat.update", testkit.Failure{Status: 200, Body: `{"ok":false,"error":"message_not_found"}`})
	e.WriteLog(t, 900, 25000)
	e.fireAt(t, schedT0.Add(time.Hour))
	if got := strings.Join(e.fake.Methods(), " "); got != "chat.postMessage chat.update chat.postMessage" {
		t.Fatalf("calls = %s; want a new living message after chat.update says message_not_found", got)
	}
	e.WriteLog(t, 1200, 25000)
	e.fireAt(t, schedT0.Add(2*time.Hour))
	if up := e.fake.Calls("chat.update"); len(up) != 2 || up[1].Form.Get("ts") != "1700000000.000003" {
		t.Errorf("next edit = %v; want chat.update of the new living message 1700000000.000003", e.fake.Methods())
	}
}

func TestScheduleFailedPostRetried(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t, "new", "@hourly", "")
	e.api.MaxAttempts = 1
	e.fake.FailNext("chat.postMessage", testkit.Failure{Status: 500, Body: "oops"})
	e.Clock.Set(schedT0)
	if err := e.sched.Fire(context.Background(), "synth", schedT0); err == nil {
		t.Fatal("fire with Slack failing = nil; want the error")
	}
	e.sched.RetryPending(context.Background())
	sent := e.fake.Calls("chat.postMessage")
	if len(sent) != 2 {
		t.Fatalf("chat.postMessage calls = %d; want the failure and its retry", len(sent))
	}
	// Posted now: another retry or an on-time fire at the same moment does not post it twice.
	e.sched.RetryPending(context.Background())
	e.fireAt(t, schedT0)
	if n := len(e.fake.Calls("chat.postMessage")); n != 2 {
		t.Errorf("chat.postMessage calls = %d after the retry succeeded; want no more", n)
	}
}

func TestScheduleEveryPostsOnTime(t *testing.T) {
	t.Parallel()
	e := &schedEnv{botEnv: newBotEnv(t, botOpts{Run: func(r *config.Run) { r.Schedule, r.PostMode = "@every 1s", "new" }}), fake: testkit.NewSlack(t)}
	e.api, _ = newTestAPI(t, e.fake, nil, nil)
	s, err := posts.NewScheduler(e.bot, e.api, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := testkit.NewClock(schedT0)
	startSched(t, s, clock)
	// Half a second is not yet due; the second half is.
	clock.AwaitAfter(t)
	clock.Add(500 * time.Millisecond)
	if n := len(e.fake.Calls("chat.postMessage")); n != 0 {
		t.Errorf("posts half a second into an @every 1s schedule = %d; want none", n)
	}
	clock.Add(500 * time.Millisecond)
	e.fake.Wait(t, "chat.postMessage", 1)
	// The job moves on (an unchanged status is not posted again), and the next second is due.
	e.WriteLog(t, 310, 25000)
	clock.AwaitAfter(t)
	clock.Add(time.Second)
	sent := e.fake.Wait(t, "chat.postMessage", 2)
	for _, p := range sent[:2] {
		if p.Form.Get("channel") == "" || !strings.Contains(p.Form.Get("text"), "synth · status") {
			t.Errorf("scheduled post = %v; want the status in the run's channel", p.Form)
		}
	}
	if sent[1].Form.Get("channel") != "CSYNTH" {
		t.Errorf("second post went to %q; want the channel id learned from the first", sent[1].Form.Get("channel"))
	}
}

func TestNewSchedulerRejectsBadSpec(t *testing.T) {
	tests := []struct {
		spec string
		ok   bool
	}{
		{"@hourly", true}, {"@every 10s", true}, {"0 9-18 * * 1-5", true}, {"", true},
		{"every hour", false}, {"@every", false}, {"61 * * * *", false},
	}
	for _, tc := range tests {
		e := newBotEnv(t, botOpts{Run: func(r *config.Run) { r.Schedule = tc.spec }})
		_, err := posts.NewScheduler(e.bot, nil, nil, nil, nil)
		if (err == nil) != tc.ok {
			t.Errorf("NewScheduler(schedule %q) = %v; want ok %v", tc.spec, err, tc.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), "run synth") || !strings.Contains(err.Error(), tc.spec)) {
			t.Errorf("NewScheduler(schedule %q) = %v; want the run and the spec named", tc.spec, err)
		}
	}
}

func TestStatusDigest(t *testing.T) {
	base := reports.Message{Title: "synth · status", Sections: []string{"ETA 3 h"}, Context: []string{"log ok", "as of <!date^1^{time}|10:00 UTC>"}}
	later := base
	later.Context = []string{"log ok", "as of <!date^3601^{time}|11:00 UTC>"}
	moved := base
	moved.Sections = []string{"ETA 2 h"}
	failing := base
	failing.Context = []string{"metrics down", "as of <!date^1^{time}|10:00 UTC>"}
	tests := []struct {
		name string
		m    reports.Message
		same bool
	}{
		{"only the time changed", later, true},
		{"the ETA moved", moved, false},
		{"a probe failed", failing, false},
	}
	for _, tc := range tests {
		if got := posts.StatusDigest(tc.m) == posts.StatusDigest(base); got != tc.same {
			t.Errorf("%s: same digest = %v; want %v", tc.name, got, tc.same)
		}
	}
}

// TestScheduleStatusNamesFailedLog is the red team's finding 8: with the job's log gone, the
// scheduled status said "No progress source configured"; it names the log that failed.
func TestScheduleStatusNamesFailedLog(t *testing.T) {
	e := newSchedEnv(t, "new", "@hourly", "")
	if err := os.Remove(e.Log); err != nil {
		t.Fatal(err)
	}
	e.fireAt(t, schedT0)
	sent := e.fake.Calls("chat.postMessage")
	if len(sent) != 1 {
		t.Fatalf("posts = %d; want 1 status", len(sent))
	}
	text := sent[0].Form.Get("text")
	if strings.Contains(text, "No progress source configured") || !strings.Contains(text, "No progress reading: `log "+e.Log+"` failed") {
		t.Errorf("status with its log deleted:\n%s\nwant it to name the failed log, not say no source is configured", text)
	}
}

// crashPoster is Slack through the real API, except that the first post lands (or, lost, does
// not) and then never returns: the process is killed before the bot hears Slack's answer.
type crashPoster struct {
	*slackapp.API
	lost            bool // the kill comes before the post reaches Slack
	landed, release chan struct{}
	once            sync.Once
}

func (p *crashPoster) crash() {
	p.once.Do(func() { close(p.landed) })
	<-p.release
}

func (p *crashPoster) PostTagged(ctx context.Context, channel, threadTS, id string, m reports.Message) (string, string, error) {
	if !p.lost {
		p.API.PostTagged(ctx, channel, threadTS, id, m)
	}
	p.crash()
	return "", "", context.Canceled
}

// testClockAfter is a testkit.Clock as a scheduler's Clock, for calls that only ask the time.
type testClockAfter struct{ *testkit.Clock }

func (testClockAfter) After(time.Duration) <-chan time.Time { return nil }

// killMidPost fires the run's schedule at schedT0 with a scheduler whose post is cut off once its intent is
// saved (after Slack took it, or lost on the way when lost), and returns the scheduler a restart makes over the
// same state directory and the same Slack.
func killMidPost(t *testing.T, e *schedEnv, lost bool) *posts.Scheduler {
	t.Helper()
	dir, err := state.Open(e.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	cp := &crashPoster{API: e.api, lost: lost, landed: make(chan struct{}), release: make(chan struct{})}
	first, err := posts.NewScheduler(e.bot, cp, dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(cp.release); <-done })
	e.Clock.Set(schedT0)
	go func() {
		defer close(done)
		first.Fire(context.Background(), "synth", schedT0)
	}()
	<-cp.landed
	dir2, err := state.Open(e.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := posts.NewScheduler(e.bot, e.api, dir2, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	second.Clock = testClockAfter{e.Clock}
	return second
}

// TestScheduleKilledMidPostPostsOnce kills the scheduler while its first status is in flight
// (Slack has the message, the bot never hears back) and starts a new one over the same state
// directory and the same Slack: the sampler's next tick and the next on-time fires leave exactly
// one copy of that status, and the schedule goes on from it (the living message edited, the
// day's thread replied in). A post the kill stopped before Slack had it is posted on that tick.
func TestScheduleKilledMidPostPostsOnce(t *testing.T) {
	for _, tc := range []struct {
		mode, next string // the call an hour later
		thread     bool   // the next post is a reply under the first
		lost       bool   // the first post never reached Slack
	}{
		{"new", "chat.postMessage", false, false},
		{"update", "chat.update", false, false},
		{"thread", "chat.postMessage", true, false},
		{"new", "chat.postMessage", false, true},
		{"update", "chat.update", false, true},
	} {
		name := tc.mode
		if tc.lost {
			name += " lost"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newSchedEnv(t, tc.mode, "@hourly", "")
			second := killMidPost(t, e, tc.lost)
			statuses := func() []testkit.Call {
				var out []testkit.Call
				for _, c := range e.fake.Calls("") {
					if tc.mode == "thread" && c.Method == "chat.update" {
						continue // the day's parent brought up to date beside a reply
					}
					if (c.Method == "chat.postMessage" || c.Method == "chat.update") && strings.Contains(c.Form.Get("text"), "synth · status") {
						out = append(out, c)
					}
				}
				return out
			}
			// Past the interrupted call's timeout: until then Slack may still be taking it.
			e.Clock.Set(schedT0.Add(90 * time.Second))
			second.RetryPending(context.Background())
			if err := second.Fire(context.Background(), "synth", schedT0.Add(2*time.Minute)); err != nil {
				t.Fatalf("fire after the restart = %v", err)
			}
			if got := statuses(); len(got) != 1 {
				t.Fatalf("statuses after a kill mid-post and a restart = %d (%v); want one (lost before Slack had it: %v)", len(got), e.fake.Methods(), tc.lost)
			}
			e.WriteLog(t, 900, 25000)
			e.sched = second
			e.fireAt(t, schedT0.Add(time.Hour))
			got := statuses()
			if len(got) != 2 || got[1].Method != tc.next {
				t.Fatalf("an hour later: %v; want the landed status, then one %s", e.fake.Methods(), tc.next)
			}
			landed := got[0].TS
			switch {
			case tc.mode == "update" && got[1].Form.Get("ts") != landed:
				t.Errorf("chat.update of %q; want the message that landed before the kill (%s)", got[1].Form.Get("ts"), landed)
			case tc.thread && got[1].Form.Get("thread_ts") != landed:
				t.Errorf("the next status in thread %q; want the day's parent that landed before the kill (%s)", got[1].Form.Get("thread_ts"), landed)
			}
		})
	}
}

// TestScheduleKilledMidPostLookupFails restarts after a kill mid-post when Slack cannot say whether
// the post landed: while it does not answer (503) the status waits and nothing is posted; once it
// refuses the look-up for good (channel_not_found) the status is posted again at once rather than
// held for pendingGiveUp.
func TestScheduleKilledMidPostLookupFails(t *testing.T) {
	e := newSchedEnv(t, "new", "@hourly", "")
	e.api.MaxAttempts = 1
	second := killMidPost(t, e, true)
	sent := func() int { return len(e.fake.Calls("chat.postMessage")) }
	e.fake.FailNext("conversations.history", testkit.Failure{Status: 503, Body: "down"})
	e.Clock.Set(schedT0.Add(90 * time.Second)) // past the interrupted call's timeout
	second.RetryPending(context.Background())
	if n := sent(); n != 0 {
		t.Fatalf("posts while Slack cannot be asked = %d; want none yet", n)
	}
	e.fake.FailNext("conversations.history", testkit.Failure{Status: 200, Body: `{"ok":false,"error":"channel_not_found"}`})
	e.Clock.Set(schedT0.Add(2 * time.Minute))
	second.RetryPending(context.Background())
	if n := sent(); n != 1 {
		t.Fatalf("posts once Slack refuses the look-up = %d; want the status posted again at once", n)
	}
	second.RetryPending(context.Background())
	if n := sent(); n != 1 {
		t.Errorf("posts after another tick = %d; want still 1", n)
	}
}

// historyReads counts the bot's reads of a run's history: in a scheduled post, the charts are what reads it.
type historyReads struct {
	conversation.Runs
	n atomic.Int64
}

func (h *historyReads) History(name string) []reports.Observation {
	h.n.Add(1)
	return h.Runs.History(name)
}

// TestScheduleUnchangedStatusDrawsNoChart: a scheduled status that is not posted because it has not changed
// (a finished job, hour after hour) draws no charts; one that is posted does. The digest that decides leaves
// the charts out, and they were drawn first all the same.
func TestScheduleUnchangedStatusDrawsNoChart(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t, "new", "@hourly", "")
	reads := &historyReads{Runs: e.Mon}
	dir, err := state.Open(e.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := posts.NewScheduler(conversation.NewBot(reads, time.UTC, config.Env{}), e.api, dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fire := func(at time.Time) {
		t.Helper()
		e.Clock.Set(at)
		if err := sched.Fire(context.Background(), "synth", at); err != nil {
			t.Fatalf("fire at %s = %v", at.Format(time.DateTime), err)
		}
	}
	e.WriteLog(t, 25000, 25000)
	fire(schedT0)
	if n := len(e.fake.Calls("chat.postMessage")); n != 1 || reads.n.Load() == 0 {
		t.Fatalf("first status: %d posts, %d history reads; want 1 post, with its charts", n, reads.n.Load())
	}
	before := reads.n.Load()
	fire(schedT0.Add(time.Hour))
	if n := len(e.fake.Calls("chat.postMessage")); n != 1 {
		t.Fatalf("posts after an unchanged status = %d; want still 1", n)
	}
	if n := reads.n.Load() - before; n != 0 {
		t.Errorf("history reads for a status not posted = %d; want 0 (no charts drawn for it)", n)
	}
}

// A finished run's status goes out once; the free space and the health check's milliseconds that go on
// moving after the finish do not post the same "Done" again every hour. A change to its checklist does.
func TestScheduleFinishedRunPostsOnce(t *testing.T) {
	var free atomic.Int64
	free.Store(40 << 30)
	usage := func(string) (probes.Usage, error) {
		f := free.Add(-3 << 30) // another job on the disk writes 3 GiB between samples
		return probes.Usage{Total: 100 << 30, Free: uint64(f), Used: uint64(100<<30 - f)}, nil
	}
	e := newSchedEnvWith(t, botOpts{StatFS: probes.NewStatFSFunc(2*time.Second, usage), Run: func(r *config.Run) {
		r.PostMode, r.Schedule = "new", "@hourly"
	}})
	e.WriteLog(t, 25000, 25000)
	steps := []struct {
		at    time.Duration
		stage string // a stage marked before this step
		sent  int    // statuses posted by the end of this step
	}{
		{0, "", 1},
		{time.Hour, "", 1},
		{2 * time.Hour, "", 1},
		{3 * time.Hour, "review", 2},
		{4 * time.Hour, "", 2},
	}
	for _, st := range steps {
		if st.stage != "" {
			if rep := e.bot.Ask(context.Background(), conversation.Request{Text: "stage " + st.stage + " done", User: "UADMIN", Source: "mention"}); rep.Refused {
				t.Fatalf("stage %s done = %q", st.stage, rep.Message.Text())
			}
		}
		e.fireAt(t, schedT0.Add(st.at))
		sent := e.fake.Calls("chat.postMessage")
		if len(sent) != st.sent {
			t.Fatalf("+%s: %d statuses posted; want %d (last: %q)", st.at, len(sent), st.sent, sent[len(sent)-1].Form.Get("text"))
		}
		if !strings.Contains(sent[len(sent)-1].Form.Get("text"), "25,000 / 25,000") {
			t.Errorf("+%s: status %q; want the finished count", st.at, sent[len(sent)-1].Form.Get("text"))
		}
	}
}

// A local-time daily cron posts on the day the clocks change: Europe/London's 09:00 on the Sunday
// summer time starts is 23 hours after Saturday's, and reading the last post's time in UTC put
// "the next 09:00" an hour after it, so that day's status was skipped as not due.
func TestScheduleLocalCronAcrossDST(t *testing.T) {
	t.Parallel()
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Skipf("no tz database: %v", err)
	}
	tests := []struct {
		name        string
		first, next time.Time
	}{
		{"spring forward", time.Date(2026, 3, 28, 9, 0, 0, 0, london), time.Date(2026, 3, 29, 9, 0, 0, 0, london)},
		{"fall back", time.Date(2026, 10, 24, 9, 0, 0, 0, london), time.Date(2026, 10, 25, 9, 0, 0, 0, london)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newSchedEnvWith(t, botOpts{Loc: london, Run: func(r *config.Run) { r.PostMode, r.Schedule = "new", "0 9 * * *" }})
			e.fireAt(t, tc.first)
			e.WriteLog(t, 900, 25000)
			// An hour before the next 09:00 is not due, whichever way the clocks went.
			e.fireAt(t, tc.next.Add(-time.Hour))
			if n := len(e.fake.Calls("chat.postMessage")); n != 1 {
				t.Fatalf("posts by %s = %d; want 1 (08:00 is not due)", tc.next.Add(-time.Hour), n)
			}
			e.fireAt(t, tc.next)
			if n := len(e.fake.Calls("chat.postMessage")); n != 2 {
				t.Errorf("posts by %s (%s) = %d; want 2: the day the clocks change has its 09:00 status", tc.next, tc.next.UTC().Format(time.Kitchen), n)
			}
		})
	}
}

// startSched starts s on clock until the test ends.
func startSched(t *testing.T, s *posts.Scheduler, clock *testkit.Clock) {
	t.Helper()
	s.Clock = clock
	ctx, cancel := context.WithCancel(context.Background())
	s.Start(ctx)
	t.Cleanup(func() {
		cancel()
		s.Stop(10 * time.Second)
	})
}

// A machine suspended for 50 minutes of an hourly wait, or a clock NTP steps 50 minutes on, posts
// at the hour it shows: one timer of an hour counted only the 10 minutes that elapsed, and posted
// 50 minutes late.
func TestScheduleWallClockJump(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t, "new", "@hourly", "")
	clock := testkit.NewClock(schedT0)
	startSched(t, e.sched, clock)
	clock.AwaitAfter(t)
	clock.Jump(50 * time.Minute)
	for clock.Now().Before(schedT0.Add(time.Hour)) {
		clock.Add(time.Minute)
		select {
		case <-clock.Waits():
		case <-time.After(10 * time.Second):
			t.Fatalf("at %s (wall clock) nothing reads the clock again: the hourly post waits for a timer that counts elapsed time only", clock.Now().Format(time.TimeOnly))
		}
	}
	sent := e.fake.Wait(t, "chat.postMessage", 1)
	if len(sent) != 1 {
		t.Errorf("posts at %s = %d; want 1", clock.Now().Format(time.TimeOnly), len(sent))
	}
}

// A bot restarted across the hour (stopped at 10:59:59, started at 11:00:01) posts the 11:00
// status at once: it waited for 12:00, and the status of 11:00 was never posted.
func TestScheduleRestartAcrossTheHour(t *testing.T) {
	t.Parallel()
	first, second := postedThenRestarted(t)
	second.fake = first.fake
	second.api = first.api
	s, err := posts.NewScheduler(second.bot, first.api, mustOpen(t, first.StateDir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	restart := schedT0.Add(time.Hour + time.Second)
	second.Clock.Set(restart)
	startSched(t, s, testkit.NewClock(restart))
	first.fake.Wait(t, "chat.postMessage", 2)

	// Started again at 11:00:02, after the 11:00 post landed, it waits for 12:00.
	third := newSchedEnv(t, "new", "@hourly", first.StateDir)
	third.Clock.Set(restart.Add(time.Second))
	s3, err := posts.NewScheduler(third.bot, third.api, mustOpen(t, first.StateDir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := testkit.NewClock(restart.Add(time.Second))
	startSched(t, s3, clock)
	clock.AwaitAfter(t)
	if n := len(third.fake.Calls("chat.postMessage")); n != 0 {
		t.Errorf("posts after a restart a second after the hour's post = %d; want none", n)
	}
}

// A bot restarted 40 ms before the hour, having missed the last one, posts once, at the hour: it posted
// the missed status at once and the hour's 40 ms later, two statuses in a row.
func TestScheduleRestartJustBeforeTheHour(t *testing.T) {
	t.Parallel()
	first, second := postedThenRestarted(t)
	s, err := posts.NewScheduler(second.bot, second.api, mustOpen(t, first.StateDir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	restart := schedT0.Add(2*time.Hour - 40*time.Millisecond) // 11:00 was missed; 12:00 is 40 ms away
	second.Clock.Set(restart)
	clock := testkit.NewClock(restart)
	startSched(t, s, clock)
	clock.AwaitAfter(t)
	if n := len(second.fake.Calls("chat.postMessage")) + len(second.fake.Calls("chat.update")); n != 0 {
		t.Errorf("posts 40 ms before the hour after missing the last = %d; want none until the hour", n)
	}
	second.Clock.Set(restart.Add(40 * time.Millisecond))
	clock.Add(40 * time.Millisecond)
	second.fake.Wait(t, "chat.postMessage", 1)
	clock.AwaitAfter(t)
	if n := len(second.fake.Calls("chat.postMessage")); n != 1 {
		t.Errorf("posts at the hour = %d; want 1", n)
	}
}

// postedThenRestarted is an hourly run that posted at schedT0, and a second bot over its state directory.
func postedThenRestarted(t *testing.T) (first, second *schedEnv) {
	t.Helper()
	first = newSchedEnv(t, "new", "@hourly", "")
	first.fireAt(t, schedT0)
	first.WriteLog(t, 900, 25000)
	second = newSchedEnv(t, "new", "@hourly", first.StateDir)
	second.WriteLog(t, 900, 25000)
	return first, second
}

func mustOpen(t *testing.T, path string) *state.Dir {
	t.Helper()
	d, err := state.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestConsoleShowsScheduledStatus: the console prints a run's scheduled status where a channel would get it,
// on the run's schedule (not before it is due), and the living message's edits in update mode.
func TestConsoleShowsScheduledStatus(t *testing.T) {
	for _, mode := range []string{"new", "update"} {
		t.Run(mode, func(t *testing.T) {
			e := newBotEnv(t, botOpts{Clock: testkit.NewClock(schedT0), Run: func(r *config.Run) { r.PostMode, r.Schedule = mode, "@hourly" }})
			var out testkit.LogBuffer
			c := &conversation.Console{Bot: e.bot, In: strings.NewReader(""), Out: &out}
			s, err := posts.NewScheduler(e.bot, conversation.NewConsolePoster(c), nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			fire := func(at time.Time) {
				t.Helper()
				e.Clock.Set(at)
				if err := s.Fire(context.Background(), "synth", at); err != nil {
					t.Fatal(err)
				}
			}
			fire(schedT0)
			first := out.String()
			if !strings.Contains(first, "Scheduled status for #synth:") || !strings.Contains(first, "synth · status") {
				t.Fatalf("console after the first scheduled fire:\n%s\nwant the status, headed by its channel", first)
			}
			fire(schedT0.Add(30 * time.Minute)) // not due on an hourly schedule
			if out.String() != first {
				t.Errorf("a status was printed half an hour into an hourly schedule:\n%s", out.String())
			}
			e.WriteLog(t, 310, 25000)
			fire(schedT0.Add(time.Hour))
			second := strings.TrimPrefix(out.String(), first)
			want := "Scheduled status for #synth:"
			if mode == "update" {
				want = "Scheduled status for #synth (the living message, updated):"
			}
			if !strings.Contains(second, want) || !strings.Contains(second, "310 / 25,000") {
				t.Errorf("console after the job moved on (%s):\n%s\nwant %q and the new progress", mode, second, want)
			}
		})
	}
}

// newTestAPI is the Slack Web API client on the fake, recording its waits instead of sleeping.
func newTestAPI(t testing.TB, f *testkit.Slack, log *slog.Logger, m *botmetrics.Metrics) (*slackapp.API, *[]time.Duration) {
	t.Helper()
	var mu sync.Mutex
	waits := &[]time.Duration{}
	api := slackapp.NewAPI(slackapp.APIOptions{Token: testkit.BotToken, APIURL: f.APIURL(), Redactor: redact.New(testkit.BotToken.Reveal(), testkit.AppToken.Reveal()),
		Metrics: m, Log: log, Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			*waits = append(*waits, d)
			mu.Unlock()
			return ctx.Err()
		}})
	return api, waits
}

// TestSecurityPostsOnlyToAllowedChannels: the allow-lists bind what runwatch posts unasked (the
// scheduled status, warnings) as they bind its answers. A run whose channel they leave out gets
// neither; one they list, by name or by id (once Slack has reported the name's id), gets both.
func TestSecurityPostsOnlyToAllowedChannels(t *testing.T) {
	tests := []struct {
		name    string
		env     []string // RUNWATCH_ALLOWED_CHANNELS
		own     []string // the run's allowed_channels
		channel string
		learned string // the id Slack reported for the channel's name before
		want    bool
	}{
		{"no allow-list", nil, nil, "#synth", "", true},
		{"listed by name", []string{"#synth"}, nil, "#synth", "", true},
		{"listed by id", []string{"CSYNTH"}, nil, "CSYNTH", "", true},
		{"listed by id, the name's id learned", []string{"CSYNTH"}, nil, "#synth", "CSYNTH", true},
		{"another channel listed", []string{"C0ELSEWHERE"}, nil, "#synth", "", false},
		{"another channel listed, the name's id learned", []string{"C0ELSEWHERE"}, nil, "#synth", "CSYNTH", false},
		{"the run's own list leaves it out", nil, []string{"C0OWN"}, "#synth", "", false},
		{"the run's own list names it", nil, []string{"#synth"}, "#synth", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newSchedEnvWith(t, botOpts{Env: config.Env{AllowedChannels: tc.env}, Run: func(r *config.Run) {
				r.Channel, r.AllowedChannels = tc.channel, tc.own
			}})
			e.bot.LearnChannel(tc.channel, tc.learned)
			e.fireAt(t, schedT0)
			deliver := slackapp.Deliver(e.bot, e.api, nil, 0)
			if _, err := deliver(context.Background(), posts.Post{Run: "synth", Channel: tc.channel, Kind: posts.AlertStall, Key: "synth/stall",
				Message: reports.Message{Title: "synth is stalled"}}); err != nil {
				t.Fatalf("deliver = %v", err)
			}
			if n, want := len(e.fake.Calls("chat.postMessage")), map[bool]int{true: 2, false: 0}[tc.want]; n != want {
				t.Errorf("channel %s, allowed %v (run's own %v): %d posts; want %d (the status and the warning, or nothing)",
					tc.channel, tc.env, tc.own, n, want)
			}
		})
	}
}

// slowPoster is the Slack API on a step clock that moves on by d while each post is on its way.
type slowPoster struct {
	*slackapp.API
	clock *testkit.Clock
	d     time.Duration
}

func (p *slowPoster) PostTagged(ctx context.Context, channel, threadTS, id string, m reports.Message) (string, string, error) {
	p.clock.Jump(p.d)
	return p.API.PostTagged(ctx, channel, threadTS, id, m)
}

// A status that takes 1.5 s to reach Slack (a loaded machine) is dated when Slack got it: after a restart
// half a second later, the next one on an "@every 2s" schedule waits for its time after that, instead of
// reaching the channel 0.7 s after the last (TestServeSurvivesKill9 saw 0.74 s under load).
func TestScheduleRestartAfterASlowPost(t *testing.T) {
	t.Parallel()
	e := newSchedEnvWith(t, botOpts{Run: func(r *config.Run) { r.Schedule, r.PostMode = "@every 2s", "new" }})
	clock := testkit.NewClock(schedT0)
	slow := &slowPoster{API: e.api, clock: clock, d: 1500 * time.Millisecond}
	s, err := posts.NewScheduler(e.bot, slow, mustOpen(t, e.StateDir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Clock = clock
	if err := s.Fire(context.Background(), "synth", schedT0); err != nil {
		t.Fatal(err)
	}
	var memo struct {
		Runs map[string]struct {
			LastPost time.Time `json:"last_post"`
		} `json:"runs"`
	}
	if err := mustOpen(t, e.StateDir).Load(posts.ScheduleStateFile, &memo); err != nil {
		t.Fatal(err)
	}
	if got, want := memo.Runs["synth"].LastPost, schedT0.Add(1500*time.Millisecond); !got.Equal(want) {
		t.Errorf("last post = %s; want %s, when Slack had it", got.Format(time.StampMilli), want.Format(time.StampMilli))
	}
	restart := schedT0.Add(2200 * time.Millisecond)
	e.Clock.Set(restart)
	second := testkit.NewClock(restart)
	s2, err := posts.NewScheduler(e.bot, e.api, mustOpen(t, e.StateDir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	startSched(t, s2, second)
	second.AwaitAfter(t)
	if n := len(e.fake.Calls("chat.postMessage")); n != 1 {
		t.Fatalf("posts 0.7 s after the last reached Slack = %d; want only that one", n)
	}
	second.Add(1800 * time.Millisecond) // the schedule's next time after the restart
	e.fake.Wait(t, "chat.postMessage", 2)
}

// editCrashPoster is the Slack API whose living-message edits reach Slack and then never come back: the
// process is killed in between.
type editCrashPoster struct {
	*slackapp.API
	landed, release chan struct{}
	once            sync.Once
}

func (p *editCrashPoster) Update(ctx context.Context, channel, ts string, m reports.Message) error {
	p.API.Update(ctx, channel, ts, m)
	p.once.Do(func() { close(p.landed) })
	<-p.release
	return context.Canceled
}

// An edit of the living message that Slack took just before a kill -9 is not made again the moment the
// restarted bot starts: it was recorded as made before it was sent. Before, the restarted bot found the
// edit's time unrecorded, took the schedule as missed and edited at once, 0.12 s after the edit Slack
// already had (TestServeSurvivesKill9, under load).
func TestScheduleEditKilledMidwayNotRepeated(t *testing.T) {
	t.Parallel()
	e := newSchedEnvWith(t, botOpts{Run: func(r *config.Run) { r.PostMode, r.Schedule = "update", "@every 2s" }})
	e.fireAt(t, schedT0) // the living message
	e.WriteLog(t, 900, 25000)
	cp := &editCrashPoster{API: e.api, landed: make(chan struct{}), release: make(chan struct{})}
	first, err := posts.NewScheduler(e.bot, cp, mustOpen(t, e.StateDir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(cp.release); <-done })
	at := schedT0.Add(2 * time.Second)
	e.Clock.Set(at)
	go func() {
		defer close(done)
		first.Fire(context.Background(), "synth", at)
	}()
	<-cp.landed
	restart := at.Add(100 * time.Millisecond)
	e.Clock.Set(restart)
	clock := testkit.NewClock(restart)
	second, err := posts.NewScheduler(e.bot, e.api, mustOpen(t, e.StateDir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	startSched(t, second, clock)
	clock.AwaitAfter(t)
	if n := len(e.fake.Calls("chat.update")); n != 1 {
		t.Fatalf("edits 0.1 s after the one Slack took before the kill = %d; want only that one", n)
	}
	clock.Add(1900 * time.Millisecond) // the schedule's next time
	e.Clock.Set(clock.Now())
	e.WriteLog(t, 1200, 25000)
	e.fake.Wait(t, "chat.update", 2)
}
