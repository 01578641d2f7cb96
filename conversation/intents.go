package conversation

import (
	"regexp"
	"strings"

	"runwatch/internal/spell"
)

// Question is a parsed chat question: what is asked, and about what.
type Question struct {
	Intent string // a command name from the table, or "" when nothing matched
	Run    string // a run named in the text, "" when none
	Path   string // an absolute path named in the text
	Plan   string // a plan named in the text
	// Vague marks a question that asks after something without saying what about it ("what's up with
	// …?", "how are things on …?"): what it names answers it.
	Vague bool
}

// Intent rules, tried in order: the first rule with a matching phrase wins. Phrases match on word
// boundaries of the lower-cased question.
var intentRules = []struct {
	intent  string
	phrases []string
}{
	{"help", []string{"help", "what can you do", "what do you know", "commands", "usage"}},
	{"runs", []string{"list runs", "which runs", "what runs", "runs?", "show runs", "runs"}},
	{"safe", []string{"safe", "at risk", "in danger", "risky", "contaminate", "contaminating", "pollute", "polluting", "clobber", "clobbering", "overwrite", "overwriting", "trash", "trashing", "protected ok", "protected okay", "ok to leave"}},
	{"writes", []string{"writing to", "write to", "writes to", "written to", "writing on", "writing into", "writes on", "landing on", "land on", "protected"}},
	{"where", []string{"where does", "where do", "where is the output", "where are the outputs", "where will", "output go", "outputs go", "where are we writing", "where"}},
	{"fit", []string{"fit", "fits", "enough space", "enough room", "enough disk", "capacity", "plan", "plans", "hidden states", "hidden-states"}},
	{"left", []string{"what's left", "whats left", "what is left", "what else is left", "what remains", "what's remaining", "whats remaining", "what is remaining", "left to do", "still to do", "to do", "todo", "to-do", "outstanding", "pending", "blocking", "blocked", "blockers", "blocker", "what's next", "whats next", "what is next", "next steps", "remaining work", "remaining stages", "remaining items", "what stages", "which stages", "not done",
		"checklist", "check list", "stages"}},
	{"space", []string{"space", "free", "disk", "full", "room", "storage", "left on", "capacity left", "df"}},
	{"stuck", []string{"stuck", "stalled", "stall", "hung", "hanging", "frozen", "moving", "progressing", "alive", "dead",
		"still running", "still going", "is it running?", "job running", "it still running"}},
	{"throughput", []string{"how fast", "throughput", "speed", "tok/s", "tokens per second", "tokens/s", "tok/sec", "tokens/sec", "tokens a second", "rate", "items/s", "req/s", "thruput", "tput", "tps"}},
	{"ontrack", []string{"on track", "on schedule", "behind schedule", "ahead of schedule", "behind", "ahead", "on time", "late", "running late", "slipping", "slipped", "as planned", "as expected", "keeping up", "first estimate", "original estimate", "initial estimate", "promised", "on target", "schedule"}},
	{"eta", []string{"eta", "when", "whens", "how long", "time left", "finish", "finished", "done yet", "is it done", "are we done", "remaining", "complete", "how much longer", "how far"}},
	// The log's error lines, before the status takes "errors": "show me the error log", "any errors in the log?",
	// "last errors" ask to see them; "any errors?" and "how many errors?" stay with the status's count.
	{"logs", []string{"error log", "error logs", "errors log", "log errors", "error lines", "error messages",
		"the log", "the logs", "job log", "log lines", "show errors", "show the errors", "show me the errors",
		"list errors", "list the errors", "what errors", "which errors", "what were the errors", "what are the errors",
		"last error", "last errors", "latest error", "latest errors", "recent error", "recent errors"}},
	{"servers", []string{"server", "servers", "vllm", "sglang", "tgi", "engine", "engines", "replica", "replicas", "health", "healthy", "unhealthy", "up", "down", "kv cache", "serving"}},
	// The status leads with the count: "how many done?" and "any errors?" are answered by its first line.
	{"status", []string{"status", "how is it going", "how's it going", "how are we doing", "update", "summary", "report", "overview", "progress",
		"how many done", "how many items", "how many finished", "how many completed", "how many are done", "done so far",
		"errors", "error", "failures", "failed", "how many failed"}},
}

