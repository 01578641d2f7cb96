// Package config owns runwatch's configuration: the YAML run file (which runs to watch and how) and the
// process environment (secrets, roots, intervals), including a .env file.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// File is a parsed run file.
type File struct {
	Runs []Run `yaml:"runs"`
	// AllowedChannels and Admins apply to every run; a run may add its own.
	AllowedChannels []string `yaml:"allowed_channels"`
	Admins          []string `yaml:"admins"`
	// Discover, when false, turns discovery off: runs the file leaves without a log, metrics or total stay so.
	Discover *bool `yaml:"discover"`
	// Page is whom every run's critical warnings mention, for runs without a page: of their own.
	Page *Page `yaml:"page"`
	// Commands are the installed app's slash command names (slack.go).
	Commands Commands `yaml:"commands"`
	// Source says where the file came from: a path, "built-in default", or "discovered on this host".
	Source string `yaml:"-"`
}

// Run is one watched job.
type Run struct {
	Name      string   `yaml:"name"`
	Channel   string   `yaml:"channel"`
	Outputs   []string `yaml:"outputs"`
	Protected []string `yaml:"protected"`
	Watch     []string `yaml:"watch"`
	Plans     []Plan   `yaml:"plans"`

	// Progress sources.
	Log        string   `yaml:"log"`
	LogPattern string   `yaml:"log_pattern"`
	Metrics    []string `yaml:"metrics"`
	// MetricsMaxBody caps one scrape of a metrics endpoint (0: 8 MiB).
	MetricsMaxBody ByteSize `yaml:"metrics_max_body"`
	// Total is the number of items the job will process, for runs whose log does not say.
	Total      int64    `yaml:"total"`
	StallAfter Duration `yaml:"stall_after"`
	// MaxTokens is the job's completion cap (max_tokens); it tells the ETA where the longest
	// completions stop, which sets the end of the run.
	MaxTokens int `yaml:"max_tokens"`

	// Speaking up.
	Schedule string `yaml:"schedule"`
	PostMode string `yaml:"post_mode"`
	// BroadcastResolved sends a warning's resolution to the channel as well as its thread.
	BroadcastResolved bool `yaml:"broadcast_resolved"`
	// Page is whom the run's critical warnings mention (slack.go).
	Page            *Page    `yaml:"page"`
	Stages          []Stage  `yaml:"stages"`
	AllowedChannels []string `yaml:"allowed_channels"`
	Admins          []string `yaml:"admins"`

	// Prometheus makes a Prometheus server a source for this run.
	Prometheus *Prometheus `yaml:"prometheus"`

	// Line is where the run starts in the run file (0 for the built-in default).
	Line int `yaml:"-"`
	// Found is what discovery found for the run (found.go); nil when it played no part.
	Found *Found `yaml:"-"`
}

// Plan is a capacity plan: data the job will write and whether it fits where it goes.
type Plan struct {
	Name        string `yaml:"name"`
	Target      string `yaml:"target"`
	Tokens      Tokens `yaml:"tokens"`
	Layers      Layers `yaml:"layers"`
	ModelConfig string `yaml:"model_config"`
	NumLayers   int    `yaml:"num_layers"`
	HiddenSize  int    `yaml:"hidden_size"`
	DType       string `yaml:"dtype"`
	Line        int    `yaml:"-"`
	// Key is the plan's place in the run file ("runs[0].plans[1]") and KeyLines the line of each of its
	// keys' values, so a problem found later (a model_config that is not there) names the line to fix.
	Key      string         `yaml:"-"`
	KeyLines map[string]int `yaml:"-"`
}

// KeyAt names one of the plan's keys the way a load error does, "line 8: runs[0].plans[0].model_config",
// or "model_config in the run file" for a plan not read from a file (the built-in default, the demo).
func (p Plan) KeyAt(key string) string {
	if line := p.KeyLines[key]; line > 0 && p.Key != "" {
		return fmt.Sprintf("line %d: %s.%s", line, p.Key, key)
	}
	return key + " in the run file"
}

// Stage is one item of a run's checklist, with the check that sets its state.
type Stage struct {
	Name  string `yaml:"name"`
	Check string `yaml:"check"` // http, exists, progress, growing, metric, manual, promql
	// URL for http checks; Path for exists and growing; Metric, Op and Value for metric checks;
	// Query for promql checks.
	URL    string  `yaml:"url"`
	Path   string  `yaml:"path"`
	Metric string  `yaml:"metric"`
	Op     string  `yaml:"op"`
	Value  float64 `yaml:"value"`
	Query  string  `yaml:"query"`
	Line   int     `yaml:"-"`
}

// Prometheus is a Prometheus server that holds a run's series.
type Prometheus struct {
	URL      string `yaml:"url"`
	Selector string `yaml:"selector"`
	// BearerTokenEnv, UsernameEnv and PasswordEnv name environment variables holding credentials, so the
	// run file never holds a secret.
	BearerTokenEnv string `yaml:"bearer_token_env"`
	UsernameEnv    string `yaml:"username_env"`
	PasswordEnv    string `yaml:"password_env"`
}

