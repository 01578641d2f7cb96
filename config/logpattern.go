package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ProgressGroups are the named groups a log_pattern may use; the log probe reads them by name.
var ProgressGroups = []string{"done", "total", "errors", "elapsed", "avg_tokens", "rate"}

// errMissingGroup is a pattern without the done or total group; its message names what it needs.
var errMissingGroup = errors.New("missing named group")

// CompileProgressPattern compiles a user regex and checks it has named groups
// done and total (others optional: errors, elapsed, avg_tokens, rate); a
// clear error names what is missing or unknown.
func CompileProgressPattern(expr string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("compile progress pattern: %w", err)
	}
	seen := map[string]bool{}
	for _, name := range re.SubexpNames() {
		if name == "" {
			continue
		}
		known := false
		for _, k := range ProgressGroups {
			known = known || name == k
		}
		if !known {
			return nil, fmt.Errorf("compile progress pattern: unknown group (?P<%s>); use %s", name, strings.Join(ProgressGroups, ", "))
		}
		seen[name] = true
	}
	var missing []string
	for _, name := range ProgressGroups[:2] {
		if !seen[name] {
			missing = append(missing, "(?P<"+name+">...)")
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("compile progress pattern: %w %s", errMissingGroup, strings.Join(missing, " and "))
	}
	return re, nil
}
