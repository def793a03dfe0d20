#!/usr/bin/env python3
"""Per-sequence metrics against their definitions, recomputed here independently of the
geometry code: selection_per_seq.csv from `attngeom metrics --dump` of a capture dump equals P,
R, F, r_min, r_max from docs/method.md section 2 for every head and every N; so does an analyze
record's F in the balls of radius rho ||s_N|| (the f_at_r* fields); and metrics' options.

  test_analysis_brute_force.py --bin PATH/attngeom --fixtures DIR
"""
import json
import math
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import st_reader  # noqa: E402
from test_analysis_runs import PROMPT, read_csv, run_check  # noqa: E402


def f_score(p, r):
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def brute_force_radius_f(alpha, values, n, radii):
    """F in the closed ball of radius rho ||s_N|| around s_N, for each rho."""
    order = sorted(range(len(alpha)), key=lambda i: (-alpha[i], i))
    selected = np.zeros(len(alpha), bool)
    selected[order[:n]] = True
    points = alpha[:, None] * values
    s = points[selected].sum(axis=0)
    dist = np.sqrt(((points - s) ** 2).sum(axis=1))
    out = []
    for rho in radii:
        inside = dist <= rho * np.sqrt((s ** 2).sum())
        tp, fp = int((inside & selected).sum()), int((inside & ~selected).sum())
        out.append(f_score(tp / (tp + fp) if tp + fp else 0.0, tp / n))
    return out


def brute_force_row(alpha, values, n):
    """P, R, F, r_min, r_max of docs/method.md section 2, straight from the definitions, in float64."""
    m = len(alpha)
    order = sorted(range(m), key=lambda i: (-alpha[i], i))  # ties: lower index first
    selected = set(order[:n])
    points = alpha[:, None] * values
    s = points[list(selected)].sum(axis=0)
    dist = np.sqrt(((points - s) ** 2).sum(axis=1))
    r_max = max(dist[i] for i in selected)
    r_min = min(dist[j] for j in range(m) if j not in selected)
    fp = sum(1 for j in range(m) if j not in selected and dist[j] <= r_max)
    tp_at_rmin = sum(1 for i in selected if dist[i] <= r_min)
    p = n / (n + fp)
    r = tp_at_rmin / n
    return p, r, f_score(p, r), r_min, r_max


def check_metrics_options(args, dump, tmp, failures):
    """metrics takes analyze's geometry and taxonomy flags, uses them and records them in run.json."""
    run = os.path.join(tmp, "metrics_options")
    subprocess.run([args.bin, "metrics", "--dump", dump, "--out", run, "--no-bounds", "--top-k", "2",
                    "--retriever-min-cos-last", "0.9", "--reset-max-small-cos-last", "0.2",
                    "--mixer-min-small-cos-sink", "0.7", "--stats-seed", "7"], check=True, capture_output=True)
    with open(os.path.join(run, "run.json")) as f:
        options = json.load(f).get("options", {})
    want = {"bounds": False, "top_k": 2, "stats_seed": 7}
    got = {k: options.get(k) for k in want}
    thresholds = {"retriever_min_cos_last": 0.9, "reset_max_small_cos_last": 0.2, "mixer_min_small_cos_sink": 0.7}
    taxonomy = options.get("taxonomy", {})
    if got != want or {k: taxonomy.get(k) for k in thresholds} != thresholds:
        failures.append(f"metrics options: run.json options {options} lack {want} and {thresholds}")
    rows = read_csv(os.path.join(run, "selection.csv"))
    if not rows or not all(math.isnan(float(r["r1_f_lo"])) for r in rows):
        failures.append("metrics --no-bounds: selection.csv's r1_f_lo is not NaN everywhere")
    print(f"metrics options: recorded {got} and honoured --no-bounds in {len(rows)} selection rows")


