#!/usr/bin/env python3
"""tools/seed_claims.py against figures recomputed here from the run's tables.

  test_seed_claims.py --bin PATH/attngeom --fixtures DIR

On an analyze run of the mistral fixture, its heads relabelled with every type (as
test_prune.py does), and its `attngeom prune` output, the printed F peak (overall and per
type), R1/R3 coverage and `type` / `random` perplexities must equal this file's own
computation from selection.csv and pruning.csv (plain csv, no numpy); on an analyze run
of the planted model, the per-layer type counts must equal heads.csv's labels and every
head must carry its planted type. The script must print the same table twice, and refuse
a run without selection.csv with one line and exit 2.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from statistics import mean

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO  # noqa: E402
from prune_lib import CORPUS, corpus_lines, read_csv, relabel_every_type, write_text  # noqa: E402

SCRIPT = os.path.join(REPO, "tools", "seed_claims.py")
PLANTED = os.path.join(REPO, "models", "planted")
TYPES = ("retriever", "mixer", "reset", "unclassified")


def run(args):
    subprocess.run(args, check=True, capture_output=True, timeout=300)


def claims(*args):
    proc = subprocess.run([sys.executable, "-B", SCRIPT, *args], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise SystemExit(f"seed_claims.py {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}")
    rows = {}
    for line in proc.stdout.splitlines()[2:]:
        claim, measured = line.strip("| ").split(" | ")
        rows[claim] = measured
    return proc.stdout, rows


def pct(share):
    value = 100 * share
    return f"{value:.1f}%" if value < 1 else f"{value:.0f}%"


def f_curve(selection):
    """{N: mean f_mean over the rows}."""
    by_n = {}
    for r in selection:
        by_n.setdefault(int(r["n"]), []).append(float(r["f_mean"]))
    return {n: mean(v) for n, v in by_n.items()}


def peak(curve):
    best = max(curve.values())
    return min(n for n, v in curve.items() if v == best), best


def expect(failures, what, text, wanted):
    if wanted not in text:
        failures.append(f"{what}: expected {wanted!r} in {text!r}")


def check_fixture_run(args, tmp, failures):
    fixture = os.path.join(args.fixtures, "mistral")
    scores, pruned = os.path.join(tmp, "run"), os.path.join(tmp, "prune")
    run([args.bin, "analyze", "--model", fixture, "--data", CORPUS, "--seq-len", "96", "--num-seqs", "6",
         "--precision", "fp32", "--threads", "1", "--out", scores])
    # The fixture's heads are all unclassified, which makes `type` the `random` order.
    heads = relabel_every_type(scores)
    data = write_text(os.path.join(tmp, "held.txt"), corpus_lines(2)[1])
    run([args.bin, "prune", "--model", fixture, "--data", data, "--scores", scores, "--out", pruned,
         "--context", "48", "--max-tokens", "120", "--fractions", "0,0.1,0.3,0.5", "--seeds", "3", "--no-topn",
         "--threads", "1"])
    text, rows = claims(scores, "--prune", pruned)
    again, _ = claims(scores, "--prune", os.path.join(pruned, "pruning.csv"))
    if again != text:
        failures.append("the same run printed two different tables")
    print(text)

    selection = [r for r in read_csv(os.path.join(scores, "selection.csv")) if int(r["n"]) >= 2]
    peak_n, best = peak(f_curve(selection))
    f_row = rows["F peaks at small N"]
    expect(failures, "F peak", f_row, f"N = {peak_n} (mean F over heads {best:.3f};")
    labels = {(r["layer"], r["head"]): r["label"] for r in heads}
    for t in TYPES:
        curve = f_curve([r for r in selection if labels[(r["layer"], r["head"])] == t])
        n, f = peak(curve)
        count = list(labels.values()).count(t)
        same_n = "By type, also" in f_row
        expect(failures, f"F peak of {t}", f_row,
               f"{t} {f:.3f} ({count} heads)" if same_n else f"{t} ({count} heads) N = {n}, F = {f:.3f}")
    coverage = rows["R1 / R2 / R3 coverage"]
    inside = mean(float(r["r1_inside"]) for r in selection)
    vacuous = mean(float(r["r1_vacuous"]) for r in selection)
    expect(failures, "R1", coverage, f"holds in {pct(inside)} of samples with N >= 2 but is vacuous in {pct(vacuous)}")
    certified = mean(float(r["r3_certified"]) for r in selection)
    expect(failures, "R3", coverage, f"R3 certifies {pct(certified)}")

    pruning = read_csv(os.path.join(pruned, "pruning.csv"))
    prune = rows["type-guided pruning beats random"]
    for fraction in ("0.1", "0.3", "0.5"):
        for order in ("type", "random"):
            ppl = [float(r["ppl"]) for r in pruning
                   if r["strategy"] == order and float(r["fraction"]) == float(fraction)]
            if len(ppl) != 3:
                failures.append(f"pruning.csv: {len(ppl)} rows of {order} at {fraction}")
                continue
            expect(failures, f"{order} at {fraction}", prune, f"{mean(ppl):.2f} [{min(ppl):.2f}, {max(ppl):.2f}]")
    unedited = [float(r["ppl"]) for r in pruning if float(r["fraction"]) == 0][0]
    expect(failures, "unedited", prune, f"(unedited {unedited:.2f})")


def check_planted_run(args, tmp, failures):
    scores = os.path.join(tmp, "planted")
    run([args.bin, "analyze", "--model", PLANTED, "--data", CORPUS, "--pack", "--pack-separator", "none",
         "--seq-len", "64", "--num-seqs", "4", "--threads", "1", "--out", scores])
    _, rows = claims(scores)
    depth = rows["Retriever -> Reset -> Mixer with depth"]
    heads = read_csv(os.path.join(scores, "heads.csv"))
    for layer in sorted({int(r["layer"]) for r in heads}):
        labels = [r["label"] for r in heads if int(r["layer"]) == layer]
        mix = ", ".join(f"{labels.count(t)} {t}" for t in TYPES if labels.count(t)) + f" of {len(labels)}"
        if not re.search(rf"layers? [0-9, ]*\b{layer}\b[0-9, ]*: {re.escape(mix)}", depth):
            failures.append(f"layer {layer}: expected {mix!r} in {depth!r}")
    expect(failures, "planted", depth, f"{len(heads)} of {len(heads)} heads carry their planted type")
    if not rows["type-guided pruning beats random"].startswith("not measured: no `pruning.csv`"):
        failures.append("a run without pruning.csv gave a pruning figure")
    # Bad input: one line, exit 2.
    os.remove(os.path.join(scores, "selection.csv"))
    proc = subprocess.run([sys.executable, "-B", SCRIPT, scores], capture_output=True, text=True, timeout=60)
    if proc.returncode != 2 or proc.stdout or len(proc.stderr.splitlines()) != 1 or "selection.csv" not in proc.stderr:
        failures.append(f"missing selection.csv: exit {proc.returncode}, stderr {proc.stderr!r}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--fixtures", required=True)
    args = parser.parse_args()
    failures = []
    tmp = tempfile.mkdtemp(prefix="attngeom-seed-claims-")
    try:
        check_fixture_run(args, tmp, failures)
        check_planted_run(args, tmp, failures)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL", f)
    print("seed_claims: " + ("FAILED" if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
