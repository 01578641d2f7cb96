package handlers

import (
	"testing"
)

func TestParseQuestion(t *testing.T) {
	runs := []string{"synth-25k", "extract"}
	plans := []string{"hidden-states", "all-layers"}
	tests := []struct {
		text                    string
		intent, run, path, plan string
	}{
		{"ETA?", "eta", "", "", ""},
		{"@runwatch ETA?", "eta", "", "", ""},
		{"<@U0123ABC> eta?", "eta", "", "", ""},
		{"when will synth-25k finish?", "eta", "synth-25k", "", ""},
		{"how long is left?", "eta", "", "", ""},
		{"are we writing to /shared?", "writes", "", "/shared", ""},
		{"is anything writing to /shared/team/x.", "writes", "", "/shared/team/x", ""},
		{"where does the output go?", "where", "", "", ""},
		{"how much space is left on /data?", "space", "", "/data", ""},
		{"how much is left on /data?", "space", "", "/data", ""},
		{"is the disk filling up?", "space", "", "", ""},
		{"will the hidden states fit?", "fit", "", "", "hidden-states"},
		{"will all-layers fit on /data?", "fit", "", "/data", "all-layers"},
		{"will it fit?", "fit", "", "", ""},
		{"status", "status", "", "", ""},
		{"how is it going with extract?", "status", "extract", "", ""},
		{"is it stuck?", "stuck", "", "", ""},
		{"is extract still moving?", "stuck", "extract", "", ""},
		{"how fast are we going?", "throughput", "", "", ""},
		{"what's the throughput on synth-25k", "throughput", "synth-25k", "", ""},
		{"help", "help", "", "", ""},
		{"?", "help", "", "", ""},
		{"which runs do you watch?", "runs", "", "", ""},
		{"what is the meaning of life", "", "", "", ""},
		{"", "", "", "", ""},
		// A path must not steer the intent: /data/free is a path, not a "free" question.
		{"are we writing to /data/free?", "writes", "", "/data/free", ""},
		// Words inside other words do not match: "threaded" holds "eta"-free text, "update" is status.
		{"metadata", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			q := ParseQuestion(tt.text, runs, plans)
			if q.Intent != tt.intent || q.Run != tt.run || q.Path != tt.path || q.Plan != tt.plan {
				t.Errorf("ParseQuestion(%q) = intent %q run %q path %q plan %q; want %q %q %q %q",
					tt.text, q.Intent, q.Run, q.Path, q.Plan, tt.intent, tt.run, tt.path, tt.plan)
			}
		})
	}
}

func FuzzParseQuestion(f *testing.F) {
	for _, s := range []string{"ETA?", "are we writing to /shared?", "<@U1> will the hidden states fit?", "how much is left on /data?", "/storage /data", "\x00\xff/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := ParseQuestion(s, []string{"synth-25k", "a"}, []string{"hidden-states"})
		if q.Path != "" && q.Path[0] != '/' {
			t.Errorf("ParseQuestion(%q).Path = %q; want an absolute path or nothing", s, q.Path)
		}
		if q.Intent != "" {
			found := false
			for _, c := range commandTable() {
				if c.Name == q.Intent {
					found = true
				}
			}
			if !found {
				t.Errorf("ParseQuestion(%q).Intent = %q; not a command", s, q.Intent)
			}
		}
	})
}
