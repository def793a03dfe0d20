#!/usr/bin/python3
"""`attngeom prune` (head masking, token-level top-N) against the numpy reference.

  test_prune.py --bin PATH/attngeom --fixtures DIR --check NAME [--fixture F ...]

ones_bitwise   an all-ones mask (.npy and TSV) gives logits bitwise equal to the unmasked
               engine (`attngeom capture --logits`), and its evaluation row has KL exactly
               0, top-1 exactly 1 and the unmasked perplexity to the last bit.
mask_logits    a random 0/1 mask (plus one 0.5 gate) gives logits within 1e-4 x max|logit|
               of reference_forward.forward(head_gates=...), on every fixture.
perplexity     perplexity, KL and top-1 of unmasked and masked models equal exp(mean NLL)
               etc. recomputed by the reference under the documented protocol (overlapping
               stride, BOS and no BOS, several documents, a sliding window shorter than
               the context).
random_seeds   the same seeds give byte-identical pruning.csv rows and score files; a run
               starting at another seed reproduces the shared seed's rows; seeds differ.
strategies     all orders on an analyze run of a fixture: CSV layout, masked sets in the
               documented order recomputed here from heads.csv (type: the random order
               of the same seed grouped by type), score exports, fraction 0
               = the unmasked model, the top-N allocations and budget curve (budget =
               context is the unmodified model, top-N perplexity matches the reference),
               and the regenerated report.
interrupted    a prune stopped (SIGTERM) during its evaluations leaves nothing: no new
               --out folder, and a --scores run directory byte-identical to before.
bad_inputs     wrong mask shape, ragged TSV, a gate beyond float32, unknown strategy, budget > context, fraction
               > 1, scores of another model, bad type order, --out a file: exit 2 with
               one line naming the problem, and no pruning.csv left behind.
"""
import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from hostile_lib import snapshot  # noqa: E402
import reference_forward as rf  # noqa: E402
from perplexity_reference import reference_scores, summary  # noqa: E402
from prune_lib import (CORPUS, TYPE_ORDER, Fixture, analyze_run, corpus_lines, fail, failures, prune_args,  # noqa: E402
                       read_csv, relabel_every_type, run, spm_ids_lines, write_mask, write_text)
import st_reader  # noqa: E402

LOGITS_TOL = 1e-4   # relative to max |logit|, as test_capture_vs_reference.py
# Perplexity: an fp32 engine against float64. Each NLL inherits the log-softmax error of
# the fp32 logits (measured <= 5e-7 x max|logit|, |logit| ~ 1-10 here), so ~1e-6 nats
# at worst per token; the mean is within that (measured <= 3e-7). exp() turns this
# absolute NLL error into the same relative perplexity error.
NLL_TOL = 2e-6
PRUNE_COLUMNS = ["strategy", "seed", "fraction", "heads_masked", "ppl", "kl", "top1"]
BUDGET_COLUMNS = ["policy", "budget", "mean_n", "kept_share", "ppl", "kl", "top1"]

# ---- checks ---------------------------------------------------------------------------


