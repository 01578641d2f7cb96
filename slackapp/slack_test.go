package slackapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/botmetrics"
	"runwatch/internal/redact"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/posts"
	"runwatch/reports"
)

// newTestAPI is a API on the fake that records its waits instead of sleeping.
func newTestAPI(t testing.TB, f *testkit.Slack, log *slog.Logger, m *botmetrics.Metrics) (*API, *[]time.Duration) {
	t.Helper()
	var mu sync.Mutex
	waits := &[]time.Duration{}
	api := NewAPI(APIOptions{Token: testkit.BotToken, APIURL: f.APIURL(), Redactor: redact.New(testkit.BotToken.Reveal(), testkit.AppToken.Reveal()),
		Metrics: m, Log: log, Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			*waits = append(*waits, d)
			mu.Unlock()
			return ctx.Err()
		}})
	return api, waits
}

// readFixture reads a file of testdata.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSlackAPIHonoursRetryAfter(t *testing.T) {
	f := testkit.NewSlack(t)
	api, waits := newTestAPI(t, f, nil, nil)
	f.FailNext("chat.postMessage", testkit.Failure{Status: 429, RetryAfter: "3", Body: `{"ok":false,"error":"ratelimited"}`})
	ch, ts, err := api.Post(context.Background(), "#synth", "", reports.Message{Sections: []string{"hello"}})
	if err != nil {
		t.Fatalf("Post after a 429 = %v; want success on the retry", err)
	}
	if ch != "CSYNTH" || ts == "" {
		t.Errorf("Post = %q, %q; want CSYNTH and a ts", ch, ts)
	}
	if n := len(f.Calls("chat.postMessage")); n != 2 {
		t.Errorf("chat.postMessage calls = %d; want 2 (the 429, then the retry)", n)
	}
	if len(*waits) != 1 || (*waits)[0] != 3*time.Second {
		t.Errorf("waits = %v; want [3s] from Retry-After", *waits)
	}

	// A Retry-After past the caller's deadline fails at once instead of sleeping through it; the
	// caller keeps the post and tries again later.
	f.FailNext("chat.postMessage", testkit.Failure{Status: 429, RetryAfter: "30"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	*waits = nil
	_, _, err = api.Post(ctx, "#synth", "", reports.Message{Sections: []string{"hello"}})
	if err == nil || !strings.Contains(err.Error(), "past the deadline") {
		t.Errorf("Post with Retry-After 30s and a 5s deadline = %v; want an error saying it would pass the deadline", err)
	}
	if len(*waits) != 0 || len(f.Calls("chat.postMessage")) != 3 {
		t.Errorf("waits = %v, calls = %d; want no wait and no extra call", *waits, len(f.Calls("chat.postMessage")))
	}
}

func TestSlackAPIServerErrorsBounded(t *testing.T) {
	tests := []struct {
		name      string
		failures  int
		wantCalls int
		wantErr   bool
		wantWaits []time.Duration
	}{
		{"recovers", 2, 3, false, []time.Duration{500 * time.Millisecond, time.Second}},
		{"gives up", 10, 4, true, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := testkit.NewSlack(t)
			api, waits := newTestAPI(t, f, nil, nil)
			for range tc.failures {
				f.FailNext("chat.update", testkit.Failure{Status: 503, Body: "<html>busy " + testkit.BotToken.Reveal() + "</html>"})
			}
			err := api.Update(context.Background(), "CSYNTH", "1.2", reports.Message{Sections: []string{"x"}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Update with %d 503s = %v; want error %v", tc.failures, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), testkit.BotToken.Reveal()) {
				t.Errorf("error holds the token: %v", err)
			}
			if n := len(f.Calls("chat.update")); n != tc.wantCalls {
				t.Errorf("chat.update calls = %d; want %d", n, tc.wantCalls)
			}
			if fmt.Sprint(*waits) != fmt.Sprint(tc.wantWaits) {
				t.Errorf("waits = %v; want %v (exponential backoff)", *waits, tc.wantWaits)
			}
		})
	}
}

func TestSlackAPIRedactsErrors(t *testing.T) {
	f := testkit.NewSlack(t)
	var logs testkit.LogBuffer
	api, _ := newTestAPI(t, f, redact.Logger(logs.Logger(), redact.New(testkit.BotToken.Reveal())), nil)
	// Slack would not echo a token, but a proxy in between might: nothing reaches an error string.
	f.FailNext("chat.postMessage", testkit.Failure{Status: 200, Body: `{"ok":false,"error":"not_authed ` + testkit.BotToken.Reveal() + `"}`})
	_, _, err := api.Post(context.Background(), "#synth", "", reports.Message{Sections: []string{"x"}})
	if err == nil {
		t.Fatal("Post = nil; want the error")
	}
	if strings.Contains(err.Error(), testkit.BotToken.Reveal()) || !strings.Contains(err.Error(), "xoxb-[redacted]") {
		t.Errorf("Post error = %q; want the token redacted", err)
	}
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); !ok || !strings.HasPrefix(se.Err, "not_authed") {
		t.Errorf("errors.As(SlackErrorResponse) = %v, %v; want the SDK error underneath", se, ok)
	}
}

