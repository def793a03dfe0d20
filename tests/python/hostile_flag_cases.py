"""Flags that contradict each other, or that would be ignored, and mistyped words: each is
refused with one line naming the flag (docs/robustness.md). Registered into
test_hostile_runs.py's CASES like hostile_output_cases.py."""
import os

from hostile_lib import CORPUS, case
from hostile_output_cases import prune_args, scores_run


# --- analyze ---

@case
def analyze_same_corpus_file_twice(ctx):
    argv = ctx.analyze()
    argv.insert(argv.index(CORPUS) + 1, os.path.join(os.path.dirname(CORPUS), ".", os.path.basename(CORPUS)))
    return argv, ["fixture_corpus.txt"], ["given twice"]


@case
def analyze_nan_threshold(ctx):
    return ctx.analyze("--retriever-min-cos-last", "nan"), ["--retriever-min-cos-last"], \
        ["expected a number in [-1, 1]", "'nan'"]


@case
def analyze_integer_flag_given_a_fraction(ctx):
    argv = ctx.analyze()
    argv[argv.index("--num-seqs") + 1] = "1.5"
    return argv, ["--num-seqs"], ["expected an integer in [1, 16777216]"]


@case
def analyze_query_listed_twice(ctx):
    return ctx.analyze("--queries", "40,3,40"), ["--queries"], ["position 40 appears twice"]


@case
def analyze_query_position_zero_alone(ctx):
    return ctx.analyze("--queries", "0"), ["--queries"], ["position 0 sees one key"]


@case
def analyze_pack_separator_without_pack(ctx):
    return ctx.analyze("--pack-separator", "none"), ["--pack-separator"], ["requires --pack"]


@case
def analyze_text_field_without_jsonl(ctx):
    return ctx.analyze("--text-field", "body"), ["--text-field"], ["only to --format jsonl"]


@case
def analyze_r1_eta_with_no_bounds(ctx):
    return ctx.analyze("--no-bounds", "--r1-eta", "mae"), ["--r1-eta"], ["--no-bounds"]


@case
def analyze_resume_with_another_label(ctx):
    ctx.run_ok(*ctx.analyze("--label", "first"))
    ctx.keep = [ctx.out]
    return ctx.analyze("--resume", "--label", "second"), ["--label second"], ["labelled 'first'"]


@case
def analyze_fp32_kernel_beside_bf16(ctx):
    # Without AVX-512 the refusal names --precision bf16 instead: either way, nothing runs.
    return ctx.analyze("--fp32-matmul", "bf16x3", precision="bf16"), ["--fp32-matmul", "--precision bf16"], []


@case
def analyze_mistyped_flag(ctx):
    argv = ctx.analyze()
    argv[argv.index("--model")] = "--modle"
    return argv, ["--modle"], ["unknown flag", "did you mean --model?"]


@case
def mistyped_command(ctx):
    argv = ctx.analyze()
    argv[0] = "analyse"
    return argv, ["analyse"], ["unknown command", "did you mean analyze?"]


@case
def analyze_empty_out(ctx):
    argv = ctx.analyze()
    argv[argv.index(ctx.out)] = ""
    return argv, ["--out"], ["must not be empty"]


# --- capture, synth, bench, report ---

@case
def capture_tokens_with_no_bos(ctx):
    ctx.out = os.path.join(ctx.tmp, "dump.safetensors")
    ids = ctx.file("ids.txt", "1 5 6 7 8 9\n")
    return ["capture", "--model", ctx.model, "--tokens", ids, "--no-bos", "--out", ctx.out], ["--no-bos"], ["--tokens"]


@case
def synth_out_is_a_foreign_folder(ctx):
    os.makedirs(ctx.out)
    ctx.file("run/points.csv", "a user's own points\n")  # a synth name, but not synth's file
    ctx.keep = [ctx.out]
    return ["synth", "--out", ctx.out, "--d", "4", "--L", "8"], ["--out"], ["neither empty nor a previous synth output"]


