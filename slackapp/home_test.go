package slackapp

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/testkit"
	"runwatch/posts"
	"runwatch/reports"
)

// homeOpened is an app_home_opened callback as the Events API delivers it.
func homeOpened(eventID, user, channel string) []byte {
	return []byte(fmt.Sprintf(`{"token":"legacy","team_id":"T111","api_app_id":"A111","type":"event_callback","event_id":%q,"event_time":1700000000,`+
		`"event":{"type":"app_home_opened","user":%q,"channel":%q,"tab":"home","event_ts":"1700000000.000100"}}`, eventID, user, channel))
}

// publishedView is a views.publish call the fake recorded.
type publishedView struct {
	UserID string `json:"user_id"`
	View   struct {
		Type            string            `json:"type"`
		PrivateMetadata string            `json:"private_metadata"`
		Blocks          []json.RawMessage `json:"blocks"`
	} `json:"view"`
}

func parseView(t *testing.T, c testkit.Call) (publishedView, string) {
	t.Helper()
	var v publishedView
	if err := json.Unmarshal(c.Body, &v); err != nil {
		t.Fatalf("views.publish body: %v\n%s", err, c.Body)
	}
	raw, _ := json.Marshal(v.View.Blocks)
	return v, testkit.Call{Form: map[string][]string{"blocks": {string(raw)}}}.BlocksText(t)
}

func twoRuns(f *config.File) {
	r := f.Runs[0]
	r.Name, r.Channel = "extract", "#extract"
	f.Runs = append(f.Runs, r)
}

// TestAppHomeFloodIsLimited: each app_home_opened publishes a fresh view; a user opening the tab twenty
// times at once gets at most the burst published, the rest unanswered (the tab keeps the last view).
func TestAppHomeFloodIsLimited(t *testing.T) {
	w := newWarningEnvWith(t, botOpts{})
	frozen := time.Now()
	w.app.limiter.now = func() time.Time { return frozen } // no refill
	for i := range 2 * defaultUserBurst {
		w.post(t, "/slack/events", homeOpened(fmt.Sprintf("EvHomeFlood%d", i), "UADMIN", "D0HOME"), nil)
	}
	w.waitIdle()
	if n := len(w.fake.Calls("views.publish")); n == 0 || n > defaultUserBurst {
		t.Errorf("%d openings of the App Home published %d views; want between 1 and the burst of %d", 2*defaultUserBurst, n, defaultUserBurst)
	}
}