func TestSlackAPIMessages(t *testing.T) {
	f := testkit.NewSlack(t)
	api, _ := newTestAPI(t, f, nil, nil)
	ctx := context.Background()
	msg := reports.Message{Title: "synth · ETA", Sections: []string{"ETA *3 h*", reports.Esc("<!channel> & co")}, Context: []string{"as of now"}}
	if _, _, err := api.Post(ctx, "C1", "1700000000.000001", msg); err != nil {
		t.Fatal(err)
	}
	if err := api.Update(ctx, "C1", "1700000000.000002", msg); err != nil {
		t.Fatal(err)
	}
	if err := api.Ephemeral(ctx, "C1", "U2", "1700000000.000003", msg); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, field, want string
	}{
		{"chat.postMessage", "thread_ts", "1700000000.000001"},
		{"chat.update", "ts", "1700000000.000002"},
		{"chat.postEphemeral", "thread_ts", "1700000000.000003"},
		{"chat.postEphemeral", "user", "U2"},
	}
	for _, tc := range tests {
		cs := f.Calls(tc.method)
		if len(cs) != 1 {
			t.Fatalf("%s calls = %d; want 1", tc.method, len(cs))
		}
		if got := cs[0].Form.Get(tc.field); got != tc.want {
			t.Errorf("%s %s = %q; want %q", tc.method, tc.field, got, tc.want)
		}
		text := cs[0].Form.Get("text")
		if !strings.Contains(text, "*synth · ETA*") || !strings.Contains(text, "&lt;!channel&gt; &amp; co") || strings.Contains(text, "<!channel>") {
			t.Errorf("%s text = %q; want the escaped mrkdwn fallback", tc.method, text)
		}
		if bt := cs[0].BlocksText(t); !strings.Contains(bt, "ETA *3 h*") || strings.Contains(bt, "<!channel>") {
			t.Errorf("%s blocks text = %q; want the sections, escaped", tc.method, bt)
		}
	}
}

func TestSlackAPIUpload(t *testing.T) {
	f := testkit.NewSlack(t)
	api, _ := newTestAPI(t, f, nil, nil)
	png := []byte("\x89PNG\r\n\x1a\nnot really a chart")
	if err := api.Upload(context.Background(), "C1", "1700000000.000009", conversation.Attachment{Name: "synth-chart.png", Title: "synth", AltText: "a chart", Data: png}); err != nil {
		t.Fatalf("Upload = %v", err)
	}
	get := f.Calls("files.getUploadURLExternal")
	if len(get) != 1 || get[0].Form.Get("filename") != "synth-chart.png" || get[0].Form.Get("length") != fmt.Sprint(len(png)) || get[0].Form.Get("alt_txt") != "a chart" {
		t.Errorf("files.getUploadURLExternal = %+v; want filename, length and alt text", get)
	}
	up := f.Calls("upload")
	if len(up) != 1 || !bytes.Equal(up[0].Body, png) {
		t.Errorf("upload = %d calls; want the PNG bytes once", len(up))
	}
	done := f.Calls("files.completeUploadExternal")
	if len(done) != 1 || done[0].Form.Get("channel_id") != "C1" || done[0].Form.Get("thread_ts") != "1700000000.000009" || !strings.Contains(done[0].Form.Get("files"), "F0001") {
		t.Errorf("files.completeUploadExternal = %+v; want the file shared in the thread", done)
	}
	if err := api.Upload(context.Background(), "C1", "", conversation.Attachment{Name: "empty.png"}); err == nil {
		t.Errorf("Upload(empty) = nil; want an error")
	}
}

func TestResponseURLAllowed(t *testing.T) {
	api := NewAPI(APIOptions{Token: testkit.BotToken, APIURL: "http://127.0.0.1:4000/api/"})
	tests := []struct {
		url  string
		want bool
	}{
		{"https://hooks.slack.com/commands/T1DC2JH3J/397700885554/96rGlfmibIGlgcZRskXaIFfN", true},
		{"https://slack.com/x", true},
		{"http://hooks.slack.com/commands/1", false},
		{"https://hooks.slack.com.evil.example/commands/1", false},
		{"http://127.0.0.1:4000/response/1", true},
		{"http://127.0.0.1:4001/response/1", false},
		{"http://169.254.169.254/latest/meta-data", false},
		{"not a url", false},
	}
	for _, tc := range tests {
		if got := api.ResponseURLAllowed(tc.url); got != tc.want {
			t.Errorf("ResponseURLAllowed(%q) = %v; want %v", tc.url, got, tc.want)
		}
	}
}

