package conversation

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"runwatch/monitor"
	"runwatch/reports"
)

// Command is one thing the bot can do: a row of the command table. Help, slash-command routing
// and question matching all come from this table.
type Command struct {
	Name        string
	Usage       string // how to call it as a /runwatch subcommand or slash command
	Description string
	Examples    []string // natural questions that reach it
	Slash       string   // its own slash command, if any ("/eta")
	NeedsRun    bool
	Mutating    bool   // changes state: admins only
	SmallTalk   bool   // a courtesy, not a question ("thanks", "hi"): answered, left out of help and command lists
	Cheap       bool   // answered from the command table and the run file alone: no probe, no slot to wait for
	Storage     bool   // about disks and where the outputs land: help lists it in a section of its own
	Verb        string // for refusals: "snooze warnings"
	Handler     func(ctx context.Context, b *Bot, q Query) Reply
}

// CommandTable is every command runwatch knows, in the order help lists them.
func CommandTable() []Command {
	return []Command{
		{Name: "eta", Slash: "/eta", Usage: "/eta [run]", NeedsRun: true, Handler: handleETA,
			Description: "When the run will finish, with a range and why the estimate moved.",
			Examples:    []string{"ETA?", "when will it finish?", "how long is left?"}},
		{Name: "why", Usage: "why [run]", NeedsRun: true, Handler: handleWhy,
			Description: "Why the ETA moved: the last moves with their times and causes, in numbers.",
			Examples:    []string{"why did the ETA move?", "why is the ETA different?", "what changed?"}},
		{Name: "ontrack", Usage: "ontrack [run]", NeedsRun: true, Handler: handleOnTrack,
			Description: "Whether the run is on track: the finish now against the first baseline estimate (and the one warnings compare against now).",
			Examples:    []string{"are we on track?", "are we behind schedule?"}},
		{Name: "left", Usage: "left [run]", NeedsRun: true, Handler: handleLeft,
			Description: "What is left: items and checklist stages still to do, and what blocks each.",
			Examples:    []string{"what's left to do?", "what's blocking us?"}},
		{Name: "throughput", Usage: "throughput [run]", NeedsRun: true, Handler: handleThroughput,
			Description: "Tokens and items per second, recent and over the run.",
			Examples:    []string{"how fast are we going?", "what's the throughput?"}},
		{Name: "stuck", Usage: "stuck [run]", NeedsRun: true, Handler: handleStuck,
			Description: "Whether the run is still making progress.",
			Examples:    []string{"is it stuck?", "is it still moving?"}},
		serversCommand,
		{Name: "status", Usage: "/runwatch status [run]", NeedsRun: true, Handler: handleStatus,
			Description: "Progress, throughput, ETA, engines, storage, plans and checklist in one answer.",
			Examples:    []string{"status", "how is it going?", "how many done?", "any errors?"}},
		{Name: "storage", Storage: true, Slash: "/storage", Usage: "/storage [run|path|plan]", NeedsRun: true, Handler: handleStorage,
			Description: "Storage overview; with a path, the space left there; with a plan, whether it fits.",
			Examples:    []string{"/storage", "/storage /data", "/storage hidden-states"}},
		{Name: "safe", Storage: true, Usage: "safe [path]", NeedsRun: true, Handler: handleSafe,
			Description: "Whether the protected mounts are safe, leading with the risk: writes now, or an output that will land there.",
			Examples:    []string{"is /shared safe?", "is the protected mount safe?"}},
		{Name: "writes", Storage: true, Usage: "writes [path]", NeedsRun: true, Handler: handleWrites,
			Description: "Whether anything writes to the protected mounts (or a path), and who writes what where.",
			Examples:    []string{"are we writing to /shared?", "is anything writing to a protected mount?"}},
		{Name: "where", Storage: true, Usage: "where [run]", NeedsRun: true, Handler: handleWhere,
			Description: "Where each configured output really lands (symlinks followed) and on which mount.",
			Examples:    []string{"where does the output go?"}},
		{Name: "space", Storage: true, Usage: "space [path]", NeedsRun: true, Handler: handleSpace,
			Description: "Free space on the run's mounts, write rate, whether the disk outlasts the job, and the capacity plans that do not fit there.",
			Examples:    []string{"how much space is left on /data?", "will the disk fill?"}},
		{Name: "fit", Storage: true, Usage: "fit [plan]", NeedsRun: true, Handler: handleFit,
			Description: "Capacity plans: bytes needed (tokens x layers x hidden size x bytes) against free space.",
			Examples:    []string{"will the hidden states fit?", "will it fit?"}},
		{Name: "chart", Usage: "/runwatch chart [run]", NeedsRun: true, Handler: handleChart,
			Description: "Charts of throughput and ETA over the run's history (drawn by Slack; a PNG where it cannot).",
			Examples:    []string{"/runwatch chart"}},
		{Name: "logs", Usage: "/runwatch logs [run]", NeedsRun: true, Handler: handleLogs,
			Description: "The last lines of the run's job log, or its recent error lines, escaped (in Slack, shown only to you).",
			Examples:    []string{"/runwatch logs", "show me the error log", "last errors"}},
		{Name: "runs", Usage: "/runwatch runs", Cheap: true, Handler: handleRuns,
			Description: "The runs I watch and their channels.",
			Examples:    []string{"which runs do you watch?"}},
		{Name: "snooze", Usage: "snooze <duration> [run]", NeedsRun: true, Mutating: true, Verb: "snooze warnings", Handler: handleSnooze,
			Description: "Silence a run's warnings for a while (e.g. 2h). Admins only.",
			Examples:    []string{"/runwatch snooze 2h"}},
		{Name: "unsnooze", Usage: "unsnooze [run]", NeedsRun: true, Mutating: true, Verb: "unsnooze warnings", Handler: handleUnsnooze,
			Description: "Turn a run's warnings back on. Admins only.",
			Examples:    []string{"/runwatch unsnooze"}},
		{Name: "stage", Usage: "stage <name> done|todo|failed [run]", NeedsRun: true, Mutating: true, Verb: "mark stages", Handler: handleStage,
			Description: "Mark a checklist stage by hand (todo clears the mark). Admins only.",
			Examples:    []string{"/runwatch stage download-drafter done"}},
		{Name: "help", Usage: "help", Cheap: true, Handler: handleHelp,
			Description: "This list.",
			Examples:    []string{"help"}},
		{Name: "thanks", Usage: "thanks", SmallTalk: true, Cheap: true, Handler: handleThanks,
			Description: "You're welcome.", Examples: []string{"thanks!"}},
		{Name: "hello", Usage: "hello", SmallTalk: true, Cheap: true, Handler: handleHello,
			Description: "A greeting, and what to ask.", Examples: []string{"hi"}},
	}
}

