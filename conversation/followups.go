package conversation

import (
	"context"
	"fmt"
	"strings"

	"runwatch/monitor"
	"runwatch/reports"
)

// The follow-up questions people ask after the first answer: why the ETA moved, what is left, whether a
// protected mount is safe, whether the run is on track. Their answers are built in reports; these handlers
// only fetch the status and pass it on.

func handleWhy(ctx context.Context, b *Bot, q Query) Reply {
	rs, err := b.mon.RunStatus(ctx, q.Run.Name, monitor.Need{Progress: true, ETA: true})
	if err != nil {
		return ErrorReply("explain the ETA", err)
	}
	m := reports.AnswerWhy(rs.Name, rs.ETA, rs.Moves, b.loc)
	if rs.ETA == nil {
		m.Sections = []string{noProgressLine(q, rs)}
	}
	m.Context = reports.AnswerContext(rs)
	return Reply{Message: m, Data: map[string]any{"eta": rs.ETA, "moves": rs.Moves, "problems": problemsData(rs.Problems)}}
}

func handleOnTrack(ctx context.Context, b *Bot, q Query) Reply {
	rs, err := b.mon.RunStatus(ctx, q.Run.Name, monitor.Need{Progress: true, ETA: true})
	if err != nil {
		return ErrorReply("compare the ETA with the first baseline estimate", err)
	}
	m := reports.AnswerOnTrack(rs.Name, rs.ETA, rs.Moves, rs.Finish, b.loc)
	if rs.ETA == nil {
		m.Sections = []string{noProgressLine(q, rs)}
	}
	m.Context = reports.AnswerContext(rs)
	return Reply{Message: m, Data: map[string]any{"eta": rs.ETA, "moves": rs.Moves, "finish": rs.Finish, "problems": problemsData(rs.Problems)}}
}

func handleLeft(ctx context.Context, b *Bot, q Query) Reply {
	rs, err := b.mon.RunStatus(ctx, q.Run.Name, monitor.All)
	if err != nil {
		return ErrorReply("list what is left", err)
	}
	m := reports.AnswerLeft(rs, b.loc)
	SayNoRunFile(q.Run, &m)
	m.Context = reports.AnswerContext(rs)
	return Reply{Message: m, Data: map[string]any{"progress": rs.Progress, "eta": rs.ETA, "stages": rs.Stages, "plans": rs.Plans,
		"problems": problemsData(rs.Problems)}}
}

func handleSafe(ctx context.Context, b *Bot, q Query) Reply {
	t, refused := target(ctx, b, q)
	if refused != nil {
		return *refused
	}
	rs, err := storageStatus(ctx, b, q, monitor.Need{})
	if err != nil {
		return ErrorReply("check the protected mounts", err)
	}
	m := reports.AnswerSafe(rs.Name, rs.Storage, t)
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

// namedPlanVerdict leads a capacity answer with the plan the question named (plans[0]), then says how the
// other plans fare, so that a plan that fits never hides one that does not.
func namedPlanVerdict(plans []reports.PlanResult) string {
	p := plans[0]
	var s string
	switch {
	case p.Fits == nil && (p.FreeError != "" || p.Error != "" || p.TokensError != ""):
		// Not waiting for data: something failed, and the plan's line below says what.
		s = fmt.Sprintf(":large_yellow_circle: *%s: can't tell* — why is below", reports.Esc(p.Name))
	case p.Fits == nil:
		s = fmt.Sprintf(":large_yellow_circle: *%s: not sure yet*", reports.Esc(p.Name))
	case *p.Fits:
		s = fmt.Sprintf(":large_green_circle: *%s fits*", reports.Esc(p.Name))
	default:
		s = fmt.Sprintf(":red_circle: *%s does not fit*", reports.Esc(p.Name))
	}
	var no, unknown []string
	for _, o := range plans[1:] {
		switch {
		case o.Fits == nil:
			unknown = append(unknown, reports.Code(o.Name))
		case !*o.Fits:
			no = append(no, reports.Code(o.Name))
		}
	}
	var rest []string
	if len(no) > 0 {
		rest = append(rest, strings.Join(no, ", ")+" does not fit")
		if len(no) > 1 {
			rest[len(rest)-1] = strings.Join(no, ", ") + " do not fit"
		}
	}
	if len(unknown) > 0 {
		rest = append(rest, strings.Join(unknown, ", ")+" cannot be checked yet")
	}
	switch {
	case len(rest) > 0 && p.Fits != nil && *p.Fits:
		s += " — but " + strings.Join(rest, "; ") + " (below)."
	case len(rest) > 0:
		s += "; " + strings.Join(rest, "; ") + " (below)."
	case len(plans) == 2:
		s += "; so does the other plan."
	case len(plans) > 2:
		s += fmt.Sprintf("; the other %d plans fit too.", len(plans)-1)
	default:
		s += "."
	}
	return s
}
