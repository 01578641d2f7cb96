// Package conversation is runwatch's conversation: the command table (name, usage, examples, handler;
// help is generated from it), question matching (ParseQuestion), the access rules (allow-lists, admins,
// the runs a channel may hear of), the answers as neutral Reply values, and the terminal console. A
// transport turns what it received into a Request and renders the Reply; nothing here knows Slack's SDK.
package conversation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"runwatch/config"
	"runwatch/internal/flight"
	"runwatch/monitor"
	"runwatch/probes"
	"runwatch/reports"
)

// Request is one question or command, from any transport.
type Request struct {
	Text    string // the question, or the slash command's argument text
	Command string // a command name when the transport already knows it (slash commands); else ""
	Run     string // a run picked outside the text (--run, a slash argument)
	Channel string
	// ChannelName is the channel's name when the transport knows it (slash commands do).
	ChannelName string
	User        string
	Source      string // "console", "cli", "mention", "dm", "slash", "button", "home"
	// Args are the command's arguments already split (a button press); nil splits Text.
	Args []string
}

// Terminal reports whether the request came from a terminal (the console or `bot ask`), whose one reader is
// whoever typed it: Slack's words for who sees an answer ("only you see this") mean nothing there.
func (r Request) Terminal() bool { return r.Source == "console" || r.Source == "cli" }

// Reply is an answer, ready for any transport.
type Reply struct {
	Intent    string
	Run       string
	Message   reports.Message
	Data      map[string]any // the data behind the answer, for --json
	Ephemeral bool           // only the asker should see it (refusals, help)
	// Refused marks a polite refusal: not allowed, an unknown run or none named among several, a command
	// that cannot be carried out (a stage the run does not have), a question it does not understand. `bot
	// ask` exits 1 on one: a script must not take "I don't know how to answer" for an answer.
	Refused bool
	// Attachment is a file that goes with the answer (a chart); Slack uploads it, text transports
	// only describe it.
	Attachment *Attachment
	// Fallback is uploaded instead of the message's charts where Slack refuses to draw them.
	Fallback *Attachment
}

// Attachment is a file carried by a reply.
type Attachment struct {
	Name    string // file name, e.g. "synth-25k-chart.png"
	Title   string
	AltText string
	Data    []byte
}

// Runs is what the bot needs from the monitor (*monitor.Monitor, wired in cmd/bot): the run file,
// the clock, each run's status and history, the sampler's evaluations and the few changes admins
// make. Tests can stand in for it with a small fake.
type Runs interface {
	Config() *config.File
	Now() time.Time
	RunNames() []string
	Status(ctx context.Context, need monitor.Need) reports.Status
	RunStatus(ctx context.Context, name string, need monitor.Need) (reports.RunStatus, error)
	Sample(ctx context.Context) []monitor.Evaluation
	History(name string) []reports.Observation
	EstimateConfig(name string) reports.EstimateConfig
	ResolveTarget(ctx context.Context, run, path string) (reports.Target, error)
	Snooze(name string, until time.Time) error
	SnoozedUntil(name string) (time.Time, bool)
	MarkStage(run, stage, state, by string) error
	// ReadOnly says why a change would be lost (monitor.ErrReadOnly) when the state directory is only read.
	ReadOnly() error
}

// Bot answers questions about the configured runs.
type Bot struct {
	mon Runs
	// cfg is the run file, read from the monitor once: it does not change while the bot runs.
	cfg      *config.File
	loc      *time.Location
	commands []Command
	admins   map[string]bool
	// allowed holds every allowed channel (environment, top level and per run); empty means every
	// channel is allowed.
	allowed channelSet
	// global holds the environment's and the top-level lists: channels where every run answers.
	global channelSet

	channelMu sync.RWMutex
	// channelIDs maps channel names from the run file to the ids Slack reported for them.
	channelIDs map[string]string
	// snoozers is who snoozed each run's warnings (who.go), under channelMu.
	snoozers map[string]string
	// Budget bounds how long one answer may spend probing; the transports add their own limits.
	Budget time.Duration
	// guard keeps reads of a hung log (last log lines) from piling up.
	guard *probes.Guard
	// Log is told of an answer that failed with a panic (nil: not logged); serve sets its redacting logger.
	Log *slog.Logger
	// Notice, when set, ends every answer as a context line (mrkdwn): a serve answering read-only says so.
	Notice string
	// charts keeps each run's chart estimates between answers and scheduled posts (see chartMemo).
	charts chartMemos
	// found remembers the runs whose answers have said what discovery found (found.go).
	found foundSaid
}