func handleThanks(context.Context, *Bot, Query) Reply {
	return Reply{Message: reports.Message{Sections: []string{"You're welcome."}}, Ephemeral: true}
}

// handleHello answers a greeting in one line: what to ask, and help for the rest.
func handleHello(context.Context, *Bot, Query) Reply {
	return Reply{Message: reports.Message{Sections: []string{
		"Hi! Ask me about a run: _ETA?_, _how fast are we going?_, _are we writing to /shared?_, _will it fit?_, or _help_ for everything."}},
		Ephemeral: true}
}

func problemsData(ps []reports.Problem) []reports.Problem {
	if ps == nil {
		return []reports.Problem{}
	}
	return ps
}

func handleETA(ctx context.Context, b *Bot, q Query) Reply {
	rs, err := b.mon.RunStatus(ctx, q.Run.Name, monitor.Need{Progress: true, ETA: true})
	if err != nil {
		return ErrorReply("estimate the ETA", err)
	}
	m := reports.AnswerETA(rs, b.loc, noProgressReason(q, rs))
	// bot ask takes one sample and keeps none: a rate needs the history a running bot samples.
	if q.Req.Source == "cli" && rs.Progress != nil && rs.Progress.Total > 0 && rs.ETA != nil && rs.ETA.State == reports.StateUnknown && len(b.mon.History(q.Run.Name)) < 2 {
		m.Context = append(m.Context, "`bot ask` reads one sample and the history a running bot keeps, and no bot has sampled this run yet: start `bot serve` (or ask in `bot console`) for a rate.")
	}
	return Reply{Message: m, Data: map[string]any{
		"progress": rs.Progress, "throughput": rs.Throughput, "eta": rs.ETA, "engines": rs.Engines, "problems": problemsData(rs.Problems),
		"quality": rs.Quality, "drafter": rs.Drafter, "moves": rs.Moves, "finish": rs.Finish,
	}}
}

