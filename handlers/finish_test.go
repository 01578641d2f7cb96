package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/monitor"
	"runwatch/reports"
	"runwatch/sim"
)

// finishJob is the demo's job (sim.DemoScenario: 25,000 items, two data-parallel engines behind one endpoint)
// on a clock the test moves: its /metrics served, its progress logged, sampled every 30 simulated seconds.
type finishJob struct {
	mu    sync.Mutex
	job   *sim.Job
	log   *os.File
	now   time.Time
	bot   *conversation.Bot
	alert *Alerter
	posts []Post
	srv   *httptest.Server // the job's /metrics
}

// finishEpoch is the unix time of the job's sim second 0 in its metrics (sim's default epoch).
const finishEpoch = 1_750_000_000

func startFinishJob(t *testing.T, s sim.Scenario, from float64, edit ...func(r *config.Run)) *finishJob {
	t.Helper()
	dir := t.TempDir()
	f := &finishJob{job: sim.NewJob(s, 1)}
	f.job.Advance(from)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		b := f.job.Metrics()
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	f.srv = srv
	logPath := filepath.Join(dir, "generate.log")
	var err error
	if f.log, err = os.Create(logPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.log.Close() })
	fmt.Fprintln(f.log, f.job.ProgressLine())
	f.now = time.Unix(finishEpoch+int64(f.job.Now()), 0).UTC()
	file := &config.File{Source: "test", Runs: []config.Run{{Name: "demo", Channel: "#demo", Log: logPath, Metrics: []string{srv.URL + "/metrics"},
		Total: int64(s.Items), MaxTokens: s.MaxTokens, StallAfter: config.Duration{Duration: 10 * time.Minute}}}}
	for _, e := range edit {
		e(&file.Runs[0])
	}
	m, _, err := monitor.New(file, monitor.Options{ProcRoot: "../probes/testdata/proc", ProbeTimeout: 5 * time.Second, RateWindow: -1,
		Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	f.bot = conversation.NewBot(m, time.UTC, config.Env{})
	f.alert = NewAlerter(time.UTC, func(string) string { return "#demo" })
	return f
}

// step advances the job by dt simulated seconds, logs its progress, samples it and keeps what the alerter
// posts; it returns the posts of this sample.
func (f *finishJob) step(t *testing.T, dt float64) []Post {
	t.Helper()
	f.mu.Lock()
	f.job.Advance(dt)
	fmt.Fprintln(f.log, f.job.ProgressLine())
	f.mu.Unlock()
	f.now = f.now.Add(time.Duration(dt * float64(time.Second)))
	evs := f.bot.Monitor().(*monitor.Monitor).Sample(context.Background())
	posts := f.alert.Process(evs, f.now, func(string) bool { return false })
	f.posts = append(f.posts, posts...)
	return posts
}

func (f *finishJob) ask(t *testing.T, q string) string {
	t.Helper()
	return f.bot.Ask(context.Background(), conversation.Request{Text: q, Run: "demo", Source: "cli"}).Message.Text()
}

// finishOf is what the bot says of a finished run: its ETA, status and throughput answers.
func (f *finishJob) answers(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, q := range []string{"ETA?", "status", "how fast are we going?"} {
		out[q] = f.ask(t, q)
	}
	return out
}

// The demo's job drains: its last requests are the long ones, and the share of the latest finishes that hit
// max_tokens rises from 1% to about a fifth. That is the drain, not the completions: no warning at the finish
// and no jump in the answers after it.
func TestDemoFinishNoDrainWarning(t *testing.T) {
	f := startFinishJob(t, sim.DemoScenario(), 16000)
	for !f.job.Done() {
		f.step(t, 30)
	}
	atFinish := f.answers(t)
	for range 40 {
		f.step(t, 30)
	}
	later := f.answers(t)
	for _, p := range f.posts {
		if strings.HasPrefix(p.Kind, AlertFinishShare) {
			t.Errorf("post %s after the drain: %q; want none", p.Kind, p.Message.Text())
		}
	}
	for i, ans := range []map[string]string{atFinish, later} {
		for q, text := range ans {
			if strings.Contains(text, "rose from") {
				t.Errorf("answer %d to %q after the finish = %q; want no jump in it", i, q, text)
			}
			if q == "status" && !strings.Contains(text, "2% of completions hit max_tokens (4,096)") {
				t.Errorf("answer %d to %q after the finish = %q; want the share that hit max_tokens", i, q, text)
			}
		}
	}
}

// capScenario is a smaller job whose completions jump to four times their length a third of the way in: the
// share that hits max_tokens rises for real, well before the drain.
func capScenario() sim.Scenario {
	s := sim.DemoScenario()
	s.Items = 4000
	s.Events = []sim.Event{{At: 1200, Kind: sim.LengthDrift, Factor: 4}}
	return s
}

// A rise of the share that hit max_tokens in the middle of the run is a warning; once the run is done the
// answers no longer repeat it, and the warning is not resolved by the finish either (nothing went back).
func TestFinishShareWarningBeforeFinish(t *testing.T) {
	f := startFinishJob(t, capScenario(), 600)
	warnedAt := -1.0
	for !f.job.Done() {
		for _, p := range f.step(t, 30) {
			if p.Kind == AlertFinishShare {
				warnedAt = f.job.Now()
			}
		}
	}
	if warnedAt < 0 {
		t.Fatalf("no finish-share warning before the finish at %.0f s; posts %v", f.job.FinishedAt(), f.posts)
	}
	t.Logf("warned at %.0f s, finished at %.0f s", warnedAt, f.job.FinishedAt())
	n := len(f.posts)
	for range 60 {
		f.step(t, 30)
	}
	for _, p := range f.posts[n:] {
		if strings.HasPrefix(p.Kind, AlertFinishShare) {
			t.Errorf("post %s after the finish: %q; want none", p.Kind, p.Message.Text())
		}
	}
	// Slack text carries Slack's emoji, never the console's glyphs: the follow-ups in a warning's thread
	// quote its summary.
	for _, p := range f.posts {
		for _, g := range []string{"(!)", "(!!)", "(~)", "(ok)"} {
			if strings.Contains(p.Message.Mrkdwn(), g) {
				t.Errorf("post %s = %q; want no console glyph %s in Slack text", p.Kind, p.Message.Mrkdwn(), g)
			}
		}
	}
	for q, text := range f.answers(t) {
		if strings.Contains(text, "rose from") {
			t.Errorf("answer to %q after the finish = %q; want no jump in it", q, text)
		}
	}
}

// A finish-share warning open when the run enters its last batch, or finishes, stays open: the jump leaves the
// answers there (reports.Quality.At) without the share having gone back, so "resolved" would be false.
func TestFinishShareNotResolvedByTheEnd(t *testing.T) {
	running := func(n float64) []reports.EngineStatus {
		return []reports.EngineStatus{{URL: "http://e/metrics", Kind: "vllm", OK: true, Running: &n}}
	}
	jump := &reports.Quality{Finished: 1000, Shares: map[string]float64{"length": 0.05}, MaxTokens: 64,
		Jump: &reports.ShareJump{Reason: "length", Before: 0.01, Now: 0.3, BeforeN: 900, NowN: 100}}
	busy := reports.RunStatus{Name: "synth", Progress: &reports.Progress{Done: 500, Total: 1000}, Engines: running(200), Quality: jump}
	tests := []struct {
		name string
		end  reports.RunStatus
		want int // resolved posts
	}{
		{"share back down while busy", reports.RunStatus{Name: "synth", Progress: &reports.Progress{Done: 600, Total: 1000}, Engines: running(200),
			Quality: jump.At(reports.EndBusy)}, 1},
		{"last batch", reports.RunStatus{Name: "synth", Progress: &reports.Progress{Done: 850, Total: 1000}, Engines: running(150),
			Quality: jump.At(reports.EndLastBatch)}, 0},
		{"finished", reports.RunStatus{Name: "synth", Progress: &reports.Progress{Done: 1000, Total: 1000}, Engines: running(0),
			ETA: &reports.ETA{State: reports.StateDone}, Quality: jump.At(reports.EndDone)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == 1 {
				tt.end.Quality = &reports.Quality{Finished: 1100, Shares: map[string]float64{"length": 0.05}, MaxTokens: 64}
			}
			a := NewAlerter(time.UTC, func(string) string { return "#synth" })
			now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			if posts := a.Process([]monitor.Evaluation{{Run: busy, Sample: true}}, now, func(string) bool { return false }); len(posts) != 1 {
				t.Fatalf("posts on the jump = %v; want the warning", posts)
			}
			resolved := 0
			for i := range 3 {
				for _, p := range a.Process([]monitor.Evaluation{{Run: tt.end, Sample: true}}, now.Add(time.Duration(i+1)*time.Minute), func(string) bool { return false }) {
					if p.Kind == AlertFinishShare+"_resolved" {
						resolved++
						want := ":large_green_circle: Resolved after 60 s: completions that hit max_tokens (64) rose from 1% of the 900 before to 30% of the latest 100 finished requests no longer holds."
						if got := p.Message.Mrkdwn(); got != want {
							t.Errorf("resolved post = %q; want %q", got, want)
						}
					}
				}
			}
			if resolved != tt.want {
				t.Errorf("resolved posts = %d; want %d", resolved, tt.want)
			}
		})
	}
}

// A warning recorded before summaries left out their glyph resolves without it too.
func TestResolvedTextDropsRecordedGlyph(t *testing.T) {
	al := &ActiveAlert{Kind: AlertFinishShare, Run: "synth", Summary: "(!) completions that hit max_tokens (64) rose from 1% (900 before) to 30% of the latest 100"}
	if got, want := recoveredText(al), "completions that hit max_tokens (64) rose from 1% (900 before) to 30% of the latest 100 no longer holds"; got != want {
		t.Errorf("recoveredText(%q) = %q; want %q", al.Summary, got, want)
	}
}

// After the finish the throughput stops at it: the window is the last before the finish, and the run average
// is said once, as the finish line's "Averaged ..." (the throughput line above it said it again, "run average
// 1,375 tok/s · 1.42 items/s"), so nothing disagrees with it and nothing falls while the finished run sits idle.
func TestDemoFinishThroughputStopsAtFinish(t *testing.T) {
	f := startFinishJob(t, sim.DemoScenario(), 16000)
	for !f.job.Done() {
		f.step(t, 30)
	}
	runAvg := regexp.MustCompile(`run average ([0-9,.]+ tok/s) · ([0-9,.]+ items/s)`)
	averaged := regexp.MustCompile(`Averaged ([0-9,.]+ tok/s)`)
	items := regexp.MustCompile(`Averaged [^.]*?([0-9,.]+ items/s)`)
	check := func(when string) string {
		var tpLine string
		for q, text := range f.answers(t) {
			if q == "status" {
				continue
			}
			ra, at, ai := runAvg.FindStringSubmatch(text), averaged.FindStringSubmatch(text), items.FindStringSubmatch(text)
			if at == nil || ai == nil || ra != nil {
				t.Errorf("%s, answer to %q = %q; want the run average said once, as the finish line's average", when, q, text)
			}
			for _, l := range strings.Split(text, "\n") {
				if strings.Contains(l, "tok/s") && !strings.Contains(l, "Averaged") {
					tpLine = l
				}
			}
			if !strings.Contains(tpLine, "up to the finish") {
				t.Errorf("%s, answer to %q: throughput %q; want its window said to end at the finish", when, q, tpLine)
			}
		}
		return tpLine
	}
	atFinish := check("at the finish")
	for range 40 {
		f.step(t, 30)
	}
	if later := check("20 min after the finish"); later != atFinish {
		t.Errorf("throughput 20 min after the finish = %q; want it as at the finish, %q", later, atFinish)
	}
}

// The finish post and the answers after it say each figure beside what it is, in clean sentences, and name
// the first estimate for what it is: the first baseline runwatch recorded, which it never posted.
func TestDemoFinishWording(t *testing.T) {
	f := startFinishJob(t, sim.DemoScenario(), 16000)
	for !f.job.Done() {
		f.step(t, 30)
	}
	var finished string
	for _, p := range f.posts {
		if p.Kind == AlertFinished {
			finished = p.Message.Text()
		}
	}
	averaged := regexp.MustCompile(`Averaged [0-9,]+ tok/s \([0-9.]+ items/s\), peak [0-9,]+ tok/s\.`)
	for what, text := range map[string]string{"finish post": finished, "ETA answer": f.ask(t, "ETA?"), "stuck answer": f.ask(t, "is it stuck?")} {
		if what != "stuck answer" && !averaged.MatchString(text) {
			t.Errorf("%s = %q; want %q", what, text, averaged)
		}
		if what != "stuck answer" && !strings.Contains(text, "The first baseline estimate (at ") {
			t.Errorf("%s = %q; want the first estimate named as the first baseline", what, text)
		}
		if strings.Contains(text, "are done") || strings.Contains(text, ". all") {
			t.Errorf("%s = %q; want one clean sentence for the finish", what, text)
		}
	}
	if eta := f.ask(t, "ETA?"); !strings.Contains(eta, "[done] Done: all 25,000 items finished.\n") {
		t.Errorf("ETA answer = %q; want %q", eta, "[done] Done: all 25,000 items finished.")
	}
	if stuck := f.ask(t, "is it stuck?"); !strings.Contains(stuck, "[done] Not stuck: all 25,000 items finished.\n") {
		t.Errorf("stuck answer = %q; want %q", stuck, "[done] Not stuck: all 25,000 items finished.")
	}
}

// Once every item is done the inference server is stopped to free its GPUs: that is not an outage. Stopped
// after the finish, it raises no warning; a warning it raised before the finish resolves at the finish
// saying why, not claiming the server answers again.
func TestServerStoppedAfterFinishIsNoWarning(t *testing.T) {
	probes := func(ps []Post) []Post {
		var out []Post
		for _, p := range ps {
			if strings.HasPrefix(p.Kind, AlertProbe) {
				out = append(out, p)
			}
		}
		return out
	}
	t.Run("stopped after the finish", func(t *testing.T) {
		f := startFinishJob(t, sim.DemoScenario(), 17000)
		for !f.job.Done() {
			f.step(t, 30)
		}
		f.step(t, 30)
		f.srv.Close()
		for range 4 {
			f.step(t, 30)
		}
		if got := probes(f.posts); len(got) != 0 {
			t.Errorf("posts after the server stopped at the finish = %q; want none", got[0].Message.Text())
		}
	})
	t.Run("down before the finish", func(t *testing.T) {
		f := startFinishJob(t, sim.DemoScenario(), 17000)
		f.step(t, 30)
		f.srv.Close()
		f.step(t, 30)
		f.step(t, 30)
		if got := probes(f.posts); len(got) != 1 || got[0].Kind != AlertProbe {
			t.Fatalf("posts with the server down mid-job = %d; want one warning", len(got))
		}
		for !f.job.Done() {
			f.step(t, 30)
		}
		f.step(t, 30)
		got := probes(f.posts)
		if len(got) != 2 || got[1].Kind != AlertProbe+"_resolved" {
			t.Fatalf("server posts by the finish = %d; want the warning and its resolution", len(got))
		}
		text := got[1].Message.Text()
		if !strings.Contains(text, "demo finished, so metrics "+f.srv.URL+"/metrics is not needed any more") || strings.Contains(text, "answers again") {
			t.Errorf("resolution = %q; want it to say the job finished, not that the server answers", text)
		}
	})
}

// After the finish people stop vLLM to free the GPUs. The warnings knew (no "source down"), but the answers
// still said "(!!) http://…/metrics is down (below)", the checklist "[    ] vllm-server — not answering yet: …",
// and "what's left?" "Slowed: 1 of 1 engines are down". Now every answer says it plainly: the server no longer
// answers, and when the job finished.
func TestAnswersAfterTheServerStoppedAtTheFinish(t *testing.T) {
	f := startFinishJob(t, sim.DemoScenario(), 17000, func(r *config.Run) {
		r.Stages = []config.Stage{{Name: "vllm-server", Check: "http", URL: r.Metrics[0]}, {Name: "generate", Check: "progress"}}
	})
	for !f.job.Done() {
		f.step(t, 30)
	}
	f.step(t, 30)
	f.srv.Close()
	f.step(t, 30)
	st, err := f.bot.Monitor().RunStatus(context.Background(), "demo", monitor.Need{Progress: true})
	if err != nil || st.Finish == nil || st.Finish.FinishedAt == 0 {
		t.Fatalf("status = %+v, %v; want a finish with its time", st.Finish, err)
	}
	at := time.Unix(int64(st.Finish.FinishedAt), 0).UTC().Format("15:04 UTC")
	plain := f.srv.URL + "/metrics no longer answers (the job finished at " + at + ")"
	for q, want := range map[string][]string{
		"status":            {plain, "[done] vllm-server — no longer answers (the job finished at " + at + ")"},
		"is vllm up?":       {plain},
		"how fast?":         {plain},
		"ETA?":              {plain},
		"what's left?":      {"Every stage of the checklist is done"},
		"is the job stuck?": {plain},
	} {
		got := f.ask(t, q)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%q = %q; want it to say %q", q, got, w)
			}
		}
		for _, bad := range []string{"(!!)", "(!)", "is down", "yet", "Slowed"} {
			if strings.Contains(got, bad) {
				t.Errorf("%q = %q; want no %q after the finish", q, got, bad)
			}
		}
	}
}
