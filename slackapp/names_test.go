package slackapp

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"runwatch/config"
	"runwatch/internal/testkit"
)

// slashAnswer posts a signed slash command and returns its inline answer's text.
func slashAnswer(t *testing.T, e *httpEnv, command, text, user string) string {
	t.Helper()
	resp := e.post(t, "/slack/commands", testkit.SlashBody(command, text, "C0SYNTH", user, e.fake.ResponseURL("r")), nil)
	var msg struct{ Text string }
	if err := json.Unmarshal([]byte(readAll(t, resp.Body)), &msg); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %v", command, text, err)
	}
	return msg.Text
}

// TestSlashCommandsFollowTheInstalledApp installs runwatch as /eta-b200, /storage-b200 and /runwatch-b200
// (commands: suffix: -b200): each answers as its command, and help and the answers name the commands as
// installed. An app installed so before commands: says so answers too (the name holds /eta as a word).
func TestSlashCommandsFollowTheInstalledApp(t *testing.T) {
	e := newHTTPEnv(t, botOpts{File: func(f *config.File) { f.Commands = config.Commands{Suffix: "-b200"} }})
	if got := slashAnswer(t, e, "/eta-b200", "", "U222"); !strings.Contains(got, "synth · ETA") {
		t.Errorf("/eta-b200 = %q; want the ETA", got)
	}
	if got := slashAnswer(t, e, "/storage-b200", "", "U222"); !strings.Contains(got, "synth · storage") {
		t.Errorf("/storage-b200 = %q; want the storage answer", got)
	}
	help := slashAnswer(t, e, "/runwatch-b200", "", "U222")
	for _, want := range []string{"runwatch help", "/eta-b200 [run]", "/runwatch-b200 status [run]", "/runwatch-b200 snooze", "/storage-b200 /data"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	if strings.Contains(help, "`/eta [run]`") || strings.Contains(help, "`/runwatch snooze") {
		t.Errorf("help names the commands as shipped, not as installed:\n%s", help)
	}
	if got := slashAnswer(t, e, "/runwatch-b200", "stage nosuch done", "UADMIN"); strings.Contains(got, "/runwatch stage") {
		t.Errorf("a usage note names /runwatch: %q", got)
	}
	if got := slashAnswer(t, e, "/runwatch-b200", "left", "U222"); !strings.Contains(got, "set it with /runwatch-b200 stage review done") {
		t.Errorf("what's left = %q; want the manual stage's hint to name /runwatch-b200", got)
	}

	// Installed under its own names, the run file not told yet.
	plain := newHTTPEnv(t, botOpts{})
	if got := slashAnswer(t, plain, "/eta-b200", "", "U222"); !strings.Contains(got, "synth · ETA") {
		t.Errorf("/eta-b200 without commands: = %q; want the ETA, not \"I didn't catch that\"", got)
	}
	if got := slashAnswer(t, plain, "/etaonly", "", "U222"); strings.Contains(got, "synth · ETA") {
		t.Errorf("/etaonly = %q; want it not taken for /eta (eta is not a word of it)", got)
	}
	if n := strings.Count(plain.logs.String(), "is read as runwatch's own"); n != 1 {
		t.Errorf("the guessed command was logged %d times; want once", n)
	}
}

// TestManifestForInstalledNames: `bot manifest` for commands: suffix: -b200 registers /eta-b200,
// /storage-b200 and /runwatch-b200 as runwatch-b200, and Slack's schema takes it; the shipped manifest is
// the one with runwatch's own names.
func TestManifestForInstalledNames(t *testing.T) {
	root, err := os.ReadFile("../manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if Manifest(config.Commands{}, "") != string(root) {
		t.Errorf("manifest.yaml differs from the manifest runwatch embeds (slackapp/manifest.yaml): copy one to the other")
	}
	b200 := Manifest(config.Commands{Suffix: "-b200"}, "")
	var m manifestFile
	if err := yaml.Unmarshal([]byte(b200), &m); err != nil {
		t.Fatal(err)
	}
	if got := m.commands(); !slices.Equal(got, []string{"/eta-b200", "/storage-b200", "/runwatch-b200"}) {
		t.Errorf("commands = %v; want the -b200 names", got)
	}
	if !strings.Contains(b200, "\n  name: runwatch-b200\n") || !strings.Contains(b200, "display_name: runwatch-b200") || strings.Contains(b200, " /eta,") {
		t.Errorf("manifest for -b200 does not name the app and its commands as installed:\n%s", b200)
	}
	if err := manifestSchema(t).Validate(yamlToJSONValue(t, []byte(b200))); err != nil {
		t.Errorf("the -b200 manifest does not validate against Slack's schema: %v", err)
	}
}
