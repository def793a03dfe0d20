#!/usr/bin/env python3
"""End-to-end checks of `attngeom analyze` run directories on a fixture model.

  test_analysis_runs.py --bin PATH/attngeom --fixtures DIR --check resume|shards|brute_force

resume       an analyze run killed (SIGKILL) at random points and continued with --resume
             each time ends with tables equal to one uninterrupted run (counts exactly,
             means within 1e-12), and no finished sequence is recomputed.
shards       3 shards (--shard i/3) merged with `attngeom merge` equal one run.
brute_force  selection_per_seq.csv from `attngeom metrics --dump` of a capture dump equals
             P, R, F, r_min, r_max recomputed here from the definitions (docs/method.md section 2),
             for every head and every N, independently of the geometry code; so does the
             record's F in the balls of radius rho ||s_N|| (the f_at_r* fields).
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
routing      a mixture of experts (the mixtral fixture): experts.csv's tokens per (layer, expert)
             equal the float64 reference's routing of every recorded sequence, in fp32;
             routing.csv counts the tokens and, in bf16 only, the flips against fp32 logits;
             a dense model writes neither table.
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


def check_routing(args, tmp, failures):
    sys.path.insert(0, HERE)
    import reference_forward as rf
    model_dir = os.path.join(args.fixtures, "mixtral")
    seq_len, num_seqs = 96, 3
    runs = {}
    for precision in ("fp32", "bf16"):
        out = os.path.join(tmp, "routing-" + precision)
        subprocess.run([args.bin, "analyze", "--model", model_dir, "--data", CORPUS, "--seq-len", str(seq_len),
                        "--num-seqs", str(num_seqs), "--precision", precision, "--out", out], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        runs[precision] = out
    model = rf.Model(model_dir)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--check", required=True, choices=["resume", "shards", "brute_force", "every_n", "second_signal", "last_row",
                                                              "routing"])
    ap.add_argument("--kills", type=int, default=20)
    args = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="attngeom-runs-") as tmp:
        {"resume": check_resume, "shards": check_shards, "brute_force": check_brute_force,
         "every_n": check_every_n, "second_signal": check_second_signal,
         "last_row": check_last_row, "routing": check_routing}[args.check](
            args, tmp, failures)
    for f in failures[:20]:
        print("FAIL", f)
    print(f"{args.check}: {'FAILED' if failures else 'passed'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