// smallTalkRules come after every question's rules: "thanks, what's the ETA?" is an ETA question, and only
// what matches no question is small talk ("thanks" and "hi" were "I don't know how to answer"). They are no
// spelling fix's target either: "what's the weather?" must not become "what's thx weather?".
var smallTalkRules = []struct {
	intent  string
	phrases []string
}{
	{"thanks", []string{"thanks", "thank you", "thank u", "thx", "cheers", "much appreciated", "appreciate it"}},
	{"hello", []string{"hi", "hello", "hey", "hiya", "howdy", "good morning", "good afternoon", "good evening"}},
}

// whyCues start a "why" question; etaCues say it is about the estimate, so "why is it stuck?" stays a
// stuck question while "why did the ETA move?" is about the ETA's moves. "what changed?" alone is too.
var (
	whyCues = []string{"why", "how come", "what changed", "what happened", "what's changed", "whats changed", "what has changed",
		"explain", "reason", "reasons", "cause", "caused", "what made", "what's behind", "whats behind"}
	etaCues = []string{"eta", "estimate", "estimates", "estimated", "finish", "finishing", "moved", "move", "jump", "jumped",
		"different", "differ", "changed", "change", "later", "earlier", "longer", "shorter", "slower", "faster", "shift", "shifted",
		"warning", "slipped", "slip", "so long", "time", "go up", "went up", "go down", "went down", "push", "pushed", "delay", "delayed"}
)

// A capacity question that says "fit" or "enough", or starts as a yes-or-no question does ("will it
// fit?", "is there enough space?", "are the plans ok?"), wants a Yes or No; "what's the plan?" and
// "capacity?" ask what the plans come to.
var (
	yesNoCues   = []string{"fit", "fits", "fitting", "enough"}
	yesNoStarts = []string{"will", "would", "is", "are", "does", "do", "can", "could", "should", "shall", "am", "has", "have"}
)

// asksYesNo reports whether the question text wants a Yes or No first.
func asksYesNo(text string) bool {
	lower := strings.ToLower(strings.TrimSpace(slackRef.ReplaceAllString(text, " ")))
	if anyPhrase(lower, yesNoCues) {
		return true
	}
	first, _, _ := strings.Cut(strings.TrimLeft(lower, " \t\"'"), " ")
	for _, w := range yesNoStarts {
		if first == w {
			return true
		}
	}
	return false
}

var pathRE = regexp.MustCompile(`(^|[\s"'(\x60])(/[^\s"'()\x60,;?!]*)`)

