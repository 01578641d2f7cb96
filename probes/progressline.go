package probes

// Where a progress line starts, and whose bar it is. A job's log carries other text that looks like
// progress: an engine's per-batch bar ("Processed prompts: 100%|...| 200/200"), a datasets map
// ("Map: 100%|...| 25000/25000"), a model's reply echoed into the log that happens to hold
// "Progress: 25000/25000". The job's own line starts the line, after nothing but a timestamp, a level
// and the like; a bar that is not the job's is named, never counted.

import (
	"fmt"
	"regexp"
	"strings"
)

// logPrefixToken matches one token of what a logger writes before the message: a date, a time, a
// level, a bracketed or parenthesised field, a source location, a module-like logger name (one with a
// dot or an underscore: "__main__", "synth.gen"), a pid, and the separators between them. A plain
// word is not one: "Reply: Progress: 25000/25000" is text that quotes progress, not a progress line.
var logPrefixToken = regexp.MustCompile(`^(?:` +
	`\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?` + // 2026-12-07 03:12:01,123
	`|\d{1,2}[-/]\d{1,2}(?:[-/]\d{2,4})?` + // 12-07, 12/07/2026
	`|T?\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?` + // 03:12:01.123
	`|(?i:trace|debug|info|notice|warn|warning|error|err|critical|fatal)` +
	`|[IWEFD]\d{4}` + // glog: I1207
	`|\[[^\]]{0,120}\]|\([^)]{0,120}\)|<[^>]{0,120}>` +
	`|[\w./-]+\.(?:py|go|rs|cc|cpp|c|js|ts|java):\d+` + // gen.py:88
	`|[A-Za-z_][\w-]*(?:[._][\w-]+)+` + // __main__, synth.gen
	`|\d+` + // a pid or thread id
	`)(?:[\s:|,\]-]+|$)`)

// progressStarts are the offsets of line where a progress line may start: the line's start, after
// its leading blanks, and after each token of the logger's prefix.
func progressStarts(line []byte) []int {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	starts := []int{0, i}
	for len(starts) < 18 && i < len(line) {
		m := logPrefixToken.FindIndex(line[i:])
		if m == nil || m[1] == 0 {
			break
		}
		i += m[1]
		starts = append(starts, i)
	}
	return starts
}

// barDesc is the description before a bar that starts at off in line, when the bar starts a progress
// line: nothing, or a description and a colon ("Processed prompts: "), after one of starts.
func barDesc(line []byte, starts []int, off int) (string, bool) {
	for i := len(starts) - 1; i >= 0; i-- {
		s := starts[i]
		if s > off {
			continue
		}
		d := strings.TrimRight(string(line[s:off]), " \t")
		if d == "" {
			return "", true
		}
		if desc, ok := strings.CutSuffix(d, ":"); ok && len(desc) <= 100 && !strings.ContainsAny(desc, "|[]\"'`") {
			return strings.TrimSpace(desc), true
		}
	}
	return "", false
}

// startsAt reports whether off is one of starts.
func startsAt(starts []int, off int) bool {
	for _, s := range starts {
		if s == off {
			return true
		}
	}
	return false
}

// libraryBars are the descriptions of progress bars libraries draw while a job runs: model loading,
// CUDA graph capture, datasets' preprocessing, downloads. They are never the job's progress.
var libraryBars = []string{
	"Map", "Filter", "Generating train split", "Generating test split", "Generating validation split",
	"Loading checkpoint shards", "Loading safetensors checkpoint shards", "Capturing CUDA graph shapes",
	"Capturing CUDA graphs", "Downloading", "Fetching", "Resolving data files", "Tokenizing", "Adding requests",
	"Loading dataset shards", "Saving the dataset", "Creating json from Arrow format", "Casting the dataset",
}

// LibraryBar reports whether a bar's description is one a library draws (datasets' "Map (num_proc=8)"
// included), never the job's.
func LibraryBar(desc string) bool {
	d := strings.TrimSpace(desc)
	if i := strings.Index(d, " (num_proc="); i >= 0 {
		d = d[:i]
	}
	for _, b := range libraryBars {
		if strings.EqualFold(d, b) || strings.HasPrefix(d, b+" ") && strings.HasPrefix(b, "Downloading") {
			return true
		}
	}
	return strings.HasPrefix(d, "Fetching ") && strings.HasSuffix(d, " files")
}

