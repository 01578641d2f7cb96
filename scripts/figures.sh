#!/usr/bin/env bash
# Measures the figures of docs/performance.md and docs/reliability.md on this machine and writes
# their generated part: everything below the marker line each page has (the prose above it is
# written by hand and left alone).
#
#   scripts/figures.sh                   benchmarks (-count 5; the ETA accuracy benchmark once, which writes
#                                        docs/eta-accuracy.md whole), then the fault, restart, security
#                                        and soak tests (the soak: a week of samples, 10-20 min)
#   COUNT=1 SOAK_HOURS=8 scripts/figures.sh    a quick look
#   FIGURES_DIR=out scripts/figures.sh   keep the raw outputs (default: a temporary directory)
#   FIGURES_DIR=out REPORT_ONLY=1 scripts/figures.sh   write the pages again from kept outputs
#   FIGURES_DIR=out SKIP_BENCH=1 scripts/figures.sh     measure the tests again, keep the benchmarks
#   DOCS_DIR=dir scripts/figures.sh      write the pages in another directory (default: docs)
#
# Benchmarks run with `go test -run XXX -bench . -benchmem -count $COUNT` in every package that
# has them and are summarised by benchstat; its text output is turned into Markdown tables. The
# tests run with -v; each reports its measured figure in a log line starting "figure:" (the
# soak's starts "soak:").
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
    printf '%s\n' "$machine" > "$dir/bench.machine"
    printf '%s, -count %s\n' "$(date -u +%Y-%m-%d)" "$count" > "$dir/bench.when"
    bench_pkgs=$(grep -l '^func Benchmark' $(git ls-files '*_test.go') | xargs -n1 dirname | sort -u | sed 's|^|./|')
    : > "$dir/bench.txt"
    for pkg in $bench_pkgs; do
      # The accuracy benchmark replays both ETA corpora once (below), not $count times.
      echo ">> go test -run XXX -bench . -skip 'BenchmarkAccuracy\$' -benchmem -count $count $pkg" >&2
      go test -run XXX -bench . -skip 'BenchmarkAccuracy$' -benchmem -count "$count" -timeout 60m "$pkg" | tee -a "$dir/bench.txt" >&2
    done
    # The ETA accuracy page is generated whole by the benchmark: its tables and why each estimator constant
    # holds its value. Its ratios join the targets below.
    local page
    page="$(pwd)/${DOCS_DIR:-docs}/eta-accuracy.md"
    echo ">> go test -run XXX -bench 'Accuracy\$' -benchtime 1x ./reports -accuracy.docs $page" >&2
    go test -run XXX -bench 'Accuracy$' -benchtime 1x -timeout 60m ./reports -accuracy.docs "$page" | tee -a "$dir/bench.txt" >&2
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
  printf '%s\n' "$machine" > "$dir/reliability.machine"
  printf '%s, the soak %s simulated hours\n' "$(date -u +%Y-%m-%d)" "$soak_hours" > "$dir/reliability.when"
  # Every package: a test is found by its name wherever it lives, however the packages are split.
  RUNWATCH_SOAK_HOURS="$soak_hours" go test -count=1 -v -timeout 90m -run "$tests" ./... > "$dir/reliability.txt" 2>&1
  status=$?
  set -e
  echo $status > "$dir/status"
}

# The generated part of a page starts after this line; write_page keeps everything up to it.
marker='<!-- Generated by scripts/figures.sh below this line: edit the script, not the tables. -->'

# write_page FILE writes stdin below FILE's marker line, leaving the hand-written part above it alone.
write_page() {
  local file=$1 tmp
  if ! grep -qxF -- "$marker" "$file"; then
    echo "$file has no marker line; add this one where the generated tables start:" >&2
    echo "$marker" >&2
    return 1
  fi
  tmp=$(mktemp "$file.XXXXXX")
  { awk -v m="$marker" '{ print } $0 == m { exit }' "$file"; echo; cat; } > "$tmp"
  mv "$tmp" "$file"
  echo "wrote $file" >&2
}