def check_ones_bitwise(binary, fx, tmp):
    text = write_text(os.path.join(tmp, "one.txt"), corpus_lines(1)[0])
    context = 64
    cap = os.path.join(tmp, "cap.safetensors")
    proc = harness.capture(binary, fx.dir, cap, "--logits", "--max-tokens", str(context), text=text)
    if proc.returncode != 0:
        fail(f"{fx.name}: capture failed: {harness.describe(proc)}")
        return
    unmasked = st_reader.read(cap)[0]["logits"]
    ones = np.ones((fx.L, fx.H), dtype=np.float32)
    for ext in (".npy", ".tsv"):
        mask = write_mask(os.path.join(tmp, "ones" + ext), ones)
        out = os.path.join(tmp, "ones" + ext.replace(".", "_"))
        dump = os.path.join(tmp, f"ones{ext}.logits.npy")
        run([binary, "prune", "--model", fx.dir, "--data", text, "--mask", mask, "--out", out,
             "--context", str(context), "--dump-logits", dump])
        got = np.load(dump)
        same = got.shape == unmasked.shape and got.dtype == unmasked.dtype and \
            np.array_equal(got.view(np.uint32), unmasked.view(np.uint32))
        if not same:
            diff = float(np.abs(got.astype(np.float64) - unmasked).max()) if got.shape == unmasked.shape else None
            fail(f"{fx.name} {ext}: all-ones mask logits {got.shape} differ from unmasked capture "
                 f"{unmasked.shape} (max diff {diff})")
        rows = read_csv(os.path.join(out, "pruning.csv"))
        record = json.load(open(os.path.join(out, "prune.json")))
        row = rows[0]
        ref_ppl = record["reference"]["ppl"]
        if not (len(rows) == 1 and row["strategy"] == "mask" and row["heads_masked"] == "0"
                and float(row["kl"]) == 0.0 and float(row["top1"]) == 1.0 and float(row["ppl"]) == ref_ppl):
            fail(f"{fx.name} {ext}: all-ones evaluation row {row} vs unmasked ppl {ref_ppl!r}")
        print(f"{fx.name} {ext}: logits {got.shape} bitwise equal: {same}; row kl {row['kl']} top1 {row['top1']} "
              f"ppl {row['ppl']} == unmasked {ref_ppl!r}")


def random_mask(fx, seed):
    rng = np.random.default_rng(seed)
    mask = (rng.random((fx.L, fx.H)) > 0.4).astype(np.float32)
    mask[0, 0] = 0.0
    mask[-1, -1] = 0.5  # a gate, not only removal
    return mask


def check_mask_logits(binary, fx, tmp):
    text = write_text(os.path.join(tmp, "one.txt"), corpus_lines(1)[0])
    context = 80
    mask = random_mask(fx, 5)
    path = write_mask(os.path.join(tmp, "mask.npy"), mask)
    dump = os.path.join(tmp, "masked.npy")
    run([binary, "prune", "--model", fx.dir, "--data", text, "--mask", path, "--out", os.path.join(tmp, "o"),
         "--context", str(context), "--dump-logits", dump])
    got = np.load(dump).astype(np.float64)
    ids = [fx.model.bos] + harness.spm_ids(fx.tokenizer, text)[:context - 1]
    want = rf.forward(fx.model, ids, head_gates=mask)["logits"]
    plain = rf.forward(fx.model, ids)["logits"]
    scale = np.abs(want).max()
    err = float(np.abs(got - want).max() / scale) if got.shape == want.shape else float("inf")
    effect = float(np.abs(plain - want).max() / scale)
    print(f"{fx.name}: masked {int((mask == 0).sum())}/{mask.size} heads (+ one 0.5 gate), T={len(ids)}: "
          f"logits rel err {err:.2e} (tol {LOGITS_TOL}); the mask moves logits by {effect:.2e}")
    if not err <= LOGITS_TOL:
        fail(f"{fx.name}: masked logits rel error {err:.3e} > {LOGITS_TOL}")
    if not effect > 100 * LOGITS_TOL:
        fail(f"{fx.name}: the mask barely changes the logits ({effect:.2e}); the test is not discriminating")


