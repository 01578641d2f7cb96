#!/bin/sh
# crossings.sh counts the calls an "ETA?" mention's answer makes from the Slack event to chat.postMessage,
# and those that cross a package: it runs slackapp's TestMentionETAPostedInItsThread with coverage, then
# scripts/crossings (its own module: it needs golang.org/x/tools) walks the call graph from App.event
# through the conversation and the Slack transport, keeping the calls that ran. docs/architecture.md
# quotes its figures.
set -eu
cd "$(dirname "$0")/.."
cover=$(mktemp)
trap 'rm -f "$cover"' EXIT
go test -count=1 -run '^TestMentionETAPostedInItsThread$' -coverpkg=runwatch/... -coverprofile="$cover" ./slackapp >/dev/null
cd scripts/crossings
go run . -dir ../.. -cover "$cover" -entry '(*runwatch/slackapp.App).event' \
  -layers runwatch/slackapp,runwatch/conversation,runwatch/internal/flight "$@"
