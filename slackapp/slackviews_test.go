package slackapp

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/posts"
	"runwatch/state"
)

// chartBlocks returns the data_visualization blocks of a chat call's blocks.
func chartBlocks(t *testing.T, raw string) []slack.DataVisualizationBlock {
	t.Helper()
	var bs slack.Blocks
	if err := json.Unmarshal([]byte(raw), &bs); err != nil {
		t.Fatalf("blocks: %v", err)
	}
	var out []slack.DataVisualizationBlock
	for _, b := range bs.BlockSet {
		if dv, ok := b.(*slack.DataVisualizationBlock); ok {
			out = append(out, *dv)
		}
	}
	return out
}

func TestStatusPostCarriesChartAndPNGFallback(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	e := newHTTPEnv(t, botOpts{Clock: clock, Run: func(r *config.Run) { r.PostMode = "new" }}) // a post each time: each can carry the chart
	withHistory(t, e.botEnv, 45)                                                               // more samples than a Slack chart takes points
	dir, _ := state.Open(e.StateDir)
	sched, err := posts.NewScheduler(e.bot, e.app.api, dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Fire(context.Background(), "synth", clock.Now()); err != nil {
		t.Fatal(err)
	}
	post := e.fake.Wait(t, "chat.postMessage", 1)[0]
	charts := chartBlocks(t, post.Form.Get("blocks"))
	if len(charts) != 2 {
		t.Fatalf("status post has %d data_visualization blocks; want throughput and ETA", len(charts))
	}
	checkBlockKitLimits(t, "status post", []byte(post.Form.Get("blocks")), 50)
	eta := charts[1].Chart.(*slack.DataVisualizationLineChart)
	if len(eta.Series) != 3 || eta.Series[1].Name != "low" || eta.Series[2].Name != "high" {
		t.Errorf("ETA chart series = %+v; want the ETA with its low and high", eta.Series)
	}
	rate := charts[0].Chart.(*slack.DataVisualizationLineChart)
	if n := len(rate.AxisConfig.Categories); n != 20 {
		t.Errorf("throughput chart has %d points over 45 samples; want Slack's 20", n)
	}
	if last := rate.AxisConfig.Categories[len(rate.AxisConfig.Categories)-1]; last != clock.Now().Format("15:04") {
		t.Errorf("throughput chart ends at %s; want the newest sample, %s", last, clock.Now().Format("15:04"))
	}

	// A workspace that refuses the block: the status goes without it and the chart as a PNG.
	e.fake.RefuseCharts.Store(true)
	from := len(e.fake.Calls(""))
	clock.Set(clock.Now().Add(time.Hour))
	e.WriteLog(t, 9000, 25000)
	if err := sched.Fire(context.Background(), "synth", clock.Now()); err != nil {
		t.Fatalf("status where charts are refused = %v; want it posted without them", err)
	}
	var methods []string
	for _, c := range e.fake.Calls("")[from:] {
		methods = append(methods, c.Method)
	}
	want := "chat.postMessage chat.postMessage files.getUploadURLExternal upload files.completeUploadExternal"
	if got := strings.Join(methods, " "); got != want {
		t.Fatalf("calls where charts are refused = %s; want %s", got, want)
	}
	sent := e.fake.Calls("chat.postMessage")
	if last := sent[len(sent)-1]; len(chartBlocks(t, last.Form.Get("blocks"))) != 0 || !strings.Contains(last.Form.Get("text"), "synth · status") {
		t.Errorf("status posted after the refusal still has a chart block, or is not the status")
	}
	if up := e.fake.Calls("upload"); len(up) != 1 || !bytes.HasPrefix(up[0].Body, []byte("\x89PNG")) {
		t.Errorf("fallback upload is not one PNG")
	}
	// It is remembered: the next status does not try the block again.
	from = len(e.fake.Calls("chat.postMessage"))
	clock.Set(clock.Now().Add(time.Hour))
	e.WriteLog(t, 12000, 25000)
	if err := sched.Fire(context.Background(), "synth", clock.Now()); err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.Calls("chat.postMessage")) - from; n != 1 {
		t.Errorf("posts for the next status = %d; want 1 (no chart block tried again)", n)
	}
}

func TestChartCommandDrawsOrFallsBack(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	e := newHTTPEnv(t, botOpts{Clock: clock})
	withHistory(t, e.botEnv, 10)
	resp := e.post(t, "/slack/commands", testkit.SlashBody("/runwatch", "chart", "C1", "U222", e.fake.ResponseURL("chart1")), nil)
	if body := readAll(t, resp.Body); body != "" {
		t.Errorf("chart acknowledgement = %q; want an empty one (the charts follow through the response_url)", body)
	}
	r := e.fake.Wait(t, "response_url", 1)[0]
	e.waitIdle()
	var msg struct {
		Blocks json.RawMessage `json:"blocks"`
		Type   string          `json:"response_type"`
	}
	json.Unmarshal(r.Body, &msg)
	if n := len(chartBlocks(t, string(msg.Blocks))); n != 2 || msg.Type != "in_channel" {
		t.Errorf("/runwatch chart answer has %d charts (%s); want 2, in the channel", n, msg.Type)
	}
	checkBlockKitLimits(t, "/runwatch chart", msg.Blocks, 50)
	if n := len(e.fake.Calls("upload")); n != 0 {
		t.Errorf("PNG uploads where Slack draws the charts = %d; want none", n)
	}

	e.fake.RefuseCharts.Store(true)
	e.post(t, "/slack/commands", testkit.SlashBody("/runwatch", "chart", "C1", "U222", e.fake.ResponseURL("chart2")), nil)
	e.fake.Wait(t, "files.completeUploadExternal", 1)
	e.waitIdle()
	rs := e.fake.Calls("response_url")
	if len(rs) != 3 || bytes.Contains(rs[2].Body, []byte("data_visualization")) {
		t.Errorf("response_url calls = %d; want the refused one and one without charts", len(rs))
	}
	if done := e.fake.Calls("files.completeUploadExternal"); done[0].Form.Get("channel_id") != "C1" {
		t.Errorf("fallback PNG shared in %q; want C1", done[0].Form.Get("channel_id"))
	}
}