// DefaultRunName is the name of the run in the built-in default configuration.
const DefaultRunName = "local"

// Default is the configuration used when no run file is found: one run that watches the working
// directory and the root filesystem.
func Default(workdir string) *File {
	return &File{
		Source: "built-in default",
		Runs: []Run{{
			Name:  DefaultRunName,
			Watch: []string{workdir, "/"},
		}},
	}
}

// Locate picks the run file: the flag, else $RUNWATCH_CONFIG, else ./runwatch.yaml if present.
// It returns "" when none applies, meaning the built-in default.
func Locate(flagPath, envPath string) (string, error) {
	if flagPath != "" {
		return flagPath, nil
	}
	if envPath != "" {
		return envPath, nil
	}
	if _, err := os.Stat("runwatch.yaml"); err == nil {
		return "runwatch.yaml", nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("check runwatch.yaml: %w", err)
	}
	return "", nil
}

// Load reads and validates a run file. lookup resolves ${VAR} references (os.LookupEnv in production).
func Load(path string, lookup func(string) (string, bool)) (*File, error) {
	b, err := readRunFile(path)
	if err != nil {
		return nil, fmt.Errorf("read run file: %w", err)
	}
	f, err := Parse(b, lookup)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.Source = path
	return f, nil
}

// Parse parses and validates a run file's content. Errors name the key and the line. A value that came from
// a ${VAR} is said as the reference, never as what it expanded to: the variable may hold a password.
func Parse(b []byte, lookup func(string) (string, bool)) (*File, error) {
	var used varValues
	f, err := parse(b, used.record(lookup))
	if err != nil {
		return nil, used.scrub(err)
	}
	return f, nil
}

func parse(b []byte, lookup func(string) (string, bool)) (*File, error) {
	if err := checkFileSize(b); err != nil {
		return nil, err
	}
	if err := checkText(b); err != nil {
		return nil, err
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the run file is empty: it needs a runs: list")
		}
		return nil, syntaxError(b, err)
	}
	if err := expandNode(&root, lookup, ""); err != nil {
		return nil, err
	}
	if err := checkSizes(&root, ""); err != nil {
		return nil, err
	}
	lines := keyLines{}
	if err := checkKeys(&root, reflect.TypeFor[File](), "", lines); err != nil {
		return nil, err
	}
	var f File
	if err := root.Decode(&f); err != nil {
		// checkKeys has seen every key and value, so this is a case it does not know; the decoder's
		// "unmarshal errors:" lists each on a line of its own: one line, the first.
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			return nil, errors.New(te.Errors[0])
		}
		return nil, fmt.Errorf("parse: %w", err)
	}
	recordLines(&root, &f)
	if err := f.validate(lines); err != nil {
		return nil, err
	}
	return &f, nil
}

// varRef matches ${NAME} and ${NAME:-default}; a lone $ (as in a regex anchor) is left alone.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandNode replaces ${VAR} references in every scalar value (not in keys), so a variable's content
// can never change the file's structure. where is the key path of n (runs[0].total), which an unset
// variable's error names beside its line.
func expandNode(n *yaml.Node, lookup func(string) (string, bool), where string) error {
	if n.Kind == yaml.ScalarNode {
		if !strings.Contains(n.Value, "${") {
			return nil
		}
		if m := varRef.FindStringSubmatch(n.Value); m != nil && strings.HasSuffix(where, "_env") {
			// bearer_token_env: ${PROM_TOKEN} would make the credential itself the variable's name, and
			// every message naming that variable would show it. Only the name is said here.
			return fmt.Errorf("line %d: %s takes the name of an environment variable: write %s, not ${%s} (expanded, it would be the credential itself)",
				n.Line, describe(where), m[1], m[1])
		}
		var missing []string
		n.Value = varRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
			m := varRef.FindStringSubmatch(ref)
			if v, ok := lookup(m[1]); ok && v != "" {
				return v
			}
			if m[2] != "" {
				return m[3]
			}
			missing = append(missing, m[1])
			return ""
		})
		if len(missing) > 0 {
			return fmt.Errorf("line %d: %s: ${%s} is not set (set it in the environment or .env, or write ${%s:-default})",
				n.Line, describe(where), missing[0], missing[0])
		}
		// A quoted or plain scalar that now reads as a number or bool still decodes by its new text.
		if n.Tag == "!!str" && n.Style == 0 {
			n.Tag = ""
		}
		return nil
	}
	for i, c := range n.Content {
		at := where
		switch n.Kind {
		case yaml.MappingNode:
			if i%2 == 0 {
				continue // keys are never expanded
			}
			at = join(where, n.Content[i-1].Value)
		case yaml.SequenceNode:
			at = fmt.Sprintf("%s[%d]", where, i)
		}
		if err := expandNode(c, lookup, at); err != nil {
			return err
		}
	}
	return nil
}

