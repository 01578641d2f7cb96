package slackapp

import (
	_ "embed"
	"regexp"
	"strings"

	"runwatch/config"
)

// manifestYAML is runwatch's Slack app manifest as shipped (the repository's manifest.yaml is the same
// file): /eta, /storage and /runwatch, under the name runwatch.
//
//go:embed manifest.yaml
var manifestYAML string

// slashInManifest is one of runwatch's slash commands named in the manifest: as a command, or in a text.
var slashInManifest = regexp.MustCompile(`(^|[\s(:,])/(eta|storage|runwatch)\b`)

// Manifest is the app manifest for an app installed under c's command names, its name (and its bot's)
// name: "" keeps runwatch, or runwatch with the commands' suffix or prefix ("runwatch-b200"), so that two
// runwatch apps in one workspace can be told apart. Comments and layout are the shipped manifest's.
func Manifest(c config.Commands, name string) string {
	if name == "" {
		name = "runwatch"
		if c.Prefix != "" || c.Suffix != "" {
			name = strings.Trim(c.Prefix+"runwatch"+c.Suffix, "-_")
		}
	}
	out := slashInManifest.ReplaceAllStringFunc(manifestYAML, func(m string) string {
		sub := slashInManifest.FindStringSubmatch(m)
		return sub[1] + c.Name("/"+sub[2])
	})
	out = strings.Replace(out, "\n  name: runwatch\n", "\n  name: "+name+"\n", 1)
	return strings.Replace(out, "\n    display_name: runwatch\n", "\n    display_name: "+name+"\n", 1)
}