func handleThroughput(ctx context.Context, b *Bot, q Query) Reply {
	rs, err := b.mon.RunStatus(ctx, q.Run.Name, monitor.Need{Progress: true})
	if err != nil {
		return ErrorReply("measure throughput", err)
	}
	m := reports.AnswerThroughput(rs, b.loc, noProgressReason(q, rs))
	return Reply{Message: m, Data: map[string]any{"throughput": rs.Throughput, "engines": rs.Engines, "problems": problemsData(rs.Problems)}}
}

func handleStatus(ctx context.Context, b *Bot, q Query) Reply {
	rs, err := b.mon.RunStatus(ctx, q.Run.Name, monitor.All)
	if err != nil {
		return ErrorReply("get the status", err)
	}
	// A terminal shows it all; a channel gets it chat-sized, the rest a press away.
	m := b.StatusMessage(rs, false)
	if q.Req.Terminal() {
		m = b.FullStatus(rs)
	}
	SayNoRunFile(q.Run, &m)
	return Reply{Message: m, Data: map[string]any{"status": rs}}
}

func storageStatus(ctx context.Context, b *Bot, q Query, need monitor.Need) (reports.RunStatus, error) {
	need.Storage = true
	return b.mon.RunStatus(ctx, q.Run.Name, need)
}

// target resolves a path from the question, refusing paths the run does not configure.
func target(ctx context.Context, b *Bot, q Query) (reports.Target, *Reply) {
	if q.Question.Path == "" {
		return reports.Target{}, nil
	}
	t, err := b.mon.ResolveTarget(ctx, q.Run.Name, q.Question.Path)
	if errors.Is(err, monitor.ErrNotAllowed) {
		// "/shared" for /mnt/nfs/shared: the way people say a configured path, when only one fits.
		if alias, ok := pathAlias(q.Run, q.Question.Path); ok {
			if at, aerr := b.mon.ResolveTarget(ctx, q.Run.Name, alias); aerr == nil {
				return at, nil
			}
		}
	}
	if errors.Is(err, monitor.ErrNotAllowed) && discovered(q.Run) && (q.Question.Intent == "writes" || q.Question.Intent == "safe") {
		// No run file, so no path is configured: "are we writing to /shared?" is answered from the job's
		// own files (which discovery and the scan know), with how to have /shared guarded, not refused.
		r := unwatchedWrites(ctx, b, q)
		return t, &r
	}
	if errors.Is(err, monitor.ErrNotAllowed) {
		var known []string
		for _, list := range []struct {
			name  string
			paths []string
		}{{"outputs", q.Run.Outputs}, {"protected", q.Run.Protected}, {"watched", q.Run.Watch}} {
			if len(list.paths) == 0 {
				continue
			}
			var codes []string
			for _, p := range list.paths {
				codes = append(codes, reports.Code(p))
			}
			known = append(known, list.name+": "+strings.Join(codes, ", "))
		}
		msg := fmt.Sprintf("I only answer about run %s's outputs, watched paths and protected mounts, and %s isn't one of them.",
			reports.Esc(q.Run.Name), reports.Code(redactQuoted(q.Question.Path)))
		if len(known) > 0 {
			msg += " I know " + strings.Join(known, "; ") + "."
		}
		switch q.Question.Intent {
		case "writes", "safe":
			// "are we writing to /shared?" about a path the run does not know: what the asker wants is the path
			// guarded, warned about when output lands there, which watch: alone does not do.
			msg += " If the job must not write there, add it to `protected:` in the run file: then I answer this and warn when output lands there."
		default:
			msg += " Add it to `watch:` in the run file if it matters."
		}
		r := Reply{Refused: true, Ephemeral: true, Message: reports.Message{Sections: []string{msg}}}
		return t, &r
	}
	if err != nil {
		r := ErrorReply("look at "+redactQuoted(q.Question.Path), quotedError{err})
		return t, &r
	}
	return t, nil
}

// unwatchedWrites answers a writes question about a path a discovered run has no key for
// (reports.AnswerUnwatched): the job's own files, never the path itself.
func unwatchedWrites(ctx context.Context, b *Bot, q Query) Reply {
	rs, err := storageStatus(ctx, b, q, monitor.Need{})
	if err != nil {
		return ErrorReply("check writes", err)
	}
	m := reports.AnswerUnwatched(rs.Name, rs.Storage, q.Run.Found, redactQuoted(q.Question.Path))
	m.Context = append(m.Context, reports.AnswerContext(rs)...)
	if age := reports.StorageAge(rs.Storage, b.mon.Now()); age != "" {
		m.Context = append(m.Context, age)
	}
	return Reply{Message: m, Data: map[string]any{"storage": rs.Storage, "problems": problemsData(rs.Problems)}}
}

