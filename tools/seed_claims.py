#!/usr/bin/python3
"""The seed's claims, measured on one analyze run: the markdown table of the model cards'
"Seed claims, rerun" sections.

  seed_claims.py RUN_DIR [--prune PRUNE_DIR_OR_CSV] [--label NAME]

RUN_DIR is an `attngeom analyze` (or `demo`) run directory; the rows read its
selection.csv, sink_recall.csv, heads.csv and layers.csv (docs/run_format.md). The
pruning row reads the pruning.csv of `attngeom prune` (docs/prune.md): --prune's file,
or the one in that directory, or else RUN_DIR's own. Every figure comes from those tables;
the correlations and their bootstrap intervals are sink_recall.csv's, not recomputed.
Bad input: one line on stderr, exit 2.
"""
import argparse
import csv
import json
import os
import sys

import numpy as np

TYPES = ("retriever", "mixer", "reset", "unclassified")  # label.npy's order
# The cards' pruning fractions; the single-metric orders are quoted at the last two.
QUOTED_FRACTIONS = (0.1, 0.3, 0.5)
SEEDED_ORDERS = ("type", "random")


class BadInput(Exception):
    pass


def read_table(path, columns):
    """The rows of a run-format CSV as dicts, after checking that the named columns exist."""
    if not os.path.isfile(path):
        raise BadInput(f"{path}: missing")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise BadInput(f"{path}: no rows")
    absent = [c for c in columns if c not in rows[0]]
    if absent:
        raise BadInput(f"{path}: no column {absent[0]}")
    return rows


def numbers(rows, column, path):
    try:
        return np.array([float(r[column]) for r in rows])  # [rows]
    except ValueError as e:
        raise BadInput(f"{path}: column {column}: {e}") from None


def pct(share):
    """A share as the cards write it: one decimal below 1%, whole percents above."""
    if not np.isfinite(share):
        return "n/a"
    value = 100 * share
    return f"{value:.1f}%" if value < 1 else f"{value:.0f}%"


def finite_mean(v):
    return float(np.mean(v[np.isfinite(v)])) if np.isfinite(v).any() else float("nan")


def fraction_pct(fraction):
    return f"{100 * fraction:g}%"


class Run:
    """The tables of one run directory that the claims read."""

    def __init__(self, run_dir):
        self.dir = run_dir
        path = os.path.join(run_dir, "heads.csv")
        heads = read_table(path, ("layer", "head", "label", "rho0", "flag_no_sink"))
        self.labels = {(int(r["layer"]), int(r["head"])): r["label"] for r in heads}
        self.rho0 = numbers(heads, "rho0", path)
        self.no_sink = int(numbers(heads, "flag_no_sink", path).sum())
        path = os.path.join(run_dir, "selection.csv")
        columns = ("f_mean", "r1_inside", "r1_vacuous", "separated", "r2_separation_prob", "r2_vacuous",
                   "r3_certified")
        rows = read_table(path, ("layer", "head", "n") + columns)
        self.sel_head = [(int(r["layer"]), int(r["head"])) for r in rows]
        self.sel_n = numbers(rows, "n", path)
        self.sel = {c: numbers(rows, c, path) for c in columns}
        path = os.path.join(run_dir, "sink_recall.csv")
        rows = read_table(path, ("n", "heads", "pearson", "pearson_lo", "pearson_hi", "spearman", "spearman_lo",
                                 "spearman_hi"))
        self.corr = {c: numbers(rows, c, path) for c in rows[0]}
        path = os.path.join(run_dir, "layers.csv")
        rows = read_table(path, ("layer", "heads") + tuple(t + "_share" for t in TYPES))
        self.layer_counts = [(int(r["layer"]), {t: int(round(float(r[t + "_share"]) * int(r["heads"]))) for t in TYPES})
                             for r in rows]
        self.planted = planted_types(run_dir)

    def heads_of(self, label):
        return sum(1 for v in self.labels.values() if v == label)


def planted_types(run_dir):
    """planted_types.csv of the run's model directory, {(layer, head): type}, when it has one."""
    try:
        with open(os.path.join(run_dir, "run.json")) as f:
            model_dir = json.load(f)["model"]["dir"]
        with open(os.path.join(model_dir, "planted_types.csv"), newline="") as f:
            return {(int(r["layer"]), int(r["head"])): r["type"] for r in csv.DictReader(f)}
    except (OSError, KeyError, TypeError, ValueError):
        return None


def mean_f_by_n(run, heads):
    """{N >= 2: mean over the given heads of f_mean}, N where it is defined."""
    keep = np.array([h in heads for h in run.sel_head]) & (run.sel_n >= 2)
    curve = {int(n): finite_mean(run.sel["f_mean"][keep & (run.sel_n == n)]) for n in np.unique(run.sel_n[keep])}
    curve = {n: f for n, f in curve.items() if np.isfinite(f)}
    if not curve:
        raise BadInput(f"{os.path.join(run.dir, 'selection.csv')}: no finite f_mean at N >= 2")
    return curve


