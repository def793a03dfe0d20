#!/usr/bin/python3
"""Attention and values from a plain PyTorch forward, measured with attngeom.selection.

  selection_from_torch.py --model MODEL_DIR [--bin ATTNGEOM]

Re-implements the first layer of a LLaMA checkpoint (safetensors, float32) in PyTorch: RMSNorm,
q/k/v projections, RoPE, causal softmax. Passes the last query row of every head and the value
states (CPU torch tensors, read through DLPack without a copy) to attngeom.selection. With
--bin, writes the same arrays as a capture dump and checks that `attngeom metrics` gives the
same numbers. Exits 77 (skipped) when torch is not installed (apt-get install python3-torch).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:
    print("SKIP: this example needs PyTorch (Debian: apt-get install python3-torch)")
    sys.exit(77)
import numpy as np

import attngeom


def load_tensors(path):
    """{name: torch tensor} of a float32 safetensors file (a tiny reader: no extra package)."""
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        assert info["dtype"] == "F32", f"{name}: this example reads float32 checkpoints only"
        a = np.frombuffer(raw[8 + n + begin:8 + n + end], dtype="<f4").reshape(info["shape"])
        out[name] = torch.from_numpy(a.copy())
    return out


def first_layer_attention(model_dir, tokens):
    """attn [H, T, T] and values [H_kv, T, d] of layer 0, as the model computes them."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    w = load_tensors(os.path.join(model_dir, "model.safetensors"))
    H, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg["hidden_size"] // H
    T = len(tokens)
    x = w["model.embed_tokens.weight"][torch.tensor(tokens)]                       # [T, hidden]
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg["rms_norm_eps"]) * w["model.layers.0.input_layernorm.weight"]
    q = (x @ w["model.layers.0.self_attn.q_proj.weight"].T).view(T, H, d).transpose(0, 1)     # [H, T, d]
    k = (x @ w["model.layers.0.self_attn.k_proj.weight"].T).view(T, Hkv, d).transpose(0, 1)   # [H_kv, T, d]
    v = (x @ w["model.layers.0.self_attn.v_proj.weight"].T).view(T, Hkv, d).transpose(0, 1)   # [H_kv, T, d]
    inv = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]                    # [T, d/2]
    cos, sin = torch.cos(angles).float(), torch.sin(angles).float()

    def rope(t):  # the rotate-half convention of Hugging Face's LLaMA
        a, b = t[..., : d // 2], t[..., d // 2:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)

    q, k = rope(q), rope(k)
    k = k.repeat_interleave(H // Hkv, dim=0)                                               # [H, T, d]
    scores = (q @ k.transpose(1, 2)) / d ** 0.5                                            # [H, T, T]
    scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    return torch.softmax(scores, dim=-1), v.contiguous()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="a LLaMA checkpoint folder with float32 weights")
    p.add_argument("--bin", help="the attngeom CLI: check selection against `attngeom metrics`")
    args = p.parse_args()
    tokens = [1] + [(7 * i + 3) % 500 + 3 for i in range(47)]
    with torch.no_grad():
        attn, values = first_layer_attention(args.model, tokens)
    last = attn[:, -1, :]                                                                   # [H, T]
    geo = attngeom.selection(last, values)
    print("N       ", geo["n"])
    print("F (head 0)", np.round(geo["f"][0], 3))
    print("margin>0 ", (geo["margin"] > 0).mean(axis=1))
    if not args.bin:
        return 0

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python_api"))
    import api_lib  # the test suite's record reader
    with tempfile.TemporaryDirectory() as scratch:
        dump = os.path.join(scratch, "torch.safetensors")
        attngeom.write_dump(dump, torch.tensor(tokens), [len(tokens) - 1], [(last[:, None, :], values)])
        record, grid = api_lib.metrics_record(args.bin, dump, os.path.join(scratch, "run"))
    geo3 = {k: (x if k == "n" else x[:, None, :]) for k, x in geo.items()}
    api_lib.check_selection_equals_metrics(geo3, record, grid, 0, "torch example")
    print("ok: attngeom.selection equals `attngeom metrics` on the same arrays")
    return 0


if __name__ == "__main__":
    sys.exit(main())
