package config

import (
	"slices"
	"strconv"
	"strings"
)

// varValues are the values ${VAR} references expanded to, by variable name, so that an error about a value
// says ${PROM_PASS} rather than the password it holds (`max_tokens: ${PROM_PASS}` quoted the value).
type varValues struct {
	names, values []string
}

// record wraps lookup so that every value it hands out is remembered.
func (u *varValues) record(lookup func(string) (string, bool)) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := lookup(name)
		if ok && v != "" {
			u.names, u.values = append(u.names, name), append(u.values, v)
		}
		return v, ok
	}
}

// scrub replaces each remembered value in err's text with its reference, as it is and as %q writes it inside
// its quotes (a value with a " or a \ in it is escaped there). Values too short or too plain to be a secret (a
// number: a line number reads the same) are left, so that the message keeps its line numbers. The longest go
// first: a value inside another (a user in its password) would otherwise leave the rest of the longer shown.
func (u *varValues) scrub(err error) error {
	msg := err.Error()
	changed := false
	order := make([]int, len(u.values))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(u.values[b]) - len(u.values[a]) })
	for _, i := range order {
		v := u.values[i]
		if len(v) < 4 || len(v) > len(msg) || strings.Trim(v, "0123456789.") == "" {
			continue // too short to hide, or too long to be in the message (quoted, it is no shorter)
		}
		q := strconv.Quote(v)
		for _, form := range []string{v, q[1 : len(q)-1]} {
			if strings.Contains(msg, form) {
				msg, changed = strings.ReplaceAll(msg, form, "${"+u.names[i]+"}"), true
			}
		}
	}
	if !changed {
		return err
	}
	return scrubbed{msg, err}
}

// scrubbed is an error said without the values of the variables in it; errors.Is and As still see the one it
// stands for.
type scrubbed struct {
	msg string
	err error
}

func (e scrubbed) Error() string { return e.msg }
func (e scrubbed) Unwrap() error { return e.err }
