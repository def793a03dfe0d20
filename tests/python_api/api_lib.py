"""Shared by the python.api_* tests: arguments, the fixtures, and `attngeom metrics` records."""
import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "python"))
import st_reader  # noqa: E402

PROMPT = os.path.join(REPO, "tests", "data", "fixture_prompt.txt")
CORPUS = os.path.join(REPO, "tests", "data", "fixture_corpus.txt")
PARITY_FIXTURES = ["llama", "mistral", "gemma", "mistral-nowindow"]


def parse_args(cli):
    """--fixtures, and --bin (the attngeom CLI) when `cli`: the test compares with the CLI."""
    p = argparse.ArgumentParser()
    if cli:
        p.add_argument("--bin", required=True, help="the attngeom CLI")
        p.add_argument("--other-build", action="store_true",
                       help="the CLI comes from another build than the module (the sanitizer build's tests use the "
                            "release CLI): the forward pass may round differently in the last bits, so its arrays "
                            "are compared to a tolerance (same_as_cli) and analyze's tables are not compared")
    p.add_argument("--fixtures", required=True)
    args = p.parse_args()
    args.scratch = scratch_dir("attngeom-api-")
    return args


def scratch_dir(prefix):
    """A temporary folder removed when the test ends, whether it passes or fails."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def run(*cmd):
    """Runs the CLI; without the sanitizer runtimes that the sanitizer build preloads into python3
    (its CLI is the release build's)."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    proc = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {' '.join(map(str, cmd))}: exit {proc.returncode}\n{proc.stderr}")
    return proc


def same_as_cli(args, mine, theirs):
    """Whether an array of the module equals the CLI's: bit for bit, or with --other-build
    within fp32 rounding of the forward pass (relative to the array's largest magnitude)."""
    mine, theirs = np.asarray(mine), np.asarray(theirs)
    if mine.dtype != theirs.dtype or mine.shape != theirs.shape:
        return False
    if not args.other_build or mine.dtype.kind != "f":
        return mine.tobytes() == theirs.tobytes()
    scale = max(1.0, float(np.max(np.abs(theirs), initial=0.0)))
    return float(np.max(np.abs(mine.astype(np.float64) - theirs), initial=0.0)) <= 1e-4 * scale


def metrics_record(binary, dump, out, *flags):
    """`attngeom metrics` on one dump: ({field: [L, H, Q, G]}, n_grid) from its record."""
    run(binary, "metrics", "--dump", dump, "--out", out, *flags)
    tensors, meta, _ = st_reader.read(os.path.join(out, "records", "seq-000000.safetensors"))
    import json
    record = json.loads(meta["record"])
    per_n = tensors["per_n"]
    return {name: per_n[..., i] for i, name in enumerate(record["per_n_fields"])}, np.array(record["n_grid"])


def check_selection_equals_metrics(geo, record, n_grid, layer, where):
    """selection() of one layer against metrics' record: P, R, F exactly (the counts behind
    them too), radii and margins to 1e-12."""
    assert np.array_equal(geo["n"], n_grid), f"{where}: N grid {geo['n']} != metrics' {n_grid}"
    for name, tol in (("precision", 0), ("recall", 0), ("f", 0), ("r_min", 1e-12), ("r_max", 1e-12), ("margin", 1e-12)):
        mine, theirs = geo[name], record[name][layer]
        assert mine.shape == theirs.shape, f"{where}: {name} shape {mine.shape} != {theirs.shape}"
        assert np.array_equal(np.isnan(mine), np.isnan(theirs)), f"{where}: {name} NaN pattern differs"
        ok = ~np.isnan(mine)
        err = np.max(np.abs(mine[ok] - theirs[ok]), initial=0.0)
        assert err <= tol, f"{where}: {name} differs from metrics by {err}"
    n = geo["n"].astype(np.float64)
    fp, tp = geo["unselected_inside_r_max"], geo["selected_inside_r_min"]
    ok = fp >= 0
    assert np.array_equal(ok, ~np.isnan(geo["precision"])), f"{where}: counts undefined where P is defined"
    nn = np.broadcast_to(n, fp.shape)
    assert np.array_equal((nn / (nn + fp))[ok], record["precision"][layer][ok]), f"{where}: FP count disagrees"
    assert np.array_equal((tp / nn)[ok], record["recall"][layer][ok]), f"{where}: TP count disagrees"


# attngeom.hf's tests (python.api_hf, python.api_hf_transformers): run directories of two
# forward passes compared. Their inputs agree as the reference parity tests require
# (test_capture_vs_reference.py: probabilities within 1e-5, values within 1e-5 x max|v|).
# Table cells that move in steps (counts, labels, P, R, F and their means) must be equal;
# continuous cells within TABLE_RELATIVE x max(1, |x|), the inputs' 1e-5 amplified by the
# geometry's conditioning. Records of the same forward pass batched differently: within
# RECORD_TOLERANCE x max(1, |x|), far below a step of P, R or F (at least 1/512).
TABLE_RELATIVE = 2e-3
RECORD_TOLERANCE = 1e-5
STEPWISE = ("precision", "recall", "f", "separated")


def checker(failures):
    """check(ok, what): prints ok/FAIL and collects the failures."""
    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)
    return check


