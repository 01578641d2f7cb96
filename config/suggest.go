package config

import (
	"reflect"
	"strings"
)

// closestKey is the known key of t an unknown key most likely misspells ("totl" for total, "max_token" for
// max_tokens), or "" when none is within two edits (or a third of the key's length, for short keys).
func closestKey(key string, t reflect.Type) string {
	best, bestD := "", 3
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		if d := editDistance(strings.ToLower(key), name); d < bestD && d <= max(1, len(name)/3) {
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