// TestSlackSeen: a bound of 3 keys; a key is refused (not forgotten, not recorded) while the three held are
// inside seenKeep, and once the oldest is past it, it is the one that goes.
func TestSlackSeen(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := newSlackSeen(3)
	s.now = func() time.Time { return now }
	steps := []struct {
		after time.Duration
		key   string
		want  admission
	}{
		{0, "a", admitNew}, {0, "b", admitNew}, {0, "a", admitSeen}, {time.Minute, "c", admitNew},
		{0, "d", admitFull}, {0, "a", admitSeen}, {0, "d", admitFull}, {0, "", admitNew}, {0, "", admitNew},
		{seenKeep, "d", admitNew},               // a and b are past seenKeep: a, the oldest added, goes
		{0, "b", admitSeen}, {0, "a", admitNew}, // b is past seenKeep too and goes
		{0, "e", admitFull}, {time.Second, "e", admitNew}, // c, added a minute later, is past it a second later
	}
	for i, st := range steps {
		now = now.Add(st.after)
		if got := s.admit(st.key); got != st.want {
			t.Errorf("step %d: admit(%q) = %v; want %v", i, st.key, got, st.want)
		}
	}
}

// TestResponseURLNotInErrors: a response_url is a credential of sorts (anyone holding it posts in the
// channel); neither Respond nor ReplaceOriginal returns an error that names it, whether Slack refuses the
// post or the connection fails.
func TestResponseURLNotInErrors(t *testing.T) {
	f := testkit.NewSlack(t)
	api, _ := newTestAPI(t, f, slog.New(slog.DiscardHandler), botmetrics.New())
	hook := f.ResponseURL("T111/SECRETHOOK42")
	f.FailNext("response_url", testkit.Failure{Status: 404, Body: "no_such_hook"}, testkit.Failure{Status: 404, Body: "no_such_hook"})
	ctx := context.Background()
	if err := api.ReplaceOriginal(ctx, hook, "x", nil); err == nil || strings.Contains(err.Error(), "SECRETHOOK42") {
		t.Errorf("ReplaceOriginal refused = %v; want an error without the response_url", err)
	}
	if err := api.Respond(ctx, hook, reports.Message{Sections: []string{"x"}}, true); err == nil || strings.Contains(err.Error(), "SECRETHOOK42") {
		t.Errorf("Respond refused = %v; want an error without the response_url", err)
	}
	f.Close() // the connection fails now
	if err := api.ReplaceOriginal(ctx, hook, "x", nil); err == nil || strings.Contains(err.Error(), "SECRETHOOK42") {
		t.Errorf("ReplaceOriginal unreachable = %v; want an error without the response_url", err)
	} else {
		t.Logf("unreachable: %v", err)
	}
}

// botOpts shape a botEnv.
type botOpts = testkit.Options

// botEnv is a bot over testkit's world: one run, "synth", with real probes.
type botEnv struct {
	*testkit.World
	bot *conversation.Bot
}

func newBotEnv(t testing.TB, o botOpts) *botEnv {
	t.Helper()
	w := testkit.NewWorld(t, o)
	return &botEnv{World: w, bot: conversation.NewBot(w.Mon, w.Loc, w.Env)}
}

func kinds(ps []posts.Post) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Kind)
	}
	return out
}

// BenchmarkMentionETA measures an "ETA?" mention end to end: a signed Events API request into HTTP
// mode, the probes (a vLLM metrics endpoint and a progress log), the answer, and chat.postMessage
// arriving at the fake Slack. It reports the median.
func BenchmarkMentionETA(b *testing.B) {
	metrics := testkit.VLLM(b)
	e := newHTTPEnv(b, botOpts{Metrics: []string{metrics.URL + "/metrics"}})
	// One user asking, as often as the per-user limit lets them: the limiter's clock moves one refill
	// interval per question. On the wall clock the 11th question in a burst is told to wait, and its
	// answer never comes.
	limit := testkit.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	e.app.limiter.now = limit.Now
	var durs []time.Duration
	i := 0
	for b.Loop() {
		i++
		limit.Set(limit.Now().Add(e.app.limiter.every))
		body := testkit.MentionEvent(fmt.Sprintf("EvB%d", i), "<@U111> ETA?", "U222", "C1", fmt.Sprintf("1700000000.%06d", i), "")
		start := time.Now()
		resp := e.post(b, "/slack/events", body, nil)
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("event = %d", resp.StatusCode)
		}
		for len(e.fake.Calls("chat.postMessage")) < i {
			<-e.fake.Notify
		}
		durs = append(durs, time.Since(start))
	}
	slices.Sort(durs)
	if len(durs) > 0 {
		b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "ms-median")
		b.ReportMetric(float64(durs[len(durs)*9/10].Microseconds())/1000, "ms-p90")
	}
}

