#!/usr/bin/python3
"""Hostile inputs to analyze, metrics, perplexity and (hostile_output_cases.py) merge, report,
prune, demo, synth and output paths (docs/robustness.md).

  test_hostile_runs.py --list
  test_hostile_runs.py --bin PATH/attngeom --fixtures DIR (--case NAME | --all)

Every case must end with exit code 2, exactly one line on stderr naming the problem
(checked by substring), no output written (the --out path absent, or an existing folder
unchanged) and no temporary file left behind. The capture cases live in test_bad_inputs.py,
the disk-full test in test_disk_full.py.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bad_input_lib import L0, ST, case_runner_main, refusal_problems, rewrite  # noqa: E402
from hostile_lib import CASES, CORPUS, PROMPT, Ctx, after_start, case, patch_dump, snapshot  # noqa: E402
import hostile_output_cases  # noqa: E402,F401  (registers the merge, report, prune and output cases)
import hostile_flag_cases  # noqa: E402,F401  (registers the contradictory-flag and mistyped-word cases)
import hostile_interop_cases  # noqa: E402,F401  (registers the compare and export cases)
import hostile_first_try_cases  # noqa: E402,F401  (registers a new user's first mistakes)


# --- the run directory (--out) ---

@case
def analyze_out_not_a_run_dir(ctx):
    os.mkdir(ctx.out)
    ctx.file("run/holiday.jpg", b"\xff\xd8 not yours")
    ctx.keep = [ctx.out]
    return ctx.analyze(), ["refusing to write into it"], []


@case
def analyze_overwrite_not_a_run_dir(ctx):
    os.mkdir(ctx.out)
    ctx.file("run/notes.txt", "precious")
    ctx.keep = [ctx.out]
    return ctx.analyze("--overwrite"), ["not an attngeom run directory"], []


@case
def analyze_out_is_a_file(ctx):
    ctx.file("run", "a file")
    ctx.keep = [ctx.out]
    return ctx.analyze(), ["not a directory"], []


@case
def analyze_resume_nothing(ctx):
    return ctx.analyze("--resume"), ["is not an attngeom run directory"], []


@case
def analyze_resume_other_settings(ctx):
    ctx.run_ok(*ctx.analyze(num_seqs="1"))
    ctx.keep = [ctx.out]
    argv = ctx.analyze("--resume")
    return argv, ["different settings"], ["num_seqs: 1 then, 2 now"]


@case
def analyze_resume_other_lengths(ctx):
    ctx.run_ok(*ctx.analyze("--lengths", "32", num_seqs="1"))
    ctx.keep = [ctx.out]
    return ctx.analyze("--lengths", "48", "--resume", num_seqs="1"), ["--resume"], ["lengths: [32] then, [48] now"]


@case
def analyze_resume_and_overwrite(ctx):
    return ctx.analyze("--resume", "--overwrite"), ["cannot be combined"], []


# --- sequence length and flags ---

@case
def analyze_seq_len_beyond_max_positions(ctx):
    argv = ctx.analyze(seq_len="4096")  # the fixture's max_position_embeddings is 2048
    return argv, ["max_position_embeddings 2048"], ["--force"]


@case
def analyze_sweep_length_beyond_max_positions(ctx):
    """A --lengths entry beyond the model fails before the first length is written."""
    return ctx.analyze("--lengths", "32,3000"), ["--lengths: 3000"], ["--force"]


@case
def analyze_negative_num_seqs(ctx):
    return ctx.analyze(num_seqs="-5"), ["--num-seqs"], []


@case
def analyze_absurd_seq_len(ctx):
    return ctx.analyze(seq_len="99999999999"), ["--seq-len"], []


@case
def analyze_zero_threads(ctx):
    return ctx.analyze(threads="0"), ["--threads"], []


@case
def analyze_bad_shard(ctx):
    return ctx.analyze("--shard", "3/2"), ["--shard '3/2'"], []


@case
def analyze_bad_lengths(ctx):
    return ctx.analyze("--lengths", "64,abc"), ["--lengths '64,abc'"], []


@case
def analyze_bad_queries(ctx):
    return ctx.analyze("--queries", "stride:0"), ["stride:0"], []


@case
def analyze_query_beyond_sequence(ctx):
    return ctx.analyze("--queries", "3,64"), ["position 64"], []


@case
def analyze_bf16_on_a_cpu_without_it(ctx):
    """oneDNN capped at AVX2, as on a CPU without AVX-512: no bf16 matmul exists."""
    ctx.env = {"ONEDNN_MAX_CPU_ISA": "AVX2"}
    return ctx.analyze(precision="bf16"), ["--precision bf16: oneDNN has no bf16 matmul"], ["--precision fp32"]


@case
def analyze_bf16x3_on_a_cpu_without_it(ctx):
    ctx.env = {"ONEDNN_MAX_CPU_ISA": "AVX2"}
    return ctx.analyze("--fp32-matmul", "bf16x3"), ["--fp32-matmul bf16x3: oneDNN has no bf16 matmul"], ["sgemm"]


@case
def analyze_negative_skip(ctx):
    return ctx.analyze("--skip", "-1"), ["--skip"], []


@case
def analyze_unknown_flag(ctx):
    return ctx.analyze("--num-seq", "3"), ["--num-seq"], []


@case
def analyze_resources_exceeded(ctx):
    """--queries all --every-n at 16384 tokens: terabytes of records, refused before any work."""
    text = open(CORPUS).read()
    big = ctx.file("big_corpus.txt", text * 8)
    return ctx.analyze("--force", "--queries", "all", "--every-n", "--pack", data=big, seq_len="16384"), ["analyze: needs about", "records and tables need about"], ["--no-resource-check"]


# --- corpora ---

@case
def corpus_100mb_single_line(ctx):
    """One 100 MB line: skipped for its length (bounded memory and time), so nothing is left."""
    path = os.path.join(ctx.tmp, "one_line.txt")
    with open(path, "wb") as f:
        chunk = b"word " * 20000
        for _ in range((100 << 20) // len(chunk)):
            f.write(chunk)
        f.write(b"\n")
    return ctx.analyze("--format", "lines", data=path), ["one_line.txt:1: skipped: document of"], ["--max-document-bytes"]


@case
def corpus_invalid_utf8(ctx):
    path = ctx.file("latin1.txt", "caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1") * 50)
    return ctx.analyze("--format", "lines", data=path), ["latin1.txt:1: skipped: invalid UTF-8"], []


@case
def corpus_zero_bytes(ctx):
    return ctx.analyze(data=ctx.file("empty.txt", b"")), ["empty.txt:1: skipped: empty file"], []


@case
def corpus_jsonl_missing_field(ctx):
    path = ctx.file("docs.jsonl", '{"body": "text without the field"}\n' * 20)
    return ctx.analyze("--format", "jsonl", data=path), ["no string field 'text'"], []


@case
def corpus_gzip_bomb(ctx):
    path = ctx.file("bomb.txt.gz", gzip.compress(b"\0" * (64 << 20), mtime=0))
    return ctx.analyze("--max-corpus-bytes", "1000000", data=path), ["bomb.txt.gz"], ["1000000-byte limit"]


@case
def corpus_truncated_zstd(ctx):
    if shutil.which("zstd") is None:
        raise RuntimeError("zstd not installed")
    packed = subprocess.run(["zstd", "-q", "-c"], input=open(CORPUS, "rb").read(), stdout=subprocess.PIPE,
                            check=True).stdout
    return ctx.analyze(data=ctx.file("cut.zst", packed[: len(packed) // 2])), ["cut.zst"], ["zstd"]


@case
def corpus_symlink_loop(ctx):
    loop = os.path.join(ctx.tmp, "corpus-loop")
    os.symlink(loop, loop)
    return ctx.analyze(data=loop), ["corpus-loop"], ["symbolic links"]


@case
def corpus_is_a_fifo(ctx):
    fifo = os.path.join(ctx.tmp, "corpus.fifo")
    os.mkfifo(fifo)
    return ctx.analyze(data=fifo), ["corpus.fifo"], ["not a regular file"]


def overflowing_model(ctx):
    """ctx.model becomes a copy whose finite q/k weights are scaled by 1e25: the scores
    overflow float32 and the probabilities are NaN, which only the forward pass can find."""
    model = os.path.join(ctx.tmp, "model")
    shutil.copytree(ctx.model, model)

    def scale(ts):
        for t in (L0 + "self_attn.q_proj.weight", L0 + "self_attn.k_proj.weight"):
            ts[t] = (ts[t][0], ts[t][1] * np.float32(1e25))
    rewrite(os.path.join(model, ST), scale)
    ctx.model = model


@case
def analyze_weights_overflowing_scores(ctx):
    overflowing_model(ctx)
    ctx.started = True
    return ctx.analyze(), ["model.layers.0"], ["overflow float32"]


@case
def analyze_shard_without_a_sequence(ctx):
    """Two sequences over three shards: shard 2 would be empty, and could never be merged."""
    return ctx.analyze("--shard", "2/3"), ["--shard 2/3"], ["no sequence", "at most 2 shards"]


@case
def analyze_overwrite_failing_before_its_first_record(ctx):
    """--overwrite keeps the previous run until the new one has a record: it is restored."""
    ctx.run_ok(*ctx.analyze("--no-bounds"))
    ctx.keep = [ctx.out]
    overflowing_model(ctx)
    ctx.started = True
    return ctx.analyze("--overwrite"), ["model.layers.0"], ["overflow float32"]


@case
def corpus_too_short_for_a_window(ctx):
    return ctx.analyze(data=ctx.file("short.txt", "just a few words")), ["no sequence of 64 tokens"], []


# --- metrics (capture dumps) ---

@case
def metrics_nan_attention(ctx):
    dump = ctx.capture_dump()
    patch_dump(dump, "layers.1.attn", lambda r: r.__setitem__(slice(8, 12), b"\x00\x00\xc0\x7f"))
    return ["metrics", "--dump", dump, "--out", ctx.out], ["layers.1.attn"], ["[0, 1]"]


@case
def metrics_attention_after_the_query(ctx):
    """Head 0's row for query 10 gets weight 0.5 on key 20: not causal."""
    dump = ctx.capture_dump()
    patch_dump(dump, "layers.0.attn", lambda r: r.__setitem__(slice(80, 84), b"\x00\x00\x00\x3f"))
    return ["metrics", "--dump", dump, "--out", ctx.out], ["layers.0.attn"], ["head 0", "query position 10", "key 20"]