func handleWrites(ctx context.Context, b *Bot, q Query) Reply {
	t, refused := target(ctx, b, q)
	if refused != nil {
		return *refused
	}
	rs, err := storageStatus(ctx, b, q, monitor.Need{})
	if err != nil {
		return ErrorReply("check writes", err)
	}
	m := reports.AnswerWrites(rs.Name, rs.Storage, t)
	m.Context = append(m.Context, reports.AnswerContext(rs)...)
	if age := reports.StorageAge(rs.Storage, b.mon.Now()); age != "" {
		m.Context = append(m.Context, age)
	}
	data := map[string]any{"storage": rs.Storage, "problems": problemsData(rs.Problems)}
	if t.Path != "" {
		data["target"] = t
	}
	return Reply{Message: m, Data: data}
}

func handleWhere(ctx context.Context, b *Bot, q Query) Reply {
	rs, err := storageStatus(ctx, b, q, monitor.Need{})
	if err != nil {
		return ErrorReply("resolve the outputs", err)
	}
	m := reports.AnswerWhere(rs.Name, rs.Storage)
	m.Context = append(m.Context, reports.AnswerContext(rs)...)
	return Reply{Message: m, Data: map[string]any{"storage": rs.Storage, "problems": problemsData(rs.Problems)}}
}

func handleSpace(ctx context.Context, b *Bot, q Query) Reply {
	t, refused := target(ctx, b, q)
	if refused != nil {
		return *refused
	}
	// Plans too: "will the disk fill?" is about the hidden states still to come, not only the pace so far.
	rs, err := storageStatus(ctx, b, q, monitor.Need{Progress: true, Plans: true})
	if err != nil {
		return ErrorReply("check free space", err)
	}
	paths := append(append([]reports.PathInfo{}, rs.Storage.Paths...), rs.Storage.ProtectedMounts...)
	if t.Path != "" {
		// The mount the path is on here, and the same configured path on other hosts.
		var sel []reports.PathInfo
		for _, p := range paths {
			if p.Mount == t.Mount || p.Host != "" && (reports.Under(t.Path, p.Path) || reports.Under(p.Path, t.Path)) {
				sel = append(sel, p)
			}
		}
		paths = sel
	} else {
		paths = rs.Storage.Paths
	}
	var eta *float64
	if rs.ETA != nil && rs.ETA.State == reports.StateRunning {
		eta = rs.ETA.Seconds
	}
	m := reports.AnswerFree(rs.Name, paths, rs.Storage.WriteRates, eta, rs.Plans)
	if e := rs.Storage.RemoteError; e != "" {
		// The other hosts are not gone because their query failed: say so where their lines would be.
		m.Sections = append(m.Sections, ":warning: Other hosts: free space unknown — "+reports.Esc(e))
	}
	m.Context = append(m.Context, reports.AnswerContext(rs)...)
	if rs.Storage.RateNote != "" {
		m.Context = append(m.Context, reports.Esc(rs.Storage.RateNote))
	}
	return Reply{Message: m, Data: map[string]any{"paths": paths, "write_rates": rs.Storage.WriteRates, "eta": rs.ETA, "plans": rs.Plans, "problems": problemsData(rs.Problems)}}
}

