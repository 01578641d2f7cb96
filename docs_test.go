// Package runwatch_test checks the documentation: README.md and the pages in docs/. It lives at the
// root of the module because that is where the README is, and because docs/ holds no Go package;
// it imports nothing of runwatch's, and runs with the rest of `go test ./...`.
package runwatch_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// docPages are the Markdown files whose links are checked: the README and every page in docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, pages...)
}

var (
	fence      = regexp.MustCompile("(?ms)^ *```.*?^ *```[^\n]*$")
	codeSpan   = regexp.MustCompile("`[^`\n]*`")
	mdLink     = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	htmlLink   = regexp.MustCompile(`(?:src|href)="([^"]+)"`)
	heading    = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
	mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// prose returns the text of a Markdown page without its fenced code blocks, whose lines are neither
// links nor headings.
func prose(text string) string {
	return fence.ReplaceAllString(text, "")
}

// links returns the targets of the page's Markdown links, images and HTML src/href attributes
// outside code.
func links(text string) []string {
	text = codeSpan.ReplaceAllString(prose(text), "")
	var out []string
	for _, re := range []*regexp.Regexp{mdLink, htmlLink} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// anchors returns the fragments GitHub gives the page's headings: the heading's text lowercased,
// without punctuation, spaces as hyphens, and -1, -2, ... after a repeated one.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(prose(text), -1) {
		h := mdLinkText.ReplaceAllString(m[1], "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		for i, base := 1, a; out[a]; i++ {
			a = base + "-" + strconv.Itoa(i)
		}
		out[a] = true
	}
	return out
}

func TestAnchors(t *testing.T) {
	page := "# Title\n## Writers on every host: `bot exporter`\n## The job's log\n```\n# not a heading\n```\n" +
		"## See [slack.md](slack.md)\n## Twice\n## Twice\n### node_exporter, vLLM & Co.\n"
	want := []string{"title", "writers-on-every-host-bot-exporter", "the-jobs-log", "see-slackmd", "twice", "twice-1",
		"node_exporter-vllm--co"}
	got := anchors(page)
	for _, a := range want {
		if !got[a] {
			t.Errorf("anchors(page) = %v; want %q among them", got, a)
		}
	}
	if got["not-a-heading"] || len(got) != len(want) {
		t.Errorf("anchors(page) = %v; want exactly %v", got, want)
	}
}

// TestDocLinks checks that every relative link in the README and docs/ names a file that exists and,
// where it has a #fragment, a heading of that page.
func TestDocLinks(t *testing.T) {
	for _, page := range docPages(t) {
		t.Run(page, func(t *testing.T) {
			b, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			targets := links(string(b))
			if len(targets) == 0 {
				t.Fatalf("%s has no links; the link pattern no longer matches its Markdown", page)
			}
			for _, target := range targets {
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue // not ours to check offline
				}
				file, frag, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s links to %s: %v", page, target, err)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(path, ".md") {
					t.Errorf("%s links to %s: a #fragment on a file that is not Markdown", page, target)
					continue
				}
				text, err := os.ReadFile(path)
				if err != nil {
					t.Errorf("%s links to %s: %v", page, target, err)
					continue
				}
				if !anchors(string(text))[frag] {
					t.Errorf("%s links to %s: %s has no heading whose anchor is #%s", page, target, path, frag)
				}
			}
		})
	}
}

// TestREADMEIsShort holds the README to what a newcomer reads in minutes (reference goes in docs/),
// with the quick start's two commands word for word.
func TestREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 400 {
		t.Errorf("README.md has %d lines; keep it under 400 and move reference text to docs/", n)
	}
	for _, cmd := range []string{"go run ./cmd/bot console --demo", "go test -race ./..."} {
		if !strings.Contains(string(b), "```sh\n"+cmd+"\n```") {
			t.Errorf("README.md has no sh block with %q alone: the quick start must keep it word for word", cmd)
		}
	}
}
