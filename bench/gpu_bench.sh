#!/usr/bin/env bash
# The GPU benchmark (docs/gpu.md): `attngeom bench --device cuda` on a random LLaMA-3-8B-shaped
# bf16 checkpoint at T = 1024 and 4096 (bf16, and the exact fp32 path at 1024), beside
# transformers' own eager forward with every attention row (bench/hf_eager_gpu.py) on the same
# GPU in the same run, then `analyze --device cuda` end to end with its report.
#   bench/gpu_bench.sh BUILD_DIR OUT_DIR      (WORK: where the 16 GB checkpoint goes)
set -uo pipefail
BIN=$1/src/attngeom
OUT=$2
WORK=${WORK:-/tmp/attngeom-gpu-bench}
mkdir -p "$OUT" "$WORK"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv | tee "$OUT/machine.txt"
grep -m1 "model name" /proc/cpuinfo | tee -a "$OUT/machine.txt"
MODEL=$WORK/llama3-8b
[ -f "$MODEL/config.json" ] || python3 tools/make_random_checkpoint.py --preset llama3-8b \
  --tokenizer models/organism/tokenizer.model --out "$MODEL" | tail -1
for T in 1024 4096; do
  "$BIN" bench --model "$MODEL" --seq-len $T --device cuda --precision bf16 --repeats 3 | tee -a "$OUT/bench.jsonl"
done
python3 bench/hf_eager_gpu.py --model "$MODEL" --seq-len 1024 --seq-len 4096 | tee "$OUT/hf_eager.jsonl"
# The table now, and again at the end: a run cut short by its time limit still leaves one.
python3 bench/gpu_table.py "$OUT/bench.jsonl" "$OUT/hf_eager.jsonl" > "$OUT/table.md"
# What each GPU part buys: attention by query blocks instead of the fused kernel; one layer
# at a time; the deviations, then the selection metrics on the CPU.
for T in 1024 4096; do
  "$BIN" bench --model "$MODEL" --seq-len $T --device cuda --precision bf16 --repeats 3 --blocked-attention |
    tee -a "$OUT/bench.jsonl"
  for ABLATION in "--layer-workers 1" "--cpu-deviations" "--cpu-selection"; do
    "$BIN" bench --model "$MODEL" --seq-len $T --device cuda --precision bf16 --repeats 3 --stages analyze $ABLATION |
      tee -a "$OUT/bench.jsonl"
  done
done
time "$BIN" analyze --device cuda --model "$MODEL" --data models/organism/heldout.txt --seq-len 1024 \
  --num-seqs 8 --out "$WORK/run" --overwrite > "$OUT/analyze.log" 2>&1
tail -4 "$OUT/analyze.log"
cp "$WORK/run/report.html" "$OUT/" 2>/dev/null && ls -la "$OUT/report.html"
"$BIN" bench --model "$MODEL" --seq-len 1024 --device cuda --precision fp32 --repeats 3 --stages forward,capture |
  tee -a "$OUT/bench.jsonl"
python3 bench/gpu_table.py "$OUT/bench.jsonl" "$OUT/hf_eager.jsonl" | tee "$OUT/table.md"
