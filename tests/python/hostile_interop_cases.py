"""Hostile head-set files for attngeom compare and bad exports (docs/cli.md, "head sets of
other tools"). Registered into test_hostile_runs.py's CASES; each returns (argv, needles_any,
needles_all) like the cases there. The fixture model (llama) has 2 layers of 4 heads (4 KV heads)."""
import os

from hostile_lib import case


def compare_case(ctx, name, text, *needles_all):
    """A finished run kept unchanged, a head-set file `name` holding `text`, and compare's argv."""
    ctx.run_ok(*ctx.analyze(num_seqs="1"))
    run = os.path.join(ctx.tmp, "done")
    os.rename(ctx.out, run)
    heads = ctx.file(name, text)
    ctx.keep = [run]
    ctx.out = os.path.join(ctx.tmp, "compare.csv")
    return ["compare", run, "--heads", heads, "--out", ctx.out], [name], list(needles_all)


@case
def compare_duo_wrong_layer_count(ctx):
    return compare_case(ctx, "gates.tsv", "1\t0\t0\t0\n" * 3, "3 rows", "expected 2 rows (layers)")


@case
def compare_duo_wrong_kv_head_count(ctx):
    return compare_case(ctx, "gates.tsv", "1\t0\t1\n0\t1\t0\n", "3 gates", "4 tab-separated gates")


@case
def compare_duo_nan_gate(ctx):
    return compare_case(ctx, "gates.tsv", "1\tnan\t0\t0\n0\t1\t0\t0\n", "'nan'", "[0, 1]")


@case
def compare_duo_gate_out_of_range(ctx):
    return compare_case(ctx, "gates.tsv", "1\t0\t0\t0\n0\t1.5\t0\t0\n", "'1.5'", "[0, 1]")


@case
def compare_json_malformed(ctx):
    return compare_case(ctx, "scores.json", '{"0-1": [0.5]', "invalid JSON")


@case
def compare_json_duplicate_head(ctx):
    return compare_case(ctx, "scores.json", '{"0-1": [0.5], "0-1": [0.2]}', "'0-1' appears twice")


@case
def compare_json_unknown_head(ctx):
    return compare_case(ctx, "scores.json", '{"2-0": [0.5]}', "unknown head '2-0'")


@case
def compare_json_nan_score(ctx):
    return compare_case(ctx, "scores.json", '{"0-1": [NaN]}', "invalid JSON")


@case
def compare_json_empty_list(ctx):
    return compare_case(ctx, "scores.json", '{"0-1": []}', "[scores...]")


@case
def compare_yaml_malformed(ctx):
    return compare_case(ctx, "heads.yaml", "attn_head_set:\n  foo: bar\n", "attn_head_set")


@case
def compare_yaml_duplicate_head(ctx):
    return compare_case(ctx, "heads.yaml", "attn_head_set:\n- '0-1'\n- 0-1\n", "'0-1' appears twice")


@case
def compare_yaml_unknown_head(ctx):
    return compare_case(ctx, "heads.yaml", 'attn_head_set: ["0-4"]\n', "unknown head '0-4'")


@case
def compare_yaml_not_a_head(ctx):
    return compare_case(ctx, "heads.yaml", 'attn_head_set: ["layer3"]\n', "not \"layer-head\"")


@case
def compare_unknown_extension(ctx):
    return compare_case(ctx, "heads.txt", "0-1\n", "unknown head-set format")


@case
def export_unknown_score(ctx):
    ctx.run_ok(*ctx.analyze(num_seqs="1"))
    run = os.path.join(ctx.tmp, "done")
    os.rename(ctx.out, run)
    ctx.keep = [run]
    ctx.out = os.path.join(ctx.tmp, "heads.tsv")
    return ["export", run, "--format", "duo", "--score", "recall", "--out", ctx.out], ["--score"], ["'recall'"]
