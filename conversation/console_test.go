package conversation

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestConsole(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	in := strings.NewReader("ETA?\n\n" + strings.Repeat("x", maxConsoleLine+10) + "\nhelp\r\nnonsense here\n")
	var out bytes.Buffer
	c := &Console{Bot: e.bot, In: in, Out: &out}
	if err := c.Run(context.Background()); err != nil {
		t.Fatalf("Console.Run = %v; want nil at EOF", err)
	}
	got := out.String()
	for _, want := range []string{"synth · ETA", "longer than 64 KiB", "runwatch help", "I don't know how to answer"} {
		if !strings.Contains(got, want) {
			t.Errorf("console output lacks %q:\n%s", want, got)
		}
	}
	// Plain text, not mrkdwn: no emphasis markers or entities.
	for _, bad := range []string{"*synth", "&lt;", ":white_check_mark:"} {
		if strings.Contains(got, bad) {
			t.Errorf("console output contains mrkdwn %q", bad)
		}
	}
}