func handleFit(ctx context.Context, b *Bot, q Query) Reply {
	rs, err := b.mon.RunStatus(ctx, q.Run.Name, monitor.Need{Plans: true, Progress: true})
	if err != nil {
		return ErrorReply("check the plans", err)
	}
	// Every plan, the one the question names first: "will the hidden states fit?" must not hide the
	// all-layers plan that does not.
	plans := append([]reports.PlanResult(nil), rs.Plans...)
	if q.Question.Plan != "" {
		sort.SliceStable(plans, func(i, j int) bool { return plans[i].Name == q.Question.Plan && plans[j].Name != q.Question.Plan })
	}
	m := reports.AnswerPlans(rs.Name, plans)
	if q.Req.Command == "fit" || asksYesNo(q.Req.Text) { // the fit command, "will it fit?"
		m = reports.AnswerFit(rs.Name, plans)
	}
	if q.Question.Plan != "" && len(plans) > 0 && plans[0].Name == q.Question.Plan && len(m.Sections) > 0 {
		m.Sections[0] = namedPlanVerdict(plans)
	}
	var measured []reports.MeasuredPlan
	said := map[string]bool{} // plans sharing a target: what it holds is said once, not per plan
	for _, p := range plans {
		if mp := reports.MeasuredFor(rs.Measured, p.Name); mp != nil {
			if !said[mp.Sentence] {
				m.Sections = append(m.Sections, mp.Sentence)
			}
			said[mp.Sentence] = true
			measured = append(measured, *mp)
		}
	}
	m.Context = append(m.Context, reports.AnswerContext(rs)...)
	return Reply{Message: m, Data: map[string]any{"plans": plans, "measured": measured, "problems": problemsData(rs.Problems)}}
}

// handleStorage is /storage [run|path|plan]: a path asks about space there, a plan name about the
// plan, nothing gives the overview.
func handleStorage(ctx context.Context, b *Bot, q Query) Reply {
	switch {
	case q.Question.Path != "":
		return handleSpace(ctx, b, q)
	case q.Question.Plan != "":
		return handleFit(ctx, b, q)
	}
	rs, err := storageStatus(ctx, b, q, monitor.Need{Progress: true, Plans: true})
	if err != nil {
		return ErrorReply("check storage", err)
	}
	m := reports.Message{Title: rs.Name + " · storage"}
	m.Sections = append(m.Sections, reports.StorageVerdict(rs.Storage, rs.Plans))
	for _, w := range rs.Storage.Warnings {
		m.Sections = append(m.Sections, rs.Storage.WarningSeverity(w)+" "+w.Message)
	}
	where := reports.AnswerWhere(rs.Name, rs.Storage)
	m.Sections = append(m.Sections, where.Sections[len(where.Sections)-1])
	for _, p := range rs.Plans {
		m.Sections = append(m.Sections, p.Sentence)
	}
	m.Context = reports.AnswerContext(rs)
	return Reply{Message: m, Data: map[string]any{"storage": rs.Storage, "plans": rs.Plans, "problems": problemsData(rs.Problems)}}
}

