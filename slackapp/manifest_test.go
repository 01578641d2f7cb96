package slackapp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/slack-go/slack"
	"go.yaml.in/yaml/v3"

	"runwatch/conversation"
)

// slackBuiltins are Slack's built-in slash commands: an app that registers one is refused whole.
// Slack help article 201259356 "Use built-in slash commands" (testdata/SOURCES.md).
var slackBuiltins = []string{"me", "status", "away", "dnd", "shrug", "remind", "msg", "feed", "who", "collapse",
	"expand", "leave", "join", "open", "search", "topic", "mute", "pro", "shortcuts", "archive", "invite"}

// manifestFile is the part of manifest.yaml the tests read.
type manifestFile struct {
	Features struct {
		AppHome struct {
			HomeTab bool `yaml:"home_tab_enabled"`
		} `yaml:"app_home"`
		SlashCommands []struct {
			Command   string `yaml:"command"`
			UsageHint string `yaml:"usage_hint"`
		} `yaml:"slash_commands"`
	} `yaml:"features"`
	OAuth struct {
		Scopes struct {
			Bot []string `yaml:"bot"`
		} `yaml:"scopes"`
	} `yaml:"oauth_config"`
	Settings struct {
		Events struct {
			BotEvents []string `yaml:"bot_events"`
		} `yaml:"event_subscriptions"`
		Interactivity struct {
			Enabled bool `yaml:"is_enabled"`
		} `yaml:"interactivity"`
		SocketMode bool `yaml:"socket_mode_enabled"`
	} `yaml:"settings"`
}

func readManifest(t *testing.T) ([]byte, manifestFile) {
	t.Helper()
	b, err := os.ReadFile("../manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m manifestFile
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("manifest.yaml: %v", err)
	}
	return b, m
}

func (m manifestFile) commands() []string {
	var out []string
	for _, c := range m.Features.SlashCommands {
		out = append(out, c.Command)
	}
	return out
}

// manifestSchema compiles Slack's manifest schema from testdata. The top-level schema refers to the
// versioned ones by URL; they are registered under those URLs, so nothing is fetched.
func manifestSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.UseRegexpEngine(lookaheadRegexp)
	const base = "https://raw.githubusercontent.com/slackapi/manifest-schema/v0.5.0/schemas/"
	for url, file := range map[string]string{
		"https://github.com/slackapi/manifest-schema/blob/main/manifest.schema.json": "manifest.schema.json",
		base + "manifest.schema.1.0.0.json":                                          "manifest.schema.1.0.0.json",
		base + "manifest.schema.2.0.0.json":                                          "manifest.schema.2.0.0.json",
	} {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(readFixture(t, filepath.Join("slack-spec", file))))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if err := c.AddResource(url, doc); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	s, err := c.Compile("https://github.com/slackapi/manifest-schema/blob/main/manifest.schema.json")
	if err != nil {
		t.Fatalf("compile Slack's manifest schema: %v", err)
	}
	return s
}

// lookaheadRegexp compiles a schema pattern with Go's regexp, plus the one construct Slack's schema
// uses that Go lacks: a leading negative lookahead, "^(?!X)REST" (no leading dot or dash in a
// domain), which matches when ^X does not and ^REST does.
func lookaheadRegexp(pattern string) (jsonschema.Regexp, error) {
	if inner, ok := strings.CutPrefix(pattern, "^(?!"); ok {
		if i := strings.Index(inner, ")"); i > 0 {
			not, err := regexp.Compile("^(?:" + inner[:i] + ")")
			if err != nil {
				return nil, err
			}
			rest, err := regexp.Compile("^" + inner[i+1:])
			if err != nil {
				return nil, err
			}
			return lookahead{pattern, not, rest}, nil
		}
	}
	return regexp.Compile(pattern)
}

type lookahead struct {
	pattern   string
	not, rest *regexp.Regexp
}

func (l lookahead) String() string { return l.pattern }

func (l lookahead) MatchString(s string) bool { return !l.not.MatchString(s) && l.rest.MatchString(s) }

