// Command bot is runwatch: a chat-ops bot that answers "ETA?", "are we writing to /shared?" and
// "will the hidden states fit?" about long ML runs, in Slack, in a terminal console, or one
// question at a time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"runwatch/internal/redact"
	"runwatch/internal/tty"
)

// exit codes
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

type command struct {
	name    string
	summary string
	usage   string
	run     func(ctx context.Context, a *app, args []string) error
}

var commands = []command{
	{"console", "answer questions typed in the terminal, one per line (EOF exits)", "bot console [--demo] [--no-sample] [--config PATH]", runConsole},
	{"ask", "answer one question and exit", `bot ask [--json] [--run NAME] [--demo] [--config PATH] "QUESTION"`, runAsk},
	{"status", "print the status summary of every configured run", "bot status [--json] [--run NAME] [--demo] [--config PATH]", runStatus},
	{"init", "print the run file for the engines and job found on this host (--write saves it)", "bot init [--write] [--config PATH]", runInit},
	{"serve", "run the long-lived bot: sampler, scheduled posts, warnings, Slack", "bot serve [--demo] [--config PATH]", runServe},
	{"replay", "run the estimator over a recorded trace (JSONL), one JSON line out per line in", "bot replay --trace FILE [--json=false]", runReplay},
	{"export", "write a run's sampled history as a trace (JSONL) that replay reads", "bot export [--run NAME] [--out FILE] [--config PATH]", runExport},
	{"exporter", "serve this node's writer facts on /metrics for Prometheus (one per node)", "bot exporter [--listen ADDR] [--config PATH]", runExporter},
	{"manifest", "print the Slack app manifest for the run file's command names (commands:)", "bot manifest [--name NAME] [--config PATH]", runManifest},
}

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// usageError is a command-line mistake: exit 2 after saying what was wrong.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// refusedError is a question the bot declined (a run it does not watch, a path outside the run): the reply
// on stdout already says why, so exit 1 without a second, vaguer line on stderr.
type refusedError struct{}

func (refusedError) Error() string { return "refused" }

func realMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Everything printed on the terminal goes through one filter: a process name or a log line can carry
	// escape sequences (a screen clear, a clipboard write, an erase of the line before).
	stdout, stderr = tty.Writer(stdout), tty.Writer(stderr)
	global := flag.NewFlagSet("bot", flag.ContinueOnError)
	global.SetOutput(stderr)
	configPath := global.String("config", "", "run file (default $RUNWATCH_CONFIG, else ./runwatch.yaml, else what discovery finds on this host)")
	global.Usage = func() { topUsage(stderr) }
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	rest := global.Args()
	if len(rest) == 0 {
		topUsage(stderr)
		return exitUsage
	}
	if rest[0] == "help" {
		if len(rest) > 1 {
			rest = []string{rest[1], "--help"}
		} else {
			topUsage(stdout)
			return exitOK
		}
	}
	var cmd *command
	for i := range commands {
		if commands[i].name == rest[0] {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "bot: unknown command %q\n\n", rest[0])
		topUsage(stderr)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, configPath: *configPath, cmd: cmd}
	a.log = redact.Logger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})), a.redactor())
	err := cmd.run(ctx, a, rest[1:])
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, new(refusedError)):
		return exitError
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "bot %s: %s\nusage: %s\n", cmd.name, ue.msg, cmd.usage)
		return exitUsage
	}
	fmt.Fprintf(stderr, "bot %s: %s\n", cmd.name, a.redactor().Redact(err.Error()))
	return exitError
}

func topUsage(w io.Writer) {
	fmt.Fprintf(w, `runwatch: answers questions about long ML runs (ETA, throughput, storage, capacity) from evidence.

usage: bot [--config PATH] COMMAND [flags]

commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, `
Run "bot COMMAND --help" for a command's flags.

configuration:
  --config PATH, else $RUNWATCH_CONFIG, else ./runwatch.yaml, else the runs discovery makes of the
  engines listening on this host and the job using them (else a built-in run "local" watching the
  working directory and /). Settings and secrets come from the environment and a
  .env file in the working directory (see .env.example); the run file is described in
  runwatch.example.yaml.

examples:
  bot console --demo                       talk to the bot about a simulated vLLM job
  bot ask "ETA?"                           on your job's machine, with no run file: it finds the job
  bot init --write                         save what it found as ./runwatch.yaml, to edit
  bot ask "are we writing to /shared?"
  bot ask --json "ETA?"
  bot status --json --run synth-25k
`)
}