func handleRuns(ctx context.Context, b *Bot, q Query) Reply {
	cfg := b.cfg
	var lines, names []string
	for _, r := range b.visibleRuns(q.Req) {
		names = append(names, r.Name)
		line := "• " + reports.Code(r.Name)
		if r.Channel != "" {
			line += " in " + reports.Esc(r.Channel)
		}
		var src []string
		if r.Log != "" {
			src = append(src, "log")
		}
		if len(r.Metrics) > 0 {
			src = append(src, reports.Plural(len(r.Metrics), "metrics endpoint", "metrics endpoints"))
		}
		if r.Prometheus != nil {
			src = append(src, "Prometheus")
		}
		if len(src) > 0 {
			line += " — " + strings.Join(src, ", ")
		}
		if until, ok := b.mon.SnoozedUntil(r.Name); ok {
			line += " :zzz: snoozed until " + reports.SlackTime(until, b.loc)
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		lines = []string{"None that I may answer about here."}
	}
	m := reports.Message{Title: "Runs", Sections: []string{strings.Join(lines, "\n")},
		Context: []string{"from " + reports.Esc(cfg.Source)}}
	return Reply{Message: m, Data: map[string]any{"runs": names}}
}

func handleHelp(ctx context.Context, b *Bot, q Query) Reply {
	return Reply{Message: Help(b.commands, b.SlashName("/runwatch")), Ephemeral: true}
}

// Help renders the command table; runwatch is the /runwatch command as installed.
func Help(cmds []Command, runwatch string) reports.Message {
	var ask, disk, do []string
	for _, c := range cmds {
		if c.SmallTalk {
			continue
		}
		// Every text of the table is escaped: "snooze <duration>" in Slack is a broken link, not the usage.
		desc := reports.Esc(c.Description)
		if c.Mutating || c.Name == "help" {
			do = append(do, fmt.Sprintf("• `%s %s` — %s", runwatch, reports.Esc(c.Usage), desc))
			continue
		}
		// Each line leads with how people ask it (its first example), then the command that asks it
		// outright: "ontrack" or "fit" alone said nothing to someone reading help for the first time.
		asked, more := c.Name, c.Examples
		if len(more) > 0 && !strings.HasPrefix(more[0], "/") {
			asked, more = more[0], more[1:]
		}
		// A command without a question to lead with (storage, chart, logs) shows how its arguments read. One
		// line per command, so that the whole help fits a notification (3,000 characters).
		ex := ""
		if asked == c.Name {
			bare := strings.Fields(c.Usage)[0]
			for _, e := range more {
				if e != bare && e != runwatch+" "+c.Name {
					ex = " e.g. _" + reports.Esc(e) + "_"
					break
				}
			}
		}
		usage := c.Usage
		if !strings.HasPrefix(usage, "/") {
			usage = runwatch + " " + usage // the subcommand of /runwatch, or the word alone in a DM or the console
		}
		line := fmt.Sprintf("• *%s* (`%s`) — %s%s", reports.Esc(asked), reports.Esc(usage), desc, ex)
		if c.Storage {
			disk = append(disk, line) // a section of its own: one section holds at most 3,000 characters
			continue
		}
		ask = append(ask, line)
	}
	return reports.Message{Title: "runwatch help", Sections: []string{
		"*Ask me* (mention me, DM me, or type in the console):\n" + strings.Join(ask, "\n"),
		"*About storage*\n" + strings.Join(disk, "\n"),
		"*Commands*\n" + strings.Join(do, "\n"),
		"Name a run in the question when I watch several; in a run's channel I pick that run.",
	}}
}

// handleChart draws the run's history as a PNG attachment.
func handleChart(ctx context.Context, b *Bot, q Query) Reply {
	hist := b.mon.History(q.Run.Name)
	png, err := reports.RenderChart(hist, b.mon.EstimateConfig(q.Run.Name), reports.ChartOptions{
		Title: q.Run.Name + " · throughput and ETA", Loc: b.loc, Memo: b.charts.of(q.Run.Name)})
	if errors.Is(err, reports.ErrChartNoData) {
		who := "`bot serve` (or `bot console`) takes"
		if q.Req.Source == "console" {
			who = "this console takes"
		}
		return Reply{Ephemeral: true, Message: reports.Message{Sections: []string{fmt.Sprintf(
			"There is not enough history of %s to chart yet: I need at least two samples with progress; %s one every sampling interval.",
			reports.Code(q.Run.Name), who)}}}
	}
	if err != nil {
		return ErrorReply("draw the chart", err)
	}
	span := hist[len(hist)-1].T - hist[0].T
	m := reports.Message{Title: q.Run.Name + " · chart", Sections: []string{fmt.Sprintf(
		"Throughput and ETA of %s over the last %s (%s).", reports.Code(q.Run.Name), reports.Duration(span), reports.Plural(len(hist), "sample", "samples"))},
		Charts: b.TrendCharts(q.Run.Name)}
	file := &Attachment{
		Name: q.Run.Name + "-chart.png", Title: q.Run.Name + " throughput and ETA", Data: png,
		AltText: fmt.Sprintf("Chart of %s: throughput (top) and ETA with its range (bottom) over %s", q.Run.Name, reports.Duration(span)),
	}
	rep := Reply{Message: m, Data: map[string]any{"samples": len(hist), "png_bytes": len(png), "charts": len(m.Charts)}}
	// Slack draws the charts itself; the PNG is for where it refuses to (or there is too little
	// history for a Slack chart, which needs two points of each line).
	if len(m.Charts) > 0 {
		rep.Fallback = file
	} else {
		rep.Attachment = file
	}
	return rep
}

func handleSnooze(ctx context.Context, b *Bot, q Query) Reply {
	if len(q.Args) == 0 {
		rw := b.SlashName("/runwatch")
		return Reply{Ephemeral: true, Message: reports.Message{Sections: []string{fmt.Sprintf("Usage: `%s snooze &lt;duration&gt; [run]`, e.g. `%s snooze 2h`.", rw, rw)}}}
	}
	d, err := parseSnooze(q.Args[0])
	if err != nil {
		return Reply{Ephemeral: true, Message: reports.Message{Sections: []string{reports.Esc(redactQuoted(err.Error()))}}}
	}
	until := b.mon.Now().Add(d)
	err = b.mon.Snooze(q.Run.Name, until)
	if err != nil && !errors.Is(err, monitor.ErrNotSaved) {
		return ErrorReply("snooze "+q.Run.Name, err)
	}
	b.changedBy(q.Run.Name, q.Req)
	by := ""
	if who := whoAsked(q.Req); who != "" {
		by = " by " + who
	}
	return Reply{Message: reports.Message{Sections: NotSaved([]string{fmt.Sprintf(":zzz: Warnings for %s snoozed for %s%s, until %s. `"+b.SlashName("/runwatch")+" unsnooze` turns them back on.",
		reports.Code(q.Run.Name), reports.Duration(d.Seconds()), by, reports.SlackDateTime(until, b.loc))}, err)}, Data: map[string]any{"snoozed_until": until.UTC()}}
}

// NotSaved adds to an admin command's answer that the change holds in memory but did not reach
// the state directory, when err says so.
func NotSaved(sections []string, err error) []string {
	if err == nil {
		return sections
	}
	return append(sections, fmt.Sprintf(":warning: It holds now, but it is not saved yet (%s): a restart before the state directory takes writes again would forget it.",
		reports.Esc(err.Error())))
}

func parseSnooze(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		if strings.HasSuffix(s, "d") {
			if n, err2 := time.ParseDuration(strings.TrimSuffix(s, "d") + "h"); err2 == nil {
				d, err = n*24, nil
			}
		}
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a duration: use something like 30m, 2h or 1d", s)
	}
	if d > 14*24*time.Hour {
		return 0, fmt.Errorf("%s is longer than two weeks; snooze for less, or remove the run", s)
	}
	return d, nil
}

