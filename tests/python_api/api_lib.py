"""Shared by the python.api_* tests: arguments, the fixtures, and `attngeom metrics` records."""
import argparse
import os
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
    args.scratch = tempfile.mkdtemp(prefix="attngeom-api-")
    return args


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
