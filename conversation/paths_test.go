package conversation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"runwatch/config"
)

func TestAskPathAsPeopleSayIt(t *testing.T) {
	e := newBotEnv(t, botOpts{Run: func(r *config.Run) {
		r.Protected = []string{filepath.Dir(r.Outputs[0]) + "/shared"}
	}})
	os.MkdirAll(e.Dir+"/shared", 0o755)
	ctx := context.Background()
	tests := []struct {
		text, intent, want string
		refused            bool
	}{
		{"are we writing to /shared?", "writes", "`" + e.Dir + "/shared`", false},
		{"is /shared safe?", "safe", "`" + e.Dir + "/shared`", false},
		{"is shared safe?", "safe", "`" + e.Dir + "/shared`", false},
		{"are we writing to the shared dir?", "writes", "`" + e.Dir + "/shared`", false},
		{"how much space is left on /out?", "space", "holds `" + e.Dir + "/out`", false},
		{"how much space is left on /etc?", "space", "isn't one of them", true},
		{"are we writing to /etc/shared?", "writes", "isn't one of them", true},
	}
	for _, tt := range tests {
		rep := e.bot.Ask(ctx, Request{Text: tt.text, Source: "console"})
		if rep.Intent != tt.intent || rep.Refused != tt.refused || !strings.Contains(rep.Message.Mrkdwn(), tt.want) {
			t.Errorf("Ask(%q) = intent %q refused %v %q; want %q refused %v containing %q", tt.text, rep.Intent, rep.Refused,
				rep.Message.Mrkdwn(), tt.intent, tt.refused, tt.want)
		}
	}
}

func TestPathAliasAmbiguous(t *testing.T) {
	r := &config.Run{Protected: []string{"/mnt/a/shared", "/mnt/b/shared"}, Outputs: []string{"/data/out"}}
	if a, ok := pathAlias(r, "/shared"); ok {
		t.Errorf("pathAlias(/shared) = %q with two shared mounts; want no alias", a)
	}
	if a, ok := pathAlias(r, "/a/shared"); !ok || a != "/mnt/a/shared" {
		t.Errorf("pathAlias(/a/shared) = %q, %v; want /mnt/a/shared", a, ok)
	}
	if a, ok := pathAlias(r, "/data"); ok {
		t.Errorf("pathAlias(/data) = %q; want none: a configured prefix is the monitor's to allow, not an alias", a)
	}
	if _, ok := bareWordPath(r, "is shared safe?"); ok {
		t.Error("bareWordPath(shared) with two shared mounts answered; want ambiguity refused")
	}
}