// ParseQuestion classifies free text. runs and plans are the configured names, so a question can
// pick one ("ETA for synth-25k?", "will hidden-states fit?").
func ParseQuestion(text string, runs, plans []string) Question {
	q := Question{}
	// Slack mentions (<@U123>) and channel links are not part of the question.
	text = slackRef.ReplaceAllString(text, " ")
	// Phones and Slack type curly apostrophes: "what\u2019s left?" is "what's left?".
	text = strings.NewReplacer("\u2019", "'", "\u2018", "'").Replace(text)
	lower := strings.ToLower(text)
	if m := pathRE.FindStringSubmatch(text); m != nil {
		p := strings.TrimRight(m[2], ".:")
		if p != "" && p != "/" || m[2] == "/" {
			q.Path = p
		}
	}
	for _, r := range runs {
		if containsPhrase(lower, strings.ToLower(r)) {
			q.Run = r
			break
		}
	}
	for _, p := range plans {
		lp := strings.ToLower(p)
		if containsPhrase(lower, lp) || containsPhrase(lower, strings.NewReplacer("-", " ", "_", " ").Replace(lp)) {
			q.Plan = p
			break
		}
	}
	// Remove the run name and the path before matching intents so "status of eta-run" or a path
	// like /data/free does not steer the intent.
	cleaned := lower
	if q.Run != "" {
		cleaned = strings.ReplaceAll(cleaned, strings.ToLower(q.Run), " ")
	}
	if q.Path != "" {
		cleaned = strings.ReplaceAll(cleaned, strings.ToLower(q.Path), " /path ")
	}
	// "what's up with synth-25k?" asks after the run without saying what about it: the words that ask so
	// steer nothing ("what's up" is not "is vllm up?"), and what the question names answers it (below).
	for _, ph := range vaguePhrases {
		if containsPhrase(cleaned, ph) {
			cleaned, q.Vague = removePhrase(cleaned, ph), true
		}
	}
	// A question typed without its question mark is still one: the phrases that hold only at the end of a
	// question ("is it running?", not "is it running late?") end with it.
	if cleaned = strings.TrimSpace(cleaned); cleaned != "" && isWordByte(cleaned[len(cleaned)-1]) {
		cleaned += "?"
	}
	switch {
	case anyPhrase(cleaned, whyCues) && anyPhrase(cleaned, etaCues):
		q.Intent = "why"
	case anyPhrase(cleaned, whyCues) && (matchRules(cleaned) == "" || anyPhrase(cleaned, []string{"what changed", "what happened", "what's changed", "whats changed", "what has changed"})):
		q.Intent = "why"
	default:
		q.Intent = matchRules(cleaned)
	}
	// "what's left on /data?" names a path: that is a space question, not the checklist.
	if q.Intent == "left" && q.Path != "" && containsPhrase(cleaned, "left") {
		q.Intent = "space"
	}
	// "how much is left on /data?" names a path: that is a space question, not an ETA.
	if q.Intent == "eta" && q.Path != "" && (containsPhrase(cleaned, "left") || containsPhrase(cleaned, "how much")) {
		q.Intent = "space"
	}
	if q.Intent == "" && q.Path != "" && containsPhrase(cleaned, "left") {
		q.Intent = "space"
	}
	// No phrase matched: what the question names answers it. A run named gets its status, a plan its fit;
	// a path, or a vague question, is left to the caller, who knows the run's protected mounts and outputs
	// (Bot.prepare).
	if q.Intent == "" && q.Path == "" {
		switch {
		case q.Run != "":
			q.Intent = "status"
		case q.Plan != "":
			q.Intent = "fit"
		case !q.Vague && strings.TrimSpace(cleaned) == "?":
			q.Intent = "help"
		}
	}
	return q
}

// vaguePhrases ask after something without saying what about it: "what's up with synth-25k?", "how are
// things on /shared?", "any news?". They are taken out before the phrases of the rules are matched.
var vaguePhrases = []string{"what's up", "whats up", "what is up", "what's going on", "whats going on", "what is going on",
	"what's happening", "whats happening", "what is happening", "what's new", "whats new", "any news", "news on", "news",
	"tell me about", "how are things", "how's things", "hows things", "how's it looking", "how is it looking", "looking",
	"checking in on", "checking in", "check on", "the deal with", "what about", "anything going on", "going on"}

// removePhrase is s with every occurrence of phrase on word boundaries replaced by a space.
func removePhrase(s, phrase string) string {
	for i := 0; ; {
		j := strings.Index(s[i:], phrase)
		if j < 0 {
			return s
		}
		start, end := i+j, i+j+len(phrase)
		if boundary(s, start-1, phrase[0]) && boundary(s, end, phrase[len(phrase)-1]) {
			s = s[:start] + " " + s[end:]
			i = start + 1
			continue
		}
		i = start + 1
	}
}

// suggestQuestion is the question one no rule matched most likely meant: the question with the word that
// misspells a one-word phrase of the rules put right ("etaa?" -> "eta?", "is it stuk?" -> "is it stuck?",
// "statsu" -> "status"), or "" when no word is near one (spell.Near, and the same first letter: "date" is not
// "rate") or the corrected question still matches nothing. The closest wins; a tie goes to the earlier rule.
func suggestQuestion(text string) string {
	lower := strings.ToLower(text)
	typo, fix, bestD := "", "", 3
	for _, w := range strings.FieldsFunc(lower, func(r rune) bool { return r < 'a' || r > 'z' }) {
		if len(w) < 3 {
			continue
		}
		for _, rule := range intentRules {
			for _, ph := range rule.phrases {
				if len(ph) < 3 || ph[0] != w[0] || strings.ContainsAny(ph, " '/?-") || !spell.Near(w, ph) {
					continue
				}
				if d := spell.Distance(w, ph); d > 0 && d < bestD {
					typo, fix, bestD = w, ph, d
				}
			}
		}
	}
	if typo == "" {
		return ""
	}
	fixed := regexp.MustCompile(`\b`+regexp.QuoteMeta(typo)+`\b`).ReplaceAllLiteralString(lower, fix)
	if matchRules(fixed) == "" {
		return ""
	}
	return fixed
}