// NewBot builds the bot over a monitor. loc is the time zone for clock times in plain text.
func NewBot(mon Runs, loc *time.Location, env config.Env) *Bot {
	b := &Bot{mon: mon, cfg: mon.Config(), loc: loc, admins: map[string]bool{}, allowed: newChannelSet(), global: newChannelSet(),
		channelIDs: map[string]string{}, Budget: 10 * time.Second, guard: probes.NewGuard()}
	for _, a := range env.Admins {
		b.admins[a] = true
	}
	for _, a := range mon.Config().Admins {
		b.admins[a] = true
	}
	lists := [][]string{env.AllowedChannels, mon.Config().AllowedChannels}
	for _, l := range lists {
		b.global.add(l...)
	}
	for _, r := range mon.Config().Runs {
		lists = append(lists, r.AllowedChannels)
	}
	for _, l := range lists {
		b.allowed.add(l...)
	}
	b.commands = installedNames(CommandTable(), mon.Config().Commands)
	return b
}

// Config is the run file the bot answers about.
func (b *Bot) Config() *config.File { return b.cfg }

// Monitor is what the bot answers from.
func (b *Bot) Monitor() Runs { return b.mon }

// Commands is the command table.
func (b *Bot) Commands() []Command { return b.commands }

// Location is the bot's time zone for plain-text times.
func (b *Bot) Location() *time.Location { return b.loc }

// Query is a request after the run has been picked and the question parsed.
type Query struct {
	Req      Request
	Question Question
	Run      *config.Run
	Args     []string // slash-command arguments after the subcommand
}

// Ask answers a request: picks the command (from the request or the text), picks the run, runs the
// handler within the budget. An answer that panics is a reply saying it failed, for every transport (a Slack
// mention, a slash command, a button, the console, bot ask), not a bot gone silent or stopped. The
// question is parsed once (prepare); Answers.Begin shares one answer among identical questions.
func (b *Bot) Ask(ctx context.Context, req Request) Reply {
	return b.safely(req, func() Reply { return b.answer(ctx, b.prepare(req)) })
}

// prepared is a request after its one parse: the command and the query to run it with, or the reply that
// ends it before any handler runs (a refusal, an unknown question, a run nobody configured).
type prepared struct {
	cmd   Command
	query Query
	done  *Reply // set: answered without the handler
}

// answer runs p's handler within the budget, or returns the reply p ended with; the notice (a read-only
// serve says so) goes at the end of either.
func (b *Bot) answer(ctx context.Context, p prepared) Reply {
	var rep Reply
	if p.done != nil {
		rep = *p.done
	} else {
		ctx, cancel := context.WithTimeout(ctx, b.Budget)
		defer cancel()
		rep = p.cmd.Handler(ctx, b, p.query)
		rep.Intent = p.cmd.Name
		if p.query.Run != nil && rep.Run == "" {
			rep.Run = p.query.Run.Name
		}
	}
	b.sayFound(&rep)
	if b.Notice != "" {
		rep.Message.Context = append(rep.Message.Context, b.Notice)
	}
	return rep
}

// safely runs f, a panic in it (logged, with its stack, through the bot's redacting logger) turned into a
// reply saying the answer failed: the one place an answer's panic is recovered, for the goroutine it runs on.
func (b *Bot) safely(req Request, f func() Reply) Reply {
	rep, err := flight.Safe(func() (Reply, error) { return f(), nil })
	if err == nil {
		return rep
	}
	if b.Log != nil {
		var stack []byte
		if pe, ok := errors.AsType[*flight.PanicError](err); ok {
			stack = pe.Stack
		}
		b.Log.Error("an answer failed with a panic; the bot goes on", "source", req.Source, "command", req.Command,
			"panic", err.Error(), "stack", string(stack))
	}
	return Reply{Intent: "failed", Refused: true, Ephemeral: true, Message: reports.Message{Sections: []string{
		":x: That answer failed with an internal error (logged for whoever runs the bot). Other questions still work; try this one again in a moment."}}}
}

