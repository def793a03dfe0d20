#!/usr/bin/python3
"""Writes a synthetic run directory that follows docs/run_format.md exactly.

The numbers are plausible, not computed: curves have the seed's shape (separable at
small N, degrading at intermediate N, trivial again near N = M - 1), labels follow
depth, profiles have the four phases. Deterministic for a given --seed. Stdlib only.

    make_run.py OUT_DIR [--label L] [--layers 4] [--heads 8] [--kv-heads 8]
                        [--seq-len 256] [--seed 0] [--minimal] [--undefined] [--experts E]

--minimal writes only the files every run has (no length sweep, pruning, top-N budget, synth,
per-sequence table). --undefined makes every correlation and every beta fit
undefined (`nan`), as for a degenerate model. --experts E adds a mixture of experts' tables
(experts.csv, routing.csv: top-2 of E experts in every layer, with bf16 routing flips). `records/` is not written: the report
never reads it.
"""
import argparse
import json
import math
import os
import random
import struct

N_GRID = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 64, 128, 256, 512]
LABELS = ["retriever", "mixer", "reset", "unclassified"]
METRICS = ["precision", "recall", "f", "f_best", "r_min", "r_max", "margin"]
QUANTILES = ["mean", "std", "q10", "q25", "q50", "q75", "q90"]


def fmt(x):
    if isinstance(x, str):
        return x
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "nan"
    return repr(round(x, 9))


def write_csv(path, header, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write(",".join(header) + "\n")
        for r in rows:
            assert len(r) == len(header), (path, r)
            f.write(",".join(fmt(v) for v in r) + "\n")


def write_npy(path, shape, values, dtype="<f8"):
    code = "d" if dtype == "<f8" else "i"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join("%d, " % s for s in shape) if len(shape) == 1 else ", ".join(str(s) for s in shape))
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


def clamp(x, lo=0.0, hi=1.0):
    return max(lo, min(hi, x))


def head_label(rng, layer, layers):
    depth = layer / max(1, layers - 1)
    weights = [max(0.05, 1 - 2 * depth), max(0.05, 2 * depth - 1), max(0.05, 1 - abs(2 * depth - 1)), 0.1]
    return rng.choices(LABELS, weights)[0]


def make_heads(rng, layers, heads, kv_heads, m, samples):
    out = []
    for l in range(layers):
        for h in range(heads):
            label = head_label(rng, l, layers)
            sink = {"retriever": 0.3, "mixer": 0.55, "reset": 0.85, "unclassified": 0.4}[label] * rng.uniform(0.7, 1.1)
            if rng.random() < 0.08:
                sink = 0.5 / m  # below the uniform level: flag_no_sink
            last = clamp({"retriever": 0.35, "mixer": 0.1, "reset": 0.03, "unclassified": 0.08}[label] * rng.uniform(0.5, 1.5))
            beta = rng.lognormvariate(math.log(0.08), 0.6)
            out.append({
                "layer": l, "head": h, "kv_head": h // (heads // kv_heads), "samples": samples,
                "sink_mass": clamp(sink), "last_mass": last, "entropy": rng.uniform(0.2, 0.8),
                "recency_mass": rng.uniform(0.05, 0.4), "topk_mass": rng.uniform(0.4, 0.95),
                "nu": rng.uniform(2, 6), "cv": rng.uniform(0.02, 0.06) * (1 + 0.3 * l / layers),
                "lambda": rng.uniform(0.05, 0.4) * (1 + l / layers), "rho0": rng.uniform(-0.2, 0.6),
                "beta": beta, "beta_mae": rng.uniform(0.01, 0.08), "beta_r2": rng.uniform(0.5, 0.99),
                "negative_cos_share": rng.uniform(0, 0.2), "sigma2": rng.uniform(0.5, 2.0),
                "sink_magnitude": sink * rng.uniform(0.2, 1), "last_magnitude": last * rng.uniform(2, 5),
                "rest_magnitude": rng.uniform(0.5, 2),
                "cos_sink_small": rng.uniform(0.2, 0.9), "cos_sink_large": rng.uniform(0, 0.5),
                "cos_last_small": rng.uniform(0, 0.9), "cos_last_large": rng.uniform(0.2, 0.9),
                "label": label, "flag_negative_margin": 1 if rng.random() < 0.1 else 0,
                "flag_flat_precision": 1 if rng.random() < 0.1 else 0,
            })
    return out


