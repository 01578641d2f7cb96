package conversation

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
		{"is vllm up?", "servers", "", "", ""},
		{"are the servers healthy?", "servers", "", "", ""},
		{"is the sglang server down on extract?", "servers", "extract", "", ""},
		{"server status", "servers", "", "", ""},
		{"what's the kv cache at?", "servers", "", "", ""},
		{"is the server stuck?", "stuck", "", "", ""},
		{"how fast is vllm?", "throughput", "", "", ""},
		{"when will the server finish?", "eta", "", "", ""},
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
		// Small talk is answered, after every question: a question in it keeps its intent.
		{"thanks", "thanks", "", "", ""},
		{"Thank you!", "thanks", "", "", ""},
		{"thx @runwatch", "thanks", "", "", ""},
		{"hi", "hello", "", "", ""},
		{"Hello?", "hello", "", "", ""},
		{"hey runwatch", "hello", "", "", ""},
		{"good morning", "hello", "", "", ""},
		{"thanks, what's the ETA?", "eta", "", "", ""},
		{"hi, is vllm up?", "servers", "", "", ""},
		{"hello, how is it going?", "status", "", "", ""},
		{"thank you, is it stuck?", "stuck", "", "", ""},
		{"this", "", "", "", ""},
		{"high throughput?", "throughput", "", "", ""},
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
			for _, c := range CommandTable() {
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

// TestIntentPhrasings asks each intent many ways, the way people type them in a channel: the follow-up
// intents (why, left, safe, ontrack) and the ones they must not steal from.
func TestIntentPhrasings(t *testing.T) {
	runs := []string{"synth-25k", "extract"}
	plans := []string{"hidden-states", "all-layers"}
	table := map[string][]string{
		"why": {
			"why did the ETA move?", "why is the ETA different?", "Why did the estimate jump?", "what changed?",
			"what happened to the eta", "how come it's going to finish later?", "why is it taking so long?",
			"explain the ETA", "why the shift warning?", "why did the finish time change", "why is synth-25k slower now?",
			"what's behind the new estimate?", "whats changed since this morning?", "why did it go up by an hour?",
			"@runwatch why is the eta later than before", "why was the finish pushed back?", "reason for the delay?",
		},
		"left": {
			"what's left?", "what’s left to do?", "whats left", "what is left for extract?", "what remains?",
			"what else is left?", "anything still to do?", "what's blocking us?", "is anything blocked?", "any blockers?",
			"what's next?", "which stages are not done?", "remaining stages?", "outstanding work?", "what's still pending",
			"show me the todo list", "checklist", "checklist?", "show the checklist", "check list", "stages?", "how are the stages?",
		},
		"safe": {
			"is /shared safe?", "is shared safe?", "is the protected mount safe?", "is /mnt/nfs/shared at risk?",
			"are we going to pollute /shared?", "will we clobber anything on the shared drive?", "is it safe?",
			"are we overwriting anything in /shared", "is the team dir in danger?", "Is /shared OK to leave alone? is it safe",
		},
		"ontrack": {
			"are we on track?", "on track?", "is synth-25k on schedule?", "are we behind?", "are we behind schedule?",
			"are we ahead of schedule?", "is it running late?", "is it running late", "will it be on time?", "are we slipping?",
			"is it going as planned?", "is it going as expected?", "how does it compare to the first estimate?",
			"are we keeping up with the original estimate", "still on target?",
		},
		"eta": {
			"ETA?", "eta", "when will it finish?", "when is it done?", "how long is left?", "how much longer?",
			"time left?", "when will extract be complete", "how far along are we?", "finish time?",
			"is it done?", "are we done yet?", "whens it done",
		},
		"writes": {"are we writing to /shared?", "is anything writing to a protected mount?", "what's landing on /shared?"},
		"space":  {"how much space is left on /data?", "what's left on /data?", "is the disk filling up?", "free space?"},
		"fit":    {"will the hidden states fit?", "will it fit?", "enough room for all-layers?"},
		"stuck": {"is it stuck?", "why is it stuck?", "is extract still moving?", "is the job hung?", "is the job running?",
			"is it still running?", "still going?", "is it running?", "is it running", "is it running "},
		"status": {"status", "how's it going?", "give me an overview", "how many done?", "how many items are done so far?",
			"any errors?", "how many errors?", "how many failed?", "any failures on extract?"},
		"logs": {"show me the error log", "show the errors", "any errors in the log?", "last errors", "Last errors?",
			"what are the latest errors on extract?", "show me the error logs", "what's in the job log?", "show me the last log lines"},
		"throughput": {
			"thruput?", "what's the tput", "tokens/sec?", "how many tokens a second?", "tps on synth-25k?",
		},
	}
	for want, questions := range table {
		for _, text := range questions {
			t.Run(want+"/"+text, func(t *testing.T) {
				if q := ParseQuestion(text, runs, plans); q.Intent != want {
					t.Errorf("ParseQuestion(%q).Intent = %q; want %q", text, q.Intent, want)
				}
				// None of these names a run the run file lacks: none may be refused as one.
				if u := UnknownRun(text, runs, plans); u != "" {
					t.Errorf("UnknownRun(%q) = %q; want none", text, u)
				}
			})
		}
	}
}

func TestSuggestQuestion(t *testing.T) {
	tests := []struct{ text, want string }{
		{"etaa?", "eta?"},
		{"ETAA?", "eta?"},
		{"statsu", "status"},
		{"throughpt?", "throughput?"},
		{"is it stuk?", "is it stuck?"},
		{"storrage", "storage"},
		{"is it saef?", "is it safe?"},
		// Not a typo of anything it knows: no suggestion rather than a silly one.
		{"what is the meaning of life?", ""},
		{"what's the date?", ""}, // one edit from "rate", but a different first letter
		{"beta?", ""},
		{"hello", ""},
		{"ok", ""},
	}
	for _, tt := range tests {
		if got := suggestQuestion(tt.text); got != tt.want {
			t.Errorf("suggestQuestion(%q) = %q; want %q", tt.text, got, tt.want)
		}
		// A suggestion is a question that gets an answer.
		if tt.want != "" && ParseQuestion(tt.want, nil, nil).Intent == "" {
			t.Errorf("suggestQuestion(%q) = %q, which matches no intent", tt.text, tt.want)
		}
	}
}

func TestUnknownRun(t *testing.T) {
	runs := []string{"synth-25k", "extract"}
	plans := []string{"hidden-states", "all-layers"}
	tests := []struct{ text, want string }{
		{"ETA for synth-99k?", "synth-99k"},
		{"status of extract-2", "extract-2"},
		{"how is synth-100k doing?", "synth-100k"},
		{"what's the ETA of run7?", "run7"},
		{"ETA for synth-25k?", ""},
		{"ETA?", ""},
		{"will all-layers fit?", ""},
		{"are we writing to /shared/synth-99k?", ""},
		{"snooze for 2h", ""},
		{"is it on 8xh100?", ""},
		{"how fast is the to-do list moving", ""},
		{"what's left to do?", ""},
		{"eta for <@U0123ABC>", ""},
	}
	for _, tt := range tests {
		if got := UnknownRun(tt.text, runs, plans); got != tt.want {
			t.Errorf("UnknownRun(%q) = %q; want %q", tt.text, got, tt.want)
		}
	}
}

// Small talk is never a spelling fix's target: "the" is one edit from "thx", and "what's the weather?" read
// as "Did you mean "what's thx weather?"" would be a joke at the asker's expense.
func TestSuggestNeverSmallTalk(t *testing.T) {
	for _, text := range []string{"what's the weather?", "thankz for nothing", "helo there"} {
		if got := suggestQuestion(text); got != "" && matchRules(got) != "help" {
			t.Errorf("suggestQuestion(%q) = %q (%s); want no fix towards small talk", text, got, matchRules(got))
		}
	}
}
