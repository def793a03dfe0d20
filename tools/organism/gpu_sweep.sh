#!/bin/bash
# The GPU sweep (issue 43): in one call of about 8.5 minutes on one GPU, the shipped shape (4 layers x
# 4 heads, d=128) for about 5 minutes and a wider, deeper shape (6 x 8, d=256) for about 3, each with
# batch 256 x 512, bf16 autocast, fused AdamW and a learning-rate schedule fitted to its time budget
# (train.py --minutes). Each run logs, as the CPU sweep does, the held-out loss, the bits per byte on
# the unseen text and the attention to BOS per layer against tokens seen (runs/NAME/log.csv).
#
#   bash tools/organism/gpu_sweep.sh prepare    # here, on Debian: prep.py if work/ lacks the corpus,
#                                               # then work-gpu/ (about 20 MB), what the GPU machine needs
#   OUT=DIR bash tools/organism/gpu_sweep.sh    # on the GPU machine, with tools/organism/work-gpu carried
#
# prep.py needs no network, but it reads Debian packages (fortunes, bible-kjv, debian-handbook,
# debian-reference-en, python3.11-doc, the documentation under /usr/share/doc) and sentencepiece's
# spm_train and spm_encode, which a GPU machine does not have: the corpus is prepared here and carried.
# Without a corpus in $WORK the script runs prep.py where those are installed, and stops otherwise.
#
# What comes back under $OUT (at most 6 files, about 40 MB): summary.txt (the table printed at the end),
# logs.tar.gz (runs/NAME/log.csv and train.log: untar it in tools/organism), with EXPORT_A=1
# export.tar.gz (the first run exported as models/organism is, by its own train.py on the GPU machine's
# CPU), and with KEEP_WEIGHTS=1 weights.tar.part-* (runs/NAME/final.pt, split at 15 MiB;
# `cat weights.tar.part-* | tar x`), which `train.py --export_from runs/NAME/final.pt --out DIR` exports.
#
# Environment: PYTHON (python3: a torch with CUDA), OUT (required), WORK (work-gpu, else work),
# DEVICE (cuda), SEC_A and SEC_B (training budgets in seconds, 290 and 180), DEADLINE (seconds for the
# whole script, 560; each run is under `timeout`), SHAPE_A and SHAPE_B (train.py shape flags), BATCH
# (256), CTX (512), WARMUP (100), PROBES (40 a run), THREADS (4), ATTN (auto), KEEP_WEIGHTS (1), EXPORT_A (1).
# A CPU rehearsal with tiny budgets: PYTHON=/usr/bin/python3 DEVICE=cpu SEC_A=45 SEC_B=30 BATCH=4
# CTX=128 WARMUP=5 PROBES=3 THREADS=1 OUT=/tmp/sweep bash tools/organism/gpu_sweep.sh
set -uo pipefail
cd "$(dirname "$0")"

if [ "${1:-}" = prepare ]; then
  PYTHON=${PYTHON:-/usr/bin/python3}
  if [ ! -f work/train_ids.npy ]; then
    "$PYTHON" prep.py --out work || { echo "prep.py failed: it needs the Debian packages that build.sh installs" >&2; exit 1; }
  fi
  rm -rf work-gpu/runs  # a rehearsal's runs would travel too
  mkdir -p work-gpu
  "$PYTHON" - <<'EOF' || exit 1
import os, shutil, numpy as np
for f in ("heldout_ids.npy", "unseen_ids.npy", "spm.vocab", "spm.model", "unseen.txt", "heldout.txt", "sources.json"):
    shutil.copy(os.path.join("work", f), os.path.join("work-gpu", f))
ids = np.load("work/train_ids.npy")
assert 0 <= ids.min() and ids.max() < 1 << 16
np.save("work-gpu/train_ids.npy", ids.astype(np.uint16))  # train.py reads any integer type
EOF
  du -sh work-gpu
  exit 0
fi

PYTHON=${PYTHON:-python3}
OUT=${OUT:?set OUT to the folder for the results}
if [ -z "${WORK:-}" ]; then WORK=work-gpu; [ -f work-gpu/train_ids.npy ] || WORK=work; fi
DEVICE=${DEVICE:-cuda}
SEC_A=${SEC_A:-290}
SEC_B=${SEC_B:-180}
DEADLINE=${DEADLINE:-560}
SHAPE_A=${SHAPE_A:---layers 4 --heads 4 --hidden 128 --ffn 384}
SHAPE_B=${SHAPE_B:---layers 6 --heads 8 --hidden 256 --ffn 768}
BATCH=${BATCH:-256}
CTX=${CTX:-512}
WARMUP=${WARMUP:-100}
PROBES=${PROBES:-40}
THREADS=${THREADS:-4}
ATTN=${ATTN:-auto}
KEEP_WEIGHTS=${KEEP_WEIGHTS:-1}
EXPORT_A=${EXPORT_A:-1}
end=$((SECONDS + DEADLINE))
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

if [ ! -f "$WORK/train_ids.npy" ]; then
  if command -v spm_train >/dev/null && command -v bible >/dev/null && [ -d /usr/share/games/fortunes ]; then
    "$PYTHON" prep.py --out "$WORK" || exit 1
  else
    echo "no corpus in tools/organism/$WORK, and prep.py's Debian packages are not here: run" \
      "'bash tools/organism/gpu_sweep.sh prepare' on Debian and carry tools/organism/work-gpu" >&2
    exit 1
  fi