def check_brute_force(args, tmp, failures):
    dump = os.path.join(tmp, "dump.safetensors")
    subprocess.run([args.bin, "capture", "--model", os.path.join(args.fixtures, "gemma"), "--text", PROMPT,
                    "--max-tokens", "160", "--queries", "40,100,159", "--out", dump], check=True, capture_output=True)
    run = os.path.join(tmp, "metrics")
    subprocess.run([args.bin, "metrics", "--dump", dump, "--out", run, "--per-sequence"], check=True,
                   capture_output=True)
    tensors = st_reader.read(dump)[0]
    queries = tensors["query_positions"]
    layers = sum(1 for k in tensors if k.endswith(".attn"))
    heads = tensors["layers.0.attn"].shape[0]
    kv_heads = tensors["layers.0.values"].shape[0]
    rows = read_csv(os.path.join(run, "selection_per_seq.csv"))
    checked, worst, count_mismatch = 0, 0.0, 0
    seen = set()
    for row in rows:
        l, h, q, n = int(row["layer"]), int(row["head"]), int(row["query"]), int(row["n"])
        qi = int(np.where(queries == q)[0][0])
        alpha = tensors[f"layers.{l}.attn"][h, qi, :q + 1].astype(np.float64)
        values = tensors[f"layers.{l}.values"][h // (heads // kv_heads), :q + 1].astype(np.float64)
        p, r, f, r_min, r_max = brute_force_row(alpha, values, n)
        if abs(p - float(row["precision"])) > 1e-12 or abs(r - float(row["recall"])) > 1e-12:
            count_mismatch += 1
            failures.append(f"layer {l} head {h} query {q} N {n}: P/R {row['precision']}/{row['recall']} vs "
                            f"brute force {p}/{r}")
        for got, want in ((float(row["f"]), f), (float(row["r_min"]), r_min), (float(row["r_max"]), r_max)):
            err = abs(got - want) / max(abs(want), 1e-300) if want != 0 else abs(got)
            worst = max(worst, err)
            if err > 1e-9:
                failures.append(f"layer {l} head {h} query {q} N {n}: {got} vs brute force {want}")
        seen.add((l, h))
        checked += 1
    if len(seen) != layers * heads:
        failures.append(f"per-sequence table covers {len(seen)} of {layers * heads} heads")
    check_metrics_options(args, dump, tmp, failures)
    print(f"brute_force: {checked} (layer, head, query, N) rows over {len(seen)} heads; P/R mismatches "
          f"{count_mismatch}; max relative error of F, r_min, r_max {worst:.1e}")
    record, meta = st_reader.read(os.path.join(run, "records", "seq-000000.safetensors"))[:2]
    schema = json.loads(meta["record"])
    names = [f for f in schema["per_n_fields"] if f.startswith("f_at_r")]
    radii = [float(f[len("f_at_r"):]) for f in names]
    columns = [schema["per_n_fields"].index(f) for f in names]
    per_n = record["per_n"]  # [L, H, Q, G, Kn]
    radius_checked = 0
    for l in range(layers):
        for h in range(heads):
            for qi, q in enumerate(queries):
                alpha = tensors[f"layers.{l}.attn"][h, qi, :q + 1].astype(np.float64)
                values = tensors[f"layers.{l}.values"][h // (heads // kv_heads), :q + 1].astype(np.float64)
                for g, n in enumerate(schema["n_grid"]):
                    if n > q:
                        continue
                    want = brute_force_radius_f(alpha, values, n, radii)
                    got = per_n[l, h, qi, g, columns]
                    radius_checked += len(radii)
                    if np.abs(got - want).max() > 1e-12:
                        failures.append(f"layer {l} head {h} query {q} N {n}: F at radii {got} vs brute force {want}")
    if radius_checked == 0:
        failures.append("no normalised-radius F was checked")
    print(f"brute_force: {radius_checked} F values at normalised radii {radii} equal the definition")


if __name__ == "__main__":
    sys.exit(run_check(__doc__, {"brute_force": check_brute_force}))