def check_perplexity(binary, fx, tmp):
    lines = corpus_lines(3)
    streams_full = spm_ids_lines(fx.tokenizer, lines, tmp)
    data = write_text(os.path.join(tmp, "docs.txt"), "\n".join(lines) + "\n")
    mask = random_mask(fx, 9)
    mask_path = write_mask(os.path.join(tmp, "mask.tsv"), mask)
    max_tokens = 480  # all three documents, the last one cut
    worst = 0.0
    for context, stride, bos in [(80, 30, True), (48, 0, True), (40, 17, False), (24, 0, False)]:
        # --max-tokens cuts the concatenated documents after max_tokens tokens.
        streams, left = [], max_tokens
        for s in streams_full:
            if left <= 0:
                break
            streams.append(s[:left])
            left -= len(streams[-1])
        out = os.path.join(tmp, f"ppl{context}")
        args = [binary, "prune", "--model", fx.dir, "--data", data, "--format", "lines", "--mask", mask_path,
                "--out", out, "--context", str(context), "--max-tokens", str(max_tokens)]
        args += ["--stride", str(stride)] if stride else []
        args += [] if bos else ["--no-bos"]
        run(args)
        record = json.load(open(os.path.join(out, "prune.json")))
        row = read_csv(os.path.join(out, "pruning.csv"))[0]
        t0, lp0 = reference_scores(fx.model, streams, context, stride, bos)
        t1, lp1 = reference_scores(fx.model, streams, context, stride, bos, gates=mask)
        ref0, ref1 = summary(t0, lp0), summary(t1, lp1, lp0)
        got0 = record["reference"]
        got1 = {"ppl": float(row["ppl"]), "kl": float(row["kl"]), "top1": float(row["top1"])}
        e0 = abs(math.log(got0["ppl"]) - ref0["mean_nll"])
        e1 = abs(math.log(got1["ppl"]) - ref1["mean_nll"])
        ekl = abs(got1["kl"] - ref1["kl"])
        worst = max(worst, e0, e1)
        print(f"{fx.name} context {context} stride {stride or context - 1} bos {bos}: {len(streams)} documents "
              f"{[len(x) for x in streams]}, {ref0['tokens']} tokens scored; "
              f"unmasked ppl {got0['ppl']:.8g} vs ref {ref0['ppl']:.8g} (|dNLL| {e0:.1e}); masked ppl "
              f"{got1['ppl']:.8g} vs {ref1['ppl']:.8g} (|dNLL| {e1:.1e}); kl {got1['kl']:.6g} vs {ref1['kl']:.6g}; "
              f"top1 {got1['top1']:.6g} vs {ref1['top1']:.6g}")
        if got0["tokens"] != ref0["tokens"]:
            fail(f"{fx.name} context {context}: {got0['tokens']} tokens scored, reference {ref0['tokens']}")
        if not (e0 <= NLL_TOL and e1 <= NLL_TOL):
            fail(f"{fx.name} context {context}: mean NLL error {max(e0, e1):.2e} > {NLL_TOL}")
        if abs(got0["mean_nll"] - math.log(got0["ppl"])) > 1e-12:
            fail(f"{fx.name}: ppl is not exp(mean NLL)")
        if not ekl <= NLL_TOL * 2 + 1e-3 * ref1["kl"]:
            fail(f"{fx.name} context {context}: KL {got1['kl']} vs reference {ref1['kl']}")
        # top-1 may only differ where the reference's top two logits nearly tie
        if abs(got1["top1"] - ref1["top1"]) * ref0["tokens"] > 1:
            fail(f"{fx.name} context {context}: top1 {got1['top1']} vs reference {ref1['top1']}")
    print(f"{fx.name}: worst |mean NLL - reference| {worst:.2e} nats (tol {NLL_TOL})")


