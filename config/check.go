package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"
)

// Every error a run file gets names the key and the key's own line ("line 7: runs[0].total: ..."), so
// the person fixing it goes straight there. checkKeys walks the YAML tree before it is decoded: unknown
// keys, wrong shapes and values of the wrong type are caught there, with their line; validate then checks
// the decoded values, looking each key's line up in the lines checkKeys recorded.

// keyLines maps a key's path ("runs[0].total", "runs[0].metrics[1]") to the line of its value.
type keyLines map[string]int

// line is the line of key, else of the closest enclosing key recorded, else fallback.
func (l keyLines) line(key string, fallback int) int {
	for k := key; k != ""; {
		if n, ok := l[k]; ok {
			return n
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return fallback
}

// checkKeys rejects mapping keys that have no field in t and values of the wrong shape or type, naming
// the key and its line, and records every key's line in lines.
func checkKeys(n *yaml.Node, t reflect.Type, where string, lines keyLines) error {
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			if err := checkKeys(c, t, where, lines); err != nil {
				return err
			}
		}
		return nil
	}
	if where != "" {
		lines[where] = n.Line
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
		// Its own parser decides, here already, so its error names the key.
		u := reflect.New(t).Interface().(yaml.Unmarshaler)
		if err := u.UnmarshalYAML(n); err != nil {
			return keyError(n.Line, where, err.Error())
		}
		return nil
	}
	isNull := n.Kind == yaml.ScalarNode && n.Tag == "!!null"
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if isNull {
				return nil
			}
			return fmt.Errorf("line %d: %s must be a mapping of keys", n.Line, describe(where))
		}
		fields := yamlFields(t)
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				if guess := closestKey(k.Value, fields); guess != "" {
					return fmt.Errorf("line %d: unknown key %q in %s: did you mean %q? (known: %s)", k.Line, k.Value,
						describe(where), guess, knownKeys(t))
				}
				return fmt.Errorf("line %d: unknown key %q in %s (known: %s)", k.Line, k.Value, describe(where), knownKeys(t))
			}
			if first, dup := seen[k.Value]; dup {
				// The decoder would say so too, as "unmarshal errors:" with the line on a second line.
				return fmt.Errorf("line %d: %q is defined twice in %s (first on line %d): keep one", k.Line, k.Value, describe(where), first)
			}
			seen[k.Value] = k.Line
			if err := checkKeys(v, ft, join(where, k.Value), lines); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			if isNull {
				return nil
			}
			if n.Kind == yaml.ScalarNode && t.Elem().Kind() != reflect.Struct {
				// "outputs: /data/out" for "outputs: [/data/out]". The value is not quoted (a metrics URL
				// may carry a password): the form is.
				return fmt.Errorf("line %d: %s must be a list: write one value in brackets, [like this], or on a line of its own under the key, starting with \"- \"", n.Line, describe(where))
			}
			return fmt.Errorf("line %d: %s must be a list", n.Line, describe(where))
		}
		for i, c := range n.Content {
			if err := checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", where, i), lines); err != nil {
				return err
			}
		}
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64, reflect.Bool:
		return checkScalar(n, t.Kind(), where)
	}
	return nil
}

// checkScalar checks that a value is one value of the field's type, so decoding cannot fail with a
// message that names neither the key nor its meaning. A number written in quotes is taken as the number.
func checkScalar(n *yaml.Node, kind reflect.Kind, where string) error {
	if n.Kind != yaml.ScalarNode {
		shape := "a mapping"
		hint := ""
		if n.Kind == yaml.SequenceNode {
			shape = "a list"
		}
		if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle != 0 {
			hint = ` (a value in braces is read as a mapping: quote it, e.g. "{...}"; quote values that start with ${ too)`
		}
		return fmt.Errorf("line %d: %s must be a single value, not %s%s", n.Line, where, shape, hint)
	}
	if n.Tag == "!!null" {
		return nil
	}
	v := strings.TrimSpace(n.Value)
	switch kind {
	case reflect.String:
		return nil
	case reflect.Bool:
		if b, err := strconv.ParseBool(strings.ToLower(v)); err == nil {
			n.Value, n.Tag, n.Style = strconv.FormatBool(b), "!!bool", 0
			return nil
		}
		return fmt.Errorf("line %d: %s: %q is not true or false", n.Line, where, v)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(strings.ReplaceAll(v, "_", ""), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("line %d: %s: %q is not a number", n.Line, where, v)
		}
		n.Value, n.Tag, n.Style = strconv.FormatFloat(f, 'g', -1, 64), "!!float", 0
		return nil
	}
	// Integer kinds.
	num := strings.ReplaceAll(v, "_", "")
	i, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(num, 64)
		huge := errors.Is(err, strconv.ErrRange) ||
			(ferr == nil || errors.Is(ferr, strconv.ErrRange)) && f == math.Trunc(f) && math.Abs(f) > 1<<53
		switch {
		case huge && f < 0:
			return fmt.Errorf("line %d: %s: %s must not be negative; give a count like %s", n.Line, where, v, exampleCount(where))
		case huge:
			// A whole number, only past what any count here can be.
			return fmt.Errorf("line %d: %s: %w", n.Line, where, tooLarge(where, v))
		case ferr != nil || f != math.Trunc(f):
			what := fmt.Sprintf("%q is not a whole number", v)
			if ferr == nil {
				what = fmt.Sprintf("%s is not a whole number", v)
			}
			return fmt.Errorf("line %d: %s: %s; give a count like %s", n.Line, where, what, exampleCount(where))
		}
		i = int64(f)
	}
	if err := checkCount(where, v, i); err != nil {
		return fmt.Errorf("line %d: %s: %w", n.Line, where, err)
	}
	n.Value, n.Tag, n.Style = strconv.FormatInt(i, 10), "!!int", 0
	return nil
}