fi

# run NAME SECONDS SHAPE...: train for SECONDS (less if the deadline is nearer), under `timeout`;
# if it fails (not by the timeout) within its first 90 s with the fused attention, once more with the
# explicit one
run() {
  local name=$1 sec=$2 attn=$ATTN; shift 2
  mkdir -p "$WORK/runs/$name"
  for try in 1 2; do
    local left=$((end - SECONDS - 60))  # 60 s: start-up, the last probe, saving, and what follows the runs
    ((sec > left)) && sec=$left
    if ((sec < 20)); then echo "$name: skipped, ${left}s left before the deadline" | tee -a "$WORK/runs/$name/train.log"; return 1; fi
    local t0=$SECONDS
    echo "== $name: ${sec}s of training, attention $attn, $(date -u +%H:%M:%S)"
    timeout -k 5 $((sec + 40)) "$PYTHON" train.py --work "$WORK" --name "$name" --device "$DEVICE" --attn "$attn" \
      --threads "$THREADS" --batch "$BATCH" --ctx "$CTX" --lr 2e-3 --wd 0.1 --warmup "$WARMUP" --decay_frac 0.2 \
      --minutes "$(awk "BEGIN{print $sec/60}")" --probes "$PROBES" --eval_every "$WARMUP" "$@" \
      2>&1 | tee "$WORK/runs/$name/train.log" | grep -v '^params'
    local rc=${PIPESTATUS[0]}
    ((rc == 0)) && return 0
    echo "$name: train.py exited with $rc after $((SECONDS - t0))s"
    if ((rc != 124 && rc != 137 && SECONDS - t0 < 90)) && [ "$attn" != explicit ]; then attn=explicit; cp "$WORK/runs/$name/train.log" "$WORK/runs/$name/train.failed.log"; else return $rc; fi
  done
}

# gpu_lLhHdD: the run's name from its shape flags (train.py's defaults where a flag is absent)
name_of() { local l=4 h=4 d=128; while (($#)); do case $1 in --layers) l=$2;; --heads) h=$2;; --hidden) d=$2;; esac; shift; done
  echo "gpu_l${l}h${h}d${d}"; }
A=$(name_of $SHAPE_A)
B=$(name_of $SHAPE_B)
export_a=()  # the first run is also exported (on the CPU, train.py --out), in case its final.pt will not load elsewhere
if [ "$EXPORT_A" = 1 ]; then export_a=(--out "$WORK/runs/$A/export" --golden_len $((CTX < 192 ? CTX / 2 : 192))); fi
rm -rf "$WORK/runs/$A/export"
run "$A" "$SEC_A" $SHAPE_A "${export_a[@]}"
run "$B" "$SEC_B" $SHAPE_B

"$PYTHON" - "$WORK/runs" "$A" "$B" <<'EOF' | tee "$OUT/summary.txt"
import csv, os, re, sys
runs = sys.argv[1]
print("%-14s %-22s %7s %12s %9s %8s %8s %9s" % ("run", "shape", "steps", "tokens", "tok/s", "bpb", "heldout", "best>L0"))
for name in sys.argv[2:]:
    p = os.path.join(runs, name, "log.csv")
    if not os.path.exists(p):
        print("%-14s (no log)" % name)
        continue
    rows = list(csv.DictReader(open(p)))
    r = rows[-1]
    nl = sum(1 for k in r if k.startswith("bos_max_L"))
    best = lambda x: max(float(x["bos_max_L%d" % i]) for i in range(1, nl))
    log = open(os.path.join(runs, name, "train.log")).read()
    args = re.search(r"'layers': (\d+), 'hidden': (\d+), 'heads': (\d+)", log)
    speed = re.search(r"\((\d+) tok/s\)", log)
    print("%-14s %-22s %7s %12s %9s %8s %8s %9.3f" % (
        name, "%s x %s heads, d=%s" % (args.group(1), args.group(3), args.group(2)) if args else "?",
        r["step"], r["tokens"], speed.group(1) if speed else "(killed)", r["unseen_bpb"], r["heldout_loss"], best(r)))
print("bpb: bits per byte on the unseen text; heldout: held-out loss (nats); best>L0: the largest mean")
print("attention to BOS of a head after layer 0 (8 held-out windows), all at the last probe")
EOF

logs=$(cd "$WORK" && ls runs/{$A,$B}/*.log runs/{$A,$B}/log.csv 2>/dev/null)
[ -n "$logs" ] && (cd "$WORK" && tar czf "$OUT/logs.tar.gz" $logs)
weights=$(cd "$WORK" && ls runs/{$A,$B}/final.pt 2>/dev/null)
if [ -f "$WORK/runs/$A/export/eval.json" ]; then
  cp "$WORK/sources.json" "$WORK/runs/$A/export/" 2>/dev/null
  tar czf "$OUT/export.tar.gz" -C "$WORK/runs/$A" export
fi
if [ "$KEEP_WEIGHTS" = 1 ] && [ -n "$weights" ]; then
  (cd "$WORK" && tar cf - $weights | split -b 15M - "$OUT/weights.tar.part-")
fi
ls -l "$OUT"
echo "gpu_sweep.sh: $((SECONDS - end + DEADLINE))s in all"
