package conversation

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/internal/testkit/goldenfile"
	"runwatch/probes"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestRepliesGolden asks one question per intent of a bot over the fake and compares each reply's
// plain text and Block Kit with testdata/replies/<name>.{txt,blocks.json}.golden
// (go test ./conversation -run TestRepliesGolden -update rewrites them).
func TestRepliesGolden(t *testing.T) {
	runs := testkit.ReplyRuns(t)
	b := NewBot(runs, time.UTC, config.Env{Admins: []string{"UADMIN"}})
	questions := []struct{ name, text, user string }{
		{"status_console", "status", "console"}, // the terminal's status is the full one
		{"eta", "ETA?", ""},
		{"why", "why did the ETA move?", ""},
		{"ontrack", "are we on track?", ""},
		{"left", "what's left to do?", ""},
		{"safe", "is /shared safe?", ""},
		{"logs", "logs", ""},
		{"throughput", "how fast are we going?", ""},
		{"stuck", "is it stuck?", ""},
		{"servers", "is vllm up?", ""},
		{"status", "status", ""},
		{"writes", "are we writing to /shared?", ""},
		{"where", "where does the output go?", ""},
		{"space", "how much space is left on /data/runs/gen-0412?", ""},
		{"fit", "will the hidden states fit?", ""},
		{"storage", "storage", ""},
		{"runs", "runs", ""},
		{"help", "help", ""},
		{"chart", "chart", ""},
		{"snooze", "snooze 2h", "UADMIN"},
		{"snooze_refused", "snooze 2h", "UOTHER"},
		{"unsnooze", "unsnooze", "UADMIN"},
		{"stage", "stage review done", "UADMIN"},
		{"unknown", "what is the meaning of life?", ""},
		{"thanks", "thanks!", ""},
		{"hello", "hi", ""},
	}
	for _, q := range questions {
		t.Run(q.name, func(t *testing.T) {
			req := Request{Text: q.text, User: q.user, Source: "mention", Channel: "C1"}
			if q.user == "console" {
				req = Request{Text: q.text, Source: "console"}
			}
			rep := b.Ask(context.Background(), req)
			replyGolden(t, filepath.Join("replies", q.name+".txt.golden"), []byte(rep.Message.Text()+"\n"))
			blocks, err := json.MarshalIndent(rep.Message.Blocks(), "", "  ")
			if err != nil {
				t.Fatalf("marshal blocks: %v", err)
			}
			replyGoldenJSON(t, filepath.Join("replies", q.name+".blocks.json.golden"), blocks)
		})
	}
}

func replyGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Text(t, filepath.Join("testdata", name), got, *update)
}

// replyGoldenJSON compares Block Kit after unmarshalling, so formatting does not matter.
func replyGoldenJSON(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.JSON(t, filepath.Join("testdata", name), got, *update)
}

// "will the disk fill?" names the capacity plan that does not fit on the output's mount: the pace
// of the writes so far says nothing about the hidden states to come.
func TestAskWillTheDiskFillNamesPlans(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) {
		// 10^15 tokens × 43 kB: no disk holds it.
		r.Plans = []config.Plan{{Name: "hidden-states", Target: r.Outputs[0], Tokens: config.Tokens{N: 1e15},
			Layers: config.Layers{List: []int{2, 30, 58}}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"}}
	}})
	rep := e.bot.Ask(context.Background(), Request{Text: "will the disk fill?", Source: "console"})
	text := rep.Message.Mrkdwn()
	if rep.Intent != "space" || !strings.Contains(text, "Plan hidden-states does not fit here: it needs 43.0 EB") {
		t.Errorf("Ask(will the disk fill?) = %s %q; want the space answer naming the plan that does not fit", rep.Intent, text)
	}
}

// A chart asked for before there is history says who takes the samples: in the console it is the
// console itself, not a bot serve the user may not run.
func TestChartWithoutHistorySaysWhoSamples(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	for _, c := range []struct{ source, want string }{
		{"console", "this console takes one every sampling interval"},
		{"cli", "`bot serve` (or `bot console`) takes one every sampling interval"},
	} {
		text := e.bot.Ask(context.Background(), Request{Text: "chart", Source: c.source}).Message.Mrkdwn()
		if !strings.Contains(text, "not enough history") || !strings.Contains(text, c.want) {
			t.Errorf("Ask(chart) from %s = %q; want it to say %q", c.source, text, c.want)
		}
	}
}

// bot ask against a run read only from /metrics has one sample and no elapsed time: the ETA is
// unknown, and the answer says what would give it one (a bot that samples), not only that a rate
// needs a second sample.
func TestAskOneShotETASaysWhoSamples(t *testing.T) {
	srv := testkit.VLLM(t)
	e := newBotEnv(t, botOpts{Metrics: []string{srv.URL + "/metrics"}, NoLogFile: true, Run: func(r *config.Run) {
		r.Log, r.Total = "", 25000
	}})
	rep := e.bot.Ask(context.Background(), Request{Text: "ETA?", Source: "cli"})
	text := rep.Message.Text()
	if !strings.Contains(text, "ETA: unknown") || !strings.Contains(text, "start bot serve") {
		t.Errorf("Ask(ETA?) from the command line, one sample = %q; want the unknown ETA and how to get one (start bot serve)", text)
	}
}

