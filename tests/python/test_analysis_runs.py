#!/usr/bin/env python3
"""End-to-end checks of `attngeom analyze` run directories on a fixture model.

  test_analysis_runs.py --bin PATH/attngeom --fixtures DIR --check resume|shards|every_n|second_signal|last_row

resume       an analyze run killed (SIGKILL) at random points and continued with --resume
             each time ends with tables equal to one uninterrupted run (counts exactly,
             means within 1e-12), and no finished sequence is recomputed.
shards       3 shards (--shard i/3) merged with `attngeom merge` equal one run.
second_signal  SIGINT while a long sequence runs, then SIGINT again: the run exits at once
             with code 130 instead of finishing the sequence, and leaves a resumable run.
last_row     the head types and their features (heads.csv) of a `--queries all` run equal
             the `--queries last` run's: docs/method.md section 6 reads the last query row;
             head_stats.csv equals numpy's mean, std and quantiles of the records' rows; and
             heads.csv's kv_head (GQA), f_small and peak_f_n (ties: the smallest N) follow
             from the other tables, on the fixtures and on the trained model organism.
every_n      `analyze --every-n` with one short query row (fewer keys than most N) finishes,
             has every N in 1..T-1 for every head with finite P/R/F, counts only the rows
             long enough at each N, and equals the default-grid run at the grid's N.
"""
import argparse
import csv
import hashlib
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_reader  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "data", "fixture_corpus.txt")
PROMPT = os.path.join(HERE, "..", "data", "fixture_prompt.txt")
ORGANISM = os.path.join(HERE, "..", "..", "models", "organism")
TABLES = ["heads.csv", "selection.csv", "sink_recall.csv", "layers.csv", "profile_fit.csv"]


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def compare_tables(a_dir, b_dir, failures):
    """Counts (integer-like columns) exactly, every number within 1e-12 relative."""
    worst = 0.0
    for table in TABLES:
        a, b = read_csv(os.path.join(a_dir, table)), read_csv(os.path.join(b_dir, table))
        if len(a) != len(b) or (a and a[0].keys() != b[0].keys()):
            failures.append(f"{table}: shape differs ({len(a)} vs {len(b)} rows)")
            continue
        for ra, rb in zip(a, b):
            for key in ra:
                x, y = ra[key], rb[key]
                try:
                    fx, fy = float(x), float(y)
                except ValueError:
                    if x != y:
                        failures.append(f"{table}: {key} {x!r} != {y!r}")
                    continue
                if math.isnan(fx) and math.isnan(fy):
                    continue
                if key in ("samples", "n", "layer", "head", "kv_head", "heads", "peak_f_n") and x != y:
                    failures.append(f"{table}: count column {key} {x} != {y}")
                err = abs(fx - fy) / max(1.0, abs(fx))
                worst = max(worst, err)
                if err > 1e-12:
                    failures.append(f"{table}: {key} {x} vs {y} (rel {err:.2e})")
    return worst


def analyze_args(bin_path, fixtures, num_seqs=9):
    return [bin_path, "analyze", "--model", os.path.join(fixtures, "mistral"), "--data", CORPUS,
            "--seq-len", "96", "--num-seqs", str(num_seqs), "--precision", "fp32", "--threads", "1"]


