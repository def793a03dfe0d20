#!/usr/bin/env python3
"""The bf16 fast path against the fp32 reference path on the shipped model organism.

  test_precision_agreement.py --bin PATH/attngeom

Runs `analyze` twice on the same held-out sequences, once per precision, and compares
the run directories:
- run.json records each run's choice (precision and matmul kernel);
- the rule-based head taxonomy (heads.csv `label`) agrees on at least 98% of heads
  (issue 4's criterion); the k-means cross-check's labels are reported;
- per-head differences of the mean Precision, Recall and F over the N grid
  (selection.csv) are reported: P/R/F move in steps of 1/N when one key changes side,
  so no rounding-derived bound applies to them.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

ORGANISM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "organism")
MIN_AGREEMENT = 0.98
EXPECTED_MATMUL = {"fp32": "onednn-sgemm", "bf16": "onednn-bf16"}


def analyze(binary, precision, out):
    subprocess.run([binary, "analyze", "--model", ORGANISM, "--data", os.path.join(ORGANISM, "heldout.txt"),
                    "--seq-len", "256", "--num-seqs", "16", "--precision", precision, "--out", out],
                   check=True, capture_output=True, timeout=600)
    with open(os.path.join(out, "run.json")) as f:
        run = json.load(f)
    with open(os.path.join(out, "heads.csv")) as f:
        heads = {(r["layer"], r["head"]): r for r in csv.DictReader(f)}
    with open(os.path.join(out, "selection.csv")) as f:
        selection = {(r["layer"], r["head"], r["n"]): r for r in csv.DictReader(f)}
    return run, heads, selection


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="attngeom-precisions-") as tmp:
        runs = {p: analyze(args.bin, p, os.path.join(tmp, p)) for p in ("fp32", "bf16")}

    for precision, (run, _, _) in runs.items():
        recorded = (run.get("precision"), run.get("matmul"))
        if recorded != (precision, EXPECTED_MATMUL[precision]):
            failures.append(f"{precision} run records precision/matmul {recorded}")

    heads32, heads16 = runs["fp32"][1], runs["bf16"][1]
    if heads32.keys() != heads16.keys() or not heads32:
        failures.append("the two runs list different heads")
    keys = sorted(heads32.keys() & heads16.keys(), key=lambda k: (int(k[0]), int(k[1])))
    same = [k for k in keys if heads32[k]["label"] == heads16[k]["label"]]
    same_kmeans = sum(heads32[k]["kmeans_label"] == heads16[k]["kmeans_label"] for k in keys)
    agreement = len(same) / max(1, len(keys))
    labels = {}
    for k in keys:
        labels[heads32[k]["label"]] = labels.get(heads32[k]["label"], 0) + 1
    print(f"taxonomy: {len(same)}/{len(keys)} heads agree ({agreement:.1%}, need {MIN_AGREEMENT:.0%}); "
          f"fp32 labels {labels}; k-means labels agree on {same_kmeans}/{len(keys)}")
    for k in keys:
        if heads32[k]["label"] != heads16[k]["label"]:
            print(f"  layer {k[0]} head {k[1]}: fp32 {heads32[k]['label']}, bf16 {heads16[k]['label']}")
    if agreement < MIN_AGREEMENT:
        failures.append(f"taxonomy agreement {agreement:.3f} < {MIN_AGREEMENT}")

    sel32, sel16 = runs["fp32"][2], runs["bf16"][2]
    if sel32.keys() != sel16.keys() or not sel32:
        failures.append("the two runs list different (layer, head, N) rows")
    worst = {}  # (layer, head) -> max |difference| over N of the mean P, R, F
    for key in sel32.keys() & sel16.keys():
        diffs = [abs(float(sel32[key][c]) - float(sel16[key][c])) for c in ("precision_mean", "recall_mean", "f_mean")]
        head = key[:2]
        worst[head] = [max(a, b) for a, b in zip(worst.get(head, [0.0, 0.0, 0.0]), diffs)]
    print("per-head max |fp32 - bf16| over the N grid of the mean over sequences:")
    print("  layer head      P        R        F")
    for head in sorted(worst, key=lambda k: (int(k[0]), int(k[1]))):
        p, r, f = worst[head]
        print(f"  {head[0]:>5} {head[1]:>4}  {p:.4f}   {r:.4f}   {f:.4f}")
    if worst:
        column = list(zip(*worst.values()))
        print("  largest: P {:.4f}, R {:.4f}, F {:.4f}".format(*(max(c) for c in column)))

    for f in failures:
        print("FAIL", f)
    print(f"fp32 vs bf16 on the organism: {'FAILED' if failures else 'passed'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
