#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short budget each (FUZZTIME, default 10s). A crash
# fails the script; Go writes the crashing input under the package's testdata/fuzz/<Target>/, where
# it stays as a regression case that plain `go test` replays.
#
#   scripts/fuzz.sh                 every target, 10 s each
#   FUZZTIME=1m scripts/fuzz.sh     longer
#   FUZZJOBS=1 scripts/fuzz.sh      one target at a time, with every CPU's worker
#   scripts/fuzz.sh ./probes        only the targets of one package
#
# Each package's fuzzing binary is built once (go test -c -fuzz) and runs each of its targets: a
# `go test -fuzz` per target linked the same instrumented binary again for each (six times for
# probes). Targets run FUZZJOBS at a time (default: one per CPU), each with one fuzzing worker, so the
# CPUs are as busy as with one target at a time and all of its workers, and the script takes a
# FUZZJOBS-th of the time.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
fuzztime="${FUZZTIME:-10s}"
jobs="${FUZZJOBS:-$(nproc)}"
workers=1
if [ "$jobs" -le 1 ]; then
  jobs=1
  workers=$(nproc)
fi
pkgs=("$@")
if [ ${#pkgs[@]} -eq 0 ]; then
  pkgs=($(go list -f '{{.Dir}}' ./... | sed "s|^$PWD|.|"))
fi
cache="$(go env GOCACHE)/fuzz"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

# inputs counts the files in a corpus directory (0 when it does not exist yet).
inputs() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }

# fuzz runs one target with its package's binary and leaves "ok", "flaked" or "failed" in $bin/<n>.result,
# its output in $bin/<n>.log.
fuzz() {
  local n=$1 pkg=$2 target=$3 test=$4
  local corpus="$pkg/testdata/fuzz/$target" log="$bin/$n.log"
  local before
  before=$(inputs "$corpus")
  # -test.fuzzminimizetime: minimizing each new interesting input defaults to 60 s, which spent whole
  # budgets shrinking a handful of inputs (FuzzParseMetrics ran 19 inputs in 10 s; with 1 s, 2,279).
  if (cd "$pkg" && "$test" -test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$fuzztime" -test.fuzzminimizetime=1s \
    -test.parallel="$workers" -test.fuzzcachedir="$cache" -test.paniconexit0 -test.timeout=10m) > "$log" 2>&1; then
    echo ok > "$bin/$n.result"
    return
  fi
  # Go 1.26's fuzzing coordinator can end a run at -fuzztime with a bare "context deadline exceeded" and
  # no crashing input (golang/go#75804, fixed in Go 1.27): not a finding. Any other failure, or one that
  # wrote an input to testdata/fuzz, is.
  if [ "$(inputs "$corpus")" -eq "$before" ] && grep -q '^    context deadline exceeded$' "$log" && ! grep -q 'Failing input written' "$log"; then
    echo flaked > "$bin/$n.result"
  else
    echo failed > "$bin/$n.result"
  fi
}

names=()
count=0
for pkg in "${pkgs[@]}"; do
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$pkg"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
  [ -n "$targets" ] || continue
  test="$bin/$(echo "$pkg" | tr './' '__').test"
  echo "== build $pkg"
  go test -c -fuzz=. -o "$test" "$pkg"
  for target in $targets; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
      wait -n || true
    done
    count=$((count + 1))
    names[$count]="$pkg $target"
    echo "== $pkg $target ($fuzztime)"
    fuzz "$count" "$pkg" "$target" "$test" &
  done
done
wait

failed=()
flaked=()
for n in $(seq 1 "$count"); do
  case "$(cat "$bin/$n.result" 2>/dev/null || echo failed)" in
  ok) echo "== ${names[$n]}: $(tail -n 2 "$bin/$n.log" | head -n 1)" ;;
  flaked)
    cat "$bin/$n.log"
    echo "(ended by golang/go#75804 at the -fuzztime deadline, no crashing input: not counted)"
    flaked+=("${names[$n]}")
    ;;
  *)
    cat "$bin/$n.log"
    failed+=("${names[$n]}")
    ;;
  esac
done
echo "fuzzed $count targets for $fuzztime each, $jobs at a time with $workers worker(s) each (${#flaked[@]} ended by golang/go#75804)"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