def check_resume(args, tmp, failures):
    base = analyze_args(args.bin, args.fixtures)
    reference = os.path.join(tmp, "straight")
    subprocess.run(base + ["--out", reference], check=True, capture_output=True)
    run = os.path.join(tmp, "killed")
    rng = random.Random(1234)
    kills = 0
    # Time one sequence so kills land inside the run.
    t0 = time.time()
    subprocess.run(analyze_args(args.bin, args.fixtures, 1) + ["--out", os.path.join(tmp, "timing")], check=True,
                   capture_output=True)
    one_seq = time.time() - t0
    mtimes = {}
    while kills < args.kills:
        # --resume whenever --out exists: also when a kill came before run.json was committed.
        cmd = base + ["--out", run] + (["--resume"] if os.path.isdir(run) else [])
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, one_seq * 3))
        finished = proc.poll() is not None
        if not finished:
            proc.send_signal(signal.SIGKILL if rng.random() < 0.7 else signal.SIGINT)
            proc.wait()
            kills += 1
        records = os.path.join(run, "records")
        if os.path.isdir(records):
            for name in os.listdir(records):
                if ".tmp." in name:
                    continue  # a killed process's unfinished temporary: never read, replaced on resume
                path = os.path.join(records, name)
                m = os.stat(path).st_mtime_ns
                if name in mtimes and mtimes[name] != m:
                    failures.append(f"record {name} was rewritten after it was finished")
                mtimes[name] = m
        if finished:
            # Completed before the kill: start over so that every kill interrupts work.
            subprocess.run(["rm", "-rf", run], check=True)
            mtimes = {}
    subprocess.run(base + ["--out", run] + (["--resume"] if os.path.isdir(run) else []), check=True,
                   capture_output=True)
    worst = compare_tables(reference, run, failures)
    print(f"resume: {kills} kills (SIGKILL/SIGINT at random points), final tables vs uninterrupted run: "
          f"max relative difference {worst:.1e}")
    # A label given at the start survives a --resume without --label; a default one stays the default.
    for label in ("given", None):
        labelled = os.path.join(tmp, "labelled" if label else "unlabelled")
        one = analyze_args(args.bin, args.fixtures, 1) + ["--out", labelled]
        subprocess.run(one + (["--label", label] if label else []), check=True, capture_output=True)
        subprocess.run(one + ["--resume"], check=True, capture_output=True)
        with open(os.path.join(labelled, "run.json")) as f:
            kept = json.load(f)["label"]
        if kept != (label or os.path.basename(labelled)):
            failures.append(f"--resume without --label relabelled the run {label or 'with no --label'} as {kept!r}")
    # run.json records the device; a run made on another one is never resumed here.
    labelled = os.path.join(tmp, "labelled")
    with open(os.path.join(labelled, "run.json")) as f:
        run = json.load(f)
    if run.get("device") != "cpu":
        failures.append(f"run.json device {run.get('device')!r}, expected 'cpu'")
    set_device(labelled, "cuda")
    other = subprocess.run(analyze_args(args.bin, args.fixtures, 1) + ["--out", labelled, "--resume"],
                           capture_output=True, text=True)
    if other.returncode != 2 or "device" not in other.stderr:
        failures.append(f"--resume of a run made on another device: exit {other.returncode}, {other.stderr.strip()!r}")


def set_device(run_dir, device):
    """Marks run_dir's settings as made on `device`, as a run there would have written them."""
    path = os.path.join(run_dir, "run.json")
    with open(path) as f:
        run = json.load(f)
    run["settings"]["device"] = device
    with open(path, "w") as f:
        json.dump(run, f)


def check_shards(args, tmp, failures):
    # Non-default aggregation options and a length sweep: merge must take both from the shards.
    base = analyze_args(args.bin, args.fixtures) + ["--stats-seed", "7", "--bootstrap", "300",
                                                    "--retriever-min-cos-last", "0.3", "--lengths", "48"]
    reference = os.path.join(tmp, "single")
    subprocess.run(base + ["--out", reference], check=True, capture_output=True)
    shards = []
    for i in range(3):
        shards.append(os.path.join(tmp, f"shard{i}"))
        subprocess.run(base + ["--out", shards[-1], "--shard", f"{i}/3"], check=True, capture_output=True)
    merged = os.path.join(tmp, "merged")
    subprocess.run([args.bin, "merge", *shards, "--out", merged], check=True, capture_output=True)
    worst = compare_tables(reference, merged, failures)
    worst = max(worst, compare_tables(os.path.join(reference, "lengths", "48"), os.path.join(merged, "lengths", "48"),
                                      failures))
    if read_csv(os.path.join(reference, "length_sweep.csv")) != read_csv(os.path.join(merged, "length_sweep.csv")):
        failures.append("shards: merged length_sweep.csv differs from the single run's")
    print(f"shards: 3 shards merged vs single run (and its length 48): max relative difference {worst:.1e}")
    set_device(shards[1], "cuda")
    mixed = subprocess.run([args.bin, "merge", *shards, "--out", os.path.join(tmp, "mixed")], capture_output=True,
                           text=True)
    if mixed.returncode != 2 or "differ" not in mixed.stderr:
        failures.append(f"merge of shards made on different devices: exit {mixed.returncode}, {mixed.stderr.strip()!r}")


