#!/usr/bin/python3
"""attngeom.hf on transformers' own LlamaForCausalLM and GPT2LMHeadModel (random, built from configs).

  test_api_hf_transformers.py --bin ATTNGEOM --fixtures DIR [--device cuda|cpu]
  ATTNGEOM_HF_DEVICE=cuda:1 test_api_hf_transformers.py ...

Runs only where transformers is importable (exits 77, skipped, otherwise: Debian has none).
Written for transformers 4.4x to 5.x. The device: --device, else ATTNGEOM_HF_DEVICE, else cuda
when torch sees a GPU, else cpu.

- A LLaMA-3-shaped model (GQA 4/2, rope_theta 500000, untied head) in float32 is saved with
  save_pretrained beside the fixture LLaMA's tokenizer; `attngeom analyze` (fp32) on that
  directory and attngeom.hf on the model on the device, over the CLI's own sequences, give the
  same tables (api_lib.same_tables); a left-padded batch gives the records of one at a time.
- A GPT-2-shaped model (c_attn, absolute positions) on the device: attngeom.hf's run equals
  `attngeom metrics` on dumps of the model's own output_attentions=True attentions and of
  value states recomputed from its hidden states (ln_1, then c_attn's last third); float16
  runs too on a GPU (bfloat16 on the CPU).
"""
import argparse
import json
import os
import shutil
import sys

try:
    import torch
    import transformers
except ImportError as e:
    print(f"SKIP: this test needs torch and transformers ({e})")
    sys.exit(77)
import numpy as np

import api_lib
import attngeom

p = argparse.ArgumentParser()
p.add_argument("--bin", required=True)
p.add_argument("--fixtures", required=True)
p.add_argument("--device", default=os.environ.get("ATTNGEOM_HF_DEVICE") or
               ("cuda" if torch.cuda.is_available() else "cpu"))
p.add_argument("--other-build", action="store_true", help="accepted for the python.api_* harness; unused")
args = p.parse_args()
scratch = api_lib.scratch_dir("attngeom-hf-transformers-")
failures = []
check = api_lib.checker(failures)
same_tables = api_lib.table_checker(check)
same_records = api_lib.record_checker(check)
device = torch.device(args.device)
if device.type == "cuda" and not torch.cuda.is_available():
    print(f"SKIP: device {device} asked for, and torch sees no GPU")
    sys.exit(77)
print(f"transformers {transformers.__version__}, torch {torch.__version__}, device {device}")
SEQ_LEN, NUM_SEQS = 48, 4

with open(os.path.join(args.fixtures, "llama", "config.json")) as f:
    fixture = json.load(f)


