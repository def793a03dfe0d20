#!/bin/bash
# The sink-growth sweep (MODEL_CARD.md): short runs at constant learning rate, one thread each,
# compared with the first steps of the shipped run (build.sh). Run after prep.py.
cd "$(dirname "$0")"
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
run() { name=$1; shift; mkdir -p work/runs; /usr/bin/python3 train.py --threads 1 --name "$name" --steps 300 --decay_frac 0 --eval_every 50 "$@" > work/runs/$name.log 2>&1
  mkdir -p runs/$name && cp work/runs/$name/log.csv runs/$name/log.csv; }
run sweep_wd0.5 --lr 2e-3 --wd 0.5
run sweep_lr4e-3 --lr 4e-3 --wd 0.1
run sweep_width192 --lr 2e-3 --wd 0.1 --hidden 192 --ffn 576
run sweep_batch32 --lr 2e-3 --wd 0.1 --batch 32 --steps 150 --eval_every 25