// ForeignBar is a progress line in the log that is not the job's: another tool's bar, a bar whose
// total contradicts the run's, text that quotes progress.
type ForeignBar struct {
	Desc        string // the bar's description ("Processed prompts", "Map"), "" for none
	Done, Total int64
	Why         string // "a library's bar", "its total contradicts total: 25,000", "another bar"
	Line        string
}

// maxForeign bounds the foreign bars a reading names.
const maxForeign = 5

// progressPicker decides which of a log's progress lines, handed to it newest first, are the job's:
// the run's log_pattern when it has one; else its own "Progress: N/M" lines; else a tqdm bar when it is
// the only one (libraries' bars aside). A line whose total contradicts the job's is not the job's.
// Every other line that looks like progress is named once in foreign.
type progressPicker struct {
	custom *regexp.Regexp
	want   LogWant

	job     *Progress  // the job's newest line: the pattern's or a script line
	bars    []Progress // the newest update of each bar that may be the job's, newest first
	foreign []ForeignBar
}

// add takes the next (older) progress line; it returns true once the job's newest is known, and no
// older line matters.
func (pk *progressPicker) add(p Progress) bool {
	switch {
	case pk.custom != nil && p.Format != "custom":
		pk.name(p, "the run's log_pattern does not match it")
	case pk.want.Total > 0 && p.Total != pk.want.Total:
		pk.name(p, fmt.Sprintf("its total (%d) contradicts the run file's total: %d", p.Total, pk.want.Total))
	case p.Format == "tqdm" && pk.want.Seen > 0 && p.Total != pk.want.Seen:
		pk.name(p, fmt.Sprintf("its total (%d) is not the job's (%d, as counted so far)", p.Total, pk.want.Seen))
	case p.Format == "tqdm" && LibraryBar(p.Desc):
		pk.name(p, "a library's bar")
	case p.Format == "tqdm":
		for _, b := range pk.bars {
			if b.Desc == p.Desc {
				return false // an older update of a bar already seen
			}
		}
		pk.bars = append(pk.bars, p)
	default:
		pk.job = &p
		return true
	}
	return false
}

// pick is the job's newest progress when the lines seen so far tell it.
func (pk *progressPicker) pick() (Progress, bool) {
	switch {
	case pk.job != nil:
		// The job prints its own progress: every bar beside it is another's.
		for _, b := range pk.bars {
			pk.name(b, "a bar beside the job's own progress lines")
		}
		pk.bars = nil
		return *pk.job, true
	case pk.custom == nil && len(pk.bars) == 1:
		return pk.bars[0], true
	}
	return Progress{}, false
}

// why says, after "no progress line", what the log held instead: bars that are not the job's, or
// several bars with nothing to tell which is.
func (pk *progressPicker) why() string {
	var parts []string
	if len(pk.bars) > 1 {
		var names []string
		for _, b := range pk.bars {
			names = append(names, fmt.Sprintf("%q (%d/%d)", b.Desc, b.Done, b.Total))
		}
		parts = append(parts, "several progress bars and nothing to tell which is the job's: "+strings.Join(names, ", ")+
			"; set total: or log_pattern: in the run file")
	}
	for _, f := range pk.foreign {
		parts = append(parts, fmt.Sprintf("%q (%d/%d): %s", f.Desc, f.Done, f.Total, f.Why))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; only lines that are not the job's: " + strings.Join(parts, "; ")
}

// name records p as a foreign bar, once per description.
func (pk *progressPicker) name(p Progress, why string) {
	desc := p.Desc
	switch p.Format {
	case "progress":
		desc = "Progress:"
	case "custom":
		desc = "log_pattern"
	}
	if len(pk.foreign) >= maxForeign {
		return
	}
	for _, f := range pk.foreign {
		if f.Desc == desc {
			return
		}
	}
	pk.foreign = append(pk.foreign, ForeignBar{Desc: desc, Done: p.Done, Total: p.Total, Why: why, Line: p.Line})
}

// LogWant is what a log read knows of the job before it reads: the run file's total: (a line that
// contradicts it is not the job's), and the total the job's lines gave so far (a bar that contradicts
// it is another's). Zero when not known.
type LogWant struct {
	Total, Seen int64
}