def config(cls, **kw):
    """cls(**kw) asking for eager attention; RoPE's theta as this version spells it."""
    theta = kw.pop("rope_theta", None)
    if theta is not None:
        if getattr(cls(), "rope_parameters", None) is not None:  # transformers 5 (rope_theta is gone)
            kw["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
        else:
            kw["rope_theta"] = theta
    c = cls(attn_implementation="eager", **kw)
    try:
        c._attn_implementation = "eager"
    except AttributeError:  # a version without the setter: the keyword above did it
        pass
    return c


def hf(model, out, **kw):
    kw.setdefault("quiet", True)
    return attngeom.hf(model, os.path.join(scratch, out), **kw)


# LLaMA-3-shaped, against the native engine.
torch.manual_seed(0)
llama_config = config(transformers.LlamaConfig, vocab_size=fixture["vocab_size"], hidden_size=64,
                      intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=500000.0,
                      bos_token_id=fixture.get("bos_token_id", 1), eos_token_id=fixture.get("eos_token_id", 2),
                      tie_word_embeddings=False)
llama = transformers.LlamaForCausalLM(llama_config).float().eval()
ckpt = os.path.join(scratch, "llama")
llama.save_pretrained(ckpt)
shutil.copy(os.path.join(args.fixtures, "llama", "tokenizer.model"), ckpt)
cli_run = os.path.join(scratch, "cli")
api_lib.run(args.bin, "analyze", "--model", ckpt, "--data", api_lib.CORPUS, "--seq-len", str(SEQ_LEN), "--num-seqs",
            str(NUM_SEQS), "--queries", "stride:4", "--precision", "fp32", "--out", cli_run)
tokens = [r["tokens"].astype(np.int64) for r in api_lib.run_records(cli_run).values()]
llama.to(device)
run = hf(llama, "llama", tokens=tokens, queries="stride:4", batch_size=3)
same_tables(cli_run, run.path, f"transformers LlamaForCausalLM on {device} vs attngeom analyze")
m = run.info["model"]
check(m["runner"] == "transformers" and m["transformers_version"] == transformers.__version__ and
      m["class"] == "LlamaForCausalLM" and m["dtype"] == "float32" and m["device"].startswith(device.type) and
      m["values_from"] == "v_proj (v)" and (m["heads"], m["kv_heads"], m["head_dim"]) == (4, 2, 16),
      f"run.json model block: {json.dumps(m)}")

rng = np.random.default_rng(5)
longer = [np.concatenate([t, rng.integers(3, fixture["vocab_size"], n)]) for t, n in zip(tokens, [0, 5, 2, 9])]
width = max(len(t) for t in longer)
ids, mask = np.zeros((len(longer), width), np.int64), np.zeros((len(longer), width), np.int64)
for i, t in enumerate(longer):
    ids[i, width - len(t):], mask[i, width - len(t):] = t, 1
padded = hf(llama, "llama-padded", tokens=torch.from_numpy(ids).to(device),
            attention_mask=torch.from_numpy(mask).to(device), seq_len=SEQ_LEN, queries="stride:4", batch_size=4)
one = hf(llama, "llama-one", tokens=tokens, queries="stride:4", batch_size=1)
same_records(one.path, padded.path, "left-padded batch of 4 vs one at a time")

# GPT-2-shaped, against metrics on the model's own attentions and independently sliced values.
torch.manual_seed(1)
gpt2_config = config(transformers.GPT2Config, vocab_size=fixture["vocab_size"], n_positions=128, n_embd=64, n_layer=2,
                     n_head=4, bos_token_id=fixture.get("bos_token_id", 1))
gpt2 = transformers.GPT2LMHeadModel(gpt2_config).eval().to(device)
run = hf(gpt2, "gpt2", tokens=tokens, queries="all", batch_size=4)
check(run.info["model"]["values_from"] == "c_attn (q|k|v)" and run.info["complete"],
      f"GPT-2 read through c_attn: {run.info['model']['values_from']}")
dumps = []
with torch.no_grad():
    for i, t in enumerate(tokens):
        out = gpt2(torch.from_numpy(t[None]).to(device), output_attentions=True, output_hidden_states=True,
                   use_cache=False)
        layers = []
        for l, block in enumerate(gpt2.transformer.h):
            qkv = block.attn.c_attn(block.ln_1(out.hidden_states[l]))[0]          # [T, 3 * hidden]
            v = qkv[:, 2 * 64:].reshape(SEQ_LEN, 4, 16).transpose(0, 1)            # [H, T, d]
            layers.append((out.attentions[l][0], v))
        dumps.append(os.path.join(scratch, f"gpt2-{i}.safetensors"))
        attngeom.write_dump(dumps[-1], t, np.arange(SEQ_LEN), layers)
reference = attngeom.metrics(dumps, os.path.join(scratch, "gpt2-metrics"))
same_tables(reference.path, run.path, "GPT-2 through attngeom.hf vs metrics on its output_attentions")

half = torch.float16 if device.type == "cuda" else torch.bfloat16
run = hf(gpt2.to(half), "gpt2-half", tokens=tokens, batch_size=4)
check(run.info["complete"] and run.info["precision"] == str(half).replace("torch.", ""), f"GPT-2 in {half} runs")

if failures:
    sys.exit(f"FAIL: {len(failures)} check(s)")
print("ok: attngeom.hf on transformers models")
