#!/usr/bin/python3
"""Checks tools/make_random_checkpoint.py on small shapes, and its presets' sizes.

  test_random_checkpoint.py --fixtures DIR   (takes a tokenizer from DIR/llama)

Each generated checkpoint is read back with the independent st_reader: every tensor
present with the config's shape and dtype, values finite and within the promised
magnitude band, shards and index consistent; the reference forward runs on it (a mixture's
experts per expert or fused as transformers 5.x holds them). A
tokenizer.json is copied under its name and sets the vocabulary; a file that is neither kind
gets one line naming it and exit code 2.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools")
sys.path.insert(0, HERE)
sys.path.insert(0, TOOLS)
import reference_forward as rf  # noqa: E402
from reference_model import Model  # noqa: E402
import st_reader  # noqa: E402
from checkpoint_files import spm_vocab_size  # noqa: E402
from hf_layouts import GEMMAS, hf_config, tensor_shapes  # noqa: E402
from make_random_checkpoint import NORM_WEIGHTS, PRESET_PREFIX_STRIPPED, PRESETS  # noqa: E402

# Published parameter counts of the real models these presets copy.
PRESET_PARAMS = {"llama2-7b": 6_738_415_616, "mistral-7b": 7_241_732_096,
                 "gemma-7b": 8_537_680_896, "llama-1b": 1_100_048_384, "llama3-8b": 8_030_261_248,
                 "qwen2.5-7b": 7_615_616_512, "pythia-6.9b": 6_857_302_016, "pythia-1.4b": 1_414_647_808,
                 "gpt-neo-1.3b": 1_315_575_808, "opt-6.7b": 6_658_473_984, "falcon-7b": 6_921_720_704,
                 # Falcon-40B, tied (its config writes no tie_word_embeddings), counted from its shapes: 60 x
                 # (query_key_value (128 + 16) x 64 rows, dense, 2 x 4 x 8192^2 MLP, 2 norms) + embeddings + ln_f
                 "falcon-40b": 41_303_293_952, "bloom-7b1": 7_069_016_064,
                 # MPT-7B (its model card: 6.7B), counted from its shapes: 32 x (Wqkv, out_proj, 2 x 4 x 4096^2 MLP,
                 # 2 norms without bias) + wte + norm_f
                 "mpt-7b": 6_649_286_656,
                 # OLMo-7B-0424 (6.9B), counted from its shapes: 32 x (4 x 4096^2 attention, 3 x 4096 x 11008 MLP, no
                 # norm tensors) + embed_tokens + lm_head
                 "olmo-7b": 6_888_095_744,
                 # StarCoder2-7B (its model card: 7.17B), counted from its shapes: 32 x (q, o 4608^2, k, v 512 x 4608,
                 # 2 x 18432 x 4608 MLP, all with biases, 2 LayerNorms) + tied embed_tokens + norm
                 "starcoder2-7b": 7_173_923_840,
                 # StableLM-2-1.6B (its model card: 1.6B), counted from its shapes: 24 x (4 x 2048^2 attention with
                 # q/k/v biases, 3 x 2048 x 5632 MLP, 2 LayerNorms) + embed_tokens + lm_head + norm
                 "stablelm-2-1.6b": 1_644_515_328,
                 # Granite-3.x-8B (8.17B), counted from its shapes: 40 x (q, o 4096^2, k, v 1024 x 4096,
                 # 3 x 4096 x 12800 MLP, 2 RMSNorms) + tied embed_tokens + norm
                 "granite-3-8b": 8_170_848_256}
# The mixtures' totals as their model cards round them (three significant digits).
PRESET_PARAMS_ROUNDED = {"mixtral-8x7b": 46.7e9, "olmoe-1b-7b": 6.92e9, "qwen3-30b-a3b": 30.5e9, "gpt-j-6b": 6.05e9,
                         "smollm3-3b": 3.08e9, "qwen1.5-moe-a2.7b": 14.3e9}
CASES = [
    ("llama-bf16-sharded", ["--model-type", "llama", "--hidden", "64", "--intermediate", "128",
                            "--layers", "2", "--heads", "4", "--dtype", "bf16", "--max-shard-gb", "0.00005"]),
    ("mistral-f16-window", ["--model-type", "mistral", "--hidden", "64", "--intermediate", "160",
                            "--layers", "2", "--heads", "4", "--kv-heads", "2", "--sliding-window", "16",
                            "--dtype", "f16"]),
    ("gemma-f32-headdim", ["--model-type", "gemma", "--hidden", "48", "--intermediate", "96",
                           "--layers", "1", "--heads", "2", "--kv-heads", "1", "--head-dim", "32",
                           "--dtype", "f32"]),
    ("preset-h1024-shape", ["--preset", "h1024-l8", "--hidden", "64", "--intermediate", "128",
                            "--heads", "2", "--kv-heads", "2", "--head-dim", "32", "--layers", "2"]),
    ("qwen2-bf16-biases", ["--model-type", "qwen2", "--hidden", "64", "--intermediate", "128",
                           "--layers", "2", "--heads", "4", "--kv-heads", "2", "--dtype", "bf16"]),
    ("gemma3-multimodal", ["--model-type", "gemma3", "--hidden", "64", "--intermediate", "128",
                           "--layers", "2", "--heads", "4", "--kv-heads", "1", "--head-dim", "16",
                           "--dtype", "bf16"]),
    ("olmo2-f32", ["--model-type", "olmo2", "--hidden", "64", "--intermediate", "128",
                   "--layers", "2", "--heads", "4", "--dtype", "f32"]),
    ("olmoe-f32", ["--model-type", "olmoe", "--hidden", "64", "--intermediate", "32", "--layers", "2",
                   "--heads", "4", "--experts", "4", "--experts-per-tok", "2", "--dtype", "f32"]),
    ("smollm3-bf16-nope", ["--model-type", "smollm3", "--hidden", "64", "--intermediate", "128", "--layers", "4",
                           "--heads", "4", "--kv-heads", "2", "--dtype", "bf16"]),
    ("gptj-f16", ["--model-type", "gptj", "--hidden", "64", "--intermediate", "256", "--layers", "2",
                  "--heads", "4", "--dtype", "f16"]),
    ("gpt-neo-bf16-window", ["--model-type", "gpt_neo", "--hidden", "64", "--intermediate", "256", "--layers", "3",
                             "--heads", "4", "--sliding-window", "16", "--dtype", "bf16"]),
    ("opt-f16", ["--model-type", "opt", "--hidden", "64", "--intermediate", "160", "--layers", "2", "--heads", "4",
                 "--bos-id", "2", "--dtype", "f16"]),
    ("falcon-7b-layout-bf16", ["--model-type", "falcon", "--hidden", "64", "--intermediate", "256", "--layers", "2",
                               "--heads", "8", "--kv-heads", "1", "--dtype", "bf16"]),
    ("falcon-40b-layout-f16", ["--model-type", "falcon", "--hidden", "64", "--intermediate", "96", "--layers", "2",
                               "--heads", "8", "--kv-heads", "2", "--dtype", "f16", "--max-shard-gb", "0.00005"]),
    ("qwen2-moe-bf16", ["--model-type", "qwen2_moe", "--hidden", "64", "--intermediate", "96", "--moe-intermediate",
                        "32", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--experts", "4", "--experts-per-tok",
                        "2", "--dtype", "bf16"]),
    ("qwen2-moe-fused", ["--model-type", "qwen2_moe", "--hidden", "64", "--intermediate", "96", "--moe-intermediate",
                         "32", "--layers", "2", "--heads", "4", "--experts", "4", "--experts-per-tok", "2",
                         "--fused-experts", "--dtype", "f32"]),
    ("bloom-bf16", ["--model-type", "bloom", "--hidden", "64", "--intermediate", "256", "--layers", "2",
                    "--heads", "4", "--dtype", "bf16"]),
    ("mpt-f16", ["--model-type", "mpt", "--hidden", "64", "--intermediate", "256", "--layers", "2", "--heads", "8",
                 "--dtype", "f16"]),
    ("gpt-bigcode-mqa-bf16", ["--model-type", "gpt_bigcode", "--hidden", "64", "--intermediate", "256", "--layers",
                              "2", "--heads", "4", "--kv-heads", "1", "--dtype", "bf16"]),
    ("gpt-bigcode-mha-f32", ["--model-type", "gpt_bigcode", "--hidden", "64", "--intermediate", "192", "--layers",
                             "2", "--heads", "4", "--dtype", "f32"]),
    ("stablelm-f16", ["--model-type", "stablelm", "--hidden", "64", "--intermediate", "176", "--layers", "2", "--heads",
                      "4", "--kv-heads", "2", "--dtype", "f16"]),
    ("granite-f32", ["--model-type", "granite", "--hidden", "64", "--intermediate", "160", "--layers", "2", "--heads",
                     "4", "--kv-heads", "2", "--dtype", "f32"]),
    ("qwen3-moe-fused", ["--model-type", "qwen3_moe", "--hidden", "64", "--intermediate", "128",
                         "--moe-intermediate", "32", "--layers", "2", "--heads", "4", "--kv-heads", "2",
                         "--head-dim", "32", "--experts", "4", "--experts-per-tok", "2", "--fused-experts",
                         "--dtype", "bf16"]),
]
# Presets at a small shape, their layouts kept (bloom-7b1's tensors without "transformer."), the vocabulary the
# tokenizer's (stablelm-2-1.6b's bos and eos 100257 beyond it: the tokenizer's 1 and 2 instead).
SMALL = ["--hidden", "64", "--intermediate", "256", "--layers", "2", "--heads", "4", "--kv-heads", "4",
         "--head-dim", "16"]
PRESET_CASES = [("preset-bloom-7b1-small", "bloom-7b1", SMALL), ("preset-mpt-7b-small", "mpt-7b", SMALL),
                ("preset-olmo-7b-small", "olmo-7b", SMALL), ("preset-starcoder2-7b-small", "starcoder2-7b", SMALL),
                ("preset-stablelm-2-1.6b-small", "stablelm-2-1.6b", SMALL + ["--bos-id", "1", "--eos-id", "2"]),
                ("preset-granite-3-8b-small", "granite-3-8b", SMALL)]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def validate(name, out, tokenizer, stripped=None):
    """`stripped`: the prefix the tensors are written without (lm_head keeps its name)."""
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    text = cfg.get("text_config", cfg)  # a multimodal config's text tower
    index = os.path.join(out, "model.safetensors.index.json")
    files = ["model.safetensors"]
    if os.path.exists(index):
        with open(index) as f:
            wm = json.load(f)["weight_map"]
        files = sorted(set(wm.values()))
    tensors, dtypes, where = {}, {}, {}
    for fname in files:
        t, meta, dt = st_reader.read(os.path.join(out, fname))
        tensors.update(t)
        dtypes.update(dt)
        where.update({k: fname for k in t})
    fused = any(k.endswith("mlp.experts.gate_up_proj") for k in tensors)  # transformers 5.x's layout
    expected = {k[len(stripped):] if stripped and k.startswith(stripped) else k: s
                for k, s in tensor_shapes(cfg, fused)}
    check(set(tensors) == set(expected), f"{name}: tensor names ({len(tensors)})")
    check(all(tuple(tensors[k].shape) == tuple(s) for k, s in expected.items() if k in tensors),
          f"{name}: tensor shapes match the config")
    want = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}[cfg["torch_dtype"]]
    check(set(dtypes.values()) == {want}, f"{name}: every tensor is {want}")
    if os.path.exists(index):
        check(len(files) >= 2 and all(wm[k] == where[k] for k in tensors), f"{name}: {len(files)} shards match the index")
    check(text["vocab_size"] == spm_vocab_size(tokenizer), f"{name}: vocab_size = tokenizer's")
    finite = all(np.isfinite(a.astype(np.float64)).all() for a in tensors.values())
    check(finite, f"{name}: all values finite")
    band = True
    for k, a in tensors.items():
        if k.endswith(NORM_WEIGHTS):
            continue
        embedding = k.endswith(("model.embed_tokens.weight", "wte.weight", "word_embeddings.weight")) and \
            cfg["model_type"] not in GEMMAS
        scale = 1.0 if embedding else 0.0625 if a.ndim == 1 else a.shape[-1] ** -0.5
        m = np.abs(a.astype(np.float64))
        band &= m.min() >= scale / 8 and m.max() < scale * 8 and 0.3 < (a > 0).mean() < 0.7
    check(band, f"{name}: magnitudes within [scale/8, 8 scale), both signs")
    model = Model(out)
    res = rf.forward(model, ([] if model.bos is None else [model.bos]) + list(range(3, 40)))  # OLMo's: no BOS
    check(np.isfinite(res["logits"]).all() and all(np.isfinite(a).all() for a in res["attn"]),
          f"{name}: reference forward runs, finite")


def check_tokenizer_kinds(tmp):
    small = ["--model-type", "llama", "--hidden", "16", "--intermediate", "32", "--layers", "1", "--heads", "2"]
    tok_json = os.path.join(tmp, "tokenizer.json")
    with open(tok_json, "w") as f:
        json.dump({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}},
                   "added_tokens": [{"id": 5, "content": "<s>"}]}, f)
    broken = os.path.join(tmp, "broken.json")
    with open(broken, "w") as f:
        f.write('{"model": 3')
    for name, tokenizer in (("json", tok_json), ("broken", broken)):
        out = os.path.join(tmp, "tok-" + name)
        proc = subprocess.run([sys.executable, "-B", os.path.join(TOOLS, "make_random_checkpoint.py"),
                               "--tokenizer", tokenizer, "--out", out] + small,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if name == "json":
            vocab = None
            if proc.returncode == 0:
                with open(os.path.join(out, "config.json")) as f:
                    vocab = json.load(f).get("vocab_size")
            check(proc.returncode == 0 and vocab == 6 and os.path.exists(os.path.join(out, "tokenizer.json")),
                  f"tokenizer.json: exit {proc.returncode}, vocab_size {vocab} (want 6), copied as tokenizer.json")
        else:
            lines = proc.stderr.strip().splitlines()
            check(proc.returncode == 2 and len(lines) == 1 and "broken.json" in lines[0] and "Traceback" not in
                  proc.stderr, f"unreadable tokenizer: exit {proc.returncode}, one line naming it: {proc.stderr!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixtures", required=True)
    args = ap.parse_args()
    tokenizer = os.path.join(args.fixtures, "llama", "tokenizer.model")
    for preset, params in PRESET_PARAMS.items():
        shape = dict(PRESETS[preset])
        n = sum(math.prod(s) for _, s in tensor_shapes(hf_config(dtype="BF16", **shape)))
        check(n == params, f"preset {preset}: {n:,} parameters ({n * 2 / 1e9:.2f} GB bf16)")
    for preset, rounded in PRESET_PARAMS_ROUNDED.items():
        n = sum(math.prod(s) for _, s in tensor_shapes(hf_config(dtype="BF16", **PRESETS[preset])))
        check(float(f"{n:.3g}") == rounded, f"preset {preset}: {n:,} parameters, {rounded / 1e9:g}B as published")
    with tempfile.TemporaryDirectory(prefix="attngeom-randckpt-") as tmp:
        vocab = ["--vocab", str(spm_vocab_size(tokenizer))]
        runs = [(name, flags, None) for name, flags in CASES] + [
            (name, ["--preset", preset] + vocab + flags, PRESET_PREFIX_STRIPPED.get(preset))
            for name, preset, flags in PRESET_CASES]
        for name, flags, stripped in runs:
            out = os.path.join(tmp, name)
            cmd = [sys.executable, "-B", os.path.join(TOOLS, "make_random_checkpoint.py"),
                   "--tokenizer", tokenizer, "--out", out, "--seed", "5"] + flags
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            check(proc.returncode == 0, f"{name}: generator exit {proc.returncode} {proc.stdout.strip()[-300:]}")
            if proc.returncode == 0:
                validate(name, out, tokenizer, stripped)
        check_tokenizer_kinds(tmp)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
