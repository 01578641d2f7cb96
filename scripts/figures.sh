#!/usr/bin/env bash
# Measures the figures in the README's "Performance" and "Reliability" sections on this machine
# and prints both sections as Markdown, ready to paste.
#
#   scripts/figures.sh                   benchmarks (-count 5), then the fault, restart, security
#                                        and soak tests (the soak: a week of samples, 10-20 min)
#   COUNT=1 SOAK_HOURS=8 scripts/figures.sh    a quick look
#   FIGURES_DIR=out scripts/figures.sh   keep the raw outputs (default: a temporary directory)
#   FIGURES_DIR=out REPORT_ONLY=1 scripts/figures.sh   print the sections again from kept outputs
#   FIGURES_DIR=out SKIP_BENCH=1 scripts/figures.sh     measure the tests again, keep the benchmarks
#
# Benchmarks run with `go test -run XXX -bench . -benchmem -count $COUNT` in every package that
# has them and are summarised by benchstat. The tests run with -v; each reports its measured
# figure in a log line starting "figure:" (the soak's starts "soak:").
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin:$HOME/go/bin"
count="${COUNT:-5}"
soak_hours="${SOAK_HOURS:-168}"
dir="${FIGURES_DIR:-$(mktemp -d)}"
mkdir -p "$dir"
benchstat=(go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da)

cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
machine="$(nproc) cores ($(nproc) × ${cpu:-unknown CPU}), $(go env GOOS)/$(go env GOARCH), $(go version | awk '{print $3}')"

measure() {
  # Benchmarks.
  if [ -z "${SKIP_BENCH:-}" ]; then
    bench_pkgs=$(grep -l '^func Benchmark' $(git ls-files '*_test.go') | xargs -n1 dirname | sort -u | sed 's|^|./|')
    : > "$dir/bench.txt"
    for pkg in $bench_pkgs; do
      echo ">> go test -run XXX -bench . -benchmem -count $count $pkg" >&2
      go test -run XXX -bench . -benchmem -count "$count" -timeout 60m "$pkg" | tee -a "$dir/bench.txt" >&2
    done
    # Five runs allow at most a 93.75% confidence interval; benchstat wants 95% unless told.
    # Run from $dir so the tables are headed "bench.txt", not a temporary path.
    (cd "$dir" && "${benchstat[@]}" -confidence 0.9 bench.txt > benchstat.txt)
  fi

  # Faults, restart, security, soak.
  local tests='^(TestFault.*|TestServeSurvivesKill9|TestSoak|TestSecurity.*|TestSaveOn.*|TestUnreadableFileIsSetAsideNotLost'
  tests+='|TestCorruptTwiceKeepsBoth|TestOpenRemovesTempFilesLeftByACrash|TestCorruptFileIsSetAsideNotLost'
  tests+='|TestSampleHistorySurvivesRestart|TestCounterResetCarriesTotals|TestStatFSHungMount|TestLogReadFollowsRotation'
  tests+='|TestLogReadErrors|TestScrapeErrors|TestScrapeDefaultLimit|TestPrometheusDeadOrSlow|TestSlackSigningExample'
  tests+='|TestHTTPBodyCapped|TestHTTPEventsAnsweredOnce|TestHTTPMentionEscapesOutsideText|TestSlackAPIHonoursRetryAfter'
  tests+='|TestSlackAPIServerErrorsBounded|TestSlackAPIRedactsErrors|TestSocketMode|TestServeRestartKeepsSnoozeAndLivingMessage'
  tests+='|TestWarningsThreadedAndRetried|TestAskMutatingCommandsNeedAdmins|TestBotAllowedChannels|TestResolveTargetRefusesUnconfiguredPaths'
  tests+='|TestServeLeaksNoURLCredentials|TestServeKill9MidPostPostsOnce|TestScrapeRefusesCrossHostRedirects|TestPrometheusRefusesCrossHostRedirects'
  tests+='|TestHTTPReplayHexCaseAndRestart|TestEventsWithoutEventIDAnswered|TestHTTPLabelBombAnsweredWithinProbeTimeout'
  tests+='|TestHTTPFloodAcksNeverWait|TestFlappingIsOneWarning|TestScheduleStatusNamesFailedLog|TestRunFileLimits'
  tests+='|TestServeKill9MidStatusPostPostsOnce|TestScheduleKilledMidPost.*|TestPostNotRepeatedWhenItMayHaveLanded'
  tests+='|TestAnswerPanicLeavesTheBotRunning|TestAskPanicIsAReply|TestBadRunFileQuotesNoURLCredentials'
  tests+='|TestSocketModeRefusedEventAnsweredAfterRestart|TestSeenJournalForgetSurvivesRestart|TestServeClosesItsJournals)$'
  echo ">> go test -count=1 -v -run '$tests' (RUNWATCH_SOAK_HOURS=$soak_hours)" >&2
  set +e
  RUNWATCH_SOAK_HOURS="$soak_hours" go test -count=1 -v -timeout 90m -run "$tests" ./state ./probes ./monitor ./handlers ./cmd/bot ./config > "$dir/reliability.txt" 2>&1
  status=$?
  set -e
  echo $status > "$dir/status"
}

