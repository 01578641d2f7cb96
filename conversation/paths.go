package conversation

import (
	"path/filepath"
	"sort"
	"strings"

	"runwatch/config"
)

// People name paths the way they say them: "/shared" for /mnt/nfs/shared, "shared" for the demo's
// /tmp/runwatch-demo-…/shared. These helpers map such a name onto one of the run's configured paths when
// exactly one fits; the monitor still refuses anything outside the run.

// pathIntents are the commands whose answer is about one path when the question names one.
var pathIntents = map[string]bool{"safe": true, "writes": true, "space": true}

// runPathList is every path the run file names for a run: outputs, protected mounts, watched paths and
// plan targets.
func runPathList(r *config.Run) []string {
	var out []string
	out = append(out, r.Outputs...)
	out = append(out, r.Protected...)
	out = append(out, r.Watch...)
	for _, p := range r.Plans {
		out = append(out, p.Target)
	}
	return out
}

// pathAlias maps a path as people say it onto a configured one: the configured paths whose components
// contain p's components in a row give the path up to the end of that run ("/shared" in
// /mnt/nfs/shared/team gives /mnt/nfs/shared). It answers only when every match gives the same path.
func pathAlias(r *config.Run, p string) (string, bool) {
	want := components(p)
	if len(want) == 0 {
		return "", false
	}
	found := map[string]bool{}
	for _, c := range runPathList(r) {
		have := components(c)
		for i := 0; i+len(want) <= len(have); i++ {
			if equalFold(have[i:i+len(want)], want) {
				found["/"+strings.Join(have[:i+len(want)], "/")] = true
			}
		}
	}
	if len(found) != 1 {
		return "", false
	}
	for a := range found {
		if a == filepath.Clean(p) {
			return "", false
		}
		return a, true
	}
	return "", false
}

// bareWordPath finds a configured protected mount or output named by its last component as a plain word
// ("is shared safe?"), when exactly one matches.
func bareWordPath(r *config.Run, text string) (string, bool) {
	words := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(slackRef.ReplaceAllString(text, " "))) {
		words[strings.Trim(w, "?.,!:;\"'()`")] = true
	}
	found := map[string]bool{}
	for _, list := range [][]string{r.Protected, r.Outputs} {
		for _, p := range list {
			base := strings.ToLower(filepath.Base(p))
			if len(base) >= 3 && words[base] {
				found[filepath.Clean(p)] = true
			}
		}
	}
	if len(found) != 1 {
		return "", false
	}
	var out []string
	for p := range found {
		out = append(out, p)
	}
	sort.Strings(out)
	return out[0], true
}

func components(p string) []string {
	var out []string
	for _, c := range strings.Split(filepath.Clean(p), "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

func equalFold(a, b []string) bool {
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}