// prepare parses req once: whether it may be asked here, the command, the run, the question's path and
// plan, and the command's own arguments.
func (b *Bot) prepare(req Request) prepared {
	var cmd Command
	end := func(r Reply) prepared { return prepared{cmd: cmd, done: &r} }
	if req.Channel != "" && !b.AllowedRequest(req, nil) {
		return end(NotAllowed())
	}
	// The runs (and their plans) this request may hear of: a run its own allow-list keeps out of this
	// channel is, here, a name nobody configured, so that no answer confirms it to whoever guesses it.
	var runs, plans []string
	visible := map[string]bool{}
	for _, r := range b.visibleRuns(req) {
		runs = append(runs, r.Name)
		visible[strings.ToLower(r.Name)] = true
		for _, p := range r.Plans {
			plans = append(plans, p.Name)
		}
	}
	name, args := req.Command, []string(nil)
	text := req.Text
	if name == "" {
		syntax := req.Text
		if req.Source == "slash" {
			syntax = "runwatch " + syntax // "/runwatch left synth": the first word is the subcommand
		}
		name, args = b.commandSyntax(syntax)
		if name != "" {
			// "/storage /data": the command word is not a path; the arguments are the question.
			text = strings.Join(args, " ")
		}
	} else if req.Args != nil {
		args = req.Args
	} else {
		args = splitArgs(req.Text)
	}
	q := ParseQuestion(text, runs, plans)
	if name == "" {
		name = q.Intent
	}
	if name == "" {
		name = b.fallback(req, &q)
	}
	cmd, ok := b.command(name)
	if !ok {
		return end(b.unknown(req))
	}
	// A run named among the arguments picks the run; the rest are the command's own arguments.
	// A run this request may not hear of is refused as a name nobody configured: dropped as a word, it
	// left the command to the channel's run ("snooze 2h skunkworks" in #synth snoozed synth).
	var rest []string
	for _, a := range args {
		if req.Run == "" && visible[strings.ToLower(a)] {
			req.Run = a
			continue
		}
		if _, hidden := b.cfg.RunByName(a); hidden && req.Run == "" && !visible[strings.ToLower(a)] {
			return end(b.noSuchRun(cmd.Name, req, a))
		}
		rest = append(rest, a)
	}
	query := Query{Req: req, Question: q, Args: rest}
	if cmd.NeedsRun && !cmd.Mutating && req.Run == "" && q.Run == "" {
		// A run the question names but the run file does not: say so, never answer about another run.
		unknown := UnknownRun(req.Text, runs, plans)
		// "/eta synth-99k", "eta synth-99k": the one argument of a command is its run.
		if unknown == "" && len(rest) == 1 && q.Path == "" && q.Plan == "" && runNameLike.MatchString(rest[0]) &&
			(req.Command != "" || strings.ContainsAny(rest[0], "-_.0123456789")) {
			unknown = rest[0]
		}
		if unknown != "" {
			return end(b.noSuchRun(cmd.Name, req, unknown))
		}
	}
	if cmd.NeedsRun {
		run, reply, ok := b.pickRun(req, q)
		if !ok {
			reply.Intent = cmd.Name
			return end(reply)
		}
		query.Run = run
	}
	if query.Run != nil && q.Path == "" && pathIntents[cmd.Name] {
		// "is shared safe?": a protected mount or output named by its last component.
		if p, ok := bareWordPath(query.Run, req.Text); ok {
			query.Question.Path = p
		}
	}
	if req.Channel != "" && query.Run != nil && !b.AllowedRequest(req, query.Run) {
		rep := NotAllowed()
		rep.Intent = cmd.Name
		return end(rep)
	}
	if cmd.Mutating && !b.IsAdmin(req.User, query.Run) && req.Source != "console" && req.Source != "cli" {
		return end(AdminOnly(cmd.Name, cmd.Verb))
	}
	return prepared{cmd: cmd, query: query}
}

// fallback is the command for a question no phrase matched, by what it names: a path, or a protected
// mount or output named by its last component ("is anything landing in /shared right now?", "shared
// ok?"), gets its verdict: "safe" for a protected mount, "writes" for any other path (which the handler
// refuses, saying what the run has, when the run file does not name it); a vague question naming no path
// ("what's up?") the run's status. "" when the question names nothing, or while the run is not known.
func (b *Bot) fallback(req Request, q *Question) string {
	run, _, ok := b.pickRun(req, *q)
	switch {
	case !ok && q.Path != "":
		return "writes" // which run's? the command asks
	case !ok && q.Vague:
		return "status"
	case !ok:
		return ""
	}
	path := q.Path
	if path == "" {
		p, ok := bareWordPath(run, req.Text)
		if !ok {
			if q.Vague {
				return "status"
			}
			return ""
		}
		path, q.Path = p, p
	}
	candidates := []string{path}
	if alias, ok := pathAlias(run, path); ok {
		candidates = append(candidates, alias) // "/shared" for /mnt/nfs/shared
	}
	for _, c := range candidates {
		for _, p := range run.Protected {
			if reports.Under(c, p) {
				return "safe"
			}
		}
	}
	return "writes"
}

