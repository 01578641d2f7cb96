package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/robfig/cron/v3"
)

// envName is the shape of an environment variable's name, what the prometheus *_env keys take.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// metricName is a Prometheus metric name (or an alias), with at most one label matcher.
var metricName = regexp.MustCompile(`^[A-Za-z_:][A-Za-z0-9_:]*(\{[A-Za-z_][A-Za-z0-9_]*="[^"]*"\})?$`)

// PostModes are the ways a run's scheduled status is posted.
var PostModes = []string{"new", "update", "thread"}

// StageChecks are the kinds of stage check.
var StageChecks = []string{"http", "exists", "progress", "growing", "metric", "manual", "promql"}

// fieldError is a check's complaint about one key of a plan or a stage.
type fieldError struct {
	key string
	msg string
}

func (e fieldError) Error() string { return e.key + ": " + e.msg }

func (f *File) validate(lines keyLines) error {
	if len(f.Runs) == 0 {
		// Where the list goes and what an entry starts with: "runs: the run file lists no runs" said neither.
		const fix = `add one under it, each run starting with "- name: " (runwatch.example.yaml has one to copy)`
		if n, ok := lines["runs"]; ok {
			return fmt.Errorf("line %d: runs lists no runs: %s", n, fix)
		}
		return errors.New("the run file lists no runs: give it a runs: list and " + fix)
	}
	// Each run's first problem, so that fixing one run does not only reveal the next run's.
	seen := map[string]int{}
	var errs []error
	if err := f.Commands.validate(func(key string) string {
		return fmt.Sprintf("line %d: commands.%s", lines.line("commands."+key, 0), key)
	}); err != nil {
		errs = append(errs, err)
	}
	for i := range f.Runs {
		if err := f.Runs[i].validate(i, lines, seen); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validate checks run i; seen holds the names (and lines) of the runs before it.
func (r *Run) validate(i int, lines keyLines, seen map[string]int) error {
	at := func(key string) string {
		path := fmt.Sprintf("runs[%d].%s", i, key)
		return fmt.Sprintf("line %d: %s", lines.line(path, r.Line), path)
	}
	if r.Name == "" {
		return fmt.Errorf("line %d: runs[%d].name is missing: every run needs a name", r.Line, i)
	}
	if !runName.MatchString(r.Name) {
		return fmt.Errorf("%s %q is not a valid name: use letters, digits, '.', '_' or '-'", at("name"), r.Name)
	}
	// Questions and --run pick a run by its name in any case (RunByName), so "a" and "A" are the same name:
	// accepting both would leave the second run unreachable.
	key := strings.ToLower(r.Name)
	if prev, dup := seen[key]; dup {
		return fmt.Errorf("%s %q is already used by the run on line %d (names are the same in any case)", at("name"), r.Name, prev)
	}
	seen[key] = r.Line
	for _, list := range []struct {
		key   string
		paths []string
	}{{"outputs", r.Outputs}, {"protected", r.Protected}, {"watch", r.Watch}} {
		for j, p := range list.paths {
			if !filepath.IsAbs(p) {
				return fmt.Errorf("%s: %q is not an absolute path", at(fmt.Sprintf("%s[%d]", list.key, j)), p)
			}
		}
	}
	if r.Log != "" && !filepath.IsAbs(r.Log) {
		return fmt.Errorf("%s: %q is not an absolute path", at("log"), r.Log)
	}
	if r.LogPattern != "" {
		if _, err := CompileProgressPattern(r.LogPattern); err != nil {
			if errors.Is(err, errMissingGroup) {
				// It names the groups already; an example shows what they look like.
				return fmt.Errorf(`%s: %w (the named groups read the count and the total, e.g. 'step (?P<done>\d+)/(?P<total>\d+)')`, at("log_pattern"), err)
			}
			return fmt.Errorf("%s: %w (it needs named groups (?P<done>...) and (?P<total>...))", at("log_pattern"), err)
		}
	}
	for j, u := range r.Metrics {
		if err := checkURL(u); err != nil {
			return fmt.Errorf("%s: %w", at(fmt.Sprintf("metrics[%d]", j)), err)
		}
	}
	if err := checkMetricsBody(r.MetricsMaxBody); err != nil {
		return fmt.Errorf("%s: %w", at("metrics_max_body"), err)
	}
	if r.Total < 0 {
		return fmt.Errorf("%s: %d must not be negative; give the number of items, or leave it out when the log says", at("total"), r.Total)
	}
	if r.MaxTokens < 0 {
		return fmt.Errorf("%s: %d must not be negative; give the job's completion cap, e.g. 4096", at("max_tokens"), r.MaxTokens)
	}
	if r.StallAfter.Duration < 0 {
		return fmt.Errorf("%s must not be negative", at("stall_after"))
	}
	if r.PostMode != "" && !contains(PostModes, r.PostMode) {
		return fmt.Errorf("%s %q: %s", at("post_mode"), r.PostMode, useOneOf(r.PostMode, PostModes, strings.Join(PostModes, ", ")))
	}
	if r.Schedule != "" {
		if _, err := cron.ParseStandard(r.Schedule); err != nil {
			return fmt.Errorf("%s %q: %s; use a cron spec like \"0 * * * *\" (minute hour day month weekday), @hourly or @every 30m",
				at("schedule"), r.Schedule, cronProblem(r.Schedule, err))
		}
	}
	if r.Prometheus != nil {
		if err := checkURL(r.Prometheus.URL); err != nil {
			return fmt.Errorf("%s: %w", at("prometheus.url"), err)
		}
		// runwatch adds /api/v1/query itself: a URL that already has it would ask .../api/v1/api/v1/query
		// and get a 404 on every answer. (Not quoted: the URL may carry a password.)
		if u, _ := url.Parse(r.Prometheus.URL); strings.Contains(u.Path+"/", "/api/v1/") {
			return fmt.Errorf("%s: give the server's base URL without /api/v1 (like http://prometheus:9090)", at("prometheus.url"))
		}
		if s := r.Prometheus.Selector; s != "" && (!strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}")) {
			return fmt.Errorf("%s %q must be label matchers in braces, like {job=\"vllm\"}", at("prometheus.selector"), s)
		}
		if p := r.Prometheus; p.BearerTokenEnv != "" && (p.UsernameEnv != "" || p.PasswordEnv != "") {
			return fmt.Errorf("%s: give bearer_token_env or username_env and password_env, not both", at("prometheus"))
		}
		for _, e := range []struct{ key, name string }{{"bearer_token_env", r.Prometheus.BearerTokenEnv},
			{"username_env", r.Prometheus.UsernameEnv}, {"password_env", r.Prometheus.PasswordEnv}} {
			// Not quoted: a value that is no variable's name may be the credential pasted in its place.
			if e.name != "" && !envName.MatchString(e.name) {
				return fmt.Errorf("%s is not the name of an environment variable (letters, digits and _, like PROM_TOKEN): "+
					"put the credential in the environment or .env and name its variable here", at("prometheus."+e.key))
			}
		}
	}
	names := map[string]bool{}
	for j := range r.Plans {
		base := fmt.Sprintf("runs[%d].plans[%d]", i, j)
		if err := r.Plans[j].validate(); err != nil {
			return itemError(lines, base, r.Plans[j].Line, err)
		}
		if names[r.Plans[j].Name] {
			return fmt.Errorf("line %d: %s.name %q is used twice", lines.line(base+".name", r.Plans[j].Line), base, r.Plans[j].Name)
		}
		names[r.Plans[j].Name] = true
	}
	stages := map[string]bool{}
	for j := range r.Stages {
		base := fmt.Sprintf("runs[%d].stages[%d]", i, j)
		if err := r.Stages[j].validate(); err != nil {
			return itemError(lines, base, r.Stages[j].Line, err)
		}
		if stages[r.Stages[j].Name] {
			return fmt.Errorf("line %d: %s.name %q is used twice", lines.line(base+".name", r.Stages[j].Line), base, r.Stages[j].Name)
		}
		stages[r.Stages[j].Name] = true
	}
	return nil
}

// cronProblem says what is wrong with a schedule. The cron parser's own word for a wrong number of fields
// quotes them as a Go list ("found 2: [every hour]").
func cronProblem(spec string, err error) string {
	fields := strings.Fields(spec)
	if len(fields) > 0 && (strings.HasPrefix(fields[0], "TZ=") || strings.HasPrefix(fields[0], "CRON_TZ=")) {
		fields = fields[1:]
	}
	if len(fields) > 0 && !strings.HasPrefix(fields[0], "@") && len(fields) != 5 {
		if len(fields) == 1 {
			return "it has 1 field, where a cron spec has 5"
		}
		return fmt.Sprintf("it has %d fields, where a cron spec has 5", len(fields))
	}
	return err.Error()
}

// itemError places a plan's or a stage's error on its key's line.
func itemError(lines keyLines, base string, line int, err error) error {
	var fe fieldError
	if errors.As(err, &fe) {
		path := base + "." + fe.key
		return fmt.Errorf("line %d: %s: %s", lines.line(path, line), path, fe.msg)
	}
	return fmt.Errorf("line %d: %s: %w", line, base, err)
}

func checkURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		// Every refusal says what to change: "http://gpu 3:8000/metrics" and "http://gpu3:80a0/metrics" were
		// told only that the value is not a URL.
		hint := " (write it like http://host:port/path)"
		switch {
		case !strings.Contains(u, "://") || (err == nil && p.Scheme != "http" && p.Scheme != "https"):
			// "127.0.0.1:8000/metrics" does not even parse (a colon in the first segment) and wants the hint most.
			hint = " (start it with http:// or https://)"
		case strings.ContainsAny(u, " \t"):
			hint = " (it has a space in it, and a URL has none: remove it, or write %20 in a query)"
		case err != nil && strings.Contains(err.Error(), "invalid port"):
			hint = " (the port after the host's colon is not a number)"
		}
		// The value is not quoted: a URL may carry a password or a key, and the line names it.
		return fmt.Errorf("the value is not an http(s) URL with a host%s", hint)
	}
	// url.Parse takes any digits for a port: :99999 loaded, and every scrape then failed with "invalid port".
	if port := p.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("the port %s is out of range: a TCP port is 1 to 65535", port)
		}
	}
	return nil
}

