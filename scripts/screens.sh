#!/usr/bin/env bash
# Draws the pictures of Slack in the README and docs/slack.md from the real Block Kit: TestScreens
# captures what the recording Web API stand-in received for a scheduled status and for the App
# Home, TestScreensWarningLife a warning's three messages (posted, claimed, resolved), and
# scripts/blockkit-png draws each as Slack's light theme would, into docs/.
#
#   scripts/screens.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test ./slackapp -run '^TestScreens(WarningLife)?$' -count 1 -args -screens "$dir"
mkdir -p docs
for s in status home warning-posted warning-claimed warning-resolved; do
  go run ./scripts/blockkit-png -in "$dir/$s.json" -out "docs/slack-$s.png"
  echo "docs/slack-$s.png"
done