// TestPlanQuestionsLeadWithFinding: "will it fit?" is answered Yes or No; "what's the plan?" and
// "capacity?" are not yes-or-no questions, and led with "No — 2 of 2 plans do not fit." all the same.
func TestPlanQuestionsLeadWithFinding(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) {
		// Far more than any disk holds: neither plan fits wherever the test runs.
		r.Plans = []config.Plan{
			{Name: "hidden-states", Target: r.Outputs[0], Tokens: config.Tokens{N: 25e9},
				Layers: config.Layers{List: []int{2, 30, 58}}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"},
			{Name: "all-layers", Target: r.Outputs[0], Tokens: config.Tokens{N: 25e9},
				Layers: config.Layers{All: true}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"},
		}
	}})
	tests := []struct{ text, lead string }{
		{"what's the plan?", ":red_circle: *Neither plan fits.*"},
		{"capacity?", ":red_circle: *Neither plan fits.*"},
		{"plans", ":red_circle: *Neither plan fits.*"},
		{"will it fit?", ":red_circle: *No* — 2 of 2 plans do not fit."},
		{"is there enough space?", ":red_circle: *No* — 2 of 2 plans do not fit."},
		{"are the plans ok?", ":red_circle: *No* — 2 of 2 plans do not fit."},
	}
	for _, tt := range tests {
		rep := e.bot.Ask(context.Background(), Request{Text: tt.text, Source: "console"})
		if rep.Intent != "fit" || len(rep.Message.Sections) == 0 || rep.Message.Sections[0] != tt.lead {
			t.Errorf("Ask(%q) = %s %q; want the fit answer led by %q", tt.text, rep.Intent, rep.Message.Sections, tt.lead)
		}
	}
}

// TestSecurityPathsOutsideTheRun asks about paths that are not the run's, including ones that get
// there by .. or by a symlink inside an output: each is refused without saying anything about the
// path, and a path inside the output is still answered.
func TestSecurityPathsOutsideTheRun(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	out := filepath.Join(e.Dir, "out")
	// A symlink in the output onto another filesystem (/proc): following it leaves the run's mount.
	if err := os.Symlink("/proc/self", filepath.Join(out, "to-proc")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, "part-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	refused := []string{"/etc", "/proc/1/environ", "/root/.ssh",
		out + "/../../../../../../../../../etc/shadow", filepath.Join(out, "to-proc"), filepath.Join(out, "to-proc", "environ")}
	for _, p := range refused {
		for _, q := range []string{"how much space is left on " + p + "?", "are we writing to " + p + "?", "/storage " + p} {
			rep := e.bot.Ask(ctx, Request{Text: q, Channel: "C1", User: "U222", Source: "mention"})
			text := rep.Message.Text()
			if !rep.Refused || !strings.Contains(text, "isn't one of them") {
				t.Errorf("%q = %q; want a refusal", q, text)
			}
			for _, leak := range []string{"free", "resolves", "ext4", "proc"} {
				if strings.Contains(strings.ReplaceAll(text, p, ""), leak) && !strings.Contains(out, leak) {
					t.Errorf("%q refused but says %q: %s", q, leak, text)
				}
			}
		}
	}
	t.Logf("figure: %d paths outside the run (absolute, .., a symlink onto /proc) × 3 questions: all refused, nothing said about them", len(refused))
	inside := filepath.Join(out, "part-1")
	if rep := e.bot.Ask(ctx, Request{Text: "how much space is left on " + inside + "?", Channel: "C1", User: "U222", Source: "mention"}); rep.Refused {
		t.Errorf("a path inside the output was refused: %s", rep.Message.Text())
	}
}

// A log-only run first seen after it finished: its throughput is one line, each rate once, in the throughput
// and status answers (the log's elapsed time is the one span there is, the run's own average).
func TestThroughputOfALogOnlyRunFirstSeenFinished(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) { r.Stages = nil }})
	if err := os.WriteFile(e.Log, []byte("Progress: 25000/25000 (0 errors), 1.0 req/s, avg completion: 1066 tokens, elapsed: 25000s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"how fast?", "status"} {
		got := e.bot.Ask(context.Background(), Request{Text: q, Source: "cli"}).Message.Text()
		if want := "\n1,066 tok/s · 1.00 items/s (25,000 items in 6 h 57 min up to the finish)\n"; !strings.Contains(got, want) || strings.Contains(got, "run average") {
			t.Errorf("%q = %q; want the line %q and no run average beside it", q, got, strings.TrimSpace(want))
		}
	}
}