// yamlToJSONValue turns a YAML document into the value a JSON decoder would give, for the validator.
func yamlToJSONValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("manifest as JSON: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// reservedCommands returns the manifest's commands that are Slack built-ins.
func reservedCommands(cmds []string) []string {
	var bad []string
	for _, c := range cmds {
		if slices.Contains(slackBuiltins, strings.ToLower(strings.TrimPrefix(c, "/"))) {
			bad = append(bad, c)
		}
	}
	return bad
}

// TestManifestSlackAccepts validates manifest.yaml against Slack's own schema and the built-in
// commands Slack refuses. Both checks are shown to catch a manifest Slack would reject.
func TestManifestSlackAccepts(t *testing.T) {
	raw, m := readManifest(t)
	schema := manifestSchema(t)
	if err := schema.Validate(yamlToJSONValue(t, raw)); err != nil {
		t.Errorf("manifest.yaml does not validate against Slack's manifest schema:\n%v", err)
	}
	if bad := reservedCommands(m.commands()); len(bad) > 0 {
		t.Errorf("manifest.yaml registers Slack built-in commands %v; Slack rejects the whole manifest", bad)
	}

	// The checks themselves: a key Slack does not know, a description past its limit, and /status.
	for name, mutate := range map[string]func(map[string]any){
		"unknown key": func(v map[string]any) { v["settings"].(map[string]any)["sockets"] = true },
		"long description": func(v map[string]any) {
			v["display_information"].(map[string]any)["description"] = strings.Repeat("x", 200)
		},
		"command not slash": func(v map[string]any) { firstCommand(v)["command"] = "eta" },
	} {
		var v map[string]any
		if err := yaml.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		mutate(v)
		b, _ := yaml.Marshal(v)
		if err := schema.Validate(yamlToJSONValue(t, b)); err == nil {
			t.Errorf("a manifest with %s validates; the schema check cannot fail", name)
		}
	}
	for s, want := range map[string]bool{"example.org": true, ".example.org": false, "-x.org": false, "a": false} {
		if got := validDomain(t, schema, s); got != want {
			t.Errorf("unfurl domain %q valid = %v; want %v (the lookahead pattern)", s, got, want)
		}
	}
	if bad := reservedCommands([]string{"/eta", "/Status", "/runwatch"}); !slices.Equal(bad, []string{"/Status"}) {
		t.Errorf("reservedCommands(/eta /Status /runwatch) = %v; want [/Status]", bad)
	}
}

// validDomain validates a manifest that differs from a minimal one only by one unfurl domain.
func validDomain(t *testing.T, schema *jsonschema.Schema, domain string) bool {
	t.Helper()
	m := fmt.Sprintf("display_information:\n  name: x\nfeatures:\n  unfurl_domains: [%q]\n", domain)
	return schema.Validate(yamlToJSONValue(t, []byte(m))) == nil
}

func firstCommand(v map[string]any) map[string]any {
	return v["features"].(map[string]any)["slash_commands"].([]any)[0].(map[string]any)
}

// TestManifest keeps manifest.yaml in step with the command table: every command with a slash of
// its own is registered, and every /runwatch subcommand in the usage hint is a command.
func TestManifest(t *testing.T) {
	_, m := readManifest(t)
	cmds := m.commands()
	want := []string{"/runwatch"}
	for _, c := range conversation.CommandTable() {
		if c.Slash != "" {
			want = append(want, c.Slash)
		}
	}
	slices.Sort(cmds)
	slices.Sort(want)
	checks := []struct {
		what      string
		got, want []string
	}{
		{"slash commands", cmds, want},
		{"bot scopes", m.OAuth.Scopes.Bot, []string{"app_mentions:read", "channels:history", "chat:write", "commands", "files:write", "groups:history", "im:history"}},
		{"bot events", m.Settings.Events.BotEvents, []string{"app_mention", "app_home_opened", "message.im"}},
	}
	for _, c := range checks {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("manifest %s = %v; want %v", c.what, c.got, c.want)
		}
	}
	if !m.Settings.SocketMode {
		t.Errorf("manifest: socket_mode_enabled is false; want Socket Mode on")
	}
	if !m.Features.AppHome.HomeTab || !m.Settings.Interactivity.Enabled {
		t.Errorf("manifest: home tab %v, interactivity %v; want both on (App Home, buttons)", m.Features.AppHome.HomeTab, m.Settings.Interactivity.Enabled)
	}
	for _, c := range m.Features.SlashCommands {
		if c.Command != "/runwatch" {
			continue
		}
		for _, sub := range usageSubcommands(c.UsageHint) {
			if _, ok := findCommand(sub); !ok {
				t.Errorf("manifest: /runwatch usage hint names %q, which is not in the command table", sub)
			}
		}
		if !slices.Contains(usageSubcommands(c.UsageHint), "status") {
			t.Errorf("manifest: /runwatch usage hint %q does not offer status", c.UsageHint)
		}
	}
}

