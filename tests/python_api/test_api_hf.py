#!/usr/bin/python3
"""attngeom.hf on a LLaMA written in transformers' style (hf_style_model.py), against `attngeom analyze`.

  test_api_hf.py --bin ATTNGEOM --fixtures DIR

A random GQA LLaMA checkpoint (tools/make_random_checkpoint.py, float32) is analysed by the CLI;
the same checkpoint, run in torch float64 through attngeom.hf on the CLI's own sequences, gives
the same tables (api_lib.same_tables: the rules of the float64 reference parity tests), with
v_proj, with Phi-3's fused qkv_proj, and with an attention that returns its weights only with
output_attentions=True (the model then keeps none of them). A padded batch (left or right)
gives the records of one sequence at a time; bfloat16 runs; progress goes to sys.stderr, to a
callable, or nowhere (quiet=True), for hf and analyze; the fused layouts of GPT-2 and GPT-NeoX
slice the right values; what cannot be read is refused by name. Exits 77 (skipped) without torch.
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import warnings

try:
    import torch
except ImportError:
    print("SKIP: attngeom.hf needs PyTorch (Debian: apt-get install python3-torch)")
    sys.exit(77)
import numpy as np

import api_lib
import attngeom
import hf_style_model
import st_reader
from attngeom import huggingface

SEQ_LEN, NUM_SEQS = 32, 5

args = api_lib.parse_args(cli=True)
scratch = args.scratch
failures = []
check = api_lib.checker(failures)
same_tables = api_lib.table_checker(check)
same_records = api_lib.record_checker(check)
records = api_lib.run_records


def hf(model, out, **kw):
    kw.setdefault("quiet", True)
    kw.setdefault("threads", 2)
    return attngeom.hf(model, os.path.join(scratch, out), **kw)


# A GQA LLaMA in float32, analysed by the CLI; its sequences feed attngeom.hf.
ckpt = os.path.join(scratch, "llama-gqa")
subprocess.run([sys.executable, os.path.join(api_lib.REPO, "tools", "make_random_checkpoint.py"), "--model-type",
                "llama", "--hidden", "64", "--intermediate", "128", "--layers", "2", "--heads", "4", "--kv-heads", "2",
                "--dtype", "f32", "--seed", "7", "--tokenizer", os.path.join(args.fixtures, "llama", "tokenizer.model"),
                "--out", ckpt], check=True, stdout=subprocess.DEVNULL)
cli_run = os.path.join(scratch, "cli")
api_lib.run(args.bin, "analyze", "--model", ckpt, "--data", api_lib.CORPUS, "--seq-len", str(SEQ_LEN), "--num-seqs",
            str(NUM_SEQS), "--queries", "all", "--precision", "fp32", "--threads", "2", "--out", cli_run)
tokens = [r["tokens"].astype(np.int64) for r in records(cli_run).values()]

model64 = hf_style_model.load(ckpt, torch.float64)
run = hf(model64, "hf", tokens=tokens, queries="all", batch_size=3)
same_tables(cli_run, run.path, "v_proj, float64, batches of 3 vs attngeom analyze (fp32)")
model_block = run.info["model"]
check(model_block["runner"] == "torch" and model_block["dtype"] == "float64" and model_block["device"] == "cpu" and
      model_block["values_from"] == "v_proj (v)" and run.info["complete"] and run.info["precision"] == "float64" and
      model_block["torch_version"] == torch.__version__ and (model_block["heads"], model_block["kv_heads"]) == (4, 2),
      f"run.json records the runner, versions, device and dtype: {json.dumps(model_block)[:300]}")
check(os.path.isfile(os.path.join(run.path, "report.html")), "report.html written")

fused = hf(hf_style_model.load(ckpt, torch.float64, fused=True), "fused", tokens=tokens, queries="all", batch_size=2)
same_tables(cli_run, fused.path, "Phi-3 qkv_proj, float64 vs attngeom analyze (fp32)")
same_records(run.path, fused.path, "qkv_proj vs v_proj records")

# An attention that returns its weights only with output_attentions=True: the pass is run
# with it, and the hooks drop every layer's [B, H, T, T] from the module's output once read.
opt_in = hf_style_model.load(ckpt, torch.float64, attention=hf_style_model.OptInWeightsAttention)
late = hf(opt_in, "opt-in", tokens=tokens, queries="all", batch_size=3)
same_records(run.path, late.path, "weights only with output_attentions=True vs always")
kept = opt_in.model.attentions
check(kept is not None and len(kept) == 2 and all(a is None for a in kept),
      f"the model keeps no layer's weights: {[None if a is None else tuple(a.shape) for a in kept or ()]}")

# Padded batches: left and right padding, sequences of different lengths, each cut to SEQ_LEN.
rng = np.random.default_rng(3)
extra = [0, 3, 1, 6, 2]
longer = [np.concatenate([t, rng.integers(3, 200, n)]) for t, n in zip(tokens, extra)]
width = max(len(t) for t in longer)
for side in ("left", "right"):
    ids = np.zeros((len(longer), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, t in enumerate(longer):
        span = slice(width - len(t), width) if side == "left" else slice(0, len(t))
        ids[i, span], mask[i, span] = t, 1
    padded = hf(model64, f"padded-{side}", tokens=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                seq_len=SEQ_LEN, queries="all", batch_size=5)
    one = hf(model64, f"one-{side}", tokens=longer, seq_len=SEQ_LEN, queries="all", batch_size=1) if side == "left" \
        else one
    same_records(one.path, padded.path, f"{side}-padded batch of 5 vs one at a time")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    cut = hf(model64, "cut", tokens=longer, queries="last", batch_size=4)
check(cut.info["seq_len"] == SEQ_LEN and any("cut to the shortest" in str(w.message) for w in caught),
      "sequences of different lengths are cut to the shortest, with a warning")

# bfloat16: rows renormalised after widening, as attngeom.selection does.
bf16 = hf(hf_style_model.load(ckpt, torch.bfloat16), "bf16", tokens=tokens, batch_size=5)
check(bf16.info["complete"] and bf16.info["precision"] == "bfloat16", "a bfloat16 model runs")

# Texts with a tokenizer (any callable returning input_ids).
engine = attngeom.Model(ckpt, precision="fp32")
texts = ["The cat sat on the mat and looked at the dog for a while.", "A second text, longer than the first one is."]
by_text = hf(model64, "texts", texts=texts, tokenizer=lambda t: {"input_ids": engine.tokenize(t)}, seq_len=20)
by_ids = hf(model64, "ids", tokens=[engine.tokenize(t) for t in texts], seq_len=20)
same_records(by_ids.path, by_text.path, "texts through a tokenizer vs their token ids")

# Progress: lines on sys.stderr, a callable, or nothing.
for quiet, callback in ((False, None), (True, None), (True, "callable"), (False, "callable")):
    seen, stderr = [], io.StringIO()
    with contextlib.redirect_stderr(stderr):
        hf(model64, f"progress-{quiet}-{callback}", tokens=tokens[:2], quiet=quiet,
           progress=seen.append if callback else None)
    text = stderr.getvalue()
    if callback:
        good = [u["done"] for u in seen] == [1, 2] and all(u["total"] == 2 for u in seen) and \
            "sequence 1/2" not in text and (text == "") == quiet
    elif quiet:
        good = text == ""
    else:
        good = text.startswith("attngeom: llama, float64 on cpu: 2 sequences of 32 tokens, 1 query row each\n") and \
            "attngeom: sequence 2/2 done" in text
    check(good, f"hf progress with quiet={quiet}, progress={callback}: {text[:120]!r}, {len(seen)} calls")
seen = []
with contextlib.redirect_stderr(io.StringIO()) as stderr:
    attngeom.analyze(model=ckpt, data=api_lib.CORPUS, out=os.path.join(scratch, "analyze-progress"), seq_len=16,
                     num_seqs=2, precision="fp32", threads=2, progress=seen.append)
check([u["done"] for u in seen] == [1, 2] and "sequence 1/2" not in stderr.getvalue() and
      stderr.getvalue().startswith("attngeom: llama"), f"analyze(progress=callable): {seen}")

# The fused layouts of GPT-2 and GPT-NeoX give each head's value slice.
H, D = 3, 4


def fused_module(class_name, child):
    cls = type(class_name, (torch.nn.Module,), {})
    m = cls()
    m.num_heads, m.head_dim = H, D
    setattr(m, child, torch.nn.Linear(H * D, 3 * H * D))
    return m


out = torch.arange(2 * 5 * 3 * H * D, dtype=torch.float32).reshape(2, 5, 3 * H * D)
gpt2 = huggingface.attention_layers(fused_module("GPT2Attention", "c_attn"))[0]
neox = huggingface.attention_layers(fused_module("GPTNeoXAttention", "query_key_value"))[0]
check(torch.equal(gpt2.values(out), out[..., 2 * H * D:].reshape(2, 5, H, D).transpose(1, 2)),
      "GPT-2 c_attn: values are the last third, [q | k | v]")
check(torch.equal(neox.values(out), out.reshape(2, 5, H, 3 * D)[..., 2 * D:].transpose(1, 2)),
      "GPT-NeoX query_key_value: values are each head's last d of [q, k, v]")


def refused(kind, words, call):
    try:
        call()
    except kind as e:
        check(all(w in str(e) for w in words), f"refused ({kind.__name__}): {e}")
        return
    check(False, f"not refused: expected {kind.__name__} with {words}")


class NoWeightsAttention(hf_style_model.LlamaAttention):
    def forward(self, *a):
        return super().forward(*a)[0], None  # as SDPA returns


falcon = torch.nn.Module()
falcon.attn = fused_module("FalconAttention", "query_key_value")
sdpa = hf_style_model.LlamaForCausalLM(hf_style_model.config_of(ckpt), NoWeightsAttention)
refused(ValueError, ["FalconAttention", "query_key_value", "unknown layout", "GPT2Attention"],
        lambda: hf(falcon, "x", tokens=tokens))
refused(ValueError, ["NoWeightsAttention", "attn_implementation='eager'"], lambda: hf(sdpa, "x", tokens=tokens))
refused(TypeError, ["every_nn", "every_n"], lambda: hf(model64, "x", tokens=tokens, every_nn=True))
refused(TypeError, ["tokenizer"], lambda: hf(model64, "x", texts=["a text"]))
refused(ValueError, ["sequence 1 has 32 tokens", "seq_len 36"],
        lambda: hf(model64, "x", tokens=[longer[3], tokens[1]], seq_len=36))
refused(ValueError, ["neither left nor right padding"],
        lambda: hf(model64, "x", tokens=np.ones((1, 6), np.int64), attention_mask=np.array([[1, 0, 1, 1, 1, 1]])))
refused(TypeError, ["progress", "callable"], lambda: hf(model64, "x", tokens=tokens, progress=3))
check(not os.path.exists(os.path.join(scratch, "x")), "a refused run leaves no output directory")

if failures:
    sys.exit(f"FAIL: {len(failures)} check(s)")
print("ok: attngeom.hf")
