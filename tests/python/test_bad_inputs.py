#!/usr/bin/python3
"""Bad inputs: each case corrupts a copy of a fixture and runs `attngeom capture`.

  test_bad_inputs.py --list
  test_bad_inputs.py --bin PATH/attngeom --fixtures DIR (--case NAME | --all)

Expected for every case: exit code 2, exactly one line on stderr, that line naming
the offending file / tensor / flag (checked by substring), and no output file.
Cases use fixture llama (F32, one file) unless they are about shards (gemma). The
hostile-checkpoint cases (docs/robustness.md) are in bad_checkpoint_cases.py.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bad_input_lib import (CASES, L0, L1, ST, Ctx, case, case_runner_main, edit_json, edit_offsets,  # noqa: E402
                           refusal_problems, rewrite)
import bad_checkpoint_cases  # noqa: E402,F401  (registers the hostile-checkpoint cases)
import bad_tokenizer_json_cases  # noqa: E402,F401  (registers the hostile tokenizer.json cases)

# --- the cases: each corrupts ctx.model and returns (needles_any, needles_all) ---

@case()
def truncated_file(ctx):
    p = ctx.path(ST)
    os.truncate(p, int(os.path.getsize(p) * 0.6))
    return [ST], []


@case()
def truncated_before_header(ctx):
    os.truncate(ctx.path(ST), 5)
    return [ST], []


@case()
def header_length_past_eof(ctx):
    p = ctx.path(ST)
    size = os.path.getsize(p)
    with open(p, "r+b") as f:
        f.write((size + 1000).to_bytes(8, "little"))
    return [ST], []


@case()
def header_length_huge(ctx):
    with open(ctx.path(ST), "r+b") as f:
        f.write((2**64 - 16).to_bytes(8, "little"))
    return [ST], []


@case()
def malformed_header_json(ctx):
    p = ctx.path(ST)
    raw = bytearray(open(p, "rb").read())
    n = int.from_bytes(raw[:8], "little")
    colon = raw.index(b":", 8)
    raw[colon] = ord(";")
    assert colon < 8 + n
    open(p, "wb").write(raw)
    return [ST], []


@case()
def overlapping_offsets(ctx):
    k, v = L0 + "self_attn.k_proj.weight", L0 + "self_attn.v_proj.weight"

    def edit(h, size):
        assert h[v]["data_offsets"][0] == h[k]["data_offsets"][1]
        h[v]["data_offsets"] = [o - 256 for o in h[v]["data_offsets"]]  # same size, overlaps k
    edit_offsets(ctx.path(ST), edit)
    return [k, v, ST], []


@case()
def offsets_out_of_range(ctx):
    t = "lm_head.weight"

    def edit(h, size):
        b, e = h[t]["data_offsets"]
        h[t]["data_offsets"] = [size + 4096 - (e - b), size + 4096]
    edit_offsets(ctx.path(ST), edit)
    return [t, ST], []


@case()
def offsets_size_mismatch(ctx):
    t = L1 + "mlp.down_proj.weight"

    def edit(h, size):
        h[t]["data_offsets"][1] -= 4
    edit_offsets(ctx.path(ST), edit)
    return [t], []


@case()
def wrong_dtype_i64(ctx):
    t = L0 + "self_attn.q_proj.weight"

    def edit(ts):
        ts[t] = ("I64", ts[t][1].astype(np.int64))
    rewrite(ctx.path(ST), edit)
    return [t], []


@case()
def dtype_mismatch(ctx):
    t = L1 + "self_attn.o_proj.weight"   # one F16 tensor in an F32 (torch_dtype float32) model

    def edit(ts):
        ts[t] = ("F16", ts[t][1].astype(np.float16))
    rewrite(ctx.path(ST), edit)
    return [t], []


@case()
def wrong_shape_transposed(ctx):
    t = L0 + "mlp.up_proj.weight"

    def edit(ts):
        ts[t] = (ts[t][0], ts[t][1].T)
    rewrite(ctx.path(ST), edit)
    return [t], []


@case()
def wrong_shape_vocab(ctx):
    t = "model.embed_tokens.weight"

    def edit(ts):
        ts[t] = (ts[t][0], ts[t][1][:-1])
    rewrite(ctx.path(ST), edit)
    return [t], []


@case()
def missing_tensor(ctx):
    t = L1 + "self_attn.v_proj.weight"
    rewrite(ctx.path(ST), lambda ts: ts.pop(t))
    return [t], []


@case()
def missing_lm_head(ctx):
    rewrite(ctx.path(ST), lambda ts: ts.pop("lm_head.weight"))
    return ["lm_head.weight"], []


@case()
def missing_safetensors(ctx):
    os.remove(ctx.path(ST))
    return [ST], []


@case("gemma")
def missing_shard(ctx):
    with open(ctx.path(ST + ".index.json")) as f:
        shard = sorted(set(json.load(f)["weight_map"].values()))[1]
    os.remove(ctx.path(shard))
    return [shard], []


@case("gemma")
def malformed_index_json(ctx):
    p = ctx.path(ST + ".index.json")
    text = open(p).read()
    open(p, "w").write(text[:len(text) // 2])
    return [ST + ".index.json"], []


@case("gemma")
def shard_truncated(ctx):
    with open(ctx.path(ST + ".index.json")) as f:
        shard = sorted(set(json.load(f)["weight_map"].values()))[-1]
    p = ctx.path(shard)
    os.truncate(p, os.path.getsize(p) - 100)
    return [shard], []


@case()
def missing_tokenizer(ctx):
    os.remove(ctx.path("tokenizer.model"))
    return ["tokenizer.model"], []


@case()
def corrupt_tokenizer(ctx):
    with open(ctx.path("tokenizer.model"), "wb") as f:
        f.write(b"this is not a sentencepiece model\n" * 10)
    return ["tokenizer.model"], []


@case()
def unsupported_model_type(ctx):
    edit_json(ctx.path("config.json"), lambda c: c.update(model_type="rwkv"))
    return [], ["llama", "mistral", "gemma"]


@case()
def malformed_config_json(ctx):
    p = ctx.path("config.json")
    text = open(p).read()
    open(p, "w").write(text[:len(text) // 2])
    return ["config.json"], []


@case()
def config_missing_field(ctx):
    edit_json(ctx.path("config.json"), lambda c: c.pop("num_attention_heads"))
    return ["num_attention_heads"], []


@case()
def missing_text_file(ctx):
    ctx.args = ["--text", os.path.join(ctx.tmp, "no_such_prompt.txt")]
    return ["no_such_prompt.txt"], []


@case()
def nonexistent_model_dir(ctx):
    ctx.model = os.path.join(ctx.tmp, "no_such_model")
    return ["no_such_model"], []


@case()
def bad_queries_value(ctx):
    ctx.args += ["--queries", "5,x"]
    return ["queries", "5,x"], []


@case()
def query_out_of_range(ctx):
    ctx.args += ["--queries", "0,100000"]
    return ["100000"], []


@case()
def token_id_out_of_range(ctx):
    ids = os.path.join(ctx.tmp, "bad_ids.txt")
    with open(ids, "w") as f:
        f.write("1 5 99999 7\n")
    ctx.args = ["--tokens", ids]
    return ["99999", "bad_ids.txt"], []


@case()
def empty_tokens_file(ctx):
    ids = os.path.join(ctx.tmp, "empty_ids.txt")
    open(ids, "w").close()
    ctx.args = ["--tokens", ids]
    return ["empty_ids.txt"], []


def run_case(name, binary, fixtures):
    fixture, fn = CASES[name]
    with tempfile.TemporaryDirectory(prefix="attngeom-bad-") as tmp:
        model = os.path.join(tmp, "model")  # a neutral path: needles must come from the message
        shutil.copytree(os.path.join(fixtures, fixture), model)
        ctx = Ctx(model, tmp)
        needles_any, needles_all = fn(ctx)
        out = ctx.out
        cmd = [binary, "capture", "--model", ctx.model, "--out", out] + ctx.args
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        print(f"case {name}: exit {proc.returncode}; stderr: {proc.stderr.strip()!r}")
        problems = refusal_problems(proc, needles_any, needles_all, tmp)
        if os.path.exists(out) and not os.path.isdir(out):
            problems.append("an output file was left behind")
    return problems


if __name__ == "__main__":
    sys.exit(case_runner_main(__doc__, CASES, run_case))
