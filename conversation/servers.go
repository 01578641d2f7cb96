package conversation

import (
	"context"

	"runwatch/config"
	"runwatch/monitor"
	"runwatch/reports"
)

// serversCommand answers "is vllm up?": the run's inference servers first, then what they are doing for it.
// Without it the question fell through to "I don't know how to answer".
var serversCommand = Command{Name: "servers", Usage: "servers [run]", NeedsRun: true, Handler: handleServers,
	Description: "Whether the run's inference servers are up and serving metrics, with their running and waiting requests.",
	Examples:    []string{"is vllm up?", "are the servers healthy?"}}

func handleServers(ctx context.Context, b *Bot, q Query) Reply {
	rs, err := b.mon.RunStatus(ctx, q.Run.Name, monitor.Need{Progress: true})
	if err != nil {
		return ErrorReply("check the servers", err)
	}
	m := reports.Message{Title: rs.Name + " · servers"}
	if l := reports.EngineLineBeside(rs, b.loc); l != "" {
		m.Sections = append(m.Sections, l)
	} else {
		m.Sections = append(m.Sections, noServers(q.Run))
	}
	if rs.Throughput != nil {
		m.Sections = append(m.Sections, reports.ThroughputLine(*rs.Throughput))
	}
	m.Context = reports.AnswerContext(rs)
	return Reply{Message: m, Data: map[string]any{"engines": rs.Engines, "throughput": rs.Throughput, "problems": problemsData(rs.Problems)}}
}

// noServers says why a run has no servers to report, by what its run file gives: it said "so I follow it from
// its log alone" to a run with no log, and "no prometheus:" to a run whose Prometheus had no series for it.
func noServers(r *config.Run) string {
	switch {
	case r.Prometheus != nil:
		return "No inference servers found: Prometheus (`prometheus:`) has no vLLM, SGLang or TGI series for this run" +
			" (below, if it failed; else check its `selector:`)."
	case r.Log != "":
		return "No inference servers to check: the run has no `metrics:` endpoints or `prometheus:` in the run file, " +
			"so I follow it from its log alone."
	}
	return "No inference servers to check, and nothing else to follow the job by: the run has no `metrics:`, " +
		"`prometheus:` or `log:` in the run file. Add the servers' /metrics URLs under `metrics:`."
}
