#!/usr/bin/env python3
"""PyTorch eager reference forward, written like Hugging Face's eager attention path (transformers
4.57; LLaMA incl. llama3 / linear RoPE, Mistral, Gemma, Qwen2 with its biases) with
output_attentions=True (every layer's full [heads, T, T] probabilities are materialised
and returned), on the same safetensors checkpoint attngeom reads. For benchmarking only.

  torch_eager.py --model DIR --seq-len T [--threads 2] [--dtype bf16|fp32]

Before the timed forward, a short warm-up forward pages in every weight and creates the
matmul primitives, as attngeom bench's warm-up does. Prints one JSON line: seconds for the
forward, the part of it spent in the linear layers (in bf16, the same oneDNN matmul on AMX
that attngeom uses) with their FLOPs and TFLOP/s, and the peak RSS.
"""
import argparse
import json
import math
import os
import resource
import time
import warnings

import numpy as np
import torch

# Enough tokens to touch every weight; far fewer than a timed sequence, so the warm-up is cheap.
WARMUP_TOKENS = 16
DTYPES = {"BF16": (np.int16, torch.bfloat16), "F16": (np.float16, torch.float16), "F32": (np.float32, torch.float32)}


# Weights are read-only memory maps; torch warns about that once, harmlessly.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


def load_safetensors(model_dir):
    """{name: tensor} memory-mapped from every shard (no copy for bf16/f16/f32)."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    tensors = {}
    for name in files:
        raw = np.memmap(os.path.join(model_dir, name), dtype=np.uint8, mode="r")
        n = int.from_bytes(raw[:8].tobytes(), "little")
        header = json.loads(raw[8:8 + n].tobytes())
        for key, spec in header.items():
            if key == "__metadata__":
                continue
            np_dtype, t_dtype = DTYPES[spec["dtype"]]
            b, e = spec["data_offsets"]
            arr = raw[8 + n + b:8 + n + e].view(np_dtype).reshape(spec["shape"])
            tensors[key] = torch.from_numpy(arr).view(t_dtype)
    return tensors


def rms_norm(x, w, eps, offset):
    # HF: variance in fp32, then scale, then cast back.
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * (offset + w.float())).to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LinearLayers:
    """x @ w^T for every projection, timed: seconds and FLOPs summed over calls."""

    def __init__(self):
        self.seconds = 0.0
        self.flops = 0.0

    def __call__(self, x, weight, dtype):
        start = time.perf_counter()
        y = x @ weight.to(dtype).T
        self.seconds += time.perf_counter() - start
        self.flops += 2.0 * x.shape[0] * weight.shape[0] * weight.shape[1]
        return y


def rope_inv_freq(cfg, d):
    """HF modeling_rope_utils (transformers 4.57): default, linear and llama3, in fp32."""
    inv_freq = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    scaling = cfg.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "linear":
        return inv_freq / scaling["factor"]
    if kind == "llama3":  # _compute_llama3_parameters
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old_len = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
        smooth = (old_len / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old_len / high) * ~(wavelen > old_len / low)
        return torch.where(medium, smoothed, scaled)
    assert kind == "default", f"rope type {kind} not implemented here"
    return inv_freq


def forward(cfg, w, tokens, dtype, linear):
    mt = cfg["model_type"]
    assert mt in ("llama", "mistral", "gemma", "qwen2"), f"model_type {mt} not implemented here"
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads", heads)
    d = cfg.get("head_dim") or hidden // heads
    eps = cfg.get("rms_norm_eps", 1e-6)
    offset = 1.0 if mt == "gemma" else 0.0
    t = tokens.shape[0]
    x = w["model.embed_tokens.weight"][tokens].to(dtype)
    if mt == "gemma":
        x = x * torch.tensor(hidden ** 0.5, dtype=dtype)
    inv_freq = rope_inv_freq(cfg, d)
    freqs = torch.outer(torch.arange(t).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
    mask = torch.full((t, t), float("-inf")).triu(1)
    window = cfg.get("sliding_window")
    if window and (mt == "mistral" or (mt == "qwen2" and cfg.get("use_sliding_window"))):
        mask = mask + torch.full((t, t), float("-inf")).tril(-window)
    mask = mask.to(dtype)
    # nn.Linear's bias where the checkpoint has one (Qwen2's q/k/v; attention_bias)
    project = lambda x, name: linear(x, w[name + ".weight"], dtype) + (
        w[name + ".bias"].to(dtype) if name + ".bias" in w else 0)
    act = torch.nn.functional.silu if mt != "gemma" else (lambda g: torch.nn.functional.gelu(g, approximate="tanh"))
    attentions = []
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps, offset)
        q = project(h, p + "self_attn.q_proj").view(t, heads, d).transpose(0, 1)
        k = project(h, p + "self_attn.k_proj").view(t, kv_heads, d).transpose(0, 1)
        v = project(h, p + "self_attn.v_proj").view(t, kv_heads, d).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(heads // kv_heads, dim=0)  # HF repeat_kv
        v = v.repeat_interleave(heads // kv_heads, dim=0)
        scores = q @ k.transpose(1, 2) / math.sqrt(d) + mask
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(dtype)
        attentions.append(probs)  # output_attentions=True keeps every layer's [H, T, T]
        o = (probs @ v).transpose(0, 1).reshape(t, heads * d)
        x = x + project(o, p + "self_attn.o_proj")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps, offset)
        g = linear(h, w[p + "mlp.gate_proj.weight"], dtype)
        u = linear(h, w[p + "mlp.up_proj.weight"], dtype)
        x = x + linear(act(g) * u, w[p + "mlp.down_proj.weight"], dtype)
    return x, attentions


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--seq-len", type=int, required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    weights = load_safetensors(args.model)
    tokens = torch.randint(0, cfg["vocab_size"], (args.seq_len,), generator=torch.Generator().manual_seed(7))
    linear = LinearLayers()
    with torch.inference_mode():
        forward(cfg, weights, tokens[:WARMUP_TOKENS], dtype, LinearLayers())
        start = time.perf_counter()
        forward(cfg, weights, tokens, dtype, linear)
        seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "linear_seconds": linear.seconds, "linear_flops": linear.flops,
                      "linear_tflops": linear.flops / linear.seconds * 1e-12, "peak_rss_bytes": rss,
                      "dtype": args.dtype, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
