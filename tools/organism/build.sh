#!/bin/bash
# Trains the model organism from scratch and exports it to models/organism (the shipped run):
# Debian packages, corpus and tokenizer (prep.py), training (train.py), then the export's
# independent check, attention_roles.txt and MODEL_CARD.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
packages=(python3-torch python3-numpy sentencepiece fortunes bible-kjv debian-handbook debian-reference-en
  python3.11-doc libopenblas0-openmp libjemalloc2)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; fi

# torch's large temporary tensors are freshly mapped pages under glibc's allocator, and first
# touches are slow on virtual machines; jemalloc keeps freed pages for reuse.
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
work=tools/organism/work
/usr/bin/python3 tools/organism/prep.py --out "$work"
/usr/bin/python3 tools/organism/train.py --work "$work" --out models/organism --name organism --threads 1 \
  --steps 1700 --lr 2e-3 --wd 0.1 --eval_every 100
cp "$work/sources.json" models/organism/sources.json
/usr/bin/python3 tools/organism/verify.py models/organism
/usr/bin/python3 tools/organism/analyze.py models/organism > models/organism/attention_roles.txt
mkdir -p tools/organism/runs/organism
cp "$work/runs/organism/log.csv" tools/organism/runs/organism/log.csv
/usr/bin/python3 tools/organism/make_card.py models/organism tools/organism/notes.md tools/organism/runs \
  tools/organism/seed_claims.md
