"""Hostile runs of merge, report, prune, demo, synth and flags, and outputs that would
replace inputs or special files. Registered into test_hostile_runs.py's CASES; each returns
(argv, needles_any, needles_all) like the cases there."""
import csv
import json
import os
import shutil

from hostile_lib import CORPUS, PROMPT, case


# --- merge and report ---

@case
def merge_malformed_run_json(ctx):
    shard = os.path.join(ctx.tmp, "shard")
    os.makedirs(os.path.join(shard, "records"))
    ctx.file("shard/run.json", json.dumps({"format": "attngeom-run-v1", "complete": True}))
    return ["merge", shard, "--out", ctx.out], ["run.json"], ["malformed"]


@case
def merge_incomplete_shard(ctx):
    ctx.run_ok(*ctx.analyze("--shard", "0/2"))  # a complete shard, then pretend it stopped early
    shard = os.path.join(ctx.tmp, "shard0")
    os.rename(ctx.out, shard)
    run = json.load(open(os.path.join(shard, "run.json")))
    run["complete"] = False
    json.dump(run, open(os.path.join(shard, "run.json"), "w"))
    return ["merge", shard, "--out", ctx.out], ["not complete"], []


def two_shards(ctx):
    shards = []
    for i in range(2):
        ctx.run_ok(*ctx.analyze("--shard", f"{i}/2", num_seqs="4"))
        shards.append(os.path.join(ctx.tmp, f"shard{i}"))
        os.rename(ctx.out, shards[-1])
    return shards


@case
def merge_shard_missing_a_record(ctx):
    shards = two_shards(ctx)
    os.remove(os.path.join(shards[1], "records", "seq-000003.safetensors"))
    return ["merge", *shards, "--out", ctx.out], ["seq-000003"], ["missing"]


@case
def merge_shard_holding_another_shards_record(ctx):
    shards = two_shards(ctx)
    shutil.copy(os.path.join(shards[0], "records", "seq-000002.safetensors"), os.path.join(shards[1], "records"))
    return ["merge", *shards, "--out", ctx.out], ["seq-000002"], ["does not belong to shard 1/2"]


@case
def merge_truncated_record(ctx):
    shards = two_shards(ctx)
    os.truncate(os.path.join(shards[0], "records", "seq-000002.safetensors"), 100)
    return ["merge", *shards, "--out", ctx.out], ["seq-000002"], []


@case
def merge_not_a_run_dir(ctx):
    os.mkdir(os.path.join(ctx.tmp, "random"))
    return ["merge", os.path.join(ctx.tmp, "random"), "--out", ctx.out], ["random"], []


@case
def merge_a_metrics_run(ctx):
    dump = ctx.capture_dump()
    metrics_run = os.path.join(ctx.tmp, "metrics")
    ctx.run_ok("metrics", "--dump", dump, "--out", metrics_run)
    ctx.keep = [metrics_run]
    return ["merge", metrics_run, "--out", ctx.out], ["metrics"], ["is a metrics run", "not a shard"]


@case
def report_not_a_run_dir(ctx):
    os.mkdir(os.path.join(ctx.tmp, "random"))
    ctx.out = os.path.join(ctx.tmp, "report.html")
    return ["report", os.path.join(ctx.tmp, "random"), "--out", ctx.out], ["random"], []


@case
def report_out_is_a_directory(ctx):
    ctx.run_ok(*ctx.analyze(num_seqs="1"))
    run = os.path.join(ctx.tmp, "done")
    os.rename(ctx.out, run)
    ctx.out = os.path.join(ctx.tmp, "html_dir")
    os.mkdir(ctx.out)
    ctx.keep = [ctx.out, run]
    return ["report", run, "--out", ctx.out], ["html_dir"], ["is a directory"]


@case
def report_out_is_a_run_file(ctx):
    ctx.run_ok(*ctx.analyze(num_seqs="1"))
    ctx.keep = [ctx.out]
    heads = os.path.join(ctx.out, "heads.csv")
    return ["report", ctx.out, "--out", heads], ["heads.csv"], ["inside the run directory", "report.html"]


@case
def report_run_json_nested_too_deep(ctx):
    ctx.run_ok(*ctx.analyze(num_seqs="1"))
    run_json = os.path.join(ctx.out, "run.json")
    with open(run_json) as f:
        text = json.dumps(json.load(f))
    with open(run_json, "w") as f:  # 200 KB, nested 100,000 deep: the dump used to overflow the stack
        f.write(text[:-1] + ', "deep": ' + "[" * 100000 + "]" * 100000 + "}")
    ctx.keep = [ctx.out]
    report = os.path.join(ctx.tmp, "r.html")
    return ["report", ctx.out, "--out", report], ["run.json"], ["nested deeper"]


@case
def analyze_lengths_trailing_comma(ctx):
    return ctx.analyze("--lengths", "32,"), ["--lengths"], ["trailing comma"]


@case
def analyze_lengths_twice(ctx):
    return ctx.analyze("--lengths", "32,48,32"), ["--lengths"], ["appears twice"]


@case
def demo_over_an_analyze_run(ctx):
    ctx.run_ok(*ctx.analyze())
    ctx.keep = [ctx.out]
    return ["demo", "--out", ctx.out, "--seq-len", "64", "--num-seqs", "2"], ["--out"], ["another run"]