def check_random_seeds(binary, fx, tmp):
    scores = analyze_run(binary, fx, tmp)
    data = write_text(os.path.join(tmp, "held.txt"), corpus_lines(2)[1])
    fractions = "0,0.25,0.5,0.75"
    outs = []
    for tag, seed in [("a", 7), ("b", 7), ("c", 8)]:
        out = os.path.join(tmp, tag)
        run(prune_args(binary, fx, data, scores, out, "--strategies", "random", "--seeds", "3", "--seed", str(seed),
                       "--fractions", fractions, "--no-topn"))
        outs.append(out)
    a, b, c = (open(os.path.join(o, "pruning.csv")).read() for o in outs)
    if a != b:
        fail(f"{fx.name}: the same seeds gave different pruning.csv:\n{a}\n{b}")
    for s in (7, 8, 9):
        pa = open(os.path.join(outs[0], "head_scores", f"random-seed{s}.npy"), "rb").read()
        pb = open(os.path.join(outs[1], "head_scores", f"random-seed{s}.npy"), "rb").read()
        if pa != pb:
            fail(f"{fx.name}: head_scores/random-seed{s}.npy differs between identical runs")
    rows_a = [r for r in read_csv(os.path.join(outs[0], "pruning.csv"))]
    rows_c = [r for r in read_csv(os.path.join(outs[2], "pruning.csv"))]
    if sorted({r["seed"] for r in rows_a}) != ["7", "8", "9"] or sorted({r["seed"] for r in rows_c}) != ["10", "8", "9"]:
        fail(f"{fx.name}: seeds {sorted({r['seed'] for r in rows_a})} / {sorted({r['seed'] for r in rows_c})}")
    shared_a = [r for r in rows_a if r["seed"] in ("8", "9")]
    shared_c = [r for r in rows_c if r["seed"] in ("8", "9")]
    if shared_a != shared_c:
        fail(f"{fx.name}: seeds 8 and 9 differ between runs starting at 7 and at 8")
    record = json.load(open(os.path.join(outs[0], "prune.json")))
    half = {r["seed"]: tuple(r["masked"]) for r in record["pruning"] if r["fraction"] == 0.5}
    perms = [np.load(os.path.join(outs[0], "head_scores", f"random-seed{s}.npy")) for s in (7, 8, 9)]
    n = fx.L * fx.H
    if not all(sorted(p.ravel().tolist()) == list(range(n)) for p in perms):
        fail(f"{fx.name}: random scores are not permutations of 0..{n - 1}")
    if len(set(half.values())) < 2:
        fail(f"{fx.name}: three seeds masked the same heads at fraction 0.5: {half}")
    print(f"{fx.name}: 3 seeds x {len(fractions.split(','))} fractions, identical reruns: {a == b}; "
          f"masked sets at 0.5: {half}")


def expected_order(strategy, heads, random_order=None):
    """Masking order recomputed from heads.csv (docs/prune.md), as flat indices. `type`:
    the random order of the same seed (`random_order`), stably grouped by type rank."""
    H = max(int(r["head"]) for r in heads) + 1
    flat = {int(r["layer"]) * H + int(r["head"]): r for r in heads}
    if strategy == "type":
        return sorted(random_order, key=lambda i: TYPE_ORDER.index(flat[i]["label"]))
    base, rev = (strategy[:-4], -1) if strategy.endswith("-rev") else (strategy, 1)
    col, sign = {"entropy": ("entropy", -1), "sink": ("sink_mass", -1), "last": ("last_mass", 1),
                 "fscore": ("f_small", 1)}[base]

    def key(i):
        score = rev * sign * float(flat[i][col])
        return (math.isnan(score), score if not math.isnan(score) else 0.0, i)
    return sorted(flat, key=key)


def ascending(npy):
    """Flat indices by ascending score, ties to the lower index, NaN last."""
    flat = npy.ravel()
    return sorted(range(flat.size), key=lambda i: (np.isnan(flat[i]), 0 if np.isnan(flat[i]) else flat[i], i))


