package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
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
// the key and its line, and records every key's line in lines. It reports every such mistake in the file,
// up to maxKeyErrors, one per line: an "ouputs:" in one run does not hide a wrong type in another.
func checkKeys(n *yaml.Node, t reflect.Type, where string, lines keyLines) error {
	var errs []error
	checkKeysInto(n, t, where, lines, &errs)
	if len(errs) > maxKeyErrors {
		errs = append(errs[:maxKeyErrors], fmt.Errorf("and %d more", len(errs)-maxKeyErrors))
	}
	return errors.Join(errs...)
}

// maxKeyErrors is the most key and type errors one load reports.
const maxKeyErrors = 10

func checkKeysInto(n *yaml.Node, t reflect.Type, where string, lines keyLines, errs *[]error) {
	add := func(err error) {
		if err != nil {
			*errs = append(*errs, err)
		}
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			checkKeysInto(c, t, where, lines, errs)
		}
		return
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
			add(keyError(n.Line, where, err.Error()))
		}
		return
	}
	isNull := n.Kind == yaml.ScalarNode && n.Tag == "!!null"
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if !isNull {
				add(fmt.Errorf("line %d: %s must be a mapping of keys", n.Line, describe(where)))
			}
			return
		}
		fields := yamlFields(t)
		seen := map[string]int{}
		runKeys := 0 // a run's keys found at the top of the file
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok && n.Style&yaml.FlowStyle != 0 {
				if next, err := commaNumber(n, i, where); err != nil {
					add(err)
					i = next - 2
					continue
				}
			}
			if !ok {
				if where == "" && t == reflect.TypeFor[File]() {
					if _, isRun := yamlFields(reflect.TypeFor[Run]())[k.Value]; isRun {
						// A first run file often holds one run's keys at the top, without the list around them.
						if runKeys++; runKeys > 1 {
							add(fmt.Errorf("line %d: %q is a run's key too", k.Line, k.Value))
							continue
						}
						add(fmt.Errorf("line %d: %q is a run's key: runs go in a list under runs:, each starting with \"- \" (runs:, then   - name: my-run, then its other keys indented to line up with name)", k.Line, k.Value))
						continue
					}
				}
				if guess := closestKey(k.Value, fields); guess != "" {
					add(fmt.Errorf("line %d: unknown key %q in %s: did you mean %q? (known: %s)", k.Line, k.Value,
						describe(where), guess, knownKeys(t)))
				} else {
					add(fmt.Errorf("line %d: unknown key %q in %s (known: %s)", k.Line, k.Value, describe(where), knownKeys(t)))
				}
				continue
			}
			if first, dup := seen[k.Value]; dup {
				// The decoder would say so too, as "unmarshal errors:" with the line on a second line.
				add(fmt.Errorf("line %d: %q is defined twice in %s (first on line %d): keep one", k.Line, k.Value, describe(where), first))
				continue
			}
			seen[k.Value] = k.Line
			checkKeysInto(v, ft, join(where, k.Value), lines, errs)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			switch {
			case isNull:
			case n.Kind == yaml.ScalarNode && t.Elem().Kind() != reflect.Struct:
				// "outputs: /data/out" for "outputs: [/data/out]". The value is not quoted (a metrics URL
				// may carry a password): the form is.
				add(fmt.Errorf("line %d: %s must be a list: write one value in brackets, [like this], or on a line of its own under the key, starting with \"- \"", n.Line, describe(where)))
			default:
				add(fmt.Errorf("line %d: %s must be a list", n.Line, describe(where)))
			}
			return
		}
		for i, c := range n.Content {
			checkKeysInto(c, t.Elem(), fmt.Sprintf("%s[%d]", where, i), lines, errs)
		}
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64, reflect.Bool:
		add(checkScalar(n, t.Kind(), where))
	}
}

// commaNumber is the error for a number written with thousands separators inside braces: in
// "{tokens: 25,000,000, ...}" the commas separate keys, so YAML reads tokens: 25 and keys "000" and "000",
// which were two identical "unknown key" errors that named neither tokens nor the commas. i is the first of
// those keys in the flow mapping n. The error is nil unless the value before key i is one to three digits and
// key i is three digits without a value; then next is the first key past those like it.
func commaNumber(n *yaml.Node, i int, where string) (int, error) {
	if i < 2 {
		return i, nil
	}
	key, val := n.Content[i-2], n.Content[i-1]
	if val.Kind != yaml.ScalarNode || !leadingDigits.MatchString(val.Value) {
		return i, nil
	}
	text := val.Value
	next := i
	for ; next+1 < len(n.Content); next += 2 {
		k, v := n.Content[next], n.Content[next+1]
		if k.Kind != yaml.ScalarNode || !threeDigits.MatchString(k.Value) || v.Tag != "!!null" {
			break
		}
		text += "," + k.Value
	}
	if next == i {
		return i, nil
	}
	return next, fmt.Errorf("line %d: %s: %s is written with commas, and inside { } a comma separates keys (it reads as %s: %s and a key %q): write %s",
		key.Line, join(where, key.Value), text, key.Value, val.Value, n.Content[i].Value, strings.ReplaceAll(text, ",", ""))
}

var (
	leadingDigits = regexp.MustCompile(`^[0-9]{1,3}$`)
	threeDigits   = regexp.MustCompile(`^[0-9]{3}$`)
)

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
