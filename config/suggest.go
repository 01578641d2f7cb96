package config

import (
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
