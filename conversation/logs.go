package conversation

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"runwatch/internal/redact"
	"runwatch/probes"
	"runwatch/reports"
)

// Limits of a "last log lines" answer: few enough lines to read in chat, within one section.
const (
	logLinesMax     = 20
	logLineBytes    = 300
	logLinesSection = 2800 // bytes of the code block, under Slack's 3,000 per section
	// logLinesScan is how many of the last lines (of at most the log's last 64 KiB) are searched for error
	// lines. Every read asks for this many, the last lines too: the guard hands one read to every caller
	// waiting on the same log, whatever count each asked for.
	logLinesScan = 2000
)

// handleLogs shows the last lines of the run's job log to the asker only, or, asked about errors
// ("show me the error log", "/runwatch logs errors"), its recent error lines: a log can say anything,
// so every line is redacted (tokens, URL credentials) and escaped (no ping, no link), and the whole
// is capped to one section.
func handleLogs(ctx context.Context, b *Bot, q Query) Reply {
	if q.Run.Log == "" {
		return Reply{Ephemeral: true, Message: reports.Message{Sections: []string{fmt.Sprintf(
			"Run %s has no `log:` in the run file, so there are no log lines to show.", reports.Code(q.Run.Name))}}}
	}
	// Whole lines (the read is 64 KiB at most), each redacted before it is cut: cut first, a credential the
	// cut goes through lost what its redaction knows it by (a URL's password before its "@", a key short of its
	// shape's length) and showed the part before the cut.
	lines, err := b.guard.LastLines(ctx, q.Run.Log, logLinesScan, 0)
	if err != nil {
		what := "read the log"
		if errors.Is(err, context.DeadlineExceeded) {
			what = "read the log in time (is its filesystem hung?)"
		}
		rep := ErrorReply(what, err)
		rep.Ephemeral = true
		return rep
	}
	if !asksLogErrors(q) || len(lines) == 0 {
		return logLinesReply(q, lines, " · last log lines", reports.Code(q.Run.Log))
	}
	searched := fmt.Sprintf("the last %s of %s", reports.Plural(len(lines), "line", "lines"), reports.Code(q.Run.Log))
	var found []string
	for _, l := range lines {
		if isErrorLine(l) {
			found = append(found, l)
		}
	}
	if len(found) == 0 {
		// No error lines is an answer too; the last lines show what the job is saying instead.
		rep := logLinesReply(q, lines, " · last log lines", reports.Code(q.Run.Log))
		rep.Message.Sections = append([]string{"No error lines among " + searched + "; its last lines:"}, rep.Message.Sections...)
		return rep
	}
	rep := logLinesReply(q, found, " · recent error lines", "the error lines among "+searched)
	rep.Data["errors_only"] = true
	return rep
}

// logLinesReply shows the newest of lines (at most logLinesMax, and what fits one section), redacted;
// of says what they are the last of.
func logLinesReply(q Query, lines []string, title, of string) Reply {
	// A copy: the guard may hand the same lines to another caller waiting on the same read.
	lines = append([]string(nil), lines[max(len(lines)-logLinesMax, 0):]...)
	for i, l := range lines {
		lines[i] = clipLogLine(redactLogLine(l), logLineBytes)
	}
	title = q.Run.Name + title
	if len(lines) == 0 {
		return Reply{Ephemeral: true, Message: reports.Message{Title: title, Sections: []string{"The log " + reports.Code(q.Run.Log) + " is empty."}}}
	}
	block, shown := logBlock(lines, logLinesSection)
	note := fmt.Sprintf("last %s of %s", reports.Plural(shown, "line", "lines"), of)
	if !q.Req.Terminal() {
		note += "; only you see this" // Slack shows the answer to the asker alone (Ephemeral)
	}
	m := reports.Message{Title: title, Sections: []string{block}, Context: []string{note}}
	return Reply{Ephemeral: true, Message: m, Data: map[string]any{"lines": lines[len(lines)-shown:]}}
}

// logErrorWords in a logs question ask for the log's error lines rather than its last lines.
var logErrorWords = []string{"error", "errors", "failure", "failures", "exception", "exceptions", "traceback", "tracebacks"}

// asksLogErrors reports whether the question (or the logs command's arguments) asks for error lines.
func asksLogErrors(q Query) bool {
	return anyPhrase(strings.ToLower(q.Req.Text+" "+strings.Join(q.Args, " ")), logErrorWords)
}

