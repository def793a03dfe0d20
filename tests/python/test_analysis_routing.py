#!/usr/bin/env python3
"""analyze's tables of a mixture of experts (the mixtral fixture): experts.csv's tokens per
(layer, expert) equal the float64 reference's routing of every recorded sequence, in fp32;
routing.csv counts the tokens and, in bf16 only, the flips against fp32 logits; a dense model
writes neither table.

  test_analysis_routing.py --bin PATH/attngeom --fixtures DIR
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference_forward as rf  # noqa: E402
from reference_model import Model  # noqa: E402
import st_reader  # noqa: E402
from test_analysis_runs import CORPUS, analyze_args, read_csv, run_check  # noqa: E402


def check_routing(args, tmp, failures):
    model_dir = os.path.join(args.fixtures, "mixtral")
    seq_len, num_seqs = 96, 3
    runs = {}
    for precision in ("fp32", "bf16"):
        out = os.path.join(tmp, "routing-" + precision)
        subprocess.run([args.bin, "analyze", "--model", model_dir, "--data", CORPUS, "--seq-len", str(seq_len),
                        "--num-seqs", str(num_seqs), "--precision", precision, "--out", out], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        runs[precision] = out
    model = Model(model_dir)
    want = np.zeros((model.layers, model.experts), dtype=np.int64)
    records = os.path.join(runs["fp32"], "records")
    for name in sorted(os.listdir(records)):
        rf.forward(model, st_reader.read(os.path.join(records, name))[0]["tokens"].astype(np.int64), want_logits=False)
        want += np.asarray(model.expert_load)
    for precision, out in runs.items():
        experts = read_csv(os.path.join(out, "experts.csv"))
        got = np.zeros_like(want)
        for r in experts:
            got[int(r["layer"]), int(r["expert"])] = int(r["tokens"])
        if precision == "fp32" and not np.array_equal(got, want):
            failures.append(f"routing: experts.csv tokens {got.tolist()}, reference {want.tolist()}")
        if (got.sum(axis=1) != num_seqs * seq_len * model.top_k).any():
            failures.append(f"routing ({precision}): the tokens of a layer do not sum to tokens x top_k")
        for layer in range(model.layers):
            share = sum(float(r["share"]) for r in experts if int(r["layer"]) == layer)
            if abs(share - 1) > 1e-12:
                failures.append(f"routing ({precision}): layer {layer} shares sum to {share}")
        rows = read_csv(os.path.join(out, "routing.csv"))
        flips = [r["routing_flips"] for r in rows]
        if [int(r["tokens"]) for r in rows] != [num_seqs * seq_len] * model.layers:
            failures.append(f"routing ({precision}): routing.csv tokens {[r['tokens'] for r in rows]}")
        if (precision == "fp32") != all(f == "" for f in flips) or not all(f == "" or f.isdigit() for f in flips):
            failures.append(f"routing ({precision}): routing_flips {flips}")
        print(f"routing ({precision}): experts.csv {got.tolist()}; flips per layer {flips}")
    dense = os.path.join(tmp, "routing-dense")
    subprocess.run(analyze_args(args.bin, args.fixtures, 1) + ["--out", dense], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if any(os.path.exists(os.path.join(dense, t)) for t in ("experts.csv", "routing.csv")):
        failures.append("routing: a dense model wrote experts.csv or routing.csv")


if __name__ == "__main__":
    sys.exit(run_check(__doc__, {"routing": check_routing}))