report() {
cat <<EOF
## Performance

Measured by \`scripts/figures.sh\` on $machine, $(date -u +%Y-%m-%d):
\`go test -run XXX -bench . -benchmem -count $count\` in every package with benchmarks, summarised
by benchstat (median ± the 90% confidence interval over the $count runs).

\`\`\`
$(cat "$dir/benchstat.txt")
\`\`\`

## Reliability

Measured by \`scripts/figures.sh\` on the same machine: each fault, restart, security and soak test
with what it measured (\`go test -v\`; the soak ran $soak_hours simulated hours).

| package, test | result | time | figure |
| --- | --- | --- | --- |
EOF
awk '
  # go test -v prints the tests of a package together, then "ok <package>": rows wait for it.
  BEGIN { n = 0; first = 0 }
  function flush(pkg) { for (i = first; i < n; i++) pkgof[i] = pkg; first = n }
  /^=== (RUN|NAME|CONT|PAUSE) / { cur = $3; next }
  /^ *--- (PASS|FAIL|SKIP): / {
    line = $0; sub(/^ *--- /, "", line)
    r = line; sub(/:.*/, "", r)
    name = line; sub(/^[A-Z]+: /, "", name); sub(/ .*/, "", name)
    d = line; sub(/.*\(/, "", d); sub(/s\)$/, "", d)
    res[n] = r; dur[n] = d; names[n] = name; fig[n] = figs[name]
    if (r == "SKIP") fig[n] = "skipped: " last[name]
    figs[name] = ""
    n++
    next
  }
  /^(ok|FAIL|---)[ \t]+runwatch\// { p = $2; sub(/^runwatch\//, "", p); flush(p); next }
  /^ +[A-Za-z0-9_]+_test\.go:[0-9]+: / {
    text = $0; sub(/^ +[A-Za-z0-9_]+_test\.go:[0-9]+: /, "", text)
    last[cur] = text
    if (text ~ /^(figure|soak): /) {
      sub(/^figure: /, "", text)
      figs[cur] = (figs[cur] == "" ? text : figs[cur] "; " text)
    }
  }
  END {
    others = ""
    for (i = 0; i < n; i++) {
      if (fig[i] != "" || res[i] != "PASS") {
        f = fig[i]; gsub(/\|/, "\\|", f)
        printf("| %s `%s` | %s | %ss | %s |\n", pkgof[i], names[i], res[i], dur[i], f)
      } else if (names[i] !~ /\//) {
        others = others (others == "" ? "" : ", ") "`" pkgof[i] "." names[i] "` (" dur[i] " s)"
      }
    }
    if (others != "") printf("\nAlso run, and passed, in the same go test: %s.\n", others)
  }
' "$dir/reliability.txt"
}

main() {
  if [ -z "${REPORT_ONLY:-}" ]; then
    measure
  fi
  report
  echo
  echo "Raw outputs: $dir (bench.txt, benchstat.txt, reliability.txt)" >&2
  status=$(cat "$dir/status" 2>/dev/null || echo 0)
  if [ "$status" -ne 0 ]; then
    echo "some reliability tests failed: see $dir/reliability.txt" >&2
    exit "$status"
  fi
}

# Defined above, run here: bash has read the whole script before it starts, so editing it while it
# runs does not derail it.
main "$@"