// usageSubcommands returns the first word of each "|"-separated alternative of a usage hint
// ("status [run] | help | stage <name> done|todo|failed" gives status, help, stage).
func usageSubcommands(hint string) []string {
	var out []string
	for _, alt := range strings.Split(hint, " | ") {
		if f := strings.Fields(alt); len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}

func findCommand(name string) (conversation.Command, bool) {
	for _, c := range conversation.CommandTable() {
		if c.Name == name {
			return c, true
		}
	}
	return conversation.Command{}, false
}

// webAPIScopes maps each slack.Client call runwatch may make to its Web API method and the bot
// scopes Slack requires for it (Slack's method reference pages). A call the code makes that is not
// in this table fails TestManifestScopesCoverCalls: add it with its scopes.
var webAPIScopes = map[string]struct {
	method string
	scopes []string
}{
	"AuthTestContext":               {"auth.test", nil},
	"PostMessageContext":            {"chat.postMessage", []string{"chat:write"}},
	"UpdateMessageContext":          {"chat.update", []string{"chat:write"}},
	"PostEphemeralContext":          {"chat.postEphemeral", []string{"chat:write"}},
	"DeleteMessageContext":          {"chat.delete", []string{"chat:write"}},
	"UploadFileContext":             {"files.getUploadURLExternal, files.completeUploadExternal", []string{"files:write"}},
	"PublishViewContext":            {"views.publish", nil},
	"GetConversationHistoryContext": {"conversations.history", []string{"channels:history"}},
	"GetConversationRepliesContext": {"conversations.replies", []string{"channels:history"}},
	"GetPermalinkContext":           {"chat.getPermalink", nil},
}

// slackClientCalls finds, in every non-test Go file of the module, the calls of methods of
// *slack.Client: by name, any XxxContext method, and the plain Xxx when called on something named
// client (runwatch's own API has methods such as AuthTest that wrap the Context calls).
func slackClientCalls(t *testing.T) map[string][]string {
	t.Helper()
	names := map[string]bool{}
	ty := reflect.TypeFor[*slack.Client]()
	for i := range ty.NumMethod() {
		n := ty.Method(i).Name
		if strings.HasSuffix(n, "Context") {
			names[n], names[strings.TrimSuffix(n, "Context")] = true, true
		}
	}
	found := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && names[sel.Sel.Name] &&
					(strings.HasSuffix(sel.Sel.Name, "Context") || receiverName(sel.X) == "client") {
					found[sel.Sel.Name] = append(found[sel.Sel.Name], fset.Position(call.Pos()).String())
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func receiverName(x ast.Expr) string {
	switch v := x.(type) {
	case *ast.Ident:
		return v.Name
	case *ast.SelectorExpr:
		return v.Sel.Name
	}
	return ""
}

// TestManifestScopesCoverCalls checks that the manifest's bot scopes cover every Web API method the
// code calls, and that the scan finds the calls it must (so it cannot pass by finding nothing).
func TestManifestScopesCoverCalls(t *testing.T) {
	_, m := readManifest(t)
	calls := slackClientCalls(t)
	for _, must := range []string{"PostMessageContext", "UpdateMessageContext", "UploadFileContext"} {
		if len(calls[must]) == 0 {
			t.Errorf("the scan found no call of slack.Client.%s; the scan is broken", must)
		}
	}
	for name, where := range calls {
		need, ok := webAPIScopes[name]
		if !ok {
			t.Errorf("slack.Client.%s is called (%s) but webAPIScopes does not say which scopes it needs", name, where[0])
			continue
		}
		for _, s := range need.scopes {
			if !slices.Contains(m.OAuth.Scopes.Bot, s) {
				t.Errorf("%s (%s, called at %s) needs the bot scope %s; manifest.yaml lacks it", need.method, name, where[0], s)
			}
		}
	}
	// Events need scopes too.
	eventScopes := map[string]string{"app_mention": "app_mentions:read", "message.im": "im:history"}
	for _, ev := range m.Settings.Events.BotEvents {
		if s, ok := eventScopes[ev]; ok && !slices.Contains(m.OAuth.Scopes.Bot, s) {
			t.Errorf("bot event %s needs the scope %s; manifest.yaml lacks it", ev, s)
		}
	}
	if !slices.Contains(m.OAuth.Scopes.Bot, "commands") && len(m.Features.SlashCommands) > 0 {
		t.Errorf("manifest registers slash commands without the commands scope")
	}
}

var (
	readmeCode       = regexp.MustCompile("`([^`]+)`")
	readmeSlashStart = regexp.MustCompile(`^/([a-z][a-z0-9_-]*)(\s|$)`)
	readmeFences     = regexp.MustCompile("(?s)\n```.*?\n```")
)

// slackPage returns docs/slack.md, the page that documents the Slack app.
func slackPage(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/slack.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// userDocs returns the README and every page in docs/, by name.
func userDocs(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, name := range append([]string{"../README.md"}, names...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		docs[strings.TrimPrefix(name, "../")] = string(b)
	}
	return docs
}

// paragraphWith returns the paragraph (or list item) of text that contains marker.
func paragraphWith(t *testing.T, text, marker string) string {
	t.Helper()
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("docs/slack.md has no %q", marker)
	}
	start := strings.LastIndex(text[:i], "\n\n") + 1
	rest := text[i:]
	end := len(rest)
	for _, stop := range []string{"\n\n", "\n- ", "\n2. "} {
		if k := strings.Index(rest, stop); k >= 0 && k < end {
			end = k
		}
	}
	return text[start : i+end]
}

func codeSpans(s string) []string {
	var out []string
	for _, m := range readmeCode.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestManifestMatchesDocs checks that the docs document the manifest runwatch ships: the scopes,
// commands and events of docs/slack.md's "Create the app" step are the manifest's, every slash
// command the README or a page in docs/ shows is registered, and none is a Slack built-in (other
// than /invite, which the README tells people to type).
func TestManifestMatchesDocs(t *testing.T) {
	_, m := readManifest(t)
	slackSec := slackPage(t)
	step := paragraphWith(t, slackSec, "It asks for the scopes")
	_, step, _ = strings.Cut(step, "It asks for the scopes")
	scopesPart, rest, _ := strings.Cut(step, "registers")
	cmdsPart, eventsPart, _ := strings.Cut(rest, "subscribes to")
	eventsPart, _, _ = strings.Cut(eventsPart, "and turns")
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	for _, c := range []struct {
		what     string
		readme   []string
		manifest []string
	}{
		{"scopes", codeSpans(scopesPart), m.OAuth.Scopes.Bot},
		{"commands", codeSpans(cmdsPart), m.commands()},
		{"events", codeSpans(eventsPart), m.Settings.Events.BotEvents},
	} {
		if !slices.Equal(sorted(c.readme), sorted(c.manifest)) {
			t.Errorf("docs/slack.md's Create the app step lists %s %v; manifest.yaml has %v", c.what, c.readme, c.manifest)
		}
	}

	for name, text := range userDocs(t) {
		for _, span := range codeSpans(readmeFences.ReplaceAllString(text, "")) {
			mm := readmeSlashStart.FindStringSubmatch(span)
			if mm == nil || strings.Contains(strings.Fields(span)[0][1:], "/") {
				continue // not a command (a path such as /data or /slack/events)
			}
			word := mm[1]
			if slices.Contains(slackBuiltins, word) {
				if word != "invite" {
					t.Errorf("%s shows %q: /%s is a Slack built-in runwatch cannot register", name, span, word)
				}
				continue
			}
			// A path named alone in backticks (`/shared`, `/healthz`) is not a command.
			if !slices.Contains(m.commands(), "/"+word) && looksLikeCommand(span) {
				t.Errorf("%s shows the command %q, but manifest.yaml does not register /%s", name, span, word)
			}
		}
	}

	bullet := paragraphWith(t, slackSec, "**Slash commands**")
	var subs []string
	for _, span := range codeSpans(bullet) {
		if after, ok := strings.CutPrefix(span, "/runwatch "); ok {
			subs = append(subs, usageSubcommands(after)...)
		}
	}
	if !slices.Contains(subs, "status") {
		t.Errorf("docs/slack.md's slash-command bullet offers /runwatch %v; want status among them", subs)
	}
	for _, s := range subs {
		if _, ok := findCommand(s); !ok {
			t.Errorf("docs/slack.md offers /runwatch %s, which is not in the command table", s)
		}
	}
}

// looksLikeCommand tells a command shown with arguments (`/eta [run]`, `/runwatch snooze 2h`) from a
// bare path (`/shared`).
func looksLikeCommand(span string) bool {
	return strings.ContainsAny(span, " [")
}