// sentenceWords are command names that also start ordinary sentences ("why is it stuck?", "left on
// /data?"): as the first word of free text they are read as a question, not as the command.
var sentenceWords = map[string]bool{"why": true, "left": true, "safe": true}

// matchRules is the intent of the first rule with a phrase in s, small talk last; "" when none matches.
func matchRules(s string) string {
	for _, rule := range intentRules {
		if anyPhrase(s, rule.phrases) {
			return rule.intent
		}
	}
	for _, rule := range smallTalkRules {
		if anyPhrase(s, rule.phrases) {
			return rule.intent
		}
	}
	return ""
}

func anyPhrase(s string, phrases []string) bool {
	for _, ph := range phrases {
		if containsPhrase(s, ph) {
			return true
		}
	}
	return false
}

var slackRef = regexp.MustCompile(`<[@#!][^>]*>`)

// containsPhrase reports whether phrase occurs in s with word boundaries at both ends.
func containsPhrase(s, phrase string) bool {
	if phrase == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(s[i:], phrase)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(phrase)
		if boundary(s, start-1, phrase[0]) && boundary(s, end, phrase[len(phrase)-1]) {
			return true
		}
		i = start + 1
	}
}

func boundary(s string, i int, edge byte) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	if !isWordByte(edge) {
		return true
	}
	return !isWordByte(s[i])
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// runNameLike is a run name as the run file allows it.
var runNameLike = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// nameToken is a word that could be a run's name: letters, digits, '.', '_' and '-'.
var nameToken = regexp.MustCompile(`[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]`)

// quantity is a number with a short unit ("25k", "2h", "1.5x", "8xH100"): never a run's name.
var quantity = regexp.MustCompile(`^[0-9][0-9.,]*[a-z]{0,3}$|^[0-9]+x[a-z0-9]+$`)

// runPrepositions come before a run's name: "ETA for synth-99k?", "status of extract-2".
var runPrepositions = map[string]bool{"for": true, "of": true, "about": true, "run": true, "job": true}

// UnknownRun finds a run the question names that is not configured ("ETA for synth-99k?" when only
// synth-25k runs), so the answer can say so instead of answering about another run. A candidate is a
// name-like word with a '-', '_' or a digit that is neither a configured run nor a plan, and that follows
// "for", "of", "about" or "run", or shares its first part with a configured run's name.
func UnknownRun(text string, runs, plans []string) string {
	text = slackRef.ReplaceAllString(text, " ")
	text = pathRE.ReplaceAllString(text, " ")
	known := map[string]bool{}
	prefixes := map[string]bool{}
	for _, r := range runs {
		known[strings.ToLower(r)] = true
		if p, _, ok := strings.Cut(strings.ToLower(r), "-"); ok && len(p) >= 3 {
			prefixes[p] = true
		}
	}
	for _, p := range plans {
		known[strings.ToLower(p)] = true
	}
	words := strings.Fields(strings.ToLower(text))
	prev := ""
	for _, w := range words {
		tok := nameToken.FindString(w)
		if tok == "" || known[tok] || quantity.MatchString(tok) || len(tok) > 64 {
			prev = strings.Trim(w, "?.,!:;\"'()")
			continue
		}
		hasDigit := strings.ContainsAny(tok, "0123456789")
		hasLetter := strings.ContainsAny(tok, "abcdefghijklmnopqrstuvwxyz")
		marked := strings.ContainsAny(tok, "-_") || hasDigit && hasLetter
		first, _, _ := strings.Cut(tok, "-")
		if marked && hasLetter && (runPrepositions[prev] || prefixes[first]) {
			return tok
		}
		prev = strings.Trim(w, "?.,!:;\"'()")
	}
	return ""
}
