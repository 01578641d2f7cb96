package config

import (
	"fmt"
	"reflect"
	"strings"

	"runwatch/internal/spell"
)

// closestKey is the known key (of fields, as yamlFields gives them) an unknown key most likely misspells
// ("totl" for total, "num_layer" for num_layers), or "" when none is near enough (spell.Near: two edits,
// or a third of the key's length for short keys). Ties go to the first in alphabetical order, so the answer
// does not depend on map order.
func closestKey(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	key = strings.ToLower(key)
	for name := range fields {
		if !spell.Near(key, name) {
			continue
		}
		if d := spell.Distance(key, name); d < bestD || d == bestD && name < best {
			best, bestD = name, d
		}
	}
	return best
}

// useOneOf is the advice for a value that is none of options: `did you mean "progress"? (use one of http, ...)`
// when exactly one option begins with it, else when one is near it (spell.Near, the closest first, ties
// alphabetically), else "use one of http, ...". list is how the options are named to a person.
func useOneOf(v string, options []string, list string) string {
	best, bestD := "", 3
	lv := strings.ToLower(v)
	// A value cut short ("bfloat", "prog") means the one option it begins, even when a shorter option is fewer
	// edits away: "bfloat" is one edit from "float" (4 bytes an element) and two from "bfloat16" (2 bytes).
	var starts []string
	for _, o := range options {
		if len(lv) >= 3 && strings.HasPrefix(o, lv) {
			starts = append(starts, o)
		}
	}
	if len(starts) == 1 {
		return fmt.Sprintf("did you mean %q? (use one of %s)", starts[0], list)
	}
	for _, o := range options {
		if !spell.Near(lv, o) {
			continue
		}
		if d := spell.Distance(lv, o); d < bestD || d == bestD && o < best {
			best, bestD = o, d
		}
	}
	if best == "" {
		return "use one of " + list
	}
	return fmt.Sprintf("did you mean %q? (use one of %s)", best, list)
}