def check_strategies(binary, fx, tmp):
    scores = analyze_run(binary, fx, tmp)
    # 3 unclassified: the seed picks which 2 go at fraction 0.25.
    relabel_every_type(scores)
    data = write_text(os.path.join(tmp, "held.txt"), corpus_lines(2)[1])
    context, max_tokens = 48, 120
    budgets = [1, 2, 4, context]
    report = os.path.join(scores, "report.html")
    before = os.path.getmtime(report)
    # No --out: the scores run directory itself (its report is regenerated).
    strategies = ["type", "random", "entropy", "sink", "last", "fscore", "entropy-rev"]
    run([binary, "prune", "--model", fx.dir, "--data", data, "--scores", scores, "--context", str(context),
         "--max-tokens", str(max_tokens), "--fractions", "0,0.25,0.5", "--seeds", "3",
         "--strategies", ",".join(strategies),
         "--topn-budgets", ",".join(map(str, budgets))])
    n = fx.L * fx.H
    heads = read_csv(os.path.join(scores, "heads.csv"))
    record = json.load(open(os.path.join(scores, "prune.json")))
    ref = record["reference"]
    with open(os.path.join(scores, "pruning.csv")) as f:
        header = f.readline().strip().split(",")
    if header != PRUNE_COLUMNS:
        fail(f"{fx.name}: pruning.csv columns {header}")
    rows = read_csv(os.path.join(scores, "pruning.csv"))
    seeds = {s: [0, 1, 2] if s in ("type", "random") else [0] for s in strategies}
    if len(rows) != sum(len(v) for v in seeds.values()) * 3:
        fail(f"{fx.name}: {len(rows)} pruning rows, expected {sum(len(v) for v in seeds.values()) * 3}")
    for r, j in zip(rows, record["pruning"]):
        f = float(r["fraction"])
        if int(r["heads_masked"]) != math.floor(f * n + 0.5) or len(j["masked"]) != int(r["heads_masked"]):
            fail(f"{fx.name}: {r['strategy']} fraction {f}: {r['heads_masked']} heads masked of {n}")
        if f == 0 and not (float(r["ppl"]) == ref["ppl"] and float(r["kl"]) == 0 and float(r["top1"]) == 1):
            fail(f"{fx.name}: fraction 0 of {r['strategy']} is not the unmasked model: {r}")
    names = {(int(x["layer"]) * fx.H + int(x["head"])): f"{x['layer']}-{x['head']}" for x in heads}
    for strategy in strategies:
        for seed in seeds[strategy]:
            name = f"{strategy}-seed{seed}" if strategy in ("type", "random") else strategy
            npy = np.load(os.path.join(scores, "head_scores", name + ".npy"))
            tsv = np.loadtxt(os.path.join(scores, "head_scores", name + ".tsv"), ndmin=2)
            js = json.load(open(os.path.join(scores, "head_scores", name + ".json")))
            if npy.shape != (fx.L, fx.H) or not np.array_equal(npy, tsv, equal_nan=True) or \
                    len(js) != n or any(js[f"{l}-{h}"] != npy[l, h] for l in range(fx.L) for h in range(fx.H)
                                        if np.isfinite(npy[l, h])):
                fail(f"{fx.name}: head_scores/{name}.* disagree or have the wrong shape")
            random_order = ascending(np.load(os.path.join(scores, "head_scores", f"random-seed{seed}.npy")))
            order = random_order if strategy == "random" else expected_order(strategy, heads, random_order)
            if ascending(npy) != order:
                fail(f"{fx.name}: ascending head_scores/{name}.npy is not the documented order")
            for j in record["pruning"]:
                if j["strategy"] == strategy and j["seed"] == seed:
                    want = sorted(names[i] for i in order[:j["heads_masked"]])
                    if sorted(j["masked"]) != want:
                        fail(f"{fx.name}: {name} at {j['fraction']} masked {sorted(j['masked'])}, expected {want}")
    print(f"{fx.name}: {len(rows)} pruning rows; masked sets follow the documented orders; "
          f"labels {sorted(set(h['label'] for h in heads))}")
    for r in rows:
        print(f"  {r['strategy']:8s} seed {r['seed']:>2s} fraction {r['fraction']:>4s} masked {r['heads_masked']:>2s}: "
              f"ppl {float(r['ppl']):9.4f} kl {float(r['kl']):.4f} top1 {float(r['top1']):.3f}")

    # top-N
    with open(os.path.join(scores, "topn_budget.csv")) as f:
        header = f.readline().strip().split(",")
    if header != BUDGET_COLUMNS:
        fail(f"{fx.name}: topn_budget.csv columns {header}")
    brows = read_csv(os.path.join(scores, "topn_budget.csv"))
    topn = record["topn"]
    base = expected_base_n(scores, fx, topn["tau"])
    if topn["base_n"] != base:
        fail(f"{fx.name}: base N {topn['base_n']} vs recomputed {base}")
    streams = [harness.spm_ids(fx.tokenizer, data)[:max_tokens]]
    for entry in topn["budgets"]:
        b = entry["budget"]
        geo, uni = entry["geometric"]["n"], entry["uniform"]["n"]
        if sum(geo) != b * n or min(geo) < 1 or max(geo) > context or uni != [b] * n:
            fail(f"{fx.name}: budget {b}: allocations {geo} / {uni}")
        for policy, alloc in (("geometric", geo), ("uniform", uni)):
            row = next(r for r in brows if r["policy"] == policy and int(r["budget"]) == b)
            if float(row["mean_n"]) != b:
                fail(f"{fx.name}: {policy} budget {b}: mean_n {row['mean_n']}")
            if b == context and not (float(row["ppl"]) == ref["ppl"] and float(row["kl"]) == 0.0
                                     and float(row["top1"]) == 1.0 and float(row["kept_share"]) == 1.0):
                fail(f"{fx.name}: top-N with N >= every key count is not the unmodified model: {row}")
            if b == 2:
                t0, lp0 = reference_scores(fx.model, streams, context, 0, True)
                t1, lp1 = reference_scores(fx.model, streams, context, 0, True,
                                           topn=np.array(alloc).reshape(fx.L, fx.H))
                want = summary(t1, lp1, lp0)
                e = abs(math.log(float(row["ppl"])) - want["mean_nll"])
                print(f"  top-N {policy} budget {b} N={alloc}: ppl {float(row['ppl']):.6g} vs reference "
                      f"{want['ppl']:.6g} (|dNLL| {e:.1e}), kl {float(row['kl']):.5g} vs {want['kl']:.5g}")
                if not e <= NLL_TOL:
                    fail(f"{fx.name}: top-N {policy} budget {b}: NLL error {e:.2e}")
    for r in brows:
        print(f"  top-N {r['policy']:9s} budget {r['budget']:>2s} kept {float(r['kept_share']):.3f}: "
              f"ppl {float(r['ppl']):9.4f} kl {float(r['kl']):.4f} top1 {float(r['top1']):.3f}")
    if not os.path.getmtime(report) >= before or b'"pruning"' not in open(report, "rb").read():
        fail(f"{fx.name}: report.html was not regenerated with the pruning table")