// Upper bounds on the counts a run file gives. Each is far above any real job or model, so no real run
// file meets it, and low enough that what is computed from it stays exact and readable: counts are int64
// and float64 (exact to 2^53, about 9e15) in the estimator and the plans, and a typo of a few extra digits
// (or math.MaxInt64 from a script) otherwise comes out as a negative total or a size in units nobody uses.
const (
	// MaxTotal bounds total, the items in a job. A generation job of a billion prompts is already
	// exceptional; 10^12 leaves a thousandfold margin, and items × tokens per item (at most MaxMaxTokens)
	// stays well inside float64.
	MaxTotal = 1_000_000_000_000
	// MaxMaxTokens bounds max_tokens, the completion cap: the longest context windows are 10M tokens
	// (Llama 4 Scout); a cap ten times that is a typo.
	MaxMaxTokens = 100_000_000
	// MaxNumLayers bounds num_layers and layer indices: the deepest published LLMs have about 120 layers
	// (PaLM 118, Llama 3.1 405B 126); 10,000 is eighty times that.
	MaxNumLayers = 10_000
	// MaxHiddenSize bounds hidden_size: the widest published models are about 20,000 wide (PaLM 18,432,
	// Megatron-Turing NLG 20,480); 1,000,000 is fifty times that.
	MaxHiddenSize = 1_000_000
	// MaxPlanTokens bounds a plan's tokens: the largest training corpora are tens of trillions of tokens
	// (Llama 3 15T, Qwen3 36T), and hidden states are captured for far fewer. With the bounds above a plan
	// needs at most 10^4 layers × 10^6 × 8 B × 10^15 tokens = 8×10^25 bytes (80 YB): still a size with a unit.
	MaxPlanTokens = 1e15
)

// countLimits are the integer keys' upper bounds, by key, with what they count.
var countLimits = map[string]struct {
	max  int64
	unit string
}{
	"total":       {MaxTotal, " items"},
	"max_tokens":  {MaxMaxTokens, " tokens"},
	"num_layers":  {MaxNumLayers, " layers"},
	"hidden_size": {MaxHiddenSize, ""},
}

// countMax says an integer key's upper bound: "1,000,000,000,000 items".
func countMax(where string) string {
	if l, ok := countLimits[lastKey(where)]; ok {
		return humanize.Comma(l.max) + l.unit
	}
	return humanize.Comma(1 << 53)
}

// checkCount refuses an integer past its key's bound, and a total of 0: a job has items, and a run whose
// log says how many leaves total out, so 0 is a slip (an unset ${TOTAL:-0}, a count not filled in), which
// would otherwise pass silently as "the total is unknown".
func checkCount(where, text string, i int64) error {
	key := lastKey(where)
	if l, ok := countLimits[key]; ok && i > l.max {
		return tooLarge(where, text)
	}
	if key == "total" && i == 0 {
		return fmt.Errorf("0 is not a number of items: give the number of items in the job, like 25000, or leave total out when the log says")
	}
	return nil
}

// tooLarge is the error for a count past its key's bound (or past any count's, 2^53).
func tooLarge(where, text string) error {
	return fmt.Errorf("%s is too large (at most %s); give a count like %s", text, countMax(where), exampleCount(where))
}

// lastKey is the last key of a path: "num_layers" of "runs[0].plans[1].num_layers".
func lastKey(where string) string {
	return where[strings.LastIndexByte(where, '.')+1:]
}

// exampleCount is an example value for an integer key's error.
func exampleCount(where string) string {
	switch {
	case strings.HasSuffix(where, "max_tokens"):
		return "4096"
	case strings.HasSuffix(where, "num_layers"):
		return "61"
	case strings.HasSuffix(where, "hidden_size"):
		return "7168"
	}
	return "25000"
}

// lineRef is the "line N: " an Unmarshaler's error starts with.
var lineRef = regexp.MustCompile(`^line (\d+): `)

// keyError puts the key after the line of an error from a value's own parser.
func keyError(line int, where, msg string) error {
	if m := lineRef.FindStringSubmatch(msg); m != nil {
		msg = msg[len(m[0]):]
		if n, err := strconv.Atoi(m[1]); err == nil {
			line = n
		}
	}
	return fmt.Errorf("line %d: %s: %s", line, describe(where), msg)
}

func describe(where string) string {
	if where == "" {
		return "the run file"
	}
	return where
}

func join(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

func yamlFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f.Type
	}
	return m
}

func knownKeys(t reflect.Type) string {
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "-" && name != "" {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

var runName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

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
		return errors.New("runs: the run file lists no runs")
	}
	// Each run's first problem, so that fixing one run does not only reveal the next run's.
	seen := map[string]int{}
	var errs []error
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
	if prev, dup := seen[r.Name]; dup {
		return fmt.Errorf("%s %q is already used by the run on line %d", at("name"), r.Name, prev)
	}
	seen[r.Name] = r.Line
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
		hint := ""
		if err == nil && p.Scheme != "http" && p.Scheme != "https" {
			hint = " (start it with http:// or https://)"
		}
		// The value is not quoted: a URL may carry a password or a key, and the line names it.
		return fmt.Errorf("the value is not an http(s) URL with a host%s", hint)
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