func TestAppHomePublishesEveryRun(t *testing.T) {
	w := newWarningEnvWith(t, botOpts{File: twoRuns})
	w.step(t, w.Mon.Now(), testkit.Eval("synth", testkit.Stalled), testkit.Eval("extract", nil))
	w.post(t, "/slack/events", homeOpened("EvHome1", "UADMIN", "D0HOME"), nil)
	calls := w.fake.Wait(t, "views.publish", 1)
	w.waitIdle()
	v, text := parseView(t, calls[0])
	if v.UserID != "UADMIN" || v.View.Type != "home" || v.View.PrivateMetadata != "D0HOME" {
		t.Errorf("views.publish = user %q, type %q, metadata %q; want UADMIN's home tab carrying D0HOME", v.UserID, v.View.Type, v.View.PrivateMetadata)
	}
	for _, want := range []string{"*extract*", "*synth*", "300 / 25,000", "ETA", "Storage:", "*Checklist*", ":warning: no progress", "I'm on it", "Snooze 1 h"} {
		if !strings.Contains(text, want) {
			t.Errorf("App Home lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "*synth*") > strings.Index(text, "*extract*") {
		t.Errorf("the run with an open warning is not first:\n%s", text)
	}
	if n := len(v.View.Blocks); n > homeMaxBlocks {
		t.Errorf("App Home has %d blocks; Slack allows %d", n, homeMaxBlocks)
	}

	// I'm on it from the App Home: the claim is made and the tab is published again.
	blocks, _ := json.Marshal(v.View.Blocks)
	var ref string
	for _, b := range parseBlocks(t, string(blocks)) {
		if b.Accessory != nil && b.Accessory.ActionID == conversation.ActTake {
			ref = b.BlockID
		}
	}
	payload := fmt.Sprintf(`{"type":"block_actions","user":{"id":"UADMIN","team_id":"T111"},"api_app_id":"A111","trigger_id":"1.2.3",`+
		`"container":{"type":"view","view_id":"V0001"},"view":{"id":"V0001","type":"home","private_metadata":"D0HOME","blocks":[]},`+
		`"actions":[{"type":"button","action_id":"take","block_id":%q,"value":"","action_ts":"1700000100.000001"}]}`, ref)
	w.post(t, "/slack/interactions", []byte("payload="+urlEscape(payload)), nil)
	calls = w.fake.Wait(t, "views.publish", 2)
	w.waitIdle()
	if _, text := parseView(t, calls[1]); !strings.Contains(text, ":eyes: <@UADMIN> is on it") {
		t.Errorf("App Home after I'm on it:\n%s\nwant who is on it", text)
	}
	if _, ok := w.claims.Get("synth/" + posts.AlertStall); !ok {
		t.Errorf("I'm on it from the App Home took nothing")
	}
	if n := len(w.fake.Calls("chat.update")); n != 0 {
		t.Errorf("a press on the App Home edited %d messages; want the tab republished only", n)
	}
}

func TestAppHomeHonoursAllowLists(t *testing.T) {
	// synth has an admin of its own: their tab shows synth and not extract.
	w := newWarningEnvWith(t, botOpts{File: twoRuns, Env: config.Env{Admins: []string{"UADMIN"}, AllowedChannels: []string{"#synth"}},
		Run: func(r *config.Run) { r.Admins = []string{"URUNADMIN"} }})
	w.File.Runs[1].Admins = nil
	w.post(t, "/slack/events", homeOpened("EvHome2", "U222", "D0U222"), nil)
	w.post(t, "/slack/events", homeOpened("EvHome3", "UADMIN", "D0ADMIN"), nil)
	w.post(t, "/slack/events", homeOpened("EvHome4", "URUNADMIN", "D0RUN"), nil)
	calls := w.fake.Wait(t, "views.publish", 3)
	w.waitIdle()
	for _, c := range calls {
		v, text := parseView(t, c)
		switch v.UserID {
		case "U222":
			if strings.Contains(text, "*synth*") || !strings.Contains(text, "no run for you here") {
				t.Errorf("a non-admin's App Home with allow-lists set:\n%s\nwant no runs", text)
			}
		case "UADMIN":
			if !strings.Contains(text, "*synth*") || !strings.Contains(text, "*extract*") {
				t.Errorf("an admin's App Home:\n%s\nwant every run", text)
			}
		case "URUNADMIN":
			if !strings.Contains(text, "*synth*") || strings.Contains(text, "*extract*") {
				t.Errorf("synth's own admin's App Home:\n%s\nwant synth only", text)
			}
		}
	}
}

func TestAppHomeManyRunsWithin100Blocks(t *testing.T) {
	w := newWarningEnvWith(t, botOpts{})
	var runs []reports.RunStatus
	for i := range 150 {
		eta := 3600.0 * float64(i+1)
		runs = append(runs, reports.RunStatus{Name: fmt.Sprintf("run-%03d", i), Progress: &reports.Progress{Done: int64(i), Total: 200},
			ETA:    &reports.ETA{State: reports.StateRunning, Seconds: &eta},
			Stages: []reports.StageStatus{{Name: "generate", State: reports.StageInProgress}, {Name: "review", State: reports.StagePending}}})
	}
	blocks := w.app.homeBlocks(runs, time.Now())
	if len(blocks) > homeMaxBlocks {
		t.Fatalf("App Home for 150 runs has %d blocks; Slack allows %d", len(blocks), homeMaxBlocks)
	}
	raw, _ := json.Marshal(blocks)
	text := testkit.Call{Form: map[string][]string{"blocks": {string(raw)}}}.BlocksText(t)
	for _, r := range runs {
		if !strings.Contains(text, "*"+r.Name+"*") {
			t.Errorf("run %s is missing from the App Home", r.Name)
		}
	}
	if !strings.Contains(text, "more in brief") {
		t.Errorf("App Home for 150 runs does not say some are shown in brief")
	}
	checkBlockKitLimits(t, "App Home (150 runs)", raw, homeMaxBlocks)
	full := strings.Count(string(raw), `"type":"divider"`)
	t.Logf("figure: App Home for 150 runs: %d blocks, %d runs in full, the rest in brief, %d bytes of blocks", len(blocks), full, len(raw))
}

// TestAppHomePressesAreAdminsOnly presses I'm on it and Snooze from the App Home (no allow-lists,
// so everyone sees every run): a user who administers nothing, and an admin of the other run, are
// refused in their DM and nothing changes; the run's own admin takes the warning.
func TestAppHomePressesAreAdminsOnly(t *testing.T) {
	w := newWarningEnvWith(t, botOpts{File: twoRuns, Run: func(r *config.Run) { r.Admins = []string{"URUNADMIN"} }})
	w.File.Runs[1].Admins = []string{"UEXTRACT"}
	w.step(t, w.Mon.Now(), testkit.Eval("synth", testkit.Stalled), testkit.Eval("extract", nil))
	w.post(t, "/slack/events", homeOpened("EvHomeA", "UADMIN", "D0HOME"), nil)
	calls := w.fake.Wait(t, "views.publish", 1)
	w.waitIdle()
	v, _ := parseView(t, calls[0])
	blocks, _ := json.Marshal(v.View.Blocks)
	var take, controls string
	for _, b := range parseBlocks(t, string(blocks)) {
		if b.Accessory != nil && b.Accessory.ActionID == conversation.ActTake {
			take = b.BlockID
		}
		if b.Type == "actions" && strings.HasPrefix(b.BlockID, conversation.RefPrefix) && strings.Contains(b.BlockID, "synth") && controls == "" {
			controls = b.BlockID
		}
	}
	if take == "" || controls == "" {
		t.Fatalf("App Home lacks synth's I'm on it (%q) or its buttons (%q)", take, controls)
	}
	press := func(user, dm, action, block, value, ts string) {
		payload := fmt.Sprintf(`{"type":"block_actions","user":{"id":%q,"team_id":"T111"},"api_app_id":"A111","trigger_id":"1.2.3",`+
			`"container":{"type":"view","view_id":"V0001"},"view":{"id":"V0001","type":"home","private_metadata":%q,"blocks":[]},`+
			`"actions":[{"type":"button","action_id":%q,"block_id":%q,"value":%q,"action_ts":%q}]}`, user, dm, action, block, value, ts)
		w.post(t, "/slack/interactions", []byte("payload="+urlEscape(payload)), nil)
	}
	n := 0
	for _, user := range []string{"U222", "UEXTRACT"} {
		for _, p := range []struct{ action, block, value string }{{conversation.ActTake, take, ""}, {conversation.ActSnooze, controls, "1h"}} {
			n++
			press(user, "D0"+user, p.action, p.block, p.value, fmt.Sprintf("1700000200.%06d", n))
			sent := w.fake.Wait(t, "chat.postMessage", 1+n) // the warning, then one refusal per press
			w.waitIdle()
			if c := sent[len(sent)-1]; c.Form.Get("channel") != "D0"+user || !strings.Contains(c.Form.Get("text"), "only runwatch admins") {
				t.Errorf("%s by %s from the App Home = %v; want 'only runwatch admins' in their DM", p.action, user, c.Form)
			}
		}
	}
	if _, ok := w.claims.Get("synth/" + posts.AlertStall); ok {
		t.Errorf("a press by someone who does not administer synth took its warning")
	}
	if _, ok := w.Mon.SnoozedUntil("synth"); ok {
		t.Errorf("a press by someone who does not administer synth snoozed it")
	}
	press("URUNADMIN", "D0RUN", conversation.ActTake, take, "", "1700000300.000001")
	w.fake.Wait(t, "views.publish", 2)
	w.waitIdle()
	if cl, ok := w.claims.Get("synth/" + posts.AlertStall); !ok || cl.User != "URUNADMIN" {
		t.Errorf("synth's own admin pressed I'm on it: claim %+v, %v; want URUNADMIN's", cl, ok)
	}
}

var screensDir = flag.String("screens", "", "write the Block Kit JSON of a status post and of the App Home to this directory (scripts/screens.sh draws them)")

// TestScreens captures what the recording Web API stand-in received for a scheduled status (with
// its charts and buttons), a warning someone took, and the App Home, as the README's pictures
// show them. Without -screens it only checks that the capture works.
func TestScreens(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 8, 20, 0, 0, time.UTC)
	clock := testkit.NewClock(t0)
	// A job whose pace changes: completions get longer after the first half hour, as in the demo.
	tokens := func(m float64) float64 { return 41000*m + 9000*max(m-30, 0) }
	items := func(m float64) int { return 300 + int(52*m-14*max(m-30, 0)) }
	metrics := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		m := clock.Now().Sub(t0).Minutes()
		fmt.Fprintf(rw, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 200\n"+
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 12\n"+
			"# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"m\"} %g\n", 565000+tokens(m))
	}))
	t.Cleanup(metrics.Close)
	w := newWarningEnvWith(t, botOpts{Clock: clock, Metrics: []string{metrics.URL + "/metrics"}, Run: func(r *config.Run) {
		r.Name, r.Channel = "synth-25k", "#synth-25k"
		r.Stages = []config.Stage{{Name: "download drafter", Check: "manual"}, {Name: "generate", Check: "progress"},
			{Name: "Training script updated", Check: "manual"}}
	}, File: func(f *config.File) {
		r := f.Runs[0]
		r.Name, r.Channel, r.Metrics = "hidden-states", "#hidden-states", nil
		r.Stages = []config.Stage{{Name: "extract", Check: "progress"}}
		f.Runs = append(f.Runs, r)
	}})
	w.alerter.Channel = func(run string) string { return "#" + run }
	for i := range 100 {
		clock.Set(t0.Add(time.Duration(i) * time.Minute))
		w.WriteLog(t, items(float64(i)), 25000)
		w.Mon.Sample(t.Context())
	}
	if rep := w.bot.Ask(t.Context(), conversation.Request{Text: "stage \"download drafter\" done synth-25k", User: "UADMIN", Source: "console"}); rep.Refused {
		t.Fatal(rep.Message.Text())
	}
	post, _ := postStatus(t, w.httpEnv)

	// No ETA figure in the warning: the picture's ETA line is the estimator's, and a second, fixed one beside
	// it (it said 6 h 40 min under an ETA of 7 h 42 min) contradicted it.
	diskFull := func(rs *reports.RunStatus) {
		rs.Storage.Warnings = []reports.StorageWarning{{Kind: posts.AlertDiskFull, Mount: "/data",
			Message: "`/data` has 74.0 GB free and fills in 3 h 10 min at the current rate, before the job ends."}}
	}
	for i := range 2 {
		w.step(t, clock.Now().Add(time.Duration(i)*time.Minute), testkit.Eval("hidden-states", testkit.ProtectedWrite), testkit.Eval("synth-25k", diskFull))
	}
	open := w.claims.Open("hidden-states")
	if len(open) != 1 {
		t.Fatalf("open warnings of hidden-states = %v; want the protected write", open)
	}
	w.claims.Take(open[0].Key, "U0ALICE", clock.Now(), time.Hour)
	w.post(t, "/slack/events", homeOpened("EvScreens", "UADMIN", "D0ADMIN"), nil)
	home := w.fake.Wait(t, "views.publish", 1)[0]
	w.waitIdle()

	var view publishedView
	if err := json.Unmarshal(home.Body, &view); err != nil {
		t.Fatal(err)
	}
	screens := map[string]any{
		"status.json": map[string]any{"kind": "message", "channel": "#synth-25k", "time": clock.Now().Format("15:04"),
			"blocks": json.RawMessage(post.Form.Get("blocks"))},
		"home.json": map[string]any{"kind": "home", "blocks": view.View.Blocks},
	}
	if !strings.Contains(post.Form.Get("blocks"), "data_visualization") || len(view.View.Blocks) == 0 {
		t.Fatalf("the capture lacks the chart or the App Home")
	}
	if *screensDir == "" {
		return
	}
	for name, v := range screens {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*screensDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestScreensWarningLife is a warning's life as Slack received it: posted (its chat.postMessage), claimed
// (the chat.update after an admin pressed I'm on it) and resolved (the chat.update when the run made
// progress again). With -screens it writes the three payloads for scripts/screens.sh, which draws them into
// docs/slack.md's "A warning's life".
func TestScreensWarningLife(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 14, 5, 0, 0, time.UTC)
	clock := testkit.NewClock(t0)
	w := newWarningEnvWith(t, botOpts{Clock: clock, Run: func(r *config.Run) { r.Name, r.Channel = "synth-25k", "#synth-25k" }})
	w.alerter.Channel = func(string) string { return "#synth-25k" }
	progress := func(done int64) func(*reports.RunStatus) {
		return func(rs *reports.RunStatus) { rs.Progress = &reports.Progress{Done: done, Total: 25000} }
	}
	stalled := func(rs *reports.RunStatus) {
		progress(11240)(rs)
		testkit.Stalled(rs)
		since := float64(t0.Add(-9 * time.Minute).Unix())
		rs.ETA.StalledSince = &since
	}
	w.step(t, t0, testkit.Eval("synth-25k", stalled))
	i, posted := w.fake.WaitMatch(t, 0, "the warning", func(c testkit.Call) bool { return c.Method == "chat.postMessage" })
	ts := fmt.Sprintf("1700000000.%06d", i+1)
	if !hasButtons(t, posted) || !strings.Contains(posted.BlocksText(t), "synth-25k · stalled") {
		t.Fatalf("posted warning = %s; want the stall with its buttons", posted.BlocksText(t))
	}
	clock.Set(t0.Add(3 * time.Minute))
	w.post(t, "/slack/interactions", pressPayload(t, w.fake, posted, ts, "UADMIN", conversation.ActTake, ""), nil)
	claimed := w.fake.Wait(t, "chat.update", 1)[0]
	w.waitIdle()
	if !strings.Contains(claimed.BlocksText(t), "<@UADMIN> is on it since") {
		t.Fatalf("claimed warning = %s; want who is on it", claimed.BlocksText(t))
	}
	clock.Set(t0.Add(14 * time.Minute))
	w.step(t, t0.Add(14*time.Minute), testkit.Eval("synth-25k", progress(11390)))
	_, resolved := w.fake.WaitMatch(t, 0, "the resolved warning", func(c testkit.Call) bool {
		return c.Method == "chat.update" && c.Form.Get("ts") == ts && strings.Contains(c.Form.Get("text"), "Resolved")
	})
	if text := resolved.BlocksText(t); hasButtons(t, resolved) || !strings.Contains(text, "after 14 min") || !strings.Contains(text, "<@UADMIN>") {
		t.Errorf("resolved warning = %s; want it resolved after 14 min, who was on it, and no buttons", text)
	}
	if *screensDir == "" {
		return
	}
	for name, c := range map[string]testkit.Call{"warning-posted": posted, "warning-claimed": claimed, "warning-resolved": resolved} {
		b, err := json.MarshalIndent(map[string]any{"kind": "message", "channel": "#synth-25k", "time": "14:05",
			"blocks": json.RawMessage(c.Form.Get("blocks"))}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*screensDir, name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