func (p *Plan) validate() error {
	if p.Name == "" {
		return fieldError{"name", "is missing"}
	}
	if p.Target == "" || !filepath.IsAbs(p.Target) {
		return fieldError{"target", fmt.Sprintf("%q must be an absolute path", p.Target)}
	}
	if !p.Tokens.Auto && p.Tokens.N <= 0 {
		return fieldError{"tokens", "is missing: give a number of tokens or auto"}
	}
	if p.Tokens.N > MaxPlanTokens {
		return fieldError{"tokens", fmt.Sprintf("%s is too large (at most %s tokens); give a number like 25M",
			strconv.FormatFloat(p.Tokens.N, 'g', -1, 64), humanize.Comma(MaxPlanTokens))}
	}
	for _, l := range p.Layers.List {
		if l >= MaxNumLayers {
			return fieldError{"layers", fmt.Sprintf("index %d is out of range: no model has more than %s layers", l, humanize.Comma(MaxNumLayers))}
		}
	}
	if p.ModelConfig == "" {
		if p.NumLayers <= 0 || p.HiddenSize <= 0 || p.DType == "" {
			key := "num_layers"
			switch {
			case p.NumLayers > 0 && p.HiddenSize <= 0:
				key = "hidden_size"
			case p.NumLayers > 0 && p.HiddenSize > 0:
				key = "dtype"
			}
			return fieldError{key, "give model_config, or all of num_layers, hidden_size and dtype (positive numbers and an element type)"}
		}
	} else if !filepath.IsAbs(p.ModelConfig) {
		return fieldError{"model_config", fmt.Sprintf("%q must be an absolute path", p.ModelConfig)}
	}
	if p.NumLayers < 0 || p.HiddenSize < 0 {
		key := "num_layers"
		if p.HiddenSize < 0 {
			key = "hidden_size"
		}
		return fieldError{key, "must not be negative"}
	}
	if p.DType != "" {
		if _, ok := DTypes[strings.ToLower(p.DType)]; !ok {
			return fieldError{"dtype", fmt.Sprintf("%q is not known: %s", p.DType,
				useOneOf(p.DType, slices.Collect(maps.Keys(DTypes)), "bfloat16, float16, float32 or float8"))}
		}
	}
	if p.NumLayers > 0 {
		for _, l := range p.Layers.List {
			if l >= p.NumLayers {
				return fieldError{"layers", fmt.Sprintf("index %d is out of range for num_layers %d", l, p.NumLayers)}
			}
		}
	}
	return nil
}