def check_last_row(args, tmp, failures):
    base = analyze_args(args.bin, args.fixtures, num_seqs=3) + ["--retriever-min-cos-last", "0.65"]
    tables = {}
    for rows in ("last", "all"):
        subprocess.run(base + ["--queries", rows, "--out", os.path.join(tmp, rows)], check=True, capture_output=True)
        tables[rows] = read_csv(os.path.join(tmp, rows, "heads.csv"))
    check_provenance(args, os.path.join(tmp, "last"), failures)
    features = ["label", "sink_magnitude", "last_magnitude", "rest_magnitude", "cos_sink_small", "cos_sink_large",
                "cos_last_small", "cos_last_large"]
    differ = 0
    for last, every in zip(tables["last"], tables["all"]):
        for key in features:
            if key == "label" and last[key] != every[key] or \
                    key != "label" and abs(float(last[key]) - float(every[key])) > 1e-12:
                failures.append(f"last_row: layer {last['layer']} head {last['head']} {key} {last[key]} vs {every[key]}")
        differ += last["sink_mass"] != every["sink_mass"]
    if differ == 0:
        failures.append("last_row: sink_mass equal in every head: the all-rows run did not pool its rows")
    print(f"last_row: {len(tables['last'])} heads, types and features equal; sink_mass (all rows) differs in {differ}")
    check_head_stats(os.path.join(tmp, "all"), failures)
    check_head_columns(os.path.join(tmp, "last"), failures)
    # A trained model as well as the random fixtures.
    organism = os.path.join(tmp, "organism")
    subprocess.run([args.bin, "analyze", "--model", ORGANISM, "--data", CORPUS, "--seq-len", "128", "--num-seqs", "4",
                    "--threads", "1", "--out", organism], check=True, capture_output=True)
    check_head_columns(organism, failures)


def check_provenance(args, run, failures):
    """run.json records what the report's provenance shows: the thresholds, the corpus
    selection and the tokenizer's hash (docs/run_format.md)."""
    with open(os.path.join(run, "run.json")) as f:
        r = json.load(f)
    with open(os.path.join(args.fixtures, "mistral", "tokenizer.model"), "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    wanted = {("options", "taxonomy", "retriever_min_cos_last"): 0.65, ("options", "bootstrap"): 2000,
              ("corpus", "num_seqs"): 3, ("corpus", "format"): "text", ("corpus", "pack"): False,
              ("tokenizer", "sha256"): sha, ("tokenizer", "position0"): "bos"}
    for path, value in wanted.items():
        got = r
        for key in path:
            got = got.get(key) if isinstance(got, dict) else None
        if got != value:
            failures.append(f"provenance: run.json {'/'.join(path)} = {got!r}, expected {value!r}")
    print(f"provenance: run.json holds {len(wanted)} checked fields")


def check_head_stats(run, failures):
    """head_stats.csv against numpy over the records: every row ('all') or each record's last row ('last')."""
    records = [st_reader.read(os.path.join(run, "records", f)) for f in sorted(os.listdir(os.path.join(run, "records")))]
    fields = json.loads(records[0][1]["record"])["per_row_fields"]
    per_row = np.stack([r[0]["per_row"] for r in records])  # [S, L, H, Q, Kr]
    worst, rows = 0.0, read_csv(os.path.join(run, "head_stats.csv"))
    for row in rows:
        l, h, k = int(row["layer"]), int(row["head"]), fields.index(row["field"])
        x = per_row[:, l, h, :, k] if row["rows"] == "all" else per_row[:, l, h, -1, k]
        x = x[np.isfinite(x)].ravel()
        want = [x.mean(), x.std(), *np.quantile(x, [0.1, 0.25, 0.5, 0.75, 0.9])]
        got = [float(row[c]) for c in ("mean", "std", "q10", "q25", "q50", "q75", "q90")]
        if int(row["count"]) != len(x):
            failures.append(f"head_stats: layer {l} head {h} {row['field']}: count {row['count']} vs {len(x)}")
        for g, w in zip(got, want):
            err = abs(g - w) / max(1.0, abs(w))
            worst = max(worst, err)
            if err > 1e-12:
                failures.append(f"head_stats: layer {l} head {h} {row['field']} ({row['rows']}): {g} vs numpy {w}")
    print(f"head_stats: {len(rows)} (head, field) rows against numpy; max relative difference {worst:.1e}")
    # Undefined on the short rows of --queries all (query 0 has no content key; the decay fit
    # needs two lags): NaN, so that the means above skip them, and defined on the last row.
    positions = records[0][0]["query_positions"]
    if positions[0] == 0:
        for name in ("nu", "cv", "lambda", "rho0", "beta", "beta_mae", "beta_r2", "cos_sink_small", "cos_sink_large",
                     "cos_last_small", "cos_last_large"):
            k = fields.index(name)
            if not np.isnan(per_row[:, :, :, 0, k]).all() or not np.isfinite(per_row[:, :, :, -1, k]).all():
                failures.append(f"head_stats: {name} is not NaN on query 0 and finite on the last row")
        # A sample std needs two content keys: CV is NaN on query 1 (M = 2), defined from query 2.
        cv = fields.index("cv")
        if list(positions[1:3]) != [1, 2] or not np.isnan(per_row[:, :, :, 1, cv]).all() or \
                not np.isfinite(per_row[:, :, :, 2, cv]).all():
            failures.append("head_stats: cv is not NaN on query 1 (two keys) and finite on query 2")
        # The negative-cosine share needs one lag: tau_max = floor(q / 4) is 0 up to query 3.
        neg = fields.index("negative_cos_share")
        if list(positions[:5]) != [0, 1, 2, 3, 4] or not np.isnan(per_row[:, :, :, :4, neg]).all() or \
                not np.isfinite(per_row[:, :, :, 4, neg]).all():
            failures.append("head_stats: negative_cos_share is not NaN on queries 0-3 (no lag) and finite on query 4")
        print("head_stats: A1/A2/decay/alignment fields NaN on query 0 (cv also on query 1, the negative share up to "
              "query 3), finite on the last row")


