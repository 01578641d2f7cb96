package probes

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Metric names drift: engines rename them between releases, proxies and exporters rewrite their
// prefixes. When an endpoint answers without the names runwatch reads, this file says which known
// metric is missing and what the server exports instead, rather than "unknown".

// metricsStems are the core names of each engine without its prefix, so that a family such as
// `myproxy_num_requests_running` can be recognised as vLLM's under another prefix.
var metricsStems = func() map[string]string {
	out := map[string]string{}
	for _, s := range metricsBaseSources {
		for _, n := range []string{s.running, s.waiting, s.generation} {
			n, _, _ = strings.Cut(n, "{")
			if stem, ok := strings.CutPrefix(n, s.prefix); ok && len(stem) > 8 {
				if _, dup := out[stem]; !dup {
					out[stem] = n
				}
			}
		}
	}
	return out
}()

// metricsStemOf returns the known name a family looks like under another prefix.
func metricsStemOf(name string) (string, bool) {
	for stem, known := range metricsStems {
		if name == known {
			return "", false
		}
		if name == stem || strings.HasSuffix(name, "_"+stem) || strings.HasSuffix(name, ":"+stem) {
			return known, true
		}
	}
	return "", false
}

// metricsDiagnose lists what an endpoint that answered lacks. With src nil no engine was
// recognised: it names what runwatch looks for and anything that looks like it under another
// prefix or an old name. With a source, it names each core metric (batch, tokens, finished
// requests) the engine should export and does not, with the name that replaced it; a family in bad
// is there with impossible values, which metricsDropImpossible names instead.
func metricsDiagnose(m metricsFamilies, src *metricsSource, bad map[*dto.MetricFamily]bool) []string {
	var out []string
	renamed := func(missing string) string {
		base := strings.TrimSuffix(missing, "_total")
		for _, r := range metricsRenames {
			switch {
			case strings.TrimSuffix(r.new, "_total") == base && r.old != "" && m.has(r.old):
				return fmt.Sprintf("; it exports %s instead (%s)", r.old, r.note)
			case strings.TrimSuffix(r.old, "_total") == base && r.new != "" && m.has(r.new):
				return fmt.Sprintf("; it exports %s instead (%s)", r.new, r.note)
			case strings.TrimSuffix(r.old, "_total") == base:
				return " (" + r.note + ")"
			}
		}
		return ""
	}
	if src == nil {
		var looks []string
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if known, ok := metricsStemOf(name); ok && m.has(name) {
				looks = append(looks, fmt.Sprintf("%s looks like %s under another prefix", name, known))
			}
			for _, r := range metricsRenames {
				if r.old == name && r.new != "" {
					looks = append(looks, fmt.Sprintf("%s is the old name of %s (%s)", name, r.new, r.note))
				}
			}
		}
		var want []string
		for _, s := range metricsBaseSources {
			n := s.running
			if n == "" {
				n = s.finished[0]
			}
			n, _, _ = strings.Cut(n, "{")
			want = append(want, n)
		}
		line := "none of the engine metrics runwatch reads are here (it looks for " + strings.Join(want, ", ") + ")"
		if len(looks) > 0 {
			line += ": " + strings.Join(looks, "; ")
		} else if len(names) > 0 {
			shown := names[:min(len(names), 3)]
			line += fmt.Sprintf("; the first families it exports are %s", strings.Join(shown, ", "))
		}
		return append(out, line)
	}
	check := func(what string, names ...string) {
		var defined []string
		for _, n := range names {
			if n == "" {
				continue
			}
			if m.has(n) {
				return
			}
			if f, _, _ := strings.Cut(n, "{"); bad[m.family(f)] || bad[m[f]] {
				return
			}
			if _, _, ok := m.hist(n); ok {
				return
			}
			defined = append(defined, n)
		}
		if len(defined) == 0 {
			return
		}
		out = append(out, fmt.Sprintf("no %s (%s)%s", slices.Compact(defined)[0], what, renamed(defined[0])))
	}
	check("requests in the batch", src.running)
	check("generated tokens", src.generation, src.generationHist)
	check("finished requests", append(append([]string{}, src.finished...), src.finishedHist)...)
	if len(src.kvUsage) > 0 && !slices.ContainsFunc(src.kvUsage, m.has) {
		if note := renamed(src.kvUsage[0]); strings.HasPrefix(note, "; ") {
			out = append(out, fmt.Sprintf("no %s (KV cache usage)%s", src.kvUsage[0], note))
		}
	}
	return out
}