def curve(n, m, small, dip):
    """A value in [0, 1]: high at small N, lowest near sqrt(M), back to 1 at N = M - 1."""
    if n == 1:
        return 1.0
    t = math.log(n) / math.log(max(2, m - 1))
    return clamp(small - dip * math.sin(math.pi * min(1.0, t)) ** 0.7 + (1 - small) * t ** 3)


def make_selection(rng, heads, grid, m):
    rows, per_head_f = [], {}
    for hd in heads:
        good = {"retriever": 0.95, "mixer": 0.8, "reset": 0.7, "unclassified": 0.75}[hd["label"]]
        dip = rng.uniform(0.2, 0.5)
        for n in grid:
            p = curve(n, m, good, dip)
            r = clamp(curve(n, m, good - 0.05, dip * 1.1) + 0.3 * (hd["rho0"] - 0.2) * math.exp(-abs(math.log(n / 4))))
            f = 0 if p + r == 0 else 2 * p * r / (p + r)
            if hd["flag_flat_precision"]:
                p = 0.6
            vals = {"precision": p, "recall": r, "f": f, "f_best": clamp(f + 0.05),
                    "r_min": rng.uniform(0.5, 2), "r_max": rng.uniform(0.5, 2), "margin": 0.0}
            vals["margin"] = -abs(vals["r_max"] - vals["r_min"]) if hd["flag_negative_margin"] else vals["r_min"] - vals["r_max"]
            per_head_f[(hd["layer"], hd["head"], n)] = f
            row = [hd["layer"], hd["head"], hd["kv_head"], n, hd["samples"]]
            for k in METRICS:
                v, s = vals[k], rng.uniform(0.01, 0.1)
                row += [v, s, v - 1.3 * s, v - 0.7 * s, v, v + 0.7 * s, v + 1.3 * s]
            row.append(clamp(0.5 + vals["margin"]))
            for k in ("precision", "recall", "f"):
                row += [clamp(vals[k] - rng.uniform(0.05, 0.3)), clamp(vals[k] + rng.uniform(0.0, 0.2))]
            row += [rng.uniform(0.6, 1.0), clamp(r - 0.4), rng.uniform(0, 3), rng.uniform(0, 0.5),
                    rng.uniform(0, 1), rng.uniform(0, 0.3)]
            rows.append(row)
    header = ["layer", "head", "kv_head", "n", "samples"]
    header += ["%s_%s" % (k, q) for k in METRICS for q in QUANTILES]
    header += ["separated", "r1_precision_lo", "r1_precision_hi", "r1_recall_lo", "r1_recall_hi",
               "r1_f_lo", "r1_f_hi", "r1_inside", "r2_recall_lo", "r2_fp_hi", "r2_separation_prob",
               "r2_vacuous", "r3_certified"]
    return header, rows, per_head_f


def plateau_level(m, layer, layers):
    return (0.4 - 0.25 * layer / max(1, layers - 1)) / m