def check_head_columns(run, failures):
    """heads.csv's derived columns from the other tables: kv_head = head // (heads / kv_heads)
    in every table (GQA), f_small = mean F over N = 2..4, peak_f_n = the smallest N >= 2 with the
    highest mean F (0 if none) -- both from selection.csv's f_mean."""
    with open(os.path.join(run, "run.json")) as f:
        model = json.load(f)["model"]
    group = model["heads"] // model["kv_heads"]
    checked = 0
    for table in ("heads.csv", "head_stats.csv", "selection.csv"):
        for row in read_csv(os.path.join(run, table)):
            checked += 1
            if int(row["kv_head"]) != int(row["head"]) // group:
                failures.append(f"{table}: head {row['head']} has kv_head {row['kv_head']}, expected "
                                f"{int(row['head']) // group} ({model['heads']} heads, {model['kv_heads']} kv heads)")
    curves = {}
    for row in read_csv(os.path.join(run, "selection.csv")):
        curves.setdefault((row["layer"], row["head"]), []).append((int(row["n"]), float(row["f_mean"])))
    for head in read_csv(os.path.join(run, "heads.csv")):
        curve = [(n, f) for n, f in curves[(head["layer"], head["head"])] if n >= 2 and math.isfinite(f)]
        small = [f for n, f in curve if n <= 4]
        want_small = sum(small) / len(small) if small else float("nan")
        best = max((f for _, f in curve), default=None)
        want_peak = min(n for n, f in curve if f == best) if curve else 0
        got_small = float(head["f_small"])
        if not (abs(got_small - want_small) <= 1e-12 or math.isnan(got_small) and math.isnan(want_small)):
            failures.append(f"heads.csv: layer {head['layer']} head {head['head']} f_small {got_small} vs {want_small}")
        if int(float(head["peak_f_n"])) != want_peak:
            failures.append(f"heads.csv: layer {head['layer']} head {head['head']} peak_f_n {head['peak_f_n']} "
                            f"vs {want_peak}")
    # run.json's k-means agreement: the share of rule-labelled heads whose cluster maps to their label.
    heads = read_csv(os.path.join(run, "heads.csv"))
    labelled = [h for h in heads if h["label"] != "unclassified"]
    with open(os.path.join(run, "run.json")) as f:
        taxonomy = json.load(f).get("taxonomy", {})
    agree = sum(h["kmeans_label"] == h["label"] for h in labelled)
    want = agree / len(labelled) if labelled else None
    got = taxonomy.get("kmeans_agreement", "absent")
    if taxonomy.get("kmeans_compared") != len(labelled) or \
            not (got == want or isinstance(got, float) and want is not None and abs(got - want) <= 1e-12):
        failures.append(f"run.json taxonomy {taxonomy} vs {agree} of {len(labelled)} labelled heads in heads.csv")
    print(f"head columns: kv_head in {checked} rows ({model['heads']} heads / {model['kv_heads']} kv heads), "
          f"f_small and peak_f_n of {len(curves)} heads from selection.csv; k-means agrees on {agree} of "
          f"{len(labelled)} labelled heads")


