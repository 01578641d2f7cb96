package conversation

import (
	"strings"

	"runwatch/config"
)

// This file is the slash commands as the Slack app was installed: runwatch's own are /eta, /storage and
// /runwatch, and a second runwatch app in a workspace installs them under names of its own (the run file's
// commands:, e.g. a suffix -b200). The command table, help and every answer that names a command follow.

// slashBases are runwatch's own slash commands, longest first (so that /runwatch is not read as /r...).
var slashBases = []string{"/runwatch", "/storage", "/eta"}

// SlashName is the installed name of one of runwatch's slash commands ("/eta", "/storage", "/runwatch").
func (b *Bot) SlashName(base string) string { return b.mon.Config().Commands.Name(base) }

// SlashCommand is the command table's name for an installed slash command ("eta", "storage", or
// "runwatch" for the one that takes a subcommand); "" for a command that is none of them.
func (b *Bot) SlashCommand(installed string) string {
	for _, base := range slashBases {
		if b.SlashName(base) == installed {
			return strings.TrimPrefix(base, "/")
		}
	}
	return ""
}

// installedNames renames the slash commands in the table's Slash, Usage and Examples as c installs them.
func installedNames(cmds []Command, c config.Commands) []Command {
	rename := func(s string) string {
		for _, base := range slashBases {
			if s == base || strings.HasPrefix(s, base+" ") {
				return c.Name(base) + s[len(base):]
			}
		}
		return s
	}
	for i := range cmds {
		cmds[i].Slash = rename(cmds[i].Slash)
		cmds[i].Usage = rename(cmds[i].Usage)
		ex := make([]string, len(cmds[i].Examples))
		for j, e := range cmds[i].Examples {
			ex[j] = rename(e)
		}
		cmds[i].Examples = ex
	}
	return cmds
}
