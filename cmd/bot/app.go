package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/redact"
	"runwatch/monitor"
	"runwatch/posts"
	"runwatch/probes"
	"runwatch/reports"
	"runwatch/state"
)

// app is one invocation's wiring: streams, settings, and what the subcommand builds.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	log            *slog.Logger // through the redactor (see setup)
	configPath     string
	cmd            *command

	env  config.Env
	file *config.File
	demo *demoJob
	// exclusive says the command must own the state directory (serve: a second one would post
	// every status twice); lock is its hold, kept for the process's life.
	exclusive bool
	lock      *state.Lock
	// whileWaiting, when set, runs while an exclusive command waits for a console to let go of the state
	// directory, over a read-only monitor; its ctx ends when the lock is taken. Serve answers Slack with it.
	whileWaiting func(ctx context.Context, m *monitor.Monitor, why string) error
}

// flags returns a flag set for the current command with the shared --config flag.
func (a *app) flags() *flag.FlagSet {
	fs := a.bareFlags()
	fs.StringVar(&a.configPath, "config", a.configPath, "run file (default $RUNWATCH_CONFIG, else ./runwatch.yaml, else what discovery finds on this host)")
	return fs
}

// bareFlags is a command's flag set without --config, for a command that reads no run file (replay):
// its help listed a --config that changed nothing.
func (a *app) bareFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("bot "+a.cmd.name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Usage = func() {
		fmt.Fprintf(a.stderr, "%s\n\nusage: %s\n\nflags:\n", a.cmd.summary, a.cmd.usage)
		fs.PrintDefaults()
	}
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	// Allow flags after positional arguments too: `bot ask "ETA?" --json`.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(append([]string{"--"}, pos...))
}

// loadDotEnv loads ./.env, saying which variables it ignored there (config.EnvOnly).
func loadDotEnv(log *slog.Logger) error {
	ignored, err := config.LoadDotEnv(".env")
	for _, k := range ignored {
		log.Warn(k+" in .env is ignored: it is taken from the environment only, since the bot token is sent there; export it to use it", "variable", k)
	}
	return err
}

// setup loads .env, the environment and the run file (or the demo's).
func (a *app) setup(ctx context.Context, demo bool) error {
	if err := loadDotEnv(a.log); err != nil {
		return err
	}
	env, err := config.LoadEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	a.env = env
	// Everything logged from here on has the configured secrets redacted too, not only token shapes and URLs.
	a.log = redact.Logger(a.log, a.redactor())
	if demo {
		d, err := startDemo(ctx, a.log)
		if err != nil {
			return fmt.Errorf("start the demo: %w", err)
		}
		a.demo = d
		a.file = d.file
		if a.env.StateDir == "" || !envSet("RUNWATCH_STATE_DIR") {
			a.env.StateDir = d.stateDir
		}
		return nil
	}
	path, err := config.Locate(a.configPath, env.ConfigPath)
	if err != nil {
		return err
	}
	if path == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("find the working directory: %w", err)
		}
		a.file = a.withoutRunFile(ctx, wd)
		return nil
	}
	f, err := config.Load(path, os.LookupEnv)
	if errors.Is(err, fs.ErrNotExist) {
		return redactedError{missingRunFile(path, a.configPath != "", err)}
	}
	if err != nil {
		return redactedError{err}
	}
	a.fillRunFile(ctx, f)
	a.file = f
	return nil
}

// missingRunFile says which setting named a run file that is not there and what to do: "open x.yaml: no such
// file or directory" left the reader guessing whether a typo in --config or a stale RUNWATCH_CONFIG (in .env,
// say) sent it there.
func missingRunFile(path string, fromFlag bool, err error) error {
	from := "RUNWATCH_CONFIG (in the environment or .env)"
	if fromFlag {
		from = "--config"
	}
	return fmt.Errorf("the run file %s named by %s does not exist: fix the path, or copy runwatch.example.yaml there to start one (%w)",
		path, from, err)
}

// redactedError is a run-file error as it is printed: a value it quotes may be a URL with a
// password or a key (one put under the wrong key, or expanded from the environment), and those
// are named as probes.RedactURL names them. Unwrap keeps the cause for errors.Is.
type redactedError struct{ err error }

