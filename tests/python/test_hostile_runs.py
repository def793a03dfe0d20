#!/usr/bin/python3
"""Hostile inputs to analyze, metrics, merge, report and perplexity (docs/robustness.md).

  test_hostile_runs.py --list
  test_hostile_runs.py --bin PATH/attngeom --fixtures DIR (--case NAME | --all)

Every case must end with exit code 2, exactly one line on stderr naming the problem
(checked by substring), no output written (the --out path absent, or an existing folder
unchanged) and no temporary file left behind. The capture cases live in test_bad_inputs.py,
the disk-full test in test_disk_full.py.
"""
import csv
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from bad_input_lib import case_runner_main, refusal_problems  # noqa: E402
CORPUS = os.path.join(REPO, "tests", "data", "fixture_corpus.txt")
PROMPT = os.path.join(REPO, "tests", "data", "fixture_prompt.txt")
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


class Ctx:
    def __init__(self, binary, fixtures, tmp):
        self.bin, self.fixtures, self.tmp = binary, fixtures, tmp
        self.model = os.path.join(fixtures, "llama")  # read only: cases never change a fixture
        self.out = os.path.join(tmp, "run")          # must not exist afterwards unless listed in keep
        self.keep = []                               # existing paths that must stay byte-identical
        self.env = {}                                # added to the environment of the run

    def file(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        return path

    def analyze(self, *flags, data=CORPUS, seq_len="64", num_seqs="2", threads="1", precision="fp32"):
        return ["analyze", "--model", self.model, "--data", data, "--out", self.out, "--seq-len", seq_len,
                "--num-seqs", num_seqs, "--precision", precision, "--threads", threads, *flags]

    def run_ok(self, *argv):
        proc = subprocess.run([self.bin, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"setup command failed: {argv}: {proc.stderr.strip()}")

    def capture_dump(self, name="dump.safetensors"):
        path = os.path.join(self.tmp, name)
        self.run_ok("capture", "--model", self.model, "--text", PROMPT, "--max-tokens", "40", "--queries", "10,39",
                    "--out", path)
        return path


def snapshot(path):
    """{relative path: sha256} of every file under `path` (or of `path` itself)."""
    if os.path.isfile(path):
        return {"": hashlib.sha256(open(path, "rb").read()).hexdigest()}
    out = {}
    for d, _, files in os.walk(path):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, path)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


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
    return argv, ["different settings"], []


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
    return ctx.analyze("--lengths", "32,3000"), ["--seq-len 3000"], ["--force"]


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


@case
def corpus_too_short_for_a_window(ctx):
    return ctx.analyze(data=ctx.file("short.txt", "just a few words")), ["no sequence of 64 tokens"], []


# --- metrics (capture dumps) ---

def patch_dump(path, name, edit):
    """Rewrites tensor `name` of a safetensors dump in place: edit(bytearray of its data)."""
    raw = bytearray(open(path, "rb").read())
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    b, e = header[name]["data_offsets"]
    region = raw[8 + n + b:8 + n + e]
    edit(region)
    raw[8 + n + b:8 + n + e] = region
    open(path, "wb").write(bytes(raw))


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
def perplexity_empty_out(ctx):
    return ["perplexity", "--model", ctx.model, "--text", PROMPT, "--out", ""], ["--out"], ["empty"]


@case
def synth_infinite_lambda(ctx):
    return ["synth", "--out", ctx.out, "--lambda", "inf"], ["--lambda"], ["range"]


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


def run_case(name, binary, fixtures):
    with tempfile.TemporaryDirectory(prefix="attngeom-hostile-") as tmp:
        ctx = Ctx(binary, fixtures, tmp)
        argv, needles_any, needles_all = CASES[name](ctx)
        before = {p: snapshot(p) for p in ctx.keep}
        proc = subprocess.run([binary, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=300, env={**os.environ, **ctx.env})
        print(f"case {name}: exit {proc.returncode}; stderr: {proc.stderr.strip()[:600]!r}")
        problems = refusal_problems(proc, needles_any, needles_all, tmp)
        for p, snap in before.items():
            if snapshot(p) != snap:
                problems.append(f"{p} was changed")
        if ctx.out not in ctx.keep and os.path.exists(ctx.out):
            problems.append(f"output {ctx.out} was written")
    return problems


if __name__ == "__main__":
    sys.exit(case_runner_main(__doc__, CASES, run_case))