def peak(curve):
    """(N, value) of the highest value, the smallest N on ties."""
    n = max(curve, key=lambda k: (curve[k], -k))
    return n, curve[n]


def f_row(run):
    n, f = peak(mean_f_by_n(run, set(run.labels)))
    text = f"N = {n} (mean F over heads {f:.3f}; N = 1 is trivial)."
    by_type = []
    for t in TYPES:
        heads = {h for h, v in run.labels.items() if v == t}
        if heads:
            by_type.append((t, len(heads)) + peak(mean_f_by_n(run, heads)))
    by_type.sort(key=lambda x: -x[3])
    if all(tn == n for _, _, tn, _ in by_type):
        return text + f" By type, also N = {n}: " + ", ".join(f"{t} {tf:.3f} ({k} heads)" for t, k, _, tf in by_type)
    return text + " By type: " + "; ".join(f"{t} ({k} heads) N = {tn}, F = {tf:.3f}" for t, k, tn, tf in by_type)


def corr_peak(run, name):
    """The peak of one correlation over N (the smallest N on ties), and the heads it took;
    defined somewhere whenever Pearson is (ranks of non-constant data are not constant)."""
    values = run.corr[name]
    finite = np.isfinite(values)
    i = int(np.flatnonzero(finite)[np.argmax(values[finite])])
    return (f"N = {int(run.corr['n'][i])}, r = {values[i]:.2f} "
            f"[{run.corr[name + '_lo'][i]:.2f}, {run.corr[name + '_hi'][i]:.2f}]"), int(run.corr["heads"][i])


def corr_row(run):
    if not np.isfinite(run.corr["pearson"]).any():
        rho = run.rho0[np.isfinite(run.rho0)]
        why = (f"rho_0 is {rho[0]:.3g} for every head" if rho.size and np.all(rho == rho[0])
               else "fewer than 3 heads, or a constant Recall, at every N")
        return f"undefined at every N (`sink_recall.csv`): {why}, so there is nothing to correlate"
    pearson, heads = corr_peak(run, "pearson")
    spearman, _ = corr_peak(run, "spearman")
    text = f"Pearson peaks at {pearson}; Spearman at {spearman} (bootstrap intervals, {heads} heads)"
    if run.no_sink:
        text += (f"; {run.no_sink} of {len(run.labels)} heads put less than uniform mass on the sink "
                 "(`flag_no_sink`), where rho_0 describes a token that takes almost no attention")
    return text


def layer_mix(counts):
    parts = [f"{counts[t]} {t}" for t in TYPES if counts[t]]
    return ", ".join(parts) + f" of {sum(counts.values())}"


def depth_row(run):
    typed = ("retriever", "reset", "mixer")
    missing = [t for t in typed if not run.heads_of(t)]
    if missing:
        names = ", ".join(missing[:-1]) + (" or " if len(missing) > 1 else "") + missing[-1]
        verdict = f"not seen: no {names} head at all"
    else:
        depth = {t: np.mean([l for (l, _), v in run.labels.items() if v == t]) for t in typed}
        order = ", ".join(f"{t} {depth[t]:.2f}" for t in typed)
        if depth["retriever"] < depth["reset"] < depth["mixer"]:
            verdict = "seen"
        else:
            verdict = "no progression" if len(set(depth.values())) == 1 else "not seen"
        verdict += f": mean layer of {order}"
    groups = {}
    for layer, counts in run.layer_counts:
        groups.setdefault(layer_mix(counts), []).append(layer)
    by_layer = "; ".join(("layer " if len(ls) == 1 else "layers ") + ", ".join(map(str, ls)) + ": " + mix
                         for mix, ls in groups.items())
    text = f"{verdict}. By layer (`layers.csv`): {by_layer}"
    if run.planted is not None:
        agree = sum(run.planted.get(h) == v for h, v in run.labels.items())
        text += f"; {agree} of {len(run.labels)} heads carry their planted type (`planted_types.csv`)"
    return text


def coverage_row(run):
    cells = run.sel_n >= 2
    sel = {c: v[cells] for c, v in run.sel.items()}  # [(head, N >= 2) cells]
    share = {c: finite_mean(v) for c, v in sel.items()}
    r2_gap = sel["r2_separation_prob"] - sel["separated"]
    r2_excess = np.max(r2_gap[np.isfinite(r2_gap)]) if np.isfinite(r2_gap).any() else float("nan")
    r3_over = int(np.sum(sel["r3_certified"] > sel["separated"]))
    return (f"R1's envelope holds in {pct(share['r1_inside'])} of samples with N >= 2 but is vacuous in "
            f"{pct(share['r1_vacuous'])}; perfect separation is measured in {pct(share['separated'])} of "
            f"(head, N) cells on average; R2's lower bound on its probability averages "
            f"{share['r2_separation_prob']:.3f} (vacuous in {pct(share['r2_vacuous'])}) and is at most "
            f"{r2_excess:.3f} above the measured share in any cell; R3 certifies {pct(share['r3_certified'])} "
            + ("and never more than the measured share" if r3_over == 0
               else f"and more than the measured share in {r3_over} cells"))