def check_second_signal(args, tmp, failures):
    out = os.path.join(tmp, "run")
    corpus = os.path.join(tmp, "corpus.txt")
    with open(CORPUS) as f, open(corpus, "w") as g:
        g.write(f.read() * 20)
    # --queries all at 512 tokens: one sequence takes seconds, so the first signal alone
    # would let it finish.
    argv = [args.bin, "analyze", "--model", os.path.join(args.fixtures, "llama"), "--data", corpus, "--pack",
            "--seq-len", "512", "--num-seqs", "2", "--queries", "all", "--threads", "1", "--force", "--out", out]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while not os.path.exists(os.path.join(out, "run.json")) and proc.poll() is None:
        time.sleep(0.01)  # run.json is written just before the first sequence starts
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=120)[1]
    waited = time.monotonic() - sent
    # A first signal that lands before the first sequence stops the run there, and a run
    # stopped before its first record removes its new --out (RunDirGuard).
    records = os.listdir(os.path.join(out, "records")) if os.path.isdir(out) else []
    if proc.returncode != 130 or records or waited > 2.0:
        failures.append(f"second_signal: exit {proc.returncode}, {len(records)} records, exited {waited:.2f} s after "
                        f"the second signal; stderr {err.strip()[-200:]!r}")
    print(f"second_signal: exit {proc.returncode} {waited:.3f} s after the second SIGINT; records {len(records)}")


def check_every_n(args, tmp, failures):
    seq_len, short_row = 96, 20
    base = analyze_args(args.bin, args.fixtures, num_seqs=3) + ["--queries", f"{short_row},{seq_len - 1}"]
    runs = {}
    for name, extra in (("grid", []), ("every", ["--every-n"])):
        runs[name] = os.path.join(tmp, name)
        # A hang here was the bug: rows too short for most N once left NaN that stalled the rank loop.
        subprocess.run(base + extra + ["--out", runs[name]], check=True, capture_output=True, timeout=300)
    every = read_csv(os.path.join(runs["every"], "selection.csv"))
    grid = {(r["layer"], r["head"], r["n"]): r for r in read_csv(os.path.join(runs["grid"], "selection.csv"))}
    heads = {(r["layer"], r["head"]) for r in every}
    by_head = {}
    for r in every:
        by_head.setdefault((r["layer"], r["head"]), []).append(int(r["n"]))
    for head, ns in by_head.items():
        if ns != list(range(1, seq_len)):
            failures.append(f"every_n: head {head} has N {ns[:3]}..{ns[-3:]}, expected 1..{seq_len - 1}")
    compared = 0
    for r in every:
        n, samples = int(r["n"]), int(r["samples"])
        want = 3 * (2 if n <= short_row else 1)  # a row with q + 1 keys has N up to q
        if samples != want:
            failures.append(f"every_n: layer {r['layer']} head {r['head']} N {n}: {samples} samples, expected {want}")
        for key in ("precision_mean", "recall_mean", "f_mean"):
            if not math.isfinite(float(r[key])):
                failures.append(f"every_n: layer {r['layer']} head {r['head']} N {n}: {key} = {r[key]}")
            g = grid.get((r["layer"], r["head"], r["n"]))
            if g is not None and abs(float(g[key]) - float(r[key])) > 1e-12:
                failures.append(f"every_n: N {n} {key} {r[key]} vs default grid {g[key]}")
            compared += g is not None
    sink = read_csv(os.path.join(runs["every"], "sink_recall.csv"))
    if len(sink) != seq_len - 1 or any(int(r["heads"]) != len(heads) for r in sink):
        failures.append(f"every_n: sink_recall.csv rows/heads {[(r['n'], r['heads']) for r in sink[:3]]}")
    print(f"every_n: {len(every)} (layer, head, N) rows over {len(heads)} heads; {compared} values equal to the "
          f"default grid's")


def run_check(doc, checks):
    """A script's main: --bin and --fixtures (and --check where it has several checks), the check
    run in a temporary folder, its failures printed; returns the exit code."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fixtures", required=True)
    if len(checks) > 1:
        ap.add_argument("--check", required=True, choices=list(checks))
    ap.add_argument("--kills", type=int, default=20)
    args = ap.parse_args()
    name = args.check if len(checks) > 1 else next(iter(checks))
    failures = []
    with tempfile.TemporaryDirectory(prefix="attngeom-runs-") as tmp:
        checks[name](args, tmp, failures)
    for f in failures[:20]:
        print("FAIL", f)
    print(f"{name}: {'FAILED' if failures else 'passed'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(run_check(__doc__, {"resume": check_resume, "shards": check_shards, "every_n": check_every_n,
                                 "second_signal": check_second_signal, "last_row": check_last_row}))