def _csv_rows(path):
    import csv
    with open(path, newline="") as f:
        return list(csv.reader(f))


def _cell_problem(column, x, y):
    """Why cell x differs too much from y, or None."""
    if x == y:
        return None
    try:
        fx, fy = float(x), float(y)
    except ValueError:
        return f"{x!r} vs {y!r}"
    if np.isnan(fx) and np.isnan(fy):
        return None
    stepwise = "." not in x + y or (column.split("_")[0] in STEPWISE and not column.startswith("f_best"))
    if stepwise:
        return f"{x} vs {y}" if fx != fy else None
    diff = abs(fx - fy) / max(1.0, abs(fy))
    return None if diff <= TABLE_RELATIVE else f"{x} vs {y}"


def same_tables(a, b):
    """(problems, largest relative difference of a continuous cell) of run b's CSV tables
    against run a's."""
    import glob
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(a, "*.csv")))
    theirs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(b, "*.csv")))
    if names != theirs or not names:
        return [f"tables {names} vs {theirs}"], 0.0
    problems, worst = [], 0.0
    for name in names:
        ra, rb = _csv_rows(os.path.join(a, name)), _csv_rows(os.path.join(b, name))
        if len(ra) != len(rb) or ra[0] != rb[0]:
            problems.append(f"{name}: {len(ra)} vs {len(rb)} rows or another header")
            continue
        for row_a, row_b in zip(ra[1:], rb[1:]):
            for column, x, y in zip(ra[0], row_a, row_b):
                problem = _cell_problem(column, x, y)
                if problem:
                    problems.append(f"{name} {row_a[:3]} {column}: {problem}")
                elif x != y:
                    worst = max(worst, abs(float(x) - float(y)) / max(1.0, abs(float(y))))
    return problems, worst


def table_checker(check):
    def same(a, b, what):
        problems, worst = same_tables(a, b)
        check(not problems, f"{what}: tables equal (largest relative difference of a continuous cell {worst:.1e})"
                            f"{'; ' + '; '.join(problems[:6]) if problems else ''}")
    return same


def run_records(run):
    """{file name: {tensor: array}} of a run directory's records."""
    import glob
    return {os.path.basename(p): st_reader.read(p)[0]
            for p in sorted(glob.glob(os.path.join(run, "records", "*.safetensors")))}


def same_records(a, b):
    """(equal within RECORD_TOLERANCE?, number of records, largest difference) of two runs' records."""
    ra, rb = run_records(a), run_records(b)
    ok, worst = bool(ra) and ra.keys() == rb.keys(), 0.0
    for name in ra.keys() & rb.keys():
        for key, x in ra[name].items():
            y = rb[name][key]
            if x.shape != y.shape or x.dtype != y.dtype:
                ok = False
            elif x.dtype.kind != "f":
                ok = ok and np.array_equal(x, y)
            elif not np.array_equal(np.isnan(x), np.isnan(y)):
                ok = False
            else:
                finite = ~np.isnan(x)
                d = np.abs(x[finite] - y[finite]) / np.maximum(1.0, np.abs(y[finite]))
                worst = max(worst, float(d.max(initial=0.0)))
    return ok and worst <= RECORD_TOLERANCE, len(ra), worst


def record_checker(check):
    def same(a, b, what):
        ok, count, worst = same_records(a, b)
        check(ok, f"{what}: {count} records equal (largest relative difference {worst:.1e})")
    return same