@case
def metrics_attention_row_not_a_distribution(ctx):
    """Head 0's row for query 10 zeroed: it sums to 0."""
    dump = ctx.capture_dump()
    patch_dump(dump, "layers.1.attn", lambda r: r.__setitem__(slice(0, 160), bytes(160)))
    return ["metrics", "--dump", dump, "--out", ctx.out], ["layers.1.attn"], ["head 0", "sums to 0"]


@case
def metrics_layer_gap(ctx):
    """layers.1.attn renamed to layers.5.attn: layer 1 is missing, later ones must not be dropped silently."""
    dump = ctx.capture_dump()
    raw = open(dump, "rb").read()
    open(dump, "wb").write(raw.replace(b'"layers.1.attn"', b'"layers.5.attn"', 1))
    return ["metrics", "--dump", dump, "--out", ctx.out], ["dump.safetensors"], ["no layers.1.attn"]


@case
def metrics_inf_values(ctx):
    dump = ctx.capture_dump()
    patch_dump(dump, "layers.0.values", lambda r: r.__setitem__(slice(0, 4), b"\x00\x00\x80\x7f"))
    return ["metrics", "--dump", dump, "--out", ctx.out], ["layers.0.values"], ["NaN/Inf"]


@case
def metrics_zero_heads(ctx):
    header = {"tokens": {"dtype": "I32", "shape": [4], "data_offsets": [0, 16]},
              "query_positions": {"dtype": "I32", "shape": [1], "data_offsets": [16, 20]},
              "layers.0.attn": {"dtype": "F32", "shape": [0, 1, 4], "data_offsets": [20, 20]},
              "layers.0.values": {"dtype": "F32", "shape": [1, 4, 2], "data_offsets": [20, 52]}}
    blob = json.dumps(header).encode()
    data = (1).to_bytes(4, "little") * 4 + (3).to_bytes(4, "little") + b"\0" * 32
    dump = ctx.file("zero_heads.safetensors", len(blob).to_bytes(8, "little") + blob + data)
    return ["metrics", "--dump", dump, "--out", ctx.out], ["zero_heads.safetensors"], ["[H, Q, T]"]