@case
def synth_out_is_an_analyze_run(ctx):
    ctx.run_ok(*ctx.analyze(num_seqs="1"))
    ctx.keep = [ctx.out]
    return ["synth", "--out", ctx.out, "--d", "4", "--L", "8"], ["--out"], ["neither empty nor a previous synth output"]


@case
def synth_shape_flag_out_of_range(ctx):
    return ["synth", "--out", ctx.out, "--four-phase-sink", "2"], ["--four-phase-sink"], ["expected a number in [0, 1]"]


@case
def metrics_dumps_of_two_precisions(ctx):
    fp32 = ctx.capture_dump("fp32.safetensors")
    raw = open(fp32, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = raw[8:8 + n].replace(b'"precision":"fp32"', b'"precision":"bf16"')  # same length
    assert header != raw[8:8 + n], "the dump's metadata names no fp32 precision"
    bf16 = ctx.file("bf16.safetensors", raw[:8] + header + raw[8 + n:])
    return ["metrics", "--dump", fp32, "--dump", bf16, "--out", ctx.out], ["--dump"], ["one run holds one precision"]


# --- prune ---

@case
def prune_out_is_another_run(ctx):
    scores = scores_run(ctx)
    ctx.run_ok(*ctx.analyze(num_seqs="1"))
    ctx.keep.append(ctx.out)
    return prune_args(ctx, scores, "--strategies", "sink"), ["--out"], ["an attngeom run other than --scores"]


@case
def prune_fraction_listed_twice(ctx):
    scores = scores_run(ctx)
    return prune_args(ctx, scores, "--strategies", "sink", "--fractions", "0,0.5,0"), ["--fractions"], ["0 appears twice"]


@case
def prune_fractions_with_only_a_mask(ctx):
    mask = ctx.file("mask.tsv", "1 1 1 1\n1 1 1 1\n")
    argv = ["prune", "--model", ctx.model, "--data", CORPUS, "--mask", mask, "--out", ctx.out, "--context", "32",
            "--max-tokens", "64", "--fractions", "0.1,0.2"]
    return argv, ["--fractions"], ["none runs"]


@case
def prune_budgets_without_scores(ctx):
    mask = ctx.file("mask.tsv", "1 1 1 1\n1 1 1 1\n")
    argv = ["prune", "--model", ctx.model, "--data", CORPUS, "--mask", mask, "--out", ctx.out, "--context", "32",
            "--max-tokens", "64", "--topn-budgets", "4"]
    return argv, ["--topn-budgets"], ["--scores"]


@case
def prune_tau_with_no_topn(ctx):
    scores = scores_run(ctx)
    return prune_args(ctx, scores, "--strategies", "sink", "--topn-tau", "0.3"), ["--topn-tau"], ["--no-topn"]


@case
def prune_seeds_without_a_seeded_order(ctx):
    scores = scores_run(ctx)
    return prune_args(ctx, scores, "--strategies", "sink", "--seeds", "3"), ["--seeds"], ["seeded orders"]


@case
def prune_type_order_without_the_type_order(ctx):
    scores = scores_run(ctx)
    return prune_args(ctx, scores, "--strategies", "sink", "--type-order", "retriever,reset,mixer,unclassified"), \
        ["--type-order"], ["does not run"]


@case
def bench_stage_twice(ctx):
    return ["bench", "--model", ctx.model, "--seq-len", "16", "--stages", "forward,forward"], ["--stages"], \
        ["appears twice"]


@case
def report_same_run_twice(ctx):
    ctx.run_ok(*ctx.analyze(num_seqs="1"))
    ctx.keep = [ctx.out]
    report = os.path.join(ctx.tmp, "r.html")
    return ["report", ctx.out, os.path.join(ctx.out, "."), "--out", report], ["report"], ["given twice"]


@case
def report_out_inside_another_run(ctx):
    ctx.run_ok(*ctx.analyze(num_seqs="1"))
    other = os.path.join(ctx.tmp, "other")
    os.rename(ctx.out, other)
    ctx.run_ok(*ctx.analyze(num_seqs="1"))
    ctx.keep = [ctx.out, other]
    return ["report", ctx.out, "--out", os.path.join(other, "report.html")], ["--out"], ["does not draw"]