func chartProblems(b map[string]any, l blockKitLimits) []string {
	var problems []string
	errf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	dv := l.DataVisualization
	raw, _ := json.Marshal(b)
	var blk slack.DataVisualizationBlock
	if err := json.Unmarshal(raw, &blk); err != nil {
		errf("data_visualization block does not decode: %v", err)
		return problems
	}
	if err := blk.Validate(); err != nil {
		errf("data_visualization block: %v", err)
	}
	if n := utf8.RuneCountInString(blk.Title); n == 0 || n > dv.Title.Max {
		errf("chart title of %d characters", n)
	}
	line, ok := blk.Chart.(*slack.DataVisualizationLineChart)
	if !ok {
		errf("chart is a %T; runwatch draws line charts", blk.Chart)
		return problems
	}
	ax := line.AxisConfig
	if n := len(ax.Categories); n < dv.Categories.Min || n > dv.Categories.Max {
		errf("%d categories; want %d to %d", n, dv.Categories.Min, dv.Categories.Max)
	}
	for _, c := range ax.Categories {
		if utf8.RuneCountInString(c) > dv.CategoryName.Max {
			errf("category %q too long", c)
		}
	}
	if utf8.RuneCountInString(ax.XLabel) > dv.AxisLabel.Max || utf8.RuneCountInString(ax.YLabel) > dv.AxisLabel.Max {
		errf("axis label too long")
	}
	if n := len(line.Series); n < dv.Series.Min || n > dv.Series.Max {
		errf("%d series", n)
	}
	for _, s := range line.Series {
		if utf8.RuneCountInString(s.Name) > dv.SeriesName.Max {
			errf("series name %q too long", s.Name)
		}
		if n := len(s.Data); n < dv.Data.Min || n > dv.Data.Max {
			errf("series %q has %d points; Slack takes %d to %d", s.Name, n, dv.Data.Min, dv.Data.Max)
		}
		for _, p := range s.Data {
			if utf8.RuneCountInString(p.Label) > dv.PointLabel.Max {
				errf("point label %q too long", p.Label)
			}
		}
	}
	return problems
}

// withHistory takes n samples of e's run a minute apart on its test clock, the log moving on.
func withHistory(t testing.TB, e *botEnv, n int) {
	t.Helper()
	t0 := e.Clock.Now()
	for i := range n {
		e.Clock.Set(t0.Add(time.Duration(i) * time.Minute))
		e.WriteLog(t, 300+i*45, 25000)
		e.Mon.Sample(context.Background())
	}
}