@case
def metrics_same_dump_twice(ctx):
    dump = ctx.capture_dump()
    ctx.keep = [dump]
    return ["metrics", "--dump", dump, "--dump", os.path.join(ctx.tmp, ".", "dump.safetensors"), "--out", ctx.out], \
        ["--dump"], ["given twice"]


@case
def analyze_negative_seed(ctx):
    return ctx.analyze("--seed", "-1"), ["--seed"], ["[0, 2^53)"]


@case
def metrics_truncated_dump(ctx):
    dump = ctx.capture_dump()
    os.truncate(dump, os.path.getsize(dump) - 100)
    return ["metrics", "--dump", dump, "--out", ctx.out], ["dump.safetensors"], []


@case
def metrics_out_not_a_run_dir(ctx):
    dump = ctx.capture_dump()
    os.mkdir(ctx.out)
    ctx.file("run/thesis.tex", "chapter one")
    ctx.keep = [ctx.out]
    return ["metrics", "--dump", dump, "--out", ctx.out], ["refusing to write into it"], []


# --- perplexity ---

@case
def perplexity_context_beyond_max_positions(ctx):
    ctx.out = os.path.join(ctx.tmp, "ppl.json")
    return ["perplexity", "--model", ctx.model, "--text", PROMPT, "--context", "4096", "--out", ctx.out], \
        ["--context 4096"], ["max_position_embeddings"]


