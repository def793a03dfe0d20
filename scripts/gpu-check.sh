#!/usr/bin/env bash
# One call on a lent GPU machine (docs/gpu.md): `make test-cuda`, then the GPU benchmark with
# the time left, both inside DEADLINE seconds; the benchmark's checkpoint is written while
# the build runs. Logs and the benchmark's files go to OUT_DIR; the summary ends the output.
#   scripts/gpu-check.sh OUT_DIR [DEADLINE_S=540]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1
DEADLINE=${2:-540}
t0=$(date +%s)
left() { echo $((DEADLINE - ($(date +%s) - t0))); }
# A GPU test that finds no GPU here fails rather than skips (a driver the build cannot use).
export PYTHONUNBUFFERED=1 JOBS=${JOBS:-$(nproc)} CTEST_JOBS=${CTEST_JOBS:-8} ATTNGEOM_EXPECT_GPU=1
WORK=${WORK:-/tmp/attngeom-gpu-bench}
mkdir -p "$OUT/bench" "$WORK"
[ -f "$WORK/llama3-8b/config.json" ] || python3 tools/make_random_checkpoint.py --preset llama3-8b \
  --tokenizer models/organism/tokenizer.model --out "$WORK/llama3-8b" >"$WORK/checkpoint.log" 2>&1 &
checkpoint=$!
{ nvidia-smi; nproc; nvcc --version | tail -1; } >"$OUT/test-cuda.log" 2>&1
# The benchmark needs about three minutes; the tests get the rest.
limit=$(($(left) - 180))
if [ "$limit" -gt 0 ]; then
  timeout "$limit" bash scripts/test-cuda.sh >>"$OUT/test-cuda.log" 2>&1
  echo "test-cuda: exit $? after $(($(date +%s) - t0)) s"
else
  echo "test-cuda: not run ($DEADLINE s leave none beside the benchmark)"
fi
grep -E "tests passed|\((Failed|SEGFAULT|Timeout|Subprocess aborted)\)|FAILED:|CMake Error" "$OUT/test-cuda.log" | tail -25
wait $checkpoint
cp "$WORK/checkpoint.log" "$OUT/" 2>/dev/null
limit=$(($(left) - 5))
echo "bench: $limit s left"
if [ "$limit" -gt 0 ]; then
  WORK=$WORK timeout "$limit" bash bench/gpu_bench.sh build-cuda "$OUT/bench" >"$OUT/bench.log" 2>&1
  echo "bench: exit $?"
else
  echo "bench: not run (no time left)"
fi
tail -12 "$OUT/bench.log"
cat "$OUT/bench/table.md" 2>/dev/null