// TestEveryReplyWithinBlockKitLimits sends every kind of message the bot can send through the
// limits: the answer of every command (and of its refusals), scheduled statuses with charts and
// buttons, every kind of warning with its buttons, follow-ups and reminders, the App Home.
func TestEveryReplyWithinBlockKitLimits(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	long := strings.Repeat("a very long detail ", 40)
	e := newHTTPEnv(t, botOpts{Clock: clock, Run: func(r *config.Run) {
		for i := range 60 {
			r.Stages = append(r.Stages, config.Stage{Name: fmt.Sprintf("stage %02d %s", i, long[:40]), Check: "manual"})
		}
		r.Plans = []config.Plan{{Name: "hidden-states", Target: r.Outputs[0], Tokens: config.Tokens{N: 25e6},
			Layers: config.Layers{List: []int{2, 30, 58}}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"}}
	}, File: twoRuns})
	withHistory(t, e.botEnv, 30)

	asked := map[string]bool{}
	texts := []string{"eta synth", "why synth", "ontrack synth", "runwatch left synth", "what's left to do?", "safe synth", "throughput synth", "stuck synth", "servers synth", "status synth", "storage synth", "storage /etc synth", "storage hidden-states",
		"writes synth", "where synth", "space synth", "fit synth", "chart synth", "runs", "snooze 2h synth", "snooze forever synth",
		"unsnooze synth", "stage \"stage 01 " + long[:40] + "\" done synth", "stage nope done synth", "stage synth", "logs synth", "logs extract", "help",
		"what is the meaning of life", "ETA?", "", "thanks", "hello"}
	for _, text := range texts {
		for _, user := range []string{"UADMIN", "U222"} {
			rep := e.bot.Ask(context.Background(), conversation.Request{Text: text, Channel: "C0SYNTH", ChannelName: "synth", User: user, Source: "mention"})
			asked[rep.Intent] = true
			checkMessage(t, fmt.Sprintf("answer to %q from %s (%s)", text, user, rep.Intent), rep.Message)
		}
	}
	for _, c := range conversation.CommandTable() {
		if !asked[c.Name] {
			t.Errorf("no reply of command %s was checked; add a question that reaches it", c.Name)
		}
	}
	checkMessage(t, "not allowed", conversation.NotAllowed().Message)

	rs, err := e.Mon.RunStatus(context.Background(), "synth", monitor.All)
	if err != nil {
		t.Fatal(err)
	}
	status := e.bot.StatusMessage(rs, true)
	if len(status.Charts) != 2 || status.Controls == nil {
		t.Fatalf("status has %d charts and controls %v; want throughput and ETA charts and buttons", len(status.Charts), status.Controls)
	}
	checkMessage(t, "scheduled status with charts", status)
	raw, _ := json.Marshal(status.Blocks())
	if !strings.Contains(string(raw), `"data_visualization"`) || !strings.Contains(string(raw), `"actions"`) {
		t.Errorf("status blocks lack the chart or the buttons: %s", raw)
	}

	// Every warning kind, with its buttons, its repeat in the thread, its resolution and the
	// reminder of whoever took it.
	w := &warningEnv{httpEnv: e, alerter: posts.NewAlerter(time.UTC, func(string) string { return "#synth" }), claims: posts.NewClaims(nil, nil)}
	shift := testkit.Eval("synth", nil)
	shift.Shift = &reports.Shift{Reason: strings.Repeat("completions got longer ", 200)}
	evs := []monitor.Evaluation{shift, testkit.Eval("extract", testkit.Stalled), testkit.Eval("synth", func(rs *reports.RunStatus) {
		testkit.ProtectedWrite(rs)
		rs.Storage.Warnings = append(rs.Storage.Warnings,
			reports.StorageWarning{Kind: posts.AlertOutput, Mount: "/shared", Message: "output `/data/out` resolves to protected `/shared`"},
			reports.StorageWarning{Kind: posts.AlertDiskFull, Mount: "/data", Message: "`/data` fills in 2 h, before the ETA " + long})
		rs.Problems = []reports.Problem{{Probe: "metrics http://127.0.0.1:1/metrics", Error: long}, {Probe: "state", Error: "read-only file system"}}
	})}
	t0 := clock.Now()
	sent := w.alerter.Process(evs, t0, func(string) bool { return false })
	sent = append(sent, w.alerter.Process(evs, t0.Add(time.Minute), func(string) bool { return false })...) // confirmations
	seen := map[string]bool{}
	for _, p := range sent {
		seen[p.Kind] = true
		p.Message.Controls = e.bot.WarningControls(p.Run, p.Key, "")
		checkMessage(t, "warning "+p.Kind, p.Message)
		w.alerter.Delivered(p, "1700000000.000100")
	}
	for _, k := range []string{posts.AlertShift, posts.AlertStall, posts.AlertProtected, posts.AlertOutput, posts.AlertDiskFull, posts.AlertProbe} {
		if !seen[k] {
			t.Errorf("no %s warning was checked (got %v)", k, kinds(sent))
		}
	}
	w.claims.Apply(w.alerter, nil, t0, func(string) bool { return false })
	w.claims.Take("extract/"+posts.AlertStall, "UADMIN", t0, time.Hour)
	later := w.claims.Apply(w.alerter, w.alerter.Process(evs, t0.Add(3*time.Hour), func(string) bool { return false }), t0.Add(3*time.Hour), func(string) bool { return false })
	gone := w.alerter.Process([]monitor.Evaluation{testkit.Eval("synth", nil), testkit.Eval("extract", nil)}, t0.Add(4*time.Hour), func(string) bool { return false })
	for _, p := range append(later, gone...) {
		seen[p.Kind] = true
		checkMessage(t, "follow-up "+p.Kind, p.Message)
	}
	if !seen[posts.AlertStall+"_reminder"] || !seen[posts.AlertStall+"_resolved"] {
		t.Errorf("no reminder or resolution was checked (got %v)", seen)
	}
	other := rs
	other.Name = "extract"
	raw, _ = json.Marshal(e.app.homeBlocks([]reports.RunStatus{rs, other}, clock.Now()))
	checkBlockKitLimits(t, "App Home", raw, homeMaxBlocks)
}

// TestBlockKitCheckCatches shows the limit check finds what Slack refuses, so the tests that use it
// can fail.
func TestBlockKitCheckCatches(t *testing.T) {
	l := kitLimits(t)
	long := strings.Repeat("x", 3001)
	points := make([]slack.DataVisualizationDataPoint, 21)
	cats := make([]string, 21)
	for i := range points {
		cats[i] = fmt.Sprintf("t%d", i)
		points[i] = slack.NewDataVisualizationDataPoint(cats[i], 1)
	}
	chart := slack.NewDataVisualizationBlock("a chart", slack.NewDataVisualizationLineChart(slack.NewDataVisualizationAxisConfig(cats...),
		slack.NewDataVisualizationDataSeries("tok/s", points...)))
	tests := []struct {
		name   string
		blocks []slack.Block
	}{
		{"section too long", []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, long, false, false), nil, nil)}},
		{"header too long", []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, long[:151], false, false))}},
		{"chart with 21 points", []slack.Block{chart}},
		{"six menu entries", []slack.Block{slack.NewActionBlock("rw:r=x", slack.NewOverflowBlockElement("menu",
			slack.NewOptionBlockObject("1", slack.NewTextBlockObject(slack.PlainTextType, "1", false, false), nil),
			slack.NewOptionBlockObject("2", slack.NewTextBlockObject(slack.PlainTextType, "2", false, false), nil),
			slack.NewOptionBlockObject("3", slack.NewTextBlockObject(slack.PlainTextType, "3", false, false), nil),
			slack.NewOptionBlockObject("4", slack.NewTextBlockObject(slack.PlainTextType, "4", false, false), nil),
			slack.NewOptionBlockObject("5", slack.NewTextBlockObject(slack.PlainTextType, "5", false, false), nil),
			slack.NewOptionBlockObject("6", slack.NewTextBlockObject(slack.PlainTextType, "6", false, false), nil)))}},
		{"eleven context elements", []slack.Block{slack.NewContextBlock("", func() []slack.MixedElement {
			var els []slack.MixedElement
			for range 11 {
				els = append(els, slack.NewTextBlockObject(slack.MarkdownType, "x", false, false))
			}
			return els
		}()...)}},
	}
	for _, tt := range tests {
		raw, _ := json.Marshal(tt.blocks)
		if p := blockKitProblems(l, raw, 50); len(p) == 0 {
			t.Errorf("%s: no problem found", tt.name)
		}
	}
	var many []slack.Block
	for range 51 {
		many = append(many, slack.NewDividerBlock())
	}
	raw, _ := json.Marshal(many)
	if p := blockKitProblems(l, raw, 50); len(p) == 0 {
		t.Errorf("51 blocks: no problem found")
	}
}