// recordLines stores the line of each run, plan and stage so later checks can point at them.
func recordLines(root *yaml.Node, f *File) {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	runs := mappingValue(doc, "runs")
	if runs == nil {
		return
	}
	for i, rn := range runs.Content {
		if i >= len(f.Runs) {
			break
		}
		f.Runs[i].Line = rn.Line
		if plans := mappingValue(rn, "plans"); plans != nil {
			for j, pn := range plans.Content {
				if j < len(f.Runs[i].Plans) {
					pl := &f.Runs[i].Plans[j]
					pl.Line, pl.Key, pl.KeyLines = pn.Line, fmt.Sprintf("runs[%d].plans[%d]", i, j), map[string]int{}
					for k := 0; pn.Kind == yaml.MappingNode && k+1 < len(pn.Content); k += 2 {
						pl.KeyLines[pn.Content[k].Value] = pn.Content[k+1].Line
					}
				}
			}
		}
		if stages := mappingValue(rn, "stages"); stages != nil {
			for j, sn := range stages.Content {
				if j < len(f.Runs[i].Stages) {
					f.Runs[i].Stages[j].Line = sn.Line
				}
			}
		}
	}
}

func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// DTypes maps the element types a plan may name to their size in bytes.
var DTypes = map[string]int{
	"float32": 4, "fp32": 4, "float": 4,
	"float16": 2, "fp16": 2, "half": 2, "bfloat16": 2, "bf16": 2,
	"float8": 1, "fp8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "int8": 1, "uint8": 1,
	"float64": 8, "fp64": 8, "double": 8,
}

// Duration is a time.Duration written as "30s", "10m" or "1h30m" in the run file.
type Duration struct{ time.Duration }

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		if f, nerr := strconv.ParseFloat(n.Value, 64); nerr == nil && f > 0 {
			// stall_after: 600: a bare number reads as seconds to some and minutes to others; say so.
			return fmt.Errorf("line %d: %q is not a duration like 30s, 10m or 1h30m: a number needs its unit (%ss for seconds, %sm for minutes)",
				n.Line, n.Value, n.Value, n.Value)
		}
		if err == nil {
			return fmt.Errorf("line %d: %q is negative: a duration here is a length of time, like 30s, 10m or 1h30m", n.Line, n.Value)
		}
		return fmt.Errorf("line %d: %q is not a duration like 30s, 10m or 1h30m", n.Line, n.Value)
	}
	d.Duration = v
	return nil
}

// Tokens is a token count or "auto" (use the run's measured tokens).
type Tokens struct {
	N    float64
	Auto bool
}

// UnmarshalYAML accepts a number (25000000, 25e6, 25_000_000, "25M") or auto.
func (t *Tokens) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		// `tokens: [25M]` quoted its empty scalar value: `"": give a positive number`.
		return fmt.Errorf("line %d: must be a single value, not a list or a mapping: give a positive number (25000000, 25e6, 25M) or auto", n.Line)
	}
	if n.Value == "auto" {
		t.Auto = true
		return nil
	}
	v, err := parseCount(n.Value)
	if err != nil || v <= 0 {
		return fmt.Errorf("line %d: %q: give a positive number (25000000, 25e6, 25M) or auto", n.Line, n.Value)
	}
	t.N = v
	return nil
}

func parseCount(s string) (float64, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	mult := 1.0
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			mult = 1e3
		case 'M':
			mult = 1e6
		case 'B', 'G':
			mult = 1e9
		case 'T':
			mult = 1e12
		}
		if mult != 1 {
			s = s[:len(s)-1]
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	return v * mult, err
}

// Layers is "all" or a list of layer indices whose hidden states are captured.
type Layers struct {
	All  bool
	List []int
}

// UnmarshalYAML accepts all or a list of non-negative integers.
func (l *Layers) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "all" {
		l.All = true
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("line %d: %q: use all or a list of layer indices like [2, 30, 58]", n.Line, n.Value)
	}
	seen := map[int]bool{}
	for _, c := range n.Content {
		v, err := strconv.Atoi(c.Value)
		if err != nil || v < 0 {
			return fmt.Errorf("line %d: %q is not a layer index", c.Line, c.Value)
		}
		if seen[v] {
			return fmt.Errorf("line %d: %d is listed twice", c.Line, v)
		}
		seen[v] = true
		l.List = append(l.List, v)
	}
	if len(l.List) == 0 {
		return fmt.Errorf("line %d: an empty list: give all or layer indices", n.Line)
	}
	return nil
}

// RunByName returns the run with that name.
func (f *File) RunByName(name string) (*Run, bool) {
	for i := range f.Runs {
		if strings.EqualFold(f.Runs[i].Name, name) {
			return &f.Runs[i], true
		}
	}
	return nil, false
}
