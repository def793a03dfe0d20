#!/usr/bin/env bash
# Runs libFuzzer targets one at a time, each for RUNS executions or SECONDS seconds,
# whichever comes first (defaults: 1M, 600), starting from the committed seeds.
# New interesting inputs go to $WORK/<target>/ (not the repository); a crash, leak or
# timeout leaves $WORK/<target>-crash-* (or leak-/timeout-) and stops that target.
# Usage: fuzz/run.sh [BUILD_DIR] [TARGET...]     (see docs/robustness.md)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build-fuzz}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors config tokenizer corpus)
RUNS="${RUNS:-1000000}"
SECONDS_PER_TARGET="${SECONDS_PER_TARGET:-600}"
WORK="${WORK:-$build/fuzz-work}"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$WORK/$t"
  start=$(date +%s)
  "$build/fuzz/fuzz_$t" -runs="$RUNS" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -max_len=8192 -print_final_stats=1 -artifact_prefix="$WORK/$t-" "$WORK/$t" "$here/corpus/$t" \
    > "$WORK/$t.log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$WORK/$t.log" | grep -o '[0-9]*$')
  echo "fuzz_$t: exit $rc, ${runs:-?} executions in $(( $(date +%s) - start )) s (log: $WORK/$t.log)"
  [ $rc -eq 0 ] || status=1
done
exit $status