func handleUnsnooze(ctx context.Context, b *Bot, q Query) Reply {
	_, was := b.mon.SnoozedUntil(q.Run.Name)
	err := b.mon.Snooze(q.Run.Name, time.Time{})
	if err != nil && !errors.Is(err, monitor.ErrNotSaved) {
		return ErrorReply("unsnooze "+q.Run.Name, err)
	}
	b.changedBy(q.Run.Name, Request{})
	text := fmt.Sprintf(":bell: Warnings for %s are back on.", reports.Code(q.Run.Name))
	if who := whoAsked(q.Req); who != "" {
		text = fmt.Sprintf(":bell: %s turned the warnings of %s back on.", who, reports.Code(q.Run.Name))
	}
	if !was {
		text = fmt.Sprintf(":bell: Warnings for %s were not snoozed: they are on.", reports.Code(q.Run.Name))
	}
	return Reply{Message: reports.Message{Sections: NotSaved([]string{text}, err)}}
}

func handleStage(ctx context.Context, b *Bot, q Query) Reply {
	if len(q.Args) < 2 {
		rw := b.SlashName("/runwatch")
		return Reply{Ephemeral: true, Message: reports.Message{Sections: []string{fmt.Sprintf("Usage: `%s stage &lt;name&gt; done|todo|failed [run]`; quote a name with spaces: `%s stage \"Training script updated\" done`.", rw, rw)}}}
	}
	// The state is the last word; the name is everything before it, so a name with spaces works
	// quoted or not.
	name, word := strings.Join(q.Args[:len(q.Args)-1], " "), strings.ToLower(q.Args[len(q.Args)-1])
	state := map[string]string{"done": reports.StageDone, "todo": "", "failed": reports.StageFailed, "in_progress": reports.StageInProgress}
	s, ok := state[word]
	if !ok {
		return Reply{Refused: true, Ephemeral: true, Message: reports.Message{Sections: []string{fmt.Sprintf("%s is not a stage state: use done, todo or failed.", reports.Code(redactQuoted(word)))}}}
	}
	who := q.Req.User
	if who == "" {
		who = q.Req.Source
	}
	err := b.mon.MarkStage(q.Run.Name, name, s, who)
	if err != nil && !errors.Is(err, monitor.ErrNotSaved) {
		return Reply{Refused: true, Ephemeral: true, Message: reports.Message{Sections: []string{reports.Esc(redactQuoted(err.Error()))}}}
	}
	verb := "marked " + word
	if s == "" {
		verb = "back to its automatic check"
	}
	if who := whoAsked(q.Req); who != "" {
		verb += " by " + who
	}
	return Reply{Message: reports.Message{Sections: NotSaved([]string{fmt.Sprintf("Stage %s of %s %s.", reports.Code(name), reports.Code(q.Run.Name), verb)}, err)}}
}