def pruning_path(run_dir, prune):
    if prune is None:
        path = os.path.join(run_dir, "pruning.csv")
        return path if os.path.isfile(path) else None
    return os.path.join(prune, "pruning.csv") if os.path.isdir(prune) else prune


class Pruning:
    """pruning.csv: perplexity per (strategy, fraction), over seeds."""

    def __init__(self, path):
        rows = read_table(path, ("strategy", "fraction", "ppl"))
        self.fraction, self.ppl = numbers(rows, "fraction", path), numbers(rows, "ppl", path)
        self.strategy = np.array([r["strategy"] for r in rows])
        unedited = self.ppl[self.fraction == 0]
        self.fractions = sorted({float(f) for f in self.fraction[self.fraction > 0]})
        if not unedited.size or not self.fractions:
            raise BadInput(f"{path}: needs fraction 0 and at least one fraction above it")
        self.unedited = unedited[0]
        for name in SEEDED_ORDERS:
            if not all(self.at(name, f).size for f in self.fractions):
                raise BadInput(f"{path}: no {name} rows at some fraction")

    def at(self, name, fraction):
        return self.ppl[(self.strategy == name) & np.isclose(self.fraction, fraction)]  # [seeds]


def spread(ppl):
    return f"{ppl.mean():.2f} [{ppl.min():.2f}, {ppl.max():.2f}]"


def prune_row(run, path):
    if path is None:
        return "not measured: no `pruning.csv` (run `attngeom prune`, docs/prune.md)"
    p = Pruning(path)
    fractions = p.fractions
    type_mean = {f: p.at("type", f).mean() for f in fractions}
    random_mean = {f: p.at("random", f).mean() for f in fractions}
    below = [f for f in fractions if type_mean[f] < random_mean[f]]
    verdict = "yes" if len(below) == len(fractions) else "no" if not below else "mixed"
    band = sum(p.at("random", f).min() <= type_mean[f] <= p.at("random", f).max() for f in fractions)
    quoted = [f for f in fractions if np.isclose(f, QUOTED_FRACTIONS).any()] or fractions
    steps = [f"at {fraction_pct(quoted[0])} of heads masked `type` {spread(p.at('type', quoted[0]))}, "
             f"`random` {spread(p.at('random', quoted[0]))}"]
    steps += [f"at {fraction_pct(f)} {spread(p.at('type', f))} against {spread(p.at('random', f))}"
              for f in quoted[1:]]
    text = (f"{verdict}. Perplexity (unedited {p.unedited:.2f}), mean over {p.at('random', fractions[0]).size} "
            f"seeds [min, max]: " + "; ".join(steps) + f". `type`'s mean is below `random`'s at {len(below)} of "
            f"{len(fractions)} fractions ({fraction_pct(fractions[0])} to {fraction_pct(fractions[-1])}) and "
            f"inside `random`'s band at {band}; {run.heads_of('unclassified')} of {len(run.labels)} heads are "
            "unclassified")
    at = quoted[-2:]
    singles = [s for s in set(p.strategy) - set(SEEDED_ORDERS) - {"mask"} if all(p.at(s, f).size for f in at)]
    if not singles:
        return text
    singles.sort(key=lambda s: (p.at(s, at[-1]).mean(), s))
    figures = ", ".join(f"`{s}` " + " / ".join(f"{p.at(s, f).mean():.2f}" for f in at) for s in singles)
    winners = [f"`{s}`" for s in singles if all(p.at(s, f).mean() < min(type_mean[f], random_mean[f]) for f in at)]
    return (text + f". Single-metric orders at {' / '.join(fraction_pct(f) for f in at)}: {figures}; below both "
            "`type`'s and `random`'s means: " + (", ".join(winners) or "none"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", metavar="RUN_DIR", help="analyze run directory")
    parser.add_argument("--prune", metavar="PRUNE_DIR_OR_CSV",
                        help="attngeom prune's output directory or its pruning.csv (default: RUN_DIR's pruning.csv)")
    parser.add_argument("--label", metavar="NAME", help="name the model in the header (default: 'here')")
    args = parser.parse_args()
    try:
        if not os.path.isdir(args.run_dir):
            raise BadInput(f"{args.run_dir}: not a run directory")
        run = Run(args.run_dir)
        rows = [("F peaks at small N", f_row(run)),
                ("corr(rho_0, Recall) peaks near N = 3-6", corr_row(run)),
                ("Retriever -> Reset -> Mixer with depth", depth_row(run)),
                ("R1 / R2 / R3 coverage", coverage_row(run)),
                ("type-guided pruning beats random", prune_row(run, pruning_path(args.run_dir, args.prune)))]
    except BadInput as e:
        print(f"seed_claims.py: {e}", file=sys.stderr)
        return 2
    where = f"on {args.label}" if args.label else "here"
    print(f"| claim (seed) | measured {where} |\n|---|---|")
    for claim, measured in rows:
        print(f"| {claim} | {measured} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
