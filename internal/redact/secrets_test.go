package redact

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Test credentials that look real, so that redaction is exercised on realistic shapes.
const (
	testBotToken = "xoxb-1111111111-2222222222-AbCdEfGhIjKlMnOpQrStUvWx"
	testAppToken = "xapp-1-A111-3333333333-0123456789abcdef0123456789abcdef"
)

func TestRedact(t *testing.T) {
	r := New(testBotToken, testAppToken, "8f742231b10e8888abcd99yyyzzz85a5", "short")
	tests := []struct {
		in, want string
	}{
		{"token " + testBotToken + " rejected", "token xoxb-[redacted] rejected"},
		{"app " + testAppToken, "app xapp-[redacted]"},
		{"user token xoxp-12-34-abc in a log", "user token xoxp-[redacted] in a log"},
		{"secret=8f742231b10e8888abcd99yyyzzz85a5;", "secret=[redacted];"},
		{"post https://hooks.slack.com/commands/T1/2/abc failed", "post https://hooks.slack.com/[redacted] failed"},
		// files.getUploadURLExternal's URL is a capability in its path, and the upload sends the bot token to it.
		{`Post "https://files.slack.com/upload/v1/CwABAAAAXAoAAZnjgP5xYz": EOF`, `Post "https://files.slack.com/upload/[redacted]": EOF`},
		{"nothing short here", "nothing short here"},
		{"xoxb- alone", "xoxb- alone"},
		{`Dialing to websocket on url wss://wss-primary.slack.com/link/?ticket=T1CKET&app_id=A1`, `Dialing to websocket on url wss://wss-primary.slack.com/link/?ticket=[redacted]&app_id=[redacted]`},
		{"get http://admin:Pa55@host:9090/api?x=1: refused", "get http://host:9090/api?x=[redacted]: refused"},
	}
	for _, tc := range tests {
		if got := r.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// syncBuffer is a buffer a logger writes into from any goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLogger(t *testing.T) {
	var buf syncBuffer
	log := Logger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), New(testBotToken))
	tok := testBotToken
	log.Info("calling with "+tok, "err", fmt.Errorf("bad %s", tok), "s", tok, slog.Group("g", "t", tok))
	log.With("k", tok).WithGroup("grp").Warn("again", "x", []string{tok})
	if out := buf.String(); strings.Contains(out, tok) || strings.Contains(out, "AbCdEf") {
		t.Errorf("log output holds the token:\n%s", out)
	} else if strings.Count(out, "xoxb-[redacted]") < 6 {
		t.Errorf("log output lost its content:\n%s", out)
	}
}