@case
def demo_over_an_analyze_run_labelled_organism(ctx):
    ctx.run_ok(*ctx.analyze("--label", "organism"))  # demo's label, but no synth/ section
    ctx.keep = [ctx.out]
    return ["demo", "--out", ctx.out, "--seq-len", "64", "--num-seqs", "2"], ["--out"], ["another run"]


@case
def demo_into_a_folder_of_other_files(ctx):
    os.makedirs(ctx.out)
    ctx.file("run/notes.txt", "mine\n")
    ctx.keep = [ctx.out]
    return ["demo", "--out", ctx.out, "--seq-len", "64", "--num-seqs", "2"], ["--out"], ["notes.txt", "does not write"]


@case
def demo_over_an_analyze_run_in_its_organism_folder(ctx):
    organism = os.path.join(ctx.out, "organism")
    argv = ctx.analyze("--label", "organism")
    argv[argv.index("--out") + 1] = organism
    ctx.run_ok(*argv)  # demo's layout, but no synth/ section
    ctx.keep = [ctx.out]
    return ["demo", "--out", ctx.out, "--seq-len", "64", "--num-seqs", "2"], ["--out"], ["another run"]


@case
def perplexity_empty_out(ctx):
    return ["perplexity", "--model", ctx.model, "--text", PROMPT, "--out", ""], ["--out"], ["empty"]


@case
def synth_infinite_lambda(ctx):
    return ["synth", "--out", ctx.out, "--lambda", "inf"], ["--lambda"], ["expected a number in [0, 1000]"]


# --- prune ---

def scores_run(ctx):
    scores = os.path.join(ctx.tmp, "scores")
    ctx.run_ok("analyze", "--model", ctx.model, "--data", CORPUS, "--out", scores, "--seq-len", "64", "--num-seqs", "2",
               "--precision", "fp32", "--threads", "1")
    ctx.keep = [scores]
    return scores


def prune_args(ctx, scores, *flags):
    return ["prune", "--model", ctx.model, "--data", CORPUS, "--scores", scores, "--out", ctx.out, "--context", "32",
            "--max-tokens", "64", "--no-topn", *flags]


@case
def prune_order_without_any_finite_score(ctx):
    scores = scores_run(ctx)
    rows = list(csv.DictReader(open(os.path.join(scores, "heads.csv"))))
    for r in rows:
        r["sink_mass"] = "nan"
    with open(os.path.join(scores, "heads.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return prune_args(ctx, scores, "--strategies", "type,sink"), ["heads.csv"], ["--strategies sink", "finite"]


@case
def prune_dump_logits_in_a_missing_folder(ctx):
    scores = scores_run(ctx)
    return prune_args(ctx, scores, "--strategies", "sink", "--dump-logits", os.path.join(ctx.tmp, "no", "l.npy")), \
        ["--dump-logits"], ["does not exist"]


@case
def prune_dump_logits_is_the_held_out_text(ctx):
    scores = scores_run(ctx)
    text = ctx.file("held_out.txt", open(CORPUS).read())
    ctx.keep.append(text)
    argv = prune_args(ctx, scores, "--strategies", "sink", "--dump-logits", text)
    argv[argv.index(CORPUS)] = text
    return argv, ["--dump-logits"], ["input of this run"]


@case
def prune_dump_logits_is_the_mask(ctx):
    scores = scores_run(ctx)
    mask = ctx.file("mask.tsv", "\n".join(["1 " * 3] * 2) + "\n")  # any content: refused before it is read
    ctx.keep.append(mask)
    return prune_args(ctx, scores, "--mask", mask, "--dump-logits", mask), ["--dump-logits"], ["input of this run"]


@case
def prune_out_is_a_foreign_folder(ctx):
    scores = scores_run(ctx)
    os.makedirs(ctx.out)
    ctx.file("run/notes.txt", "a user's file")
    ctx.keep.append(ctx.out)
    return prune_args(ctx, scores, "--strategies", "sink"), ["--out"], ["neither an attngeom run nor a previous prune"]


@case
def prune_out_inside_the_model(ctx):
    scores = scores_run(ctx)
    model = os.path.join(ctx.tmp, "model")
    shutil.copytree(ctx.model, model)
    ctx.keep.append(model)
    argv = prune_args(ctx, scores, "--strategies", "sink")
    argv[argv.index(ctx.model)] = model
    argv[argv.index(ctx.out)] = os.path.join(model, "pruned")
    return argv, ["--out"], ["overlaps the input"]


# --- outputs that would replace inputs or special files ---

@case
def capture_out_replaces_the_weights(ctx):
    model = os.path.join(ctx.tmp, "model")
    shutil.copytree(ctx.model, model)
    ctx.out = os.path.join(model, "model.safetensors")
    ctx.keep = [model, ctx.out]
    return ["capture", "--model", model, "--text", PROMPT, "--out", ctx.out], ["model.safetensors"], ["input"]


@case
def perplexity_out_is_the_text(ctx):
    ctx.out = ctx.file("text.txt", open(PROMPT).read())
    ctx.keep = [ctx.out]
    return ["perplexity", "--model", ctx.model, "--text", ctx.out, "--out", ctx.out], ["text.txt"], ["input of this run"]


@case
def report_out_is_a_fifo(ctx):
    ctx.out = os.path.join(ctx.tmp, "fifo.html")
    os.mkfifo(ctx.out)
    ctx.keep = [ctx.out]
    return ["report", ctx.tmp, "--out", ctx.out], ["fifo.html"], ["not a regular file"]