@case
def perplexity_stride_too_large(ctx):
    ctx.out = os.path.join(ctx.tmp, "ppl.json")
    return ["perplexity", "--model", ctx.model, "--text", PROMPT, "--context", "32", "--stride", "40",
            "--out", ctx.out], ["--stride 40"], []


@case
def perplexity_out_is_a_directory(ctx):
    ctx.out = os.path.join(ctx.tmp, "ppl_dir")
    os.mkdir(ctx.out)
    ctx.keep = [ctx.out]
    return ["perplexity", "--model", ctx.model, "--text", PROMPT, "--context", "32", "--out", ctx.out], \
        ["ppl_dir"], ["is a directory"]


@case
def perplexity_invalid_utf8(ctx):
    ctx.out = os.path.join(ctx.tmp, "ppl.json")
    text = ctx.file("bad.txt", b"fine text then \xed\xa0\x80 a surrogate")
    return ["perplexity", "--model", ctx.model, "--text", text, "--out", ctx.out], ["bad.txt"], ["invalid UTF-8"]


def run_case(name, binary, fixtures):
    with tempfile.TemporaryDirectory(prefix="attngeom-hostile-") as tmp:
        ctx = Ctx(binary, fixtures, tmp)
        argv, needles_any, needles_all = CASES[name](ctx)
        before = {p: snapshot(p) for p in ctx.keep}
        proc = subprocess.run([binary, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=300, env={**os.environ, **ctx.env})
        print(f"case {name}: exit {proc.returncode}; stderr: {proc.stderr.strip()[:600]!r}")
        if ctx.started:  # the one line is the last: before it, what the run was about to do
            proc = subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, after_start(proc.stderr))
        problems = refusal_problems(proc, needles_any, needles_all, tmp)
        for p, snap in before.items():
            if snapshot(p) != snap:
                problems.append(f"{p} was changed")
        if ctx.out not in ctx.keep and os.path.exists(ctx.out):
            problems.append(f"output {ctx.out} was written")
    return problems


if __name__ == "__main__":
    sys.exit(case_runner_main(__doc__, CASES, run_case))
