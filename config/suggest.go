package config

import (
	"reflect"
	"strings"
)

// closestKey is the known key (of fields, as yamlFields gives them) an unknown key most likely misspells
// ("totl" for total, "num_layer" for num_layers), or "" when none is within two edits (or a third of the
// key's length, for short keys). Ties go to the first in alphabetical order, so the answer does not depend on
// map order.
func closestKey(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	for name := range fields {
		d := editDistance(strings.ToLower(key), name)
		if d > max(1, len(name)/3) {
			continue
		}
		if d < bestD || d == bestD && name < best {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes: keys are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