func (e redactedError) Error() string { return probes.RedactURLsIn(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

func envSet(k string) bool {
	_, ok := os.LookupEnv(k)
	return ok
}

func (a *app) close() {
	if a.demo != nil {
		a.demo.Close()
	}
}

// monitor builds the monitor. Long-lived commands own the state directory, one process at a time
// (a second serve is refused, a console beside a serve only reads it); one-shot commands only read it,
// so they never race a running `bot serve`. A serve that finds a console holding the directory waits
// for it to exit (a terminal left open must not keep the service from starting, as a refusal would
// under systemd, on every restart), running a.whileWaiting meanwhile; the console's command is in the
// lock file for that. A monitor that only reads refuses changes, saying why (ReadOnlyWhy).
func (a *app) monitor(ctx context.Context, longLived bool) (*monitor.Monitor, error) {
	var dir *state.Dir
	why := fmt.Sprintf("`bot %s` only reads runwatch's state, so a change here would be lost; snooze and mark stages in Slack or in `bot console`, where the bot runs", a.cmd.name)
	if longLived {
		d, err := state.Open(a.env.StateDir)
		if err != nil {
			a.log.Warn("state directory unusable; history kept in memory only", "dir", a.env.StateDir, "err", err)
		} else {
			dir = d
			if d.Tightened != 0 {
				a.log.Warn(fmt.Sprintf("the state directory was open to other users (mode %04o): it holds what Slack sent and what runwatch posted, so it is now the bot user's alone (0700)", d.Tightened),
					"dir", a.env.StateDir)
			}
			what := "bot " + a.cmd.name
			if a.lock, err = d.LockAs(what); err != nil {
				if a.exclusive {
					if a.lock, err = a.waitForConsole(ctx, d, err); errors.Is(err, state.ErrLocked) {
						return nil, fmt.Errorf("RUNWATCH_STATE_DIR: %w: a second bot serve over it would post every status and warning twice; stop the other one, or give this one its own RUNWATCH_STATE_DIR", err)
					} else if err != nil {
						return nil, err
					}
				} else {
					a.log.Warn("state directory used by another bot: reading it, not writing it", "err", err)
					longLived = false
					why = "another runwatch holds the state directory and this one only reads it; snooze and mark stages in Slack, or in that runwatch"
					if pid, what, ok := d.HeldBy(); ok {
						why = fmt.Sprintf("`%s` (pid %d) holds the state directory and this `bot %s` only reads it; snooze and mark stages in Slack, where it answers", what, pid, a.cmd.name)
					}
				}
			}
		}
	} else if _, err := os.Stat(a.env.StateDir); err == nil {
		dir, _ = state.Open(a.env.StateDir)
	}
	return a.newMonitor(dir, longLived, why)
}

// newMonitor builds the monitor over dir: one that writes it when longLived, else one that only reads it
// (why says so when a change is refused).
func (a *app) newMonitor(dir *state.Dir, longLived bool, why string) (*monitor.Monitor, error) {
	o := monitor.Options{ProcRoot: a.env.ProcRoot, ProbeTimeout: a.env.ProbeTimeout, State: dir, ReadOnly: !longLived,
		ScanEvery: scanEvery(a.sampleInterval())}
	if !longLived {
		o.ReadOnlyWhy = why
	}
	if longLived {
		o.Fresh = freshFor(a.sampleInterval(), a.env.ProbeTimeout)
	}
	if a.demo != nil {
		o.Now = a.demo.Now
	}
	m, problems, err := monitor.New(a.file, o)
	if err != nil {
		return nil, err
	}
	for _, p := range problems {
		a.log.Warn("state", "probe", p.Probe, "err", p.Error)
	}
	return m, nil
}

func (a *app) bot(m *monitor.Monitor) *conversation.Bot {
	b := conversation.NewBot(m, time.Local, a.env)
	b.Log = a.log
	return b
}

// redactor redacts the Slack secrets the environment gave (none before it is loaded), anything shaped like
// a token, and the password and query of any URL.
func (a *app) redactor() *redact.Redactor {
	return redact.New(a.env.SlackBotToken.Reveal(), a.env.SlackAppToken.Reveal(), a.env.SlackSigningSecret.Reveal())
}

// start loads the configuration (the demo's with demo) and builds the monitor; the caller must
// call a.close. On the demo every command waits until the simulated job has logged progress (a
// fraction of a second), so that the first answer is about the job, not about its empty log.
func (a *app) start(ctx context.Context, demo, longLived bool) (*monitor.Monitor, error) {
	if err := a.setup(ctx, demo); err != nil {
		return nil, err
	}
	if a.demo != nil {
		a.demo.warmUp(ctx)
	}
	return a.monitor(ctx, longLived)
}

// consoleLockPoll is how often a serve waiting for a console's hold on the state directory tries again.
var consoleLockPoll = time.Second

// waitForConsole waits, while a `bot console` holds d, for it to let go, and takes the lock; held by
// anything else (another serve), it returns err as it was. Meanwhile a.whileWaiting, when set, runs over
// a read-only monitor; any error it ends with ends the wait, as it would end a serve's start: credentials
// Slack refuses, or Slack unreachable at auth.test (a service manager restarts the serve).
func (a *app) waitForConsole(ctx context.Context, d *state.Dir, err error) (*state.Lock, error) {
	logged := false
	var waiting chan error
	stopWaiting := func() {}
	defer func() {
		stopWaiting()
		if waiting != nil {
			<-waiting
		}
	}()
	for errors.Is(err, state.ErrLocked) {
		pid, what, ok := d.HeldBy()
		if !ok || what != "bot console" {
			return nil, err
		}
		if !logged {
			a.log.Warn("waiting for bot console to exit: it holds the state directory; this serve starts when it does",
				"pid", pid, "dir", a.env.StateDir)
			logged = true
			if a.whileWaiting != nil {
				why := fmt.Sprintf("`bot console` (pid %d) holds the state directory and this `bot %s` only reads it until the console exits; snooze and mark stages in that console, or here once it exits", pid, a.cmd.name)
				m, merr := a.newMonitor(d, false, why)
				if merr != nil {
					return nil, merr
				}
				wctx, cancel := context.WithCancel(ctx)
				stopWaiting, waiting = cancel, make(chan error, 1)
				go func() {
					waiting <- a.whileWaiting(wctx, m, fmt.Sprintf("bot console, pid %d, holds the state directory", pid))
				}()
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case werr := <-waiting:
			waiting = nil
			if werr != nil {
				return nil, werr
			}
		case <-time.After(consoleLockPoll):
		}
		var l *state.Lock
		if l, err = d.LockAs("bot " + a.cmd.name); err == nil {
			return l, nil
		}
	}
	return nil, err
}

// parseNoArgs parses the flags of a command that takes no positional arguments; why says so when
// some are given.
func parseNoArgs(fs *flag.FlagSet, args []string, why string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{why}
	}
	return nil
}

func runConsole(ctx context.Context, a *app, args []string) error {
	fs := a.flags()
	demo := fs.Bool("demo", false, "watch a simulated vLLM job (metrics endpoint, progress log, output directory) at accelerated time")
	noSample := fs.Bool("no-sample", false, "do not sample in the background (answers still probe live)")
	if err := parseNoArgs(fs, args, "console takes no arguments; type questions on standard input"); err != nil {
		return err
	}
	defer a.close()
	m, err := a.start(ctx, *demo, true)
	if err != nil {
		return err
	}
	b := a.bot(m)
	c := &conversation.Console{Bot: b, In: a.stdin, Out: a.stdout}
	if isTerminal(a.stdin) {
		c.Prompt = "runwatch> "
		fmt.Fprintf(a.stdout, "runwatch console: %s from %s. Ask \"help\" for what I can answer; Ctrl-D quits.\n",
			reports.Plural(len(a.file.Runs), "run", "runs"), a.file.Source)
		if a.demo != nil {
			fmt.Fprintf(a.stdout, "Demo: a simulated vLLM job at %gx speed; metrics at %s, log at %s.\n", a.demo.speed, a.demo.MetricsURL, a.demo.LogPath)
		}
	}
	if !*noSample {
		s := posts.NewSampler(b, a.sampleInterval(), a.log)
		s.Notify = func(msg reports.Message) { c.Notify(msg.Text()) }
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go s.Run(sctx)
		// The scheduled statuses too, printed where a channel would get them (runs with a channel).
		sched, err := posts.NewScheduler(b, conversation.NewConsolePoster(c), nil, a.log, nil)
		if err != nil {
			return err
		}
		sched.Start(sctx)
		defer sched.Stop(time.Second)
	}
	return c.Run(ctx)
}

// writerScanPeriod is how often a sampler scans /proc for open files at most: at a short sample
// interval the scan is most of a sample's work, and answers about storage scan when asked anyway.
const writerScanPeriod = 30 * time.Second

// maxFresh bounds how old an evaluation an answer may read instead of probing again.
const maxFresh = 5 * time.Minute

// freshFor is how old an evaluation answers read instead of probing again, at a sample interval:
// the interval and the time a sample may take (the probe timeout), so that every answer between
// two samples quotes the last one (ETA, throughput, on-track, what's left and status never give
// two figures for one fact a moment apart), at most maxFresh.
func freshFor(interval, probeTimeout time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	return min(interval+probeTimeout, maxFresh)
}

// scanEvery is how many samples at interval one writer scan serves.
func scanEvery(interval time.Duration) int {
	if interval <= 0 {
		return 1
	}
	return max(1, int(writerScanPeriod/interval))
}

func (a *app) sampleInterval() time.Duration {
	if a.demo != nil {
		return a.demo.sampleEvery
	}
	return a.env.SampleInterval
}

func runAsk(ctx context.Context, a *app, args []string) error {
	fs := a.flags()
	asJSON := fs.Bool("json", false, `print {"intent", "run", "text"} plus the data behind the answer as JSON`)
	run := fs.String("run", "", "the run to ask about (default: named in the question, or the only run)")
	demo := fs.Bool("demo", false, "ask about a simulated job")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	question := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if question == "" {
		return usageError{"give the question as an argument, e.g. bot ask \"ETA?\""}
	}
	defer a.close()
	m, err := a.start(ctx, *demo, false)
	if err != nil {
		return err
	}
	rep := a.bot(m).Ask(ctx, conversation.Request{Text: question, Run: *run, Source: "cli"})
	declined := rep.Refused
	if *asJSON {
		out := map[string]any{}
		for k, v := range rep.Data {
			out[k] = v
		}
		out["intent"], out["run"], out["text"] = rep.Intent, rep.Run, rep.Message.Text()
		if declined {
			out["refused"] = true
		}
		if err := writeJSON(a.stdout, out); err != nil || !declined {
			return err
		}
		return refusedError{}
	}
	fmt.Fprintln(a.stdout, rep.Message.Text())
	if declined {
		return refusedError{}
	}
	return nil
}

func runStatus(ctx context.Context, a *app, args []string) error {
	fs := a.flags()
	asJSON := fs.Bool("json", false, "print the status as JSON")
	run := fs.String("run", "", "only this run")
	demo := fs.Bool("demo", false, "the status of a simulated job")
	if err := parseNoArgs(fs, args, "status takes no arguments"); err != nil {
		return err
	}
	defer a.close()
	m, err := a.start(ctx, *demo, false)
	if err != nil {
		return err
	}
	var st reports.Status
	if *run != "" {
		rs, err := m.RunStatus(ctx, *run, monitor.All)
		if err != nil {
			return err
		}
		st = reports.Status{GeneratedAt: m.Now().UTC(), Runs: []reports.RunStatus{rs}}
	} else {
		st = m.Status(ctx, monitor.All)
	}
	if *asJSON {
		return writeJSON(a.stdout, st)
	}
	for i, rs := range st.Runs {
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		msg := reports.RenderStatus(rs, m.Now(), time.Local)
		if run, ok := a.file.RunByName(rs.Name); ok {
			conversation.SayNoRunFile(run, &msg)
			conversation.SayFound(run, &msg, true)
		}
		fmt.Fprintln(a.stdout, msg.Text())
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