// commandSyntax recognises "eta synth-25k", "/eta", "runwatch snooze 2h" or "snooze 2h": a
// command name first, then its arguments.
func (b *Bot) commandSyntax(text string) (string, []string) {
	f := splitArgs(slackRef.ReplaceAllString(text, " "))
	named := false
	if len(f) > 0 && strings.TrimPrefix(strings.ToLower(f[0]), "/") == "runwatch" {
		f, named = f[1:], true
	}
	if len(f) == 0 {
		return "", nil
	}
	first := strings.TrimPrefix(strings.ToLower(f[0]), "/")
	if sentenceWords[first] && len(f) > 1 && !strings.HasPrefix(f[0], "/") && !named {
		return "", nil // "why is it stuck?" is a sentence, not the why command with arguments
	}
	if _, ok := b.command(first); ok {
		return first, f[1:]
	}
	return "", nil
}

func (b *Bot) command(name string) (Command, bool) {
	for _, c := range b.commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// pickRun chooses the run: named in the request, else in the text, else the channel's run, else
// the only run; otherwise it asks which.
func (b *Bot) pickRun(req Request, q Question) (*config.Run, Reply, bool) {
	cfg := b.cfg
	if req.Run != "" {
		if r, ok := cfg.RunByName(req.Run); ok {
			// bot ask --run extract "ETA for synth?": answering either run silently is a guess.
			if named := b.visibleRun(req, q.Run); named != nil && named != r {
				return nil, Reply{Refused: true, Ephemeral: true, Message: reports.Message{Sections: []string{
					fmt.Sprintf("Which run? %s was picked, but the question names %s: ask about one of them.",
						reports.Code(r.Name), reports.Code(named.Name))}}}, false
			}
			return r, Reply{}, true
		}
		return nil, b.noSuchRun("", req, req.Run), false
	}
	if q.Run != "" {
		r, _ := cfg.RunByName(q.Run)
		return r, Reply{}, true
	}
	if req.Channel != "" {
		var match []*config.Run
		for i := range cfg.Runs {
			c := cfg.Runs[i].Channel
			if c == "" {
				continue
			}
			if normChannel(c) == normChannel(req.Channel) || (req.ChannelName != "" && normChannel(c) == normChannel(req.ChannelName)) || b.ChannelID(c) == req.Channel {
				match = append(match, &cfg.Runs[i])
			}
		}
		if len(match) == 1 {
			return match[0], Reply{}, true
		}
	}
	if len(cfg.Runs) == 1 {
		return &cfg.Runs[0], Reply{}, true
	}
	if r := onlyDiscoveredJob(b.visibleRuns(req)); r != nil {
		return r, Reply{}, true
	}
	example := cfg.Runs[0].Name
	if vis := b.visibleRuns(req); len(vis) > 0 {
		example = vis[0].Name
	}
	m := reports.Message{Sections: []string{
		fmt.Sprintf("Which run? I watch %s. Name one in the question, e.g. _ETA for %s?_", b.runList(req), reports.Esc(example))}}
	if l := noJobRunning(b.visibleRuns(req)); l != "" {
		m.Sections = append([]string{l}, m.Sections...) // the news first: the job has stopped
	}
	return nil, Reply{Refused: true, Ephemeral: true, Message: m}, false
}

// visibleRuns are the runs req may hear about: every run for the console and the command line, the
// runs the allow-lists let it answer about for a chat request (a run kept to its own channels is not
// named, nor its state shown, anywhere else).
func (b *Bot) visibleRuns(req Request) []*config.Run {
	cfg := b.cfg
	var out []*config.Run
	for i := range cfg.Runs {
		if req.Channel == "" || b.AllowedRequest(req, &cfg.Runs[i]) {
			out = append(out, &cfg.Runs[i])
		}
	}
	return out
}

// visibleRun is the run called name among those req may hear about, or nil.
func (b *Bot) visibleRun(req Request, name string) *config.Run {
	if name == "" {
		return nil
	}
	for _, r := range b.visibleRuns(req) {
		if strings.EqualFold(r.Name, name) {
			return r
		}
	}
	return nil
}

// noSuchRun refuses a run name the run file does not have, or has but req may not hear of: the
// two read the same, so that no answer confirms a hidden run to whoever guesses its name.
func (b *Bot) noSuchRun(intent string, req Request, name string) Reply {
	return Reply{Intent: intent, Refused: true, Ephemeral: true, Message: reports.Message{Sections: []string{
		fmt.Sprintf("I don't watch a run called %s. Runs: %s.", reports.Code(redactQuoted(name)), b.runList(req))}}}
}

// redactQuoted is text of the asker's that an answer quotes back ("I don't know how to answer …", "I don't watch a
// run called …"), redacted as a job's log lines are: a token or a password pasted into a question by mistake is
// not posted again by the bot, where it would stay (a DM's answer is a message of its own) after the question is
// deleted.
func redactQuoted(s string) string { return redactLogLine(s) }

// quotedError is err said with what it quotes of the question redacted (redactQuoted): a path's error ("resolve
// /data/out/x/api_key=…: lstat …: not a directory") names the path as it was asked. Unwrap keeps the cause for
// errors.Is (a deadline is said as one).
type quotedError struct{ err error }

func (e quotedError) Error() string { return redactQuoted(e.err.Error()) }
func (e quotedError) Unwrap() error { return e.err }

// runList names the runs req may hear about, for a refusal or a question back.
func (b *Bot) runList(req Request) string {
	var names []string
	for _, r := range b.visibleRuns(req) {
		names = append(names, reports.Code(r.Name))
	}
	if len(names) == 0 {
		return "none you can ask about here"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// unknown answers a question no rule matched with a short help.
func (b *Bot) unknown(req Request) Reply {
	var ex []string
	for _, c := range b.commands {
		if len(c.Examples) > 0 && !c.Mutating && !c.SmallTalk {
			ex = append(ex, "• _"+c.Examples[0]+"_")
		}
		if len(ex) == 6 {
			break
		}
	}
	text := redactQuoted(strings.TrimSpace(slackRef.ReplaceAllString(req.Text, "")))
	lead := "I didn't catch that."
	// "/runwatch frob", "runwatch frob": a subcommand that is not one; the subcommands are what helps.
	words := strings.Fields(text)
	if req.Source != "slash" && len(words) > 0 && strings.EqualFold(strings.TrimPrefix(words[0], "/"), "runwatch") {
		words = words[1:]
	} else if req.Source != "slash" {
		words = nil
	}
	if len(words) == 1 && runNameLike.MatchString(words[0]) {
		var names []string
		for _, c := range b.commands {
			if !c.SmallTalk {
				names = append(names, reports.Code(c.Name))
			}
		}
		lead := fmt.Sprintf("%s is not a runwatch command.", reports.Code(reports.TruncateRunes(words[0], 40)))
		if fixed := suggestQuestion(words[0]); fixed != "" {
			lead += fmt.Sprintf(" Did you mean %s?", reports.Code(reports.TruncateRunes(strings.TrimSuffix(fixed, "?"), 40)))
		}
		return Reply{Intent: "unknown", Refused: true, Ephemeral: true, Message: reports.Message{Sections: []string{
			fmt.Sprintf("%s Commands: %s.", lead, strings.Join(names, ", ")),
			"Say _help_ for what each does, or ask in words (_ETA?_).",
		}}}
	}
	// The question is quoted back: a code span in mrkdwn, in double quotes in plain text, where a bare
	// "I don't know how to answer banana pancake yet." runs it into the sentence.
	sections := func(quote func(string) string) []string {
		lead := lead
		if text != "" {
			lead = fmt.Sprintf("I don't know how to answer %s yet.", quote(reports.TruncateRunes(text, 80)))
			if fixed := suggestQuestion(text); fixed != "" {
				if strings.HasSuffix(fixed, "?") {
					lead += fmt.Sprintf(" Did you mean %s", quote(reports.TruncateRunes(fixed, 80)))
				} else {
					lead += fmt.Sprintf(" Did you mean %s?", quote(reports.TruncateRunes(fixed, 80)))
				}
			}
		}
		return []string{lead + " Try one of these:\n" + strings.Join(ex, "\n"), "Say _help_ for everything I can do."}
	}
	var plain []string
	for _, s := range sections(func(s string) string { return `"` + reports.Code(s) + `"` }) {
		plain = append(plain, reports.PlainText(s))
	}
	return Reply{Intent: "unknown", Refused: true, Ephemeral: true, Message: reports.Message{Sections: sections(reports.Code), Plain: plain}}
}

// ErrorReply turns an error into an answer a person can act on.
func ErrorReply(what string, err error) Reply {
	msg := fmt.Sprintf(":warning: I couldn't %s: %s", what, reports.Esc(err.Error()))
	if errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf(":warning: I couldn't %s in time; a probe is slow. Try again, or check `status` for what failed.", what)
	}
	// A change a read-only bot refuses (a one-shot bot ask, a console beside a serve) is declined, not failed.
	refused := errors.Is(err, monitor.ErrReadOnly)
	return Reply{Refused: refused, Ephemeral: refused, Message: reports.Message{Sections: []string{msg}}}
}