var (
	// errorLineRE is what marks a line as an error: a level (ERROR, FATAL, CRITICAL), an exception
	// (RuntimeError:, Exception), a traceback, a panic.
	errorLineRE = regexp.MustCompile(`(?i)(error\b|exception\b|\btraceback\b|\bfatal\b|\bcritical\b|\bpanic\b)`)
	// errorCountRE is a progress line's error count, "(1 error)", "errors=0": a count, not an error.
	errorCountRE = regexp.MustCompile(`(?i)\(\s*[0-9][0-9,]*\s+errors?\s*\)|\berrors?\s*[=:]\s*[0-9]`)
)

// isErrorLine reports whether a log line reports an error.
func isErrorLine(l string) bool {
	return errorLineRE.MatchString(errorCountRE.ReplaceAllString(l, ""))
}

// redactLogLine keeps credentials a job printed out of the answer: Slack tokens (the shapes the log
// redaction knows), the password, query and fragment of every URL (a presigned S3 URL, a
// tracker's api_key), and what ML jobs print beside them: Hugging Face, OpenAI-style, GitHub and
// AWS key shapes, an Authorization header's credentials, an environment dump's HF_TOKEN=,
// WANDB_API_KEY=, ..._SECRET= values, a config's "api_key": … and a command line's --api-key ….
func redactLogLine(l string) string {
	l = redact.SlackTokens(l)
	// URLs before the name=value shapes: a query's token=… is the URL redactor's, which keeps the URL whole.
	l = probes.RedactURLsIn(l)
	l = redactHFToken.ReplaceAllString(l, "hf_[redacted]")
	for _, s := range redactKeyShapes {
		l = s.ReplaceAllString(l, "${1}[redacted]")
	}
	l = redactBearer.ReplaceAllString(l, "$1 [redacted]")
	l = redactAuthorization.ReplaceAllStringFunc(l, func(m string) string {
		sub := redactAuthorization.FindStringSubmatch(m)
		v, q := sub[2], ""
		if v != "" && (v[0] == '"' || v[0] == '\'') {
			q, v = v[:1], strings.TrimSuffix(v[1:], v[:1])
		}
		if strings.TrimSpace(v) == "" {
			return m
		}
		// The scheme stays in sight when it is one: a first word that is not one may be the credential itself.
		return sub[1] + q + authScheme.FindString(v) + "[redacted]" + q
	})
	l = redactCurlUser.ReplaceAllStringFunc(l, func(m string) string {
		sub := redactCurlUser.FindStringSubmatch(m)
		arg, q := sub[2], ""
		if arg[0] == '"' || arg[0] == '\'' {
			q, arg = arg[:1], strings.TrimSuffix(arg[1:], arg[:1])
		}
		user, pass, ok := strings.Cut(arg, ":")
		if !ok || user == "" || pass == "" || isDigits(user) && isDigits(pass) {
			return m // a user alone (curl asks for the password), or docker's -u uid:gid
		}
		return sub[1] + q + user + ":[redacted]" + q
	})
	l = redactDSN.ReplaceAllString(l, "${1}[redacted]${3}")
	l = redactEnvSpace.ReplaceAllString(l, "${1}${2}[redacted]")
	for _, re := range []*regexp.Regexp{redactAssigned, redactFlag} {
		l = re.ReplaceAllStringFunc(l, func(m string) string {
			sub := re.FindStringSubmatch(m)
			lead, name, sep, v := sub[1], sub[2], sub[3], sub[4]
			if strings.Contains(v, "[redacted]") {
				return m // a token already redacted by its shape keeps saying which kind it was
			}
			if lead == "#" && isDigits(v) && strings.HasSuffix(strings.ToLower(name), "token") {
				return m // SGLang's counts: "#token: 123456", "#new-token: 7", "#cached-token: 0"
			}
			q := "" // a quoted value keeps its quotes
			if v[0] == '"' || v[0] == '\'' {
				q = v[:1]
			}
			return lead + name + sep + q + "[redacted]" + q
		})
	}
	return l
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// clipLogLine cuts a (redacted) line to at most n bytes and an ellipsis, never inside a character.
func clipLogLine(l string, n int) string {
	if len(l) <= n {
		return l
	}
	return probes.ClipText(l, n) + "…"
}

// redactValue is a value after a secret's name: quoted to its closing quote (or the line's end), or bare.
const redactValue = `"[^"\n]*"?|'[^'\n]*'?|[^\s"',;}]+`

var (
	redactHFToken = regexp.MustCompile(`\bhf_[A-Za-z0-9]{20,}`)
	// Key shapes that say what they are: OpenAI-style sk-… (and sk-ant-…), GitHub's, an AWS access key id.
	redactKeyShapes = []*regexp.Regexp{
		regexp.MustCompile(`\b(sk-)[A-Za-z0-9_-]{20,}`),
		regexp.MustCompile(`\b(gh[pousr]_|github_pat_)[A-Za-z0-9_]{20,}`),
		regexp.MustCompile(`\b(AKIA)[0-9A-Z]{16}\b`),
	}
	redactBearer = regexp.MustCompile(`\b((?i:bearer))\s+[A-Za-z0-9._~+/=-]{8,}`)
	// An Authorization (or Proxy-Authorization) header's value, whatever its scheme (Basic, ApiKey, Key, SSWS,
	// AWS4-HMAC-SHA256's Credential=…, Signature=…, or a bare token): to its closing quote when it is quoted (a
	// printed dict of headers), else to the end of the line. Groups: the name with its separator, the value.
	redactAuthorization = regexp.MustCompile(`\b((?i:authorization|cookie)["']?\s*[:=]\s*)("[^"\n]*"?|'[^'\n]*'?|[^\n]*)`)
	// A password after its user: curl's -u/--user user:password (-uuser:password, --user=…, a user that is an
	// e-mail address, a password with : / or @ in it, the whole quoted).
	// Groups: the flag with what separates it from its argument, the argument.
	redactCurlUser = regexp.MustCompile(`((?:^|\s)(?:-u|--user=?)\s*)("[^"\n]*"?|'[^'\n]*'?|[^\s"']+)`)
	// A Go SQL driver's user:password@tcp(…): the password is everything between the user's colon and the
	// @tcp( or @unix( the driver itself looks for, so it may hold @, : and /.
	redactDSN = regexp.MustCompile(`\b([A-Za-z0-9_.-]+:)(\S+?)(@(?:tcp|unix)\()`)
	// An upper-case environment variable named for a credential and its value after a space, as a shell's
	// "set" or a job's start-up banner prints it: WANDB_API_KEY 0123…; 12 characters at least, so that
	// "HF_TOKEN not set" stays.
	redactEnvSpace = regexp.MustCompile(`\b([A-Z0-9_]*(?:TOKEN|KEY|SECRET|PASSWORD))(\s+)([A-Za-z0-9_+/=.-]{12,})`)
	// authScheme is an Authorization value's scheme, kept before its redacted credentials.
	authScheme = regexp.MustCompile(`^(?i:basic|bearer|digest|token|apikey|api-key|key|ssws|negotiate|ntlm|oauth|dpop|hmac|aws4-hmac-sha256)\s+`)
	// A name ending in TOKEN, KEY, SECRET or PASSWORD (any case) given a value with "=", ":" or "=>", spaces
	// around it or not: the shape of an environment dump, a command line's --hf-token=…, a config printed as
	// JSON, YAML, TOML or Python ("api_key": "…", password: …, wandb_key = "…", api_key => …); "max_tokens=4096"
	// ends in TOKENS and stays. Groups: a "#" before the name (SGLang writes its counts "#token: 123456", and a
	// number after one stays), the name, what separates it from the value, the value: bare, or quoted (KEY="…",
	// a passphrase with spaces), to its closing quote or the end of the line.
	redactAssigned = regexp.MustCompile(`(#?)\b([A-Za-z0-9_.-]*(?i:token|key|secret|password|passwd))(["']?\s*(?::|=>?)\s*)(` + redactValue + `)`)
	// A command line's flag of such a name and its value after a space: --api-key VALUE, --password "…". Groups
	// as redactAssigned's: what comes before the flag, the flag, the space, the value.
	redactFlag = regexp.MustCompile(`(^|\s)(--?[A-Za-z0-9_-]*(?i:token|key|secret|password|passwd))(\s+)("[^"\n]*"?|'[^'\n]*'?|[^\s"',;-][^\s"',;]*)`)
)

// logBlock renders lines as a mrkdwn code block of at most max bytes, keeping the newest lines,
// and says how many it kept.
func logBlock(lines []string, max int) (string, int) {
	esc := make([]string, len(lines))
	for i, l := range lines {
		// Inside a code block mrkdwn still turns <!channel> into a ping: escape, and keep the
		// fence from being closed early.
		esc[i] = strings.ReplaceAll(reports.Esc(l), "```", "'''")
	}
	size := len("```\n```")
	start := len(esc)
	for start > 0 && size+len(esc[start-1])+1 <= max {
		start--
		size += len(esc[start]) + 1
	}
	if start == len(esc) { // one line longer than max on its own (cannot happen with 300-byte lines)
		start = len(esc) - 1
		esc[start] = esc[start][:max/2] + "…"
	}
	return "```\n" + strings.Join(esc[start:], "\n") + "\n```", len(esc) - start
}