# info NAME prints what measure recorded in $dir/NAME ("unknown" for outputs kept before it did).
info() { cat "$dir/$1" 2>/dev/null || echo unknown; }

# The targets the issues set, looked up in the benchmarks by name (in any package) and unit; a unit
# "a/b" (not .../op) is the ratio of two of the benchmark's metrics. Fields: what|benchmark|unit|target.
targets=$(cat <<'TARGETS'
mount of a path among 1,000 mounts|MountLookup|sec/op|under 10 ms
the same with symlinks followed (real files)|ResolveLookup|sec/op|
writers scan, fixture of 2,000 processes × 50 fds, 4 workers (the default on 2 cores)|WritersScan/workers=4|sec/op|under 200 ms
writers scan, real /proc with 500 extra processes × 50 fds (statx for the mount id)|WritersScanRealProc/statx|sec/op|
the same through fdinfo (the fallback where statx cannot tell)|WritersScanRealProc/fdinfo|sec/op|
newest progress line from a 1 MiB log|LogTail/1MiB|sec/op|the same cost as 2 GiB
newest progress line from a 2 GiB log|LogTail/2GiB-sparse|sec/op|the same cost as 1 MiB
parse a 1 MiB vLLM exposition|ParseMetrics1MiB|sec/op|under 20 ms
"ETA?" mention answered end to end (probes against httptest), median|MentionETA|ms-median|under 50 ms
the same, 90th percentile|MentionETA|ms-p90|
one estimate from a run's history|Estimate|sec/op|
one estimate after one more sample, a history of 100 samples (with the run's memo)|EstimateHistory/next/samples=100|sec/op|flat in the history
the same, 2,000 samples|EstimateHistory/next/samples=2000|sec/op|flat in the history
the same, 20,000 samples (a week at 30 s)|EstimateHistory/next/samples=20000|sec/op|flat in the history
a one-shot estimate without a memo, 100 samples|EstimateHistory/one-shot/samples=100|sec/op|
the same, 2,000 samples|EstimateHistory/one-shot/samples=2000|sec/op|
the same, 20,000 samples (compacted to 1,500 first)|EstimateHistory/one-shot/samples=20000|sec/op|
a status chart's data over 2,000 samples, a sample after the run's last chart|RenderChart/next|sec/op|
the same, with no chart of the run drawn before|RenderChart/first|sec/op|
`/runwatch chart` end to end over 2,000 samples, a sample after the last chart|ChartCommand/next|sec/op|
the same, with no chart drawn before|ChartCommand/first|sec/op|
the estimator's mean finish-time error ÷ the better of linear extrapolation and tqdm's EMA, first corpus, a counter per iteration|Accuracy|first_per_iteration_ratio|at most 0.85x
the same, first corpus, a counter on finish|Accuracy|first_on_finish_ratio|at most 0.85x
the same, first corpus, the log only|Accuracy|first_log_only_ratio|
the same, second corpus, a counter per iteration|Accuracy|second_per_iteration_ratio|at most 0.85x
the same, second corpus, a counter on finish|Accuracy|second_on_finish_ratio|at most 0.85x
the same, second corpus, the log only|Accuracy|second_log_only_ratio|
the same, runwatch started on a job already 10% done|Accuracy|mid_job_ratio|
the same, the held-out jobs|Accuracy|heldout_ratio|
status of 100 runs × 8 servers from one Prometheus|StatusManyRuns/steady/latency=0s|sec/op|within the 2 s probe budget
the same at 5 ms per query|StatusManyRuns/steady/latency=5ms|sec/op|within the 2 s probe budget
the first status of a fresh bot, 6 h of history read back|StatusManyRuns/fresh/6h|sec/op|
CPU of one `bot exporter` scrape, 600 processes|ExporterScrape600|cpu-ms/scrape|
discovery's probes of 200 listening ports (150 answering 404, 40 silent, 10 engines), the proc walk and the job|Discover200Listeners/probes|sec/op|under 300 ms
the whole discovery, its looks for the engines' clients spread over a second|Discover200Listeners/whole|sec/op|
storage status of 10 runs from one writer scan, 100 processes|WriterScan/procs=100|sec/op|
the same, 1,000 processes|WriterScan/procs=1000|sec/op|
the same, 5,000 processes|WriterScan/procs=5000|sec/op|
200 storage questions at once over 10 runs, 640 processes (9,600 writers): 99th percentile|StorageConcurrent/procs=640|p99-ms|under 1 s
the same, 5,000 processes|StorageConcurrent/procs=5000|p99-ms|under 1 s
`bot serve` sampling 1 run every 1 s, 640 processes (9,600 writers): heap kept|ServeSampling/runs=1/procs=640|heap-MiB|flat in runs
the same, 10 runs|ServeSampling/runs=10/procs=640|heap-MiB|flat in runs
the same, 50 runs|ServeSampling/runs=50/procs=640|heap-MiB|under 60 MiB
`bot serve` sampling 10 runs every 1 s at 5,000 processes: CPU|ServeSampling/runs=10/procs=5000|%core@1s|under 15% of a core
the same, 50 runs at 640 processes|ServeSampling/runs=50/procs=640|%core@1s|
Prometheus queries per sample, 1 run × 16 hosts (real Prometheus)|PrometheusManyRuns/runs=1/hosts=16|queries-per-sample|
the same, 10 runs × 16 hosts|PrometheusManyRuns/runs=10/hosts=16|queries-per-sample|
the same, 50 runs × 16 hosts|PrometheusManyRuns/runs=50/hosts=16|queries-per-sample|growing with selectors asked, not runs
a fresh one-shot status, 50 runs × 16 hosts|PrometheusManyRuns/runs=50/hosts=16|status-s|within 3 s
`bot serve` CPU at 30 s sampling, 50 runs × 16 hosts|PrometheusManyRuns/runs=50/hosts=16|%core@30s|under 1% of a core
Prometheus CPU added at 30 s sampling, 50 runs × 16 hosts|PrometheusManyRuns/runs=50/hosts=16|prom%core@30s|under 1% of a core
TARGETS
)

# bench_rows turns benchstat's text output into tab-separated rows: package, benchmark, unit,
# median, ± interval.
bench_rows() {
  awk -v OFS='\t' '
    /^pkg: / { pkg = $2; sub(/^runwatch\//, "", pkg); head = 0; next }
    /│/ {
      # Each table has two header lines: the input file name, then the unit.
      if (head) { line = $0; gsub(/│/, " ", line); split(line, f, " "); unit = f[1] }
      head = !head
      next
    }
    { head = 0 }
    /^(goos|goarch|cpu|geomean)[: ]/ || NF < 2 || $1 ~ /^[¹²³⁴]/ { next }
    { name = $1; sub(/-[0-9]+$/, "", name); print pkg, name, unit, $2, ($3 == "±" ? $4 : "") }
  ' "$1"
}

# perf_report prints the generated part of docs/performance.md from benchstat's text output.
perf_report() {
  local rows
  rows=$(bench_rows "$dir/benchstat.txt")
  cat <<EOF
## Measured

Written by \`scripts/figures.sh\` from \`go test -run XXX -bench . -benchmem\` in every package with
benchmarks, summarised by benchstat (the median ± the 90% confidence interval over the runs).
Measured on $(info bench.machine), $(info bench.when).

### Against the targets

| what | benchmark | target | measured |
| --- | --- | --- | --- |
EOF
  awk -F'|' '
    # num reads a value as benchstat writes it, with an SI or binary prefix: 891.3µ, 1.284M, 351.8Ki.
    function num(v,   m) {
      m = 1
      if (sub(/Ki$/, "", v)) m = 1024
      else if (sub(/Mi$/, "", v)) m = 1048576
      else if (sub(/Gi$/, "", v)) m = 1073741824
      else if (sub(/n$/, "", v)) m = 1e-9
      else if (sub(/µ$/, "", v)) m = 1e-6
      else if (sub(/m$/, "", v)) m = 1e-3
      else if (sub(/k$/, "", v)) m = 1e3
      else if (sub(/M$/, "", v)) m = 1e6
      else if (sub(/G$/, "", v)) m = 1e9
      return (v + 0) * m
    }
    function show(x, unit) {
      if (unit == "sec/op") {
        if (x >= 1) return sprintf("%.3g s", x)
        if (x >= 1e-3) return sprintf("%.3g ms", x * 1e3)
        return sprintf("%.3g µs", x * 1e6)
      }
      if (unit ~ /^ms-/) return sprintf("%.3g ms", x)
      if (unit ~ /%$/) return sprintf("%.3g%%", x)
      if (unit ~ /ratio$/) return sprintf("%.2fx", x)
      return sprintf("%.3g %s", x, unit)
    }
    FNR == NR { split($0, f, "\t"); val[f[2] SUBSEP f[3]] = num(f[4]); next }
    {
      b = $2; unit = $3; target = ($4 == "" ? "—" : $4); m = "not in this run"
      if (unit !~ /\/op$/ && split(unit, u, "/") == 2) {
        if (((b SUBSEP u[1]) in val) && val[b SUBSEP u[2]] > 0)
          m = sprintf("%.2fx", val[b SUBSEP u[1]] / val[b SUBSEP u[2]])
      } else if ((b SUBSEP unit) in val) {
        m = show(val[b SUBSEP unit], unit)
      }
      printf("| %s | `%s` | %s | %s |\n", $1, b, target, m)
    }
  ' <(printf '%s\n' "$rows") <(printf '%s\n' "$targets")
  echo
  echo "### Every benchmark"
  printf '%s\n' "$rows" | awk -F'\t' '
    function cell(v, ci) { return ci == "" ? v : v " ± " ci }
    # plain writes a metric of its own unit without benchstat'"'"'s SI prefix (650.9m is 0.6509).
    function plain(v,   m) {
      m = 0
      if (sub(/n$/, "", v)) m = 1e-9
      else if (sub(/µ$/, "", v)) m = 1e-6
      else if (sub(/m$/, "", v)) m = 1e-3
      return m ? sprintf("%.4g", v * m) : v
    }
    function flush(   i, b) {
      if (pkg == "") return
      printf("\n#### %s\n\n| benchmark | time/op | bytes/op | allocs/op |\n| --- | --- | --- | --- |\n", pkg)
      for (i = 1; i <= nb; i++) { b = order[i]; printf("| `%s` | %s | %s | %s |\n", b, t[b], by[b], al[b]) }
      if (no > 0) {
        printf("\n| benchmark | metric | median |\n| --- | --- | --- |\n")
        for (i = 1; i <= no; i++) print other[i]
      }
      split("", seen); nb = 0; no = 0
    }
    NF < 4 { next }
    $1 != pkg { flush(); pkg = $1 }
    {
      b = $2
      if (!(b in seen)) { seen[b] = 1; order[++nb] = b; t[b] = by[b] = al[b] = "" }
      if ($3 == "sec/op") t[b] = cell($4 "s", $5)
      else if ($3 == "B/op") by[b] = cell($4 "B", $5)
      else if ($3 == "allocs/op") al[b] = cell($4, $5)
      else other[++no] = sprintf("| `%s` | %s | %s |", b, $3, cell(plain($4), $5))
    }
    END { flush() }
  '
}

# reliability_report prints the generated part of docs/reliability.md from the tests' -v output.
reliability_report() {
cat <<EOF
## Measured

Written by \`scripts/figures.sh\` from \`go test -v\` of each fault, restart, security and soak test,
with what it measured. Measured on $(info reliability.machine), $(info reliability.when).

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
  local docs="${DOCS_DIR:-docs}"
  if [ -z "${REPORT_ONLY:-}" ]; then
    measure
  fi
  perf_report | write_page "$docs/performance.md"
  reliability_report | write_page "$docs/reliability.md"
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