def expected_base_n(scores, fx, tau):
    """The tau rule recomputed from selection.csv: smallest N >= 2 with f_mean >= tau,
    else the largest N of the head's grid."""
    curves = {}
    for r in read_csv(os.path.join(scores, "selection.csv")):
        curves.setdefault(int(r["layer"]) * fx.H + int(r["head"]), []).append((int(r["n"]), float(r["f_mean"])))
    base = []
    for i in range(fx.L * fx.H):
        pts = sorted(curves[i])
        hit = [n for n, f in pts if n >= 2 and f >= tau]
        base.append(float(hit[0] if hit else pts[-1][0]) if any(n >= 2 for n, _ in pts) else 1.0)
    return base


def check_interrupted(binary, fx, tmp):
    scores = analyze_run(binary, fx, tmp)
    before = snapshot(scores)
    # ~60 evaluations over the whole corpus: seconds of work left when the signal lands.
    work = ["--strategies", "random,sink", "--seeds", "20", "--no-topn", "--threads", "1"]
    for out in (os.path.join(tmp, "new"), None):
        args = [binary, "prune", "--model", fx.dir, "--data", CORPUS, "--scores", scores, "--context", "48", *work]
        if out:
            args += ["--out", out]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in proc.stderr:  # the unedited model has run: the evaluations have begun
            if "unedited model" in line:
                break
        proc.send_signal(signal.SIGTERM)
        proc.stderr.read()
        rc = proc.wait(timeout=300)
        if rc != -signal.SIGTERM:
            fail(f"{fx.name}: prune ended with {rc} before the signal could stop it; give it more work")
        elif out and os.path.exists(out):
            fail(f"{fx.name}: a stopped prune left {sorted(os.listdir(out))} in its new --out")
        elif snapshot(scores) != before:
            fail(f"{fx.name}: a stopped prune changed the --scores run directory")
        else:
            print(f"{fx.name}: stopped with {rc} ({'--out' if out else '--scores'}): nothing written")


