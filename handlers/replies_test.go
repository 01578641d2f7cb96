package handlers

import (
	"context"
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/reports"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestRepliesGolden asks one question per intent of a bot over the fake and compares each reply's
// plain text and Block Kit with testdata/replies/<name>.{txt,blocks.json}.golden
// (go test ./handlers -run TestRepliesGolden -update rewrites them).
func TestRepliesGolden(t *testing.T) {
	runs := testkit.ReplyRuns(t)
	b := NewBot(runs, time.UTC, config.Env{Admins: []string{"UADMIN"}})
	questions := []struct{ name, text, user string }{
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
			rep := b.Ask(context.Background(), Request{Text: q.text, User: q.user, Source: "mention", Channel: "C1"})
			replyGolden(t, filepath.Join("replies", q.name+".txt.golden"), []byte(rep.Message.Text()+"\n"))
			blocks, err := json.MarshalIndent(rep.Message.Blocks(), "", "  ")
			if err != nil {
				t.Fatalf("marshal blocks: %v", err)
			}
			replyGoldenJSON(t, filepath.Join("replies", q.name+".blocks.json.golden"), blocks)
		})
	}
}

// TestWarningsGolden runs the alerter over the same fake status, sampled twice (a failing source
// is worth a warning the second time), and compares every warning it posts with
// testdata/replies/warning_<kind>.{txt,blocks.json}.golden.
func TestWarningsGolden(t *testing.T) {
	runs := testkit.ReplyRuns(t)
	a := NewAlerter(time.UTC, func(string) string { return "#synth" })
	ev := monitor.Evaluation{Run: runs.RS, Sample: true,
		Shift: &reports.Shift{Reason: "completions got longer: 650 -> 1,066 tokens per item (+64%) while throughput held"}}
	notSnoozed := func(string) bool { return false }
	posts := a.Process([]monitor.Evaluation{ev}, runs.At, notSnoozed)
	posts = append(posts, a.Process([]monitor.Evaluation{ev}, runs.At.Add(30*time.Second), notSnoozed)...)
	// Later the job stalls, and later still it finishes.
	stalled := runs.RS
	since := float64(runs.At.Unix()) - 900
	stalled.ETA = &reports.ETA{State: reports.StateStalled, StalledSince: &since, Reason: "no progress for 15 min (stall_after 10 min)"}
	posts = append(posts, a.Process([]monitor.Evaluation{{Run: stalled, Sample: true}}, runs.At.Add(time.Hour), notSnoozed)...)
	done := runs.RS
	done.Progress = &reports.Progress{Done: 25000, Total: 25000, Source: "log"}
	done.ETA = &reports.ETA{State: reports.StateDone, Reason: "all 25,000 items done"}
	posts = append(posts, a.Process([]monitor.Evaluation{{Run: done, Sample: true}}, runs.At.Add(5*time.Hour), notSnoozed)...)
	kinds := map[string]bool{}
	for _, p := range posts {
		kinds[p.Kind] = true
	}
	for _, k := range []string{AlertShift, AlertProtected, AlertProbe, AlertStall, AlertFinished} {
		if !kinds[k] {
			t.Errorf("warnings = %v; want one of kind %s", kinds, k)
		}
	}
	seen := map[string]bool{}
	for _, p := range posts {
		// A reminder repeats its warning word for word: one golden file per kind.
		if seen[p.Kind] {
			continue
		}
		seen[p.Kind] = true
		name := "warning_" + p.Kind
		replyGolden(t, filepath.Join("replies", name+".txt.golden"), []byte(p.Message.Text()+"\n"))
		blocks, err := json.MarshalIndent(p.Message.Blocks(), "", "  ")
		if err != nil {
			t.Fatalf("marshal blocks: %v", err)
		}
		replyGoldenJSON(t, filepath.Join("replies", name+".blocks.json.golden"), blocks)
	}
}

// A run read from the engines alone (Prometheus, no total:) has no ETA, but its history shows items and tokens
// moving: "is it stuck?" answers no, and says why there is no ETA, instead of "Can't tell yet". A flat
// history past stall_after still reads as stuck.
func TestStuckWithoutTotal(t *testing.T) {
	cases := []struct {
		name      string
		perSample int64
		want      []string
		not       string
	}{
		{"moving", 20, []string{"No, it's moving.", "ETA: unknown — the total number of items is unknown"}, "Can't tell"},
		{"flat", 0, []string{"(!!) Yes, it looks stuck. Stalled since"}, "moving"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs := testkit.ReplyRuns(t)
			var hist []reports.Observation
			for i := range 40 {
				tok := 7.5e6 + float64(c.perSample*int64(i))*1000
				hist = append(hist, reports.Observation{T: float64(runs.At.Unix()) - float64(39-i)*30, Done: 11228 + c.perSample*int64(i), GenTokens: &tok})
			}
			eta, tp := reports.Estimate(hist, reports.EstimateConfig{Window: 900, StallAfter: 600})
			runs.RS.ETA, runs.RS.Throughput = &eta, &tp
			runs.RS.Progress = &reports.Progress{Done: hist[len(hist)-1].Done, Source: "prometheus"}
			b := NewBot(runs, time.UTC, config.Env{})
			got := b.Ask(context.Background(), Request{Text: "is it stuck?", Source: "mention", Channel: "C1"}).Message.Text()
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("is it stuck? (state %s) = %q; want it to say %q", eta.State, got, w)
				}
			}
			if strings.Contains(got, c.not) {
				t.Errorf("is it stuck? (state %s) = %q; want nothing with %q", eta.State, got, c.not)
			}
		})
	}
}

func replyGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	testkit.Golden(t, filepath.Join("testdata", name), got, *update)
}

// replyGoldenJSON compares Block Kit after unmarshalling, so formatting does not matter.
func replyGoldenJSON(t *testing.T, name string, got []byte) {
	t.Helper()
	testkit.GoldenJSON(t, filepath.Join("testdata", name), got, *update)
}
