#!/usr/bin/env bash
# The long-context GPU benchmark (docs/gpu.md): on the random LLaMA-3-8B-shaped bf16
# checkpoint of bench/gpu_bench.sh, `attngeom bench --device cuda` at T = 32768 with
# `--queries stride:256`, the forward pass and the full analysis of one sequence each in a
# process of its own under a time limit, with the GPU's used memory sampled every 100 ms;
# beside transformers' sdpa forward at the same length (its eager forward with attentions
# runs out of memory there, which its line records). Ends with bench/gpu_table.py's rows.
#   bench/gpu_long_bench.sh BUILD_DIR OUT_DIR [SEQ=32768] [QUERIES=stride:256] [LIMIT_S=150]
# WORK: where the checkpoint is (made here when absent).
set -uo pipefail
BIN=$1/src/attngeom
OUT=$2
SEQ=${3:-32768}
QUERIES=${4:-stride:256}
LIMIT=${5:-150}
WORK=${WORK:-/tmp/attngeom-gpu-bench}
mkdir -p "$OUT" "$WORK"
MODEL=$WORK/llama3-8b
[ -f "$MODEL/config.json" ] || python3 tools/make_random_checkpoint.py --preset llama3-8b \
  --tokenizer models/organism/tokenizer.model --out "$MODEL" | tail -1
# bench/gpu_table.py reads only the lines of this length.
LINES=$OUT/long.jsonl
PEERS=$OUT/long_hf.jsonl
: >"$LINES"
for STAGE in forward analyze; do
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$OUT/memory-$STAGE.csv" 2>/dev/null &
  sampler=$!
  start=$(date +%s)
  timeout "$LIMIT" "$BIN" bench --model "$MODEL" --seq-len "$SEQ" --queries "$QUERIES" --device cuda \
    --precision bf16 --stages "$STAGE" >>"$LINES" 2>"$OUT/bench-$STAGE.log"
  status=$?
  kill "$sampler" 2>/dev/null
  wait "$sampler" 2>/dev/null
  peak=$(sort -n "$OUT/memory-$STAGE.csv" | tail -1)
  echo "$STAGE at T = $SEQ ($QUERIES): exit $status after $(($(date +%s) - start)) s (limit $LIMIT s), peak GPU memory ${peak:-?} MiB"
  tail -2 "$OUT/bench-$STAGE.log"
done
timeout "$LIMIT" python3 bench/hf_eager_gpu.py --model "$MODEL" --seq-len "$SEQ" --repeats 1 >"$PEERS" 2>"$OUT/hf.log" ||
  echo "transformers at T = $SEQ: exit $? ($(tail -1 "$OUT/hf.log"))"
# One row from the two stages' lines: the forward's from the first, the analysis's from the second.
python3 - "$LINES" <<'EOF' >"$OUT/long_merged.jsonl"
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
merged = {}
for run in runs:
    merged.update(run)
print(json.dumps(merged) if merged else "")
EOF
python3 bench/gpu_table.py "$OUT/long_merged.jsonl" "$PEERS" | tee "$OUT/long_table.md"