def check_bad_inputs(binary, fx, tmp):
    scores = analyze_run(binary, fx, tmp)
    data = write_text(os.path.join(tmp, "held.txt"), corpus_lines(1)[0])
    wrong = write_mask(os.path.join(tmp, "wrong.npy"), np.ones((fx.L + 1, fx.H), dtype=np.float32))
    ragged = write_text(os.path.join(tmp, "ragged.tsv"), "1\t1\n1\n")
    huge_gates = np.ones((fx.L, fx.H))
    huge_gates[0, 0] = 1e39  # a finite double, but no float32
    huge = write_mask(os.path.join(tmp, "huge.npy"), huge_gates)
    other = "mistral" if fx.name != "mistral" else "llama"
    cases = [
        ("mask shape", [binary, "prune", "--model", fx.dir, "--data", data, "--mask", wrong, "--out", tmp + "/x"],
         "wrong.npy"),
        ("ragged tsv", [binary, "prune", "--model", fx.dir, "--data", data, "--mask", ragged, "--out", tmp + "/x"],
         "ragged.tsv"),
        ("gate beyond float32", [binary, "prune", "--model", fx.dir, "--data", data, "--mask", huge, "--out",
                                 tmp + "/x"], "finite float32"),
        ("strategy", prune_args(binary, fx, data, scores, tmp + "/x", "--strategies", "entropy,bogus"), "bogus"),
        ("budget", prune_args(binary, fx, data, scores, tmp + "/x", "--topn-budgets", "4,49"), "--topn-budgets"),
        ("fraction", prune_args(binary, fx, data, scores, tmp + "/x", "--fractions", "0,1.5"), "--fractions"),
        ("other model", prune_args(binary, Fixture(os.path.dirname(fx.dir), other), data, scores, tmp + "/x"),
         "heads"),
        ("type order", prune_args(binary, fx, data, scores, tmp + "/x", "--type-order", "mixer,reset,retriever"),
         "--type-order"),
        ("out is a file", prune_args(binary, fx, data, scores, data), "--out"),
    ]
    for name, args, needle in cases:
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
        lines = proc.stderr.strip().splitlines()
        ok = proc.returncode == 2 and len(lines) == 1 and needle in lines[0]
        print(f"{name}: exit {proc.returncode}: {proc.stderr.strip()}")
        if not ok:
            fail(f"{name}: expected exit 2 and one line naming {needle!r}, got exit {proc.returncode}: {proc.stderr!r}")
    if os.path.exists(os.path.join(tmp, "x", "pruning.csv")):
        fail("a failed run left pruning.csv behind")


CHECKS = {
    "ones_bitwise": (check_ones_bitwise, ["llama", "mistral", "gemma"]),
    "mask_logits": (check_mask_logits, ["llama", "mistral", "gemma"]),
    "perplexity": (check_perplexity, ["llama", "mistral"]),
    "random_seeds": (check_random_seeds, ["llama"]),
    "strategies": (check_strategies, ["llama"]),
    "interrupted": (check_interrupted, ["llama"]),
    "bad_inputs": (check_bad_inputs, ["llama"]),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--check", required=True, choices=sorted(CHECKS))
    ap.add_argument("--fixture", action="append", help="default: the check's fixtures")
    args = ap.parse_args()
    harness.require_device(args.bin)
    # Tiny fixtures: OpenMP workers that spin between the many small parallel regions
    # make each run ~30x slower on a loaded machine. Results do not depend on it.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    check, names = CHECKS[args.check]
    for name in args.fixture or names:
        fx = Fixture(args.fixtures, name)
        with tempfile.TemporaryDirectory() as tmp:
            check(args.bin, fx, tmp)
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