def profile(t, m, layer, layers):
    """Mean last-query attention at key position t of M keys: the four phases."""
    depth = layer / max(1, layers - 1)
    if t == 0:
        return 0.5 + 0.3 * depth
    plateau = plateau_level(m, layer, layers)
    osc = plateau * (1 + (0.2 + 0.4 * depth) * math.sin(t / 3.0)) if t > m // 3 else plateau
    return osc + (0.03 + 0.05 * depth) * math.exp(-(m - 1 - t) / (3.0 + 4.0 * depth))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--label", default=None)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=None)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--num-seqs", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--minimal", action="store_true")
    ap.add_argument("--undefined", action="store_true")
    ap.add_argument("--experts", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    kv = a.kv_heads or a.heads
    m = a.seq_len
    grid = [n for n in N_GRID if n <= m - 1]
    os.makedirs(a.out, exist_ok=True)
    label = a.label or os.path.basename(os.path.abspath(a.out))

    heads = make_heads(rng, a.layers, a.heads, kv, m, a.num_seqs)
    header, sel_rows, per_head_f = make_selection(rng, heads, grid, m)
    write_csv(os.path.join(a.out, "selection.csv"), header, sel_rows)
    for hd in heads:
        hd["f_small"] = sum(per_head_f[(hd["layer"], hd["head"], n)] for n in (2, 3, 4)) / 3
        hd["peak_f_n"] = max((n for n in grid if n >= 2), key=lambda n: per_head_f[(hd["layer"], hd["head"], n)])
        hd["kmeans_cluster"] = LABELS.index(hd["label"]) % 3
        hd["kmeans_label"] = hd["label"] if rng.random() < 0.8 else "mixer"
        hd["flag_no_sink"] = 1 if hd["sink_mass"] < 1.0 / m else 0
    head_cols = ["layer", "head", "kv_head", "samples", "sink_mass", "last_mass", "entropy", "recency_mass",
                 "topk_mass", "nu", "cv", "lambda", "rho0", "beta", "beta_mae", "beta_r2", "negative_cos_share",
                 "sigma2", "sink_magnitude", "last_magnitude", "rest_magnitude", "cos_sink_small",
                 "cos_sink_large", "cos_last_small", "cos_last_large", "f_small", "peak_f_n", "label",
                 "kmeans_cluster", "kmeans_label", "flag_negative_margin", "flag_flat_precision", "flag_no_sink"]
    heads[0]["beta_mae"] = float("nan")  # a fit that failed: must not break the report
    if a.undefined:
        for hd in heads:
            hd["beta"] = hd["beta_mae"] = hd["beta_r2"] = float("nan")
    write_csv(os.path.join(a.out, "heads.csv"), head_cols, [[hd[c] for c in head_cols] for hd in heads])

    sr = []
    for n in grid:
        peak = 0.6 * math.exp(-(math.log(n / 4.0)) ** 2 / 1.5)
        ps, sp = peak + rng.uniform(-0.05, 0.05), peak * 0.9 + rng.uniform(-0.05, 0.05)
        sr.append([n, len(heads), ps, ps - 0.2, min(1, ps + 0.15), sp, sp - 0.22, min(1, sp + 0.15)])
    sr[-1][2:] = [float("nan")] * 6  # constant data at N = M - 1: undefined correlation
    if a.undefined:
        for row in sr:
            row[2:] = [float("nan")] * 6
    write_csv(os.path.join(a.out, "sink_recall.csv"),
              ["n", "heads", "pearson", "pearson_lo", "pearson_hi", "spearman", "spearman_lo", "spearman_hi"], sr)

    lay, fits, prof = [], [], []
    for l in range(a.layers):
        hs = [hd for hd in heads if hd["layer"] == l]
        mean = lambda k: sum(hd[k] for hd in hs if not math.isnan(hd[k])) / len(hs)
        lay.append([l, len(hs)] + [sum(hd["label"] == x for hd in hs) / len(hs) for x in LABELS] +
                   [mean(k) for k in ("sink_mass", "cv", "lambda", "rho0", "beta", "beta_mae", "f_small")])
        for t in range(m):
            measured = profile(t, m, l, a.layers) * rng.uniform(0.9, 1.1)
            fitted = profile(t, m, l, a.layers) if t <= m // 3 or t > m - 20 else plateau_level(m, l, a.layers)
            prof.append([l, t, measured, fitted])
        for hd in hs:
            fits.append([l, hd["head"], hd["sink_mass"], 0.4 / m, m // 3, 0.16 / m, m - 20, 0.25, 0.05,
                         rng.uniform(1e-4, 1e-3), rng.uniform(0.8, 0.99)])
    write_csv(os.path.join(a.out, "layers.csv"),
              ["layer", "heads", "retriever_share", "mixer_share", "reset_share", "unclassified_share",
               "sink_mass", "cv", "lambda", "rho0", "beta", "beta_mae", "f_small"], lay)
    write_csv(os.path.join(a.out, "profile_fit.csv"),
              ["layer", "head", "sink_weight", "plateau_level", "plateau_end", "oscillation_amplitude",
               "recency_start", "recency_rate", "recency_peak", "fit_mae", "fit_r2"], fits)
    write_csv(os.path.join(a.out, "profile_layers.csv"), ["layer", "position", "mean_alpha", "fitted"], prof)

    shape = (a.layers, a.heads)
    for k in ("sink_mass", "last_mass", "entropy", "rho0", "lambda", "cv", "beta", "f_small"):
        write_npy(os.path.join(a.out, k + ".npy"), shape, [float(hd[k]) for hd in heads])
    write_npy(os.path.join(a.out, "label.npy"), shape, [LABELS.index(hd["label"]) for hd in heads], "<i4")
    write_npy(os.path.join(a.out, "attention_profile.npy"), (a.layers, a.heads, m),
              [profile(t, m, hd["layer"], a.layers) for hd in heads for t in range(m)])

    lengths = [m // 2, m] if not a.minimal else None
    if lengths:
        rows = []
        for L in lengths:
            for n in grid:
                if n > L - 1:
                    continue
                f = curve(n, L, 0.85 - 0.05 * (L / m), 0.35)
                rows.append([L, n, len(heads), f + 0.03, f - 0.02, f, 0.1 - 0.01 * n ** 0.5, clamp(0.8 - 0.1 * math.log(n))])
        write_csv(os.path.join(a.out, "length_sweep.csv"),
                  ["seq_len", "n", "heads", "precision_mean", "recall_mean", "f_mean", "margin_mean",
                   "separated_mean"], rows)
        rows = []
        for strategy, seeds, slope in (("type", [0], 0.9), ("random", [0, 1, 2], 1.4), ("entropy", [0], 1.0),
                                       ("sink", [0], 0.8), ("last", [0], 1.1), ("fscore", [0], 0.95)):
            for seed in seeds:
                for frac in (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5):
                    noise = 0 if frac == 0 else rng.uniform(-0.1, 0.1) * (len(seeds) > 1)
                    ppl = 20 * math.exp(slope * frac * (1 + noise))
                    kl = 0 if frac == 0 else slope * frac ** 1.5 * (1 + noise)
                    rows.append([strategy, seed, frac, ppl, kl, 1 - 0.8 * kl / (1 + kl)])
        write_csv(os.path.join(a.out, "pruning.csv"), ["strategy", "seed", "fraction", "ppl", "kl", "top1"], rows)
        rows = []
        for policy, gain in (("geometric", 0.8), ("uniform", 1.0)):
            for budget in (1, 2, 4, 8, 16, 32):
                kl = gain / budget
                rows.append([policy, budget, budget, min(1.0, budget / 64), 20 * math.exp(kl), kl, 1 - kl / (1 + kl)])
        write_csv(os.path.join(a.out, "topn_budget.csv"),
                  ["policy", "budget", "mean_n", "kept_share", "ppl", "kl", "top1"], rows)
        with open(os.path.join(a.out, "prune.json"), "w") as f:  # the protocol the report shows
            json.dump({"format": "attngeom-prune-v1", "protocol": {"context": 256, "stride": 255, "bos": True},
                       "reference": {"tokens": 4321, "ppl": 20.0, "mean_nll": math.log(20.0)}}, f)
        os.makedirs(os.path.join(a.out, "synth"), exist_ok=True)
        rows = []
        for prof_name in ("four-phase", "uniform", "bimodal", "power-law"):
            for n in grid:
                f = curve(n, m, {"four-phase": 0.9, "uniform": 0.4, "bimodal": 0.95, "power-law": 0.7}[prof_name], 0.3)
                sep = 1.0 if f > 0.8 else 0.0
                rows.append([prof_name, 64, m - 1, n, clamp(f + 0.05), clamp(f - 0.05), f, rng.uniform(-0.01, 0.01), sep,
                             clamp(f - rng.uniform(0, 0.3)), 1.0, sep * rng.uniform(0, 1)])
        # The columns of `attngeom demo` (docs/run_format.md): d, L and r1_f_hi are constant here.
        write_csv(os.path.join(a.out, "synth", "summary.csv"),
                  ["profile", "d", "L", "n", "precision", "recall", "f", "margin", "separated", "r1_f_lo", "r1_f_hi",
                   "r2_separation_prob"], rows)
        rows = [[s, v] for s, v in (("d", 64), ("L", m))]
        write_csv(os.path.join(a.out, "synth", "settings.csv"), ["setting", "value"], rows)
        rows = []
        for s in range(2):
            for hd in heads[:4]:
                for n in grid[:4]:
                    rows.append([s, hd["layer"], hd["head"], 0, m - 1, n, 0.9, 0.8, 0.85, 1.2, 1.0])
        write_csv(os.path.join(a.out, "selection_per_seq.csv"),
                  ["seq", "layer", "head", "kv_head", "query", "n", "precision", "recall", "f", "r_min", "r_max"], rows)

    if a.experts:
        tokens = m * a.num_seqs
        load_rows, routing_rows = [], []
        for layer in range(a.layers):
            weights = [rng.uniform(0.5, 1.5) + (2.0 if e == layer % a.experts else 0.0) for e in range(a.experts)]
            counts = [int(2 * tokens * w / sum(weights)) for w in weights]
            counts[0] += 2 * tokens - sum(counts)  # top-2: every token chooses two experts
            load_rows += [[layer, e, c, c / (2 * tokens)] for e, c in enumerate(counts)]
            routing_rows.append([layer, tokens, rng.randrange(0, tokens // 50)])
        write_csv(os.path.join(a.out, "experts.csv"), ["layer", "expert", "tokens", "share"], load_rows)
        write_csv(os.path.join(a.out, "routing.csv"), ["layer", "tokens", "routing_flips"], routing_rows)

    run = {
        "format": "attngeom-run-v1",
        "label": label,
        "attngeom": {"version": "0.1.0", "git_commit": "synthetic000"},
        "created": "2026-11-21T17:30:00Z",
        "machine": {"hostname": "testhost", "cpu_model": "Synthetic CPU @ 2.0GHz", "logical_cores": 2,
                    "memory_bytes": 8 * 2 ** 30, "has_amx": False},
        "model": {"dir": "/models/" + label, "model_type": "llama", "config_sha256": "ab" * 32,
                  "weight_headers": [{"file": "model.safetensors", "header_sha256": "cd" * 32}],
                  "weights_dtype": "F32", "layers": a.layers, "heads": a.heads, "kv_heads": kv,
                  "head_dim": 32, "hidden": 32 * a.heads, "vocab": 2048, "sliding_window": 0},
        "precision": "fp32",
        "tokenizer": {"file": "tokenizer.model", "sha256": "ef" * 32, "bos": True, "bos_token_id": 1},
        "seq_len": m,
        "n_grid": grid,
        "queries": "last",
        "corpus": {"format": "text", "text_field": "text", "pack": False, "num_seqs": a.num_seqs, "skip": 0,
                   "seed": None, "candidates": 40,
                   "files": [{"path": "/data/heldout.txt", "sha256": "01" * 32, "compression": "none", "documents": 1}],
                   "warnings": ["heldout.txt:3: invalid UTF-8, line skipped"],
                   "sequences": [{"index": i, "documents": [0], "first_token": i * m} for i in range(a.num_seqs)]},
        "options": {"recency_window": 16, "topk": 5, "bootstrap": 1000, "seed": 0},
        "shard": {"index": 0, "count": 1},
        "sequences_done": a.num_seqs,
        "complete": True,
    }
    if lengths:
        run["lengths"] = lengths
    with open(os.path.join(a.out, "run.json"), "w", encoding="utf-8") as f:
        json.dump(run, f, indent=2)


if __name__ == "__main__":
    main()
