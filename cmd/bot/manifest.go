package main

import (
	"context"
	"fmt"
	"os"

	"runwatch/config"
	"runwatch/slackapp"
)

// runManifest prints the Slack app manifest for the run file's command names (commands:): a second
// runwatch app in a workspace is created from it, under names of its own.
func runManifest(ctx context.Context, a *app, args []string) error {
	flags := a.flags()
	name := flags.String("name", "", "the app's name and its bot's (default runwatch, with the commands' suffix or prefix)")
	if err := parseNoArgs(flags, args, "manifest takes no arguments"); err != nil {
		return err
	}
	if err := loadDotEnv(a.log); err != nil {
		return err
	}
	env, err := config.LoadEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	var commands config.Commands
	path, err := config.Locate(a.configPath, env.ConfigPath)
	if err != nil {
		return err
	}
	if path != "" {
		f, err := config.Load(path, os.LookupEnv)
		if err != nil {
			return err
		}
		commands = f.Commands
	}
	_, err = fmt.Fprint(a.stdout, slackapp.Manifest(commands, *name))
	return err
}