// blockKitLimits are Block Kit's limits (testkit.Limits).
type blockKitLimits = testkit.BlockKitLimits

func kitLimits(t testing.TB) blockKitLimits { return testkit.Limits(t) }

// blockKitProblems lists what in raw Slack would refuse, charts checked by slack-go's own validation.
func blockKitProblems(l blockKitLimits, raw []byte, maxBlocks int) []string {
	return testkit.BlockKitProblems(l, raw, maxBlocks, chartProblems)
}

// checkBlockKitLimits checks every block of raw (a JSON array of blocks) against Slack's limits, the
// data_visualization block's own included (plus slack-go's validation of it).
func checkBlockKitLimits(t testing.TB, what string, raw []byte, maxBlocks int) {
	t.Helper()
	testkit.CheckBlocks(t, what, raw, maxBlocks, chartProblems)
}

// checkMessage checks a message as the Web API would get it (testkit.CheckMessage).
func checkMessage(t testing.TB, what string, m reports.Message) {
	t.Helper()
	testkit.CheckMessage(t, what, m, chartProblems)
}

// TestHostileConfigWithinBlockKitLimits sends every reply, status, warning and the App Home of a
// run file at its limits through Slack's: a 64-character run name (the most config takes), 30 plans and 50 stages with
// long names, outputs at PATH_MAX.
func TestHostileConfigWithinBlockKitLimits(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	name := strings.Repeat("n", 64) // the longest run name config takes
	var longDir string
	e := newHTTPEnv(t, botOpts{Clock: clock, Run: func(r *config.Run) {
		r.Name = name
		deep := r.Outputs[0]
		for len(deep) < 3900 {
			deep = filepath.Join(deep, strings.Repeat("d", 200))
		}

		longDir = deep
		os.MkdirAll(deep, 0o755)
		r.Outputs = []string{r.Outputs[0]}
		for i := range 100 {
			r.Outputs = append(r.Outputs, filepath.Join(deep, fmt.Sprintf("o%03d", i)))
		}
		r.Watch = r.Outputs[1:]
		r.Stages = nil
		for i := range 50 {
			r.Stages = append(r.Stages, config.Stage{Name: fmt.Sprintf("stage-%02d-%s", i, strings.Repeat("s", 3000)), Check: "manual"})
		}
		for i := range 30 {
			r.Plans = append(r.Plans, config.Plan{Name: fmt.Sprintf("plan-%02d-%s", i, strings.Repeat("p", 3000)), Target: deep, Tokens: config.Tokens{N: 25e12},
				Layers: config.Layers{List: []int{2, 30, 58}}, NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"})
		}
	}})
	withHistory(t, e.botEnv, 30)
	texts := []string{"eta", "why", "ontrack", "runwatch left", "safe", "throughput", "stuck", "status", "storage",
		"writes", "where", "space", "fit", "chart", "runs", "snooze 2h", "unsnooze", "stage stage-01 done", "stage", "logs", "help", "what"}
	for _, text := range texts {
		// Each answer evaluates every one of the run's 231 paths: the questions run beside each other (after
		// the rest of the test, which reads none of their answers).
		t.Run(text, func(t *testing.T) {
			t.Parallel()
			rep := e.bot.Ask(context.Background(), conversation.Request{Text: text, Channel: "C0SYNTH", ChannelName: "synth", User: "UADMIN", Source: "mention"})
			checkMessage(t, fmt.Sprintf("answer to %q (%s)", text, rep.Intent), rep.Message)
		})
	}
	rs, err := e.Mon.RunStatus(context.Background(), name, monitor.All)
	if err != nil {
		t.Fatal(err)
	}
	checkMessage(t, "scheduled status", e.bot.StatusMessage(rs, true))
	checkMessage(t, "scheduled status without charts", e.bot.StatusMessage(rs, false))
	for i := range 200 {
		rs.Problems = append(rs.Problems, reports.Problem{Probe: fmt.Sprintf("metrics http://10.0.0.%d:8000/metrics?%s", i, strings.Repeat("q", 3000)), Error: strings.Repeat("connection refused ", 100)})
	}
	checkMessage(t, "status with 200 failing probes", e.bot.StatusMessage(rs, true))
	w := &warningEnv{httpEnv: e, alerter: posts.NewAlerter(time.UTC, func(string) string { return "#synth" }), claims: posts.NewClaims(nil, nil)}
	hostile := testkit.Eval(name, func(r *reports.RunStatus) {
		*r = rs
		r.ETA = &reports.ETA{State: reports.StateStalled, StalledSince: new(1000.0), Reason: strings.Repeat("no progress ", 500)}
		for i := range 50 {
			r.Storage.Warnings = append(r.Storage.Warnings, reports.StorageWarning{Kind: posts.AlertProtected, Mount: longDir + fmt.Sprint(i),
				Message: fmt.Sprintf("%d processes are writing to protected `%s`", i, longDir)})
		}
	})
	t0 := clock.Now()
	seen := map[string]int{}
	for i := range 3 {
		for _, p := range w.alerter.Process([]monitor.Evaluation{hostile}, t0.Add(time.Duration(i)*time.Minute), func(string) bool { return false }) {
			p.Message.Controls = e.bot.WarningControls(p.Run, p.Key, "")
			checkMessage(t, "warning "+p.Kind, p.Message)
			seen[p.Kind]++
		}
	}
	if seen[posts.AlertStall] == 0 || seen[posts.AlertProtected] < 50 {
		t.Errorf("warnings checked = %v; want the stall and 50 protected writes", seen)
	}
	many := []reports.RunStatus{}
	for i := range 100 {
		r := rs
		r.Name = fmt.Sprintf("%s-%03d", name[:60], i)
		many = append(many, r)
	}
	raw, _ := json.Marshal(e.app.homeBlocks(many, clock.Now()))
	checkBlockKitLimits(t, "App Home", raw, homeMaxBlocks)
	if len(raw) > 250000 {
		t.Errorf("App Home view of %d bytes", len(raw))
	}
	rep := e.bot.Ask(context.Background(), conversation.Request{Text: "runs", Channel: "C0SYNTH", ChannelName: "synth", User: "UADMIN", Source: "mention"})
	checkMessage(t, "runs", rep.Message)
}

// TestAnswerPanicLeavesTheBotRunning: an answer that panics is logged (redacted) and counted, its answer slot
// is freed, and the other answers go on; before, the panic stopped bot serve and every run it watched, and Go
// printed it to stderr as it was.
func TestAnswerPanicLeavesTheBotRunning(t *testing.T) {
	var lb testkit.LogBuffer
	log := redact.Logger(lb.Logger(), redact.New())
	m := botmetrics.New()
	app := NewApp(context.Background(), nil, nil, Identity{UserID: "U111"}, m, log)
	app.slots = make(chan struct{}, 1) // one slot: a panic that kept it would block the next answer for good
	app.background(func(context.Context) { panic("answer blew up near xoxb-1234567890-abcdefghij") })
	app.detach(func(context.Context) { panic("a detached one too") })
	done := make(chan struct{})
	app.background(func(context.Context) { close(done) })
	<-done
	app.Wait(time.Minute)
	out := lb.String()
	for _, want := range []string{"an answer failed with a panic", "answer blew up near xoxb-[redacted]", "a detached one too", "slack_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "1234567890") {
		t.Errorf("the panic's token reached the log:\n%s", out)
	}
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp.Body); !strings.Contains(body, `runwatch_slack_events_total{result="panicked"} 2`) {
		t.Errorf("/metrics does not count the two panics:\n%s", body)
	}
}

// TestSecurityLogMarkupNeverPings writes a job log whose lines carry Slack markup (a broadcast, a
// user mention, a link) around real progress, and asks every question about it over HTTP mode:
// the messages posted to Slack carry no live markup, in the text or the blocks.
func TestSecurityLogMarkupNeverPings(t *testing.T) {
	e := newHTTPEnv(t, botOpts{NoLogFile: true, Run: func(r *config.Run) { r.Total = 25000 }})
	lines := []string{
		"<!channel> <!here> <@U0ADMIN> starting <https://evil.example|click here> <#C0123|general>",
		"Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s <!channel>",
		"<!everyone> Processed prompts:  30%|███       | 980/3273 [00:13<00:00, 5753.50it/s] <!subteam^S123>",
		"Progress: 320/25000 (0 errors), 0.7 req/s <https://evil.example/x|status> *bold* _it_ ~s~ `code` &amp; &lt;!channel&gt;",
	}
	if err := os.WriteFile(e.Log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Mon.Sample(context.Background())
	questions := []string{"ETA?", "status", "is it stuck?", "how fast are we going?", "where does the output go?", "help"}
	for i, q := range questions {
		e.post(t, "/slack/events", testkit.MentionEvent(fmt.Sprintf("EvMark%d", i), "<@U111> "+q, "U222", "C1", fmt.Sprintf("1700000300.%06d", i), ""), nil)
	}
	e.app.Wait(20 * time.Second)
	calls := append(e.fake.Calls("chat.postMessage"), e.fake.Calls("chat.postEphemeral")...)
	if len(calls) != len(questions) {
		t.Fatalf("answers = %d; want %d", len(calls), len(questions))
	}
	sawProgress := false
	for _, c := range calls {
		testkit.NoLiveMarkup(t, c.Method+" text", c.Form.Get("text"))
		testkit.NoLiveMarkup(t, c.Method+" blocks", c.Form.Get("blocks"))
		sawProgress = sawProgress || strings.Contains(c.Form.Get("text"), "320 / 25,000")
	}
	if !sawProgress {
		t.Errorf("no answer shows the progress read from the log (320 / 25,000): the markup must not hide it")
	}
	t.Logf("figure: a log full of <!channel>, <@U…>, links: %d answers posted, 0 live mentions or links in text or blocks", len(calls))
}

// TestMentionETAPostedInItsThread is one "ETA?" mention through HTTP mode: its answer is the run's ETA,
// posted once, in the mention's thread. scripts/crossings.sh counts the calls that answer makes, from the
// event to chat.postMessage (docs/architecture.md walks them).
func TestMentionETAPostedInItsThread(t *testing.T) {
	metrics := testkit.VLLM(t)
	e := newHTTPEnv(t, botOpts{Metrics: []string{metrics.URL + "/metrics"}})
	body := testkit.MentionEvent("EvETA", "<@U111> ETA?", "U222", "C0SYNTH", "1700000100.000100", "")
	if resp := e.post(t, "/slack/events", body, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("event = %d; want 200", resp.StatusCode)
	}
	post := e.fake.Wait(t, "chat.postMessage", 1)[0]
	e.app.Wait(10 * time.Second)
	if n := len(e.fake.Calls("chat.postMessage")); n != 1 {
		t.Errorf("chat.postMessage calls = %d; want 1", n)
	}
	if post.Form.Get("thread_ts") != "1700000100.000100" || post.Form.Get("channel") != "C0SYNTH" || !strings.Contains(post.Form.Get("text"), "synth · ETA") {
		t.Errorf("answer = %v; want synth's ETA in the mention's thread", post.Form)
	}
}
