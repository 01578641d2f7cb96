#!/usr/bin/env bash
# Records the peer corpus: every recordpeer scenario (or those named as arguments) against the third-party
# vLLM simulator, two at a time, each into the file `recordpeer -path` names: reports/testdata/peer/NAME.jsonl,
# the held-out jobs (scripts/recordpeer/heldout.go) apart in reports/testdata/peer/heldout/NAME.jsonl. SEED=N
# (N > 0) records draw N of each scenario instead (recordpeer -seed N: every seed moved by 100*N) into seeds/
# beside them (seeds/NAME.sN.jsonl). COPY_TO=DIR also copies each finished trace there; each recording's
# progress log goes to $LOG_DIR/NAME.log (NAME.sN.log with SEED; default: a temporary directory). Run from
# anywhere; the simulator is read from ../shared/peers/ beside the repository (SIM=path.gz to override).
set -euo pipefail
cd "$(dirname "$0")/.."
sim="${SIM:-../shared/peers/llm-d-inference-sim/llm-d-inference-sim.gz}"
go build -o /tmp/recordpeer.$$ ./scripts/recordpeer
trap 'rm -f /tmp/recordpeer.$$' EXIT
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  mapfile -t names < <(/tmp/recordpeer.$$ -list | awk '{print $1}')
fi
seed="${SEED:-0}"
suffix=
if [ "$seed" != 0 ]; then suffix=.s$seed; fi
logs="${LOG_DIR:-$(mktemp -d)}"
mkdir -p "$logs"
one() {
  local n=$1 out log=$logs/$1$suffix.log
  if ! out=$(/tmp/recordpeer.$$ -scenario "$n" -seed "$seed" -path); then
    echo "$n: no such scenario (recordpeer -list names them)" >&2
    return
  fi
  if /tmp/recordpeer.$$ -sim "$sim" -scenario "$n" -seed "$seed" -out "$out" 2>"$log"; then
    tail -1 "$log"
    if [ -n "${COPY_TO:-}" ]; then cp "$out" "$COPY_TO/"; fi
  else
    echo "$n failed (recording $out); see $log" >&2
  fi
}
running=0
for n in "${names[@]}"; do
  one "$n" &
  running=$((running + 1))
  if [ "$running" -ge 2 ]; then wait -n; running=$((running - 1)); fi
done
wait