// faultAsk asks the bot a question from the console and returns the answer's text.
func faultAsk(e *botEnv, q string) string {
	return e.bot.Ask(context.Background(), Request{Text: q, Source: "console"}).Message.Text()
}

// faultContainsAll reports the first of want that s lacks.
func faultContainsAll(s string, want ...string) (string, bool) {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return w, false
		}
	}
	return "", true
}

// TestFaultStatfsNeverReturns stands in for a dead NFS server under the run's output: statfs on
// its mount blocks until released. Questions are answered and name the mount; after the release
// the free space is back.
func TestFaultStatfsNeverReturns(t *testing.T) {
	dir := t.TempDir()
	table, err := probes.NewMounts("/proc").Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mt, ok := table.Lookup(dir)
	if !ok {
		t.Fatalf("no mount holds %s", dir)
	}
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	var calls atomic.Int32
	usage := func(mountPoint string) (probes.Usage, error) {
		if mountPoint == mt.MountPoint {
			calls.Add(1)
			<-release
		}
		return probes.Usage{Total: 100 << 30, Free: 40 << 30, Used: 60 << 30}, nil
	}
	// Only the hung statfs meets the timeout; a second is far beyond the rest of an answer's work.
	const timeout = time.Second
	e := newBotEnv(t, botOpts{Timeout: timeout, StatFS: probes.NewStatFSFunc(timeout, usage)})
	out := filepath.Join(e.Dir, "out")
	var slowest time.Duration
	for _, q := range []string{"how much space is left on " + out + "?", "status", "how much space is left on " + out + "?"} {
		start := time.Now()
		a := faultAsk(e, q)
		slowest = max(slowest, time.Since(start))
		// The probe's own timer and the answer's deadline are the same length; either may end the wait.
		if !strings.Contains(a, "statfs "+mt.MountPoint+": ") || !strings.Contains(a, "not responding") && !strings.Contains(a, "no answer within") {
			t.Errorf("%q while statfs hangs:\n%s\nwant the mount named as not responding", q, a)
		}
	}
	if a := faultAsk(e, "ETA?"); !strings.Contains(a, "300 / 25,000") || strings.Contains(a, "statfs") {
		t.Errorf("ETA while statfs hangs:\n%s\nwant the progress, untouched by storage", a)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("statfs calls on the hung mount = %d; want 1 (no goroutine piles up per question)", n)
	}
	unblock()
	// The stuck call's goroutine frees the mount once it returns: wait for that (polling the answer,
	// with a bound that only guards against a hang).
	var a string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if a = faultAsk(e, "how much space is left on "+out+"?"); !strings.Contains(a, "statfs ") {
			break
		}
	}
	if strings.Contains(a, "statfs ") || !strings.Contains(a, "42.9 GB free") {
		t.Errorf("space after the mount came back:\n%s\nwant 40 GiB free and no problem", a)
	}
	t.Logf("figure: statfs never returns: answers within %v naming the mount (probe timeout %v), 1 stuck call however many questions; free space back on the next question after release",
		slowest.Round(time.Millisecond), timeout)
}

// signalsBot is a bot over one run whose only progress source is the metrics endpoint at url, with a
// clock the test moves.
func signalsBot(t *testing.T, url string, now *time.Time) *Bot {
	t.Helper()
	return NewBot(testkit.MetricsOnly(t, url, now), time.UTC, config.Env{})
}

func TestSignalsInAnswers(t *testing.T) {
	url, next := testkit.Recorded(t, [][]byte{testkit.Fixture(t, "llmd_sim_vllm_finish_reason_batch4.txt"), testkit.Fixture(t, "llmd_sim_vllm_finish_reason_batch6.txt")})
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	b := signalsBot(t, url, &now)
	ctx := context.Background()

	// 22 of 160 (14%) hit max_tokens: worth a line in the status and in the ETA answer.
	status := b.Ask(ctx, Request{Text: "status", Run: "synth", Source: "cli"})
	if !strings.Contains(status.Message.Text(), "14% of completions hit max_tokens (64): those samples are truncated (of 160 finished)") {
		t.Errorf("status = %q; want the truncated share", status.Message.Text())
	}
	eta := b.Ask(ctx, Request{Text: "eta", Run: "synth", Source: "cli"})
	if !strings.Contains(eta.Message.Text(), "14% of completions hit max_tokens") {
		t.Errorf("eta = %q; want the truncated share (it matters at 14%%)", eta.Message.Text())
	}
	now = now.Add(time.Minute)
	next()
	eta = b.Ask(ctx, Request{Text: "eta", Run: "synth", Source: "cli"})
	if !strings.Contains(eta.Message.Text(), "rose from 14% of the 160 before to 100% of the latest 80 finished requests") {
		t.Errorf("eta after the jump = %q; want the jump", eta.Message.Text())
	}
}