func (s *Stage) validate() error {
	if s.Name == "" {
		return fieldError{"name", "is missing"}
	}
	switch s.Check {
	case "http":
		if err := checkURL(s.URL); err != nil {
			return fieldError{"url", err.Error()}
		}
	case "exists", "growing":
		if !filepath.IsAbs(s.Path) {
			return fieldError{"path", fmt.Sprintf("%s check needs an absolute path, got %q", s.Check, s.Path)}
		}
	case "metric":
		if s.Metric == "" {
			return fieldError{"metric", "metric check needs metric:"}
		}
		if !metricName.MatchString(s.Metric) {
			return fieldError{"metric", fmt.Sprintf(`%q is not a metric name: give one like vllm:num_requests_running or vllm:request_success_total{finished_reason="length"}, or an alias (running, kv_cache_usage, ...)`, s.Metric)}
		}
		if !contains([]string{">", ">=", "<", "<=", "==", "!="}, s.Op) {
			return fieldError{"op", fmt.Sprintf("%q: use one of > >= < <= == !=", s.Op)}
		}
	case "promql":
		if s.Query == "" {
			return fieldError{"query", "promql check needs query:"}
		}
	case "progress", "manual":
	default:
		return fieldError{"check", fmt.Sprintf("%q: %s", s.Check, useOneOf(s.Check, StageChecks, strings.Join(StageChecks, ", ")))}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
