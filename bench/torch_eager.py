#!/usr/bin/env python3
"""PyTorch eager reference forward, written like Hugging Face's eager attention path (transformers
4.57) with output_attentions=True (every layer's full [heads, T, T] probabilities are
materialised and returned), on the same safetensors checkpoint attngeom reads. Families: LLaMA
(incl. llama3 / linear RoPE), Mistral, Gemma, Gemma-2 (pre- and post-norms, score and logit
soft-caps, sliding windows on alternate layers), Gemma-3 (and its multimodal wrapper's text
model: per-head q/k norms, local RoPE on its sliding layers), OLMo-2 (post-norms, q/k norms over
the whole projection), Qwen2 with its biases, Qwen3 (per-head q/k norms), the mixtures of experts Mixtral, OLMoE and Qwen3-MoE (top-k of the experts, renormalised
where the family does, as their sparse MoE blocks loop over them; OLMoE's q/k norms over the
whole projection; Qwen3-MoE's dense layers), Phi-3 (fused qkv_proj and
gate_up_proj, longrope, partial rotary), GPT-NeoX (Pythia: fused per-head query_key_value,
partial rotary, parallel or sequential residual), Phi (Phi-2: one LayerNorm feeding attention
and MLP in parallel), GPT-J (Phi's parallel layer without attention biases, RoPE in interleaved
pairs on rotary_dim channels, lm_head's bias), SmolLM3 (LLaMA's layer, NoPE layers, windows on
them with use_sliding_window), GPT-2 (learned positions, Conv1D) and GPT-Neo (GPT-2's layer with
nn.Linear weights, unscaled scores, windows on its local layers). For
benchmarking; its fp32 logits are checked against the float64 reference
(tests/python/test_torch_eager.py).

  torch_eager.py --model DIR --seq-len T [--threads 2] [--dtype bf16|fp32]

Before the timed forward, a short warm-up forward pages in every weight and creates the
matmul primitives, as attngeom bench's warm-up does. The timed forward stops after the last
decoder layer, as attngeom bench's stages do (the final norm and lm_head, `logits()`, are not
timed). Prints one JSON line: seconds for the forward, the part of it spent in the linear
layers (in bf16, the same oneDNN matmul on AMX that attngeom uses) with their FLOPs and
TFLOP/s, and the peak RSS.
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

F = torch.nn.functional
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


class LinearLayers:
    """x @ w^T for every projection (x @ w for GPT-2's Conv1D, stored [in, out]), timed:
    seconds and FLOPs summed over calls."""

    def __init__(self):
        self.seconds = 0.0
        self.flops = 0.0

    def __call__(self, x, weight, dtype, conv1d=False):
        start = time.perf_counter()
        w = weight.to(dtype)
        y = x @ (w if conv1d else w.T)
        self.seconds += time.perf_counter() - start
        self.flops += 2.0 * x.shape[0] * weight.shape[0] * weight.shape[1]
        return y


# --- norms and activations ---

def rms_norm(m, x, name):
    """LlamaRMSNorm (also Mistral's, Mixtral's, Qwen2's, Phi-3's): variance in fp32, normalised x
    cast back, then times the weight; GemmaRMSNorm: times (1 + w) in fp32, then cast back."""
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + m.eps)
    w = m.w[name + ".weight"]
    if m.fam["norm_offset"]:
        return (xf * (1.0 + w.float())).to(x.dtype)
    return w.to(x.dtype) * xf.to(x.dtype)


def layer_norm(m, x, name):
    """nn.LayerNorm with its bias (GPT-NeoX, Phi, GPT-2, GPT-J, GPT-Neo)."""
    return F.layer_norm(x, (x.shape[-1],), m.w[name + ".weight"].to(x.dtype), m.w[name + ".bias"].to(x.dtype), m.eps)


def gelu_new(x):
    """transformers' NewGELUActivation (gelu_new: GPT-2, Phi), written out as it is there."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


ACTIVATIONS = {"silu": F.silu, "gelu": F.gelu, "gelu_new": gelu_new,
               "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh")}


# --- RoPE ---

def rope_inv_freq(m, t, theta, scaling):
    """HF modeling_rope_utils (transformers 4.57): default, linear, llama3 and longrope inverse
    frequencies over the rotary dims, in fp32, and the factor cos and sin are scaled by."""
    d = m.rotary_dim
    exponents = torch.arange(0, d, 2, dtype=torch.int64).float() / d
    inv_freq = 1.0 / (theta ** exponents)
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "default":
        return inv_freq, 1.0
    if kind == "linear":
        return inv_freq / scaling["factor"], 1.0
    if kind == "llama3":  # _compute_llama3_parameters
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old_len = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
        smooth = (old_len / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old_len / high) * ~(wavelen > old_len / low)
        return torch.where(medium, smoothed, scaled), 1.0
    assert kind == "longrope", f"rope type {kind} not implemented here"
    # _compute_longrope_parameters with Phi-3's original_max_position_embeddings; the long factors
    # once the sequence exceeds it (_longrope_frequency_update), cos and sin times the attention factor.
    original = scaling.get("original_max_position_embeddings") or m.cfg.get("original_max_position_embeddings")
    original = original or m.cfg["max_position_embeddings"]
    ext = torch.tensor(scaling["long_factor" if t > original else "short_factor"], dtype=torch.float32)
    factor = m.cfg["max_position_embeddings"] / original
    attention_factor = scaling.get("attention_factor") or (
        1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original)))
    return 1.0 / (ext * theta ** exponents), attention_factor


def rope_tables(m, t, theta, scaling):
    """cos, sin [T, rotary dims] in fp32 as HF's rotary embedding computes them, then cast;
    GPT-J's create_sinusoidal_positions: each angle twice in a row (repeat_interleave), kept in
    fp32 (its table is no parameter or buffer, so a half-precision model keeps it fp32)."""
    inv_freq, scale = rope_inv_freq(m, t, theta, scaling)
    freqs = torch.outer(torch.arange(t).float(), inv_freq)
    if m.fam["interleaved"]:
        emb = freqs.repeat_interleave(2, dim=-1)
        return emb.cos(), emb.sin()
    emb = torch.cat((freqs, freqs), dim=-1)
    return (emb.cos() * scale).to(m.dtype), (emb.sin() * scale).to(m.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_every_two(x):
    """GPT-J: out[2i] = -x[2i + 1], out[2i + 1] = x[2i]."""
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


def apply_rope(x, cos, sin, interleaved=False):
    """x [heads, T, D]; partial rotary (GPT-NeoX, Phi, Phi-3, GPT-J) rotates the first cos.shape[-1]
    dims of each head and passes the rest through; GPT-J turns the pairs (2i, 2i + 1)."""
    r = cos.shape[-1]
    rotate = rotate_every_two if interleaved else rotate_half
    if r == x.shape[-1]:
        return x * cos + rotate(x) * sin
    rot = x[..., :r]
    return torch.cat((rot * cos + rotate(rot) * sin, x[..., r:].to(cos.dtype)), dim=-1)


# --- attention: q, k, v [heads, T, D] per family layout ---

def split_heads(m, a, n):
    return a.view(a.shape[0], n, m.head_dim).transpose(0, 1)


def qkv_separate(m, p, h):
    """q_proj, k_proj, v_proj (GPT-J's under attn., GPT-Neo's under attn.attention.), with the
    biases the checkpoint has (Qwen2's; Phi's; attention_bias)."""
    names = [m.fam["attn_prefix"] + name for name in ("q_proj", "k_proj", "v_proj")]
    return [split_heads(m, m.project(h, p + name), n) for name, n in zip(names, (m.heads, m.kv_heads, m.kv_heads))]


def qkv_concat(m, p, h):
    """One projection of rows [q | k | v]: Phi-3's qkv_proj, GPT-2's c_attn (Conv1D)."""
    qkv = m.project(h, p + m.fam["qkv_name"])
    q_end, k_end = m.heads * m.head_dim, (m.heads + m.kv_heads) * m.head_dim
    return (split_heads(m, qkv[:, :q_end], m.heads), split_heads(m, qkv[:, q_end:k_end], m.kv_heads),
            split_heads(m, qkv[:, k_end:], m.kv_heads))


def qkv_per_head(m, p, h):
    """GPT-NeoX's query_key_value: qkv.view(T, H, 3 D), each head's [q | k | v], chunk(3)."""
    qkv = m.project(h, p + "attention.query_key_value")
    return qkv.view(h.shape[0], m.heads, 3 * m.head_dim).transpose(0, 1).chunk(3, dim=-1)


def qk_norm(m, p, x, name):
    """Qwen3's RMSNorm of each head over head_dim, or OLMoE's over the whole projection (as
    q_norm(q_proj(h)) before the heads are split); x [heads, T, D]."""
    if m.fam["qk_norm"] == "head":
        return rms_norm(m, x, p + name)
    heads, t, d = x.shape
    whole = x.transpose(0, 1).reshape(t, heads * d)
    return rms_norm(m, whole, p + name).view(t, heads, d).transpose(0, 1)


def attention(m, p, h, cos, sin, mask, attentions):
    """Self-attention of one layer, its probabilities appended to `attentions`; -> [T, hidden]."""
    t = h.shape[0]
    q, k, v = m.fam["qkv"](m, p, h)
    if m.fam["qk_norm"]:
        q, k = qk_norm(m, p, q, "self_attn.q_norm"), qk_norm(m, p, k, "self_attn.k_norm")
    if cos is not None:
        q, k = apply_rope(q, cos, sin, m.fam["interleaved"]), apply_rope(k, cos, sin, m.fam["interleaved"])
    k = k.repeat_interleave(m.heads // m.kv_heads, dim=0)  # HF repeat_kv
    v = v.repeat_interleave(m.heads // m.kv_heads, dim=0)
    if m.fam["unscaled"]:
        # GPT-Neo's _attn: q and k in fp32, no 1 / sqrt(D) at all, softmax in fp32, cast back
        scores = q.float() @ k.float().transpose(1, 2)
        probs = torch.softmax(scores + mask.float(), dim=-1).to(m.dtype)
    elif m.fam["interleaved"]:
        # GPT-J's _attn: q and k in fp32, scores / sqrt(D) (an fp32 scalar), softmax in fp32, cast back
        scores = q.float() @ k.float().transpose(1, 2) / torch.sqrt(torch.tensor(m.head_dim, dtype=torch.float32))
        probs = torch.softmax(scores + mask.float(), dim=-1).to(m.dtype)
    elif m.fam["gpt2_attention"]:
        # GPT-2's eager attention: scores / sqrt(D), softmax in the working dtype
        scores = q @ k.transpose(1, 2) / torch.full([], m.head_dim ** 0.5, dtype=m.dtype) + mask
        probs = torch.softmax(scores, dim=-1)
    else:
        scores = q @ k.transpose(1, 2) * m.score_scale
        if m.attn_cap:  # Gemma-2's soft-cap: cap * tanh(scores / cap), before the mask
            scores = torch.tanh(scores / m.attn_cap) * m.attn_cap
        probs = torch.softmax(scores + mask, dim=-1, dtype=torch.float32).to(m.dtype)
    attentions.append(probs)  # output_attentions=True keeps every layer's [H, T, T]
    o = (probs @ v).transpose(0, 1).reshape(t, m.heads * m.head_dim)
    return m.project(o, p + m.fam["o_name"])


# --- MLPs ---

def mlp_gated(m, p, h):
    """down(act(gate(h)) * up(h)): LLaMA, Mistral, Gemma, Qwen2."""
    return m.project(m.act(m.project(h, p + "mlp.gate_proj")) * m.project(h, p + "mlp.up_proj"), p + "mlp.down_proj")


def mlp_gate_up(m, p, h):
    """Phi-3's fused gate_up_proj [gate | up], chunk(2)."""
    gate, up = m.project(h, p + "mlp.gate_up_proj").chunk(2, dim=-1)
    return m.project(up * m.act(gate), p + "mlp.down_proj")


def mlp_plain(m, p, h):
    """down(act(up(h))) with biases: GPT-NeoX dense_h_to_4h / 4h_to_h, Phi fc1 / fc2, GPT-2 and GPT-Neo
    c_fc / c_proj."""
    up, down = m.fam["mlp_names"]
    return m.project(m.act(m.project(h, p + up)), p + down)


def mlp_sparse_moe(m, p, h):
    """MixtralSparseMoeBlock, OlmoeSparseMoeBlock, Qwen3MoeSparseMoeBlock (eager): router logits,
    softmax in fp32, top-k, the k weights renormalised (Mixtral; the others with norm_topk_prob)
    and cast back, then a loop over the experts hit, each adding its tokens' gated MLP
    down(act(gate h) * up h) times their weight with index_add_. Qwen3-MoE's layers outside
    decoder_sparse_step or in mlp_only_layers have a dense MLP instead."""
    if p not in m.sparse_layers:
        return mlp_gated(m, p, h)
    block, router, (w_gate, w_up, w_down) = m.fam["moe"]
    routing = torch.softmax(m.project(h, p + block + router), dim=1, dtype=torch.float32)
    routing, chosen = torch.topk(routing, m.top_k, dim=-1)
    if m.norm_topk:
        routing = routing / routing.sum(dim=-1, keepdim=True)
    routing = routing.to(m.dtype)
    out = torch.zeros_like(h)
    expert_mask = F.one_hot(chosen, num_classes=m.experts).permute(2, 1, 0)  # [experts, top_k, T]
    for e in torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero().flatten().tolist():
        slot, tokens = torch.where(expert_mask[e])
        x = h[tokens]
        expert = f"{p}{block}experts.{e}."
        y = m.project(m.act(m.project(x, expert + w_gate)) * m.project(x, expert + w_up), expert + w_down)
        out.index_add_(0, tokens, (y * routing[tokens, slot, None]).to(m.dtype))
    return out


# --- the families ---

# Per family (transformers 4.57 modeling_*.py and their config classes' defaults): tensor names,
# the pieces above, the residual ("sequential": x += p1(attn(n1(x))); x += p2(mlp(n2(x))), where
# the pre-norms n and the post-norms p a family lacks are identities; "parallel":
# x += attn(n1(x)) + mlp(n2(x)), with n2 = n1 where both name the same norm), and the defaults
# of config keys a config.json may leave out. Gemma-2 and -3 scale scores by
# query_pre_attn_scalar^-1/2 and may soft-cap scores and logits ("caps": their defaults).
LLAMA = dict(layers="model.layers.", embed="model.embed_tokens.weight", positions=None, head="lm_head.weight",
             head_bias=False, final_norm="model.norm", norms=("input_layernorm", "post_attention_layernorm"),
             post_norms=(None, None), norm=rms_norm, norm_offset=False, scale_embeddings=False, qkv=qkv_separate,
             attn_prefix="self_attn.", o_name="self_attn.o_proj", gpt2_attention=False, mlp=mlp_gated, conv1d=False,
             parallel=False, eps=("rms_norm_eps", 1e-6), act=("hidden_act", "silu"), theta=10000.0, rotary=1.0,
             interleaved=False, tied=False, window=None, qk_norm=None, caps=None, local_rope=False, nope=False,
             unscaled=False)
# Mixtures of experts: (block prefix, router, the experts' gate, up and down) and the config
# class's defaults (experts, experts per token, norm_topk_prob).
MOE_NAMES = ("mlp.", "gate", ("gate_proj", "up_proj", "down_proj"))
QWEN3 = dict(LLAMA, window=("qwen", 4096), qk_norm="head")
GEMMA = dict(LLAMA, norm_offset=True, scale_embeddings=True, tied=True, act=("hidden_activation", "gelu_pytorch_tanh"))
GEMMA_SANDWICH = dict(GEMMA, norms=("input_layernorm", "pre_feedforward_layernorm"),
                      post_norms=("post_attention_layernorm", "post_feedforward_layernorm"))
LAYER_NORMED = dict(LLAMA, norm=layer_norm, mlp=mlp_plain, eps=("layer_norm_eps", 1e-5), act=("hidden_act", "gelu_new"))
FAMILIES = {
    "llama": LLAMA,
    "mistral": dict(LLAMA, window=("every", 4096)),
    "qwen2": dict(LLAMA, window=("qwen", 4096)),
    "gemma": GEMMA,
    "gemma2": dict(GEMMA_SANDWICH, window=("gemma", 2), caps=(50.0, 30.0)),
    "gemma3_text": dict(GEMMA_SANDWICH, window=("gemma", 6), qk_norm="head", theta=1000000.0, caps=(None, None),
                        local_rope=True),
    "olmo2": dict(LLAMA, norms=(None, None), post_norms=("post_attention_layernorm", "post_feedforward_layernorm"),
                  qk_norm="projection", eps=("rms_norm_eps", 1e-5)),
    "qwen3": QWEN3,
    "mixtral": dict(LLAMA, mlp=mlp_sparse_moe, eps=("rms_norm_eps", 1e-5), theta=1000000.0, window=("every", None),
                    moe=("block_sparse_moe.", "gate", ("w1", "w3", "w2")), experts=(8, 2, True)),
    "olmoe": dict(LLAMA, mlp=mlp_sparse_moe, eps=("rms_norm_eps", 1e-5), qk_norm="projection", moe=MOE_NAMES,
                  experts=(64, 8, False)),
    "qwen3_moe": dict(QWEN3, mlp=mlp_sparse_moe, moe=MOE_NAMES, experts=(128, 8, False)),
    "phi3": dict(LLAMA, qkv=qkv_concat, qkv_name="self_attn.qkv_proj", mlp=mlp_gate_up, eps=("rms_norm_eps", 1e-5),
                 window=("every", None)),
    "gpt_neox": dict(LAYER_NORMED, layers="gpt_neox.layers.", embed="gpt_neox.embed_in.weight", head="embed_out.weight",
                     final_norm="gpt_neox.final_layer_norm", qkv=qkv_per_head, o_name="attention.dense",
                     mlp_names=("mlp.dense_h_to_4h", "mlp.dense_4h_to_h"), act=("hidden_act", "gelu"), rotary=0.25,
                     parallel="use_parallel_residual"),
    "phi": dict(LAYER_NORMED, head_bias=True, final_norm="model.final_layernorm",
                norms=("input_layernorm", "input_layernorm"), o_name="self_attn.dense",
                mlp_names=("mlp.fc1", "mlp.fc2"), rotary=0.5, parallel=True),
    "gpt2": dict(LAYER_NORMED, layers="transformer.h.", embed="transformer.wte.weight", positions="transformer.wpe.weight",
                 final_norm="transformer.ln_f", norms=("ln_1", "ln_2"), qkv=qkv_concat, qkv_name="attn.c_attn",
                 o_name="attn.c_proj", gpt2_attention=True, mlp_names=("mlp.c_fc", "mlp.c_proj"), conv1d=True,
                 eps=("layer_norm_epsilon", 1e-5), act=("activation_function", "gelu_new"), rotary=0.0, tied=True),
    # GPT-J: rotary_dim counts channels (not a fraction of the head), at the fixed base 10000
    "gptj": dict(LAYER_NORMED, layers="transformer.h.", embed="transformer.wte.weight", head_bias=True,
                 final_norm="transformer.ln_f", norms=("ln_1", "ln_1"), attn_prefix="attn.", o_name="attn.out_proj",
                 mlp_names=("mlp.fc_in", "mlp.fc_out"), eps=("layer_norm_epsilon", 1e-5),
                 act=("activation_function", "gelu_new"), interleaved=True, parallel=True),
    "smollm3": dict(LLAMA, window=("smollm3", None), theta=2000000.0, tied=True, nope=True),
    # GPT-Neo: GPT-2's layer with nn.Linear weights, q/k/v without biases, window_size on "local" layers
    "gpt_neo": dict(LAYER_NORMED, layers="transformer.h.", embed="transformer.wte.weight",
                    positions="transformer.wpe.weight", final_norm="transformer.ln_f", norms=("ln_1", "ln_2"),
                    attn_prefix="attn.attention.", o_name="attn.attention.out_proj",
                    mlp_names=("mlp.c_fc", "mlp.c_proj"), eps=("layer_norm_epsilon", 1e-5),
                    act=("activation_function", "gelu_new"), rotary=0.0, tied=True, window=("neo", 256), unscaled=True),
}
# GPT2Config's and GPTNeoConfig's attribute_maps: the standard key, and the one their config.json writes.
CONFIG_ALIASES = [("hidden_size", "n_embd"), ("num_hidden_layers", "n_layer"), ("num_attention_heads", "n_head"),
                  ("max_position_embeddings", "n_positions"), ("num_hidden_layers", "num_layers"),
                  ("num_attention_heads", "num_heads")]


def first(*values):
    return next((v for v in values if v is not None), None)


class Model:
    """config.json read as its family's config class reads it, the checkpoint's tensors, the
    compute dtype and the (timed) linear layers."""

    def __init__(self, cfg, weights, dtype, linear):
        if cfg["model_type"] == "gemma3":  # Gemma3ForConditionalGeneration: its text model alone
            cfg = dict(cfg["text_config"], tie_word_embeddings=cfg.get("tie_word_embeddings", True))
            weights = {k[len("language_model."):]: v for k, v in weights.items() if k.startswith("language_model.")}
        mt = cfg["model_type"]
        assert mt in FAMILIES, f"model_type {mt} not implemented here (only {', '.join(FAMILIES)})"
        fam = self.fam = FAMILIES[mt]
        self.cfg = cfg = dict({std: cfg[alias] for std, alias in CONFIG_ALIASES if alias in cfg}, **cfg)
        self.w, self.dtype, self.linear = weights, dtype, linear
        if mt == "gpt2" and fam["embed"] not in weights:  # saved from GPT2Model: no transformer. prefix
            self.w = {k if k == "lm_head.weight" else "transformer." + k: v for k, v in weights.items()}
        self.hidden, self.layers, self.heads = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
        self.kv_heads = cfg.get("num_key_value_heads") or self.heads
        self.head_dim = cfg.get("head_dim") or self.hidden // self.heads
        self.eps = cfg.get(fam["eps"][0], fam["eps"][1])
        self.act = ACTIVATIONS[cfg.get(fam["act"][0]) or fam["act"][1]]
        self.tied = cfg.get("tie_word_embeddings", fam["tied"])
        self.parallel = fam["parallel"] if isinstance(fam["parallel"], bool) else cfg.get(fam["parallel"], True)
        # RoPE: transformers 4.x keys (rope_theta / GPT-NeoX's rotary_emb_base, rope_scaling,
        # partial_rotary_factor / rotary_pct) or 5.x rope_parameters.
        params = cfg.get("rope_parameters") or {}
        self.rope_theta = first(params.get("rope_theta"), cfg.get("rope_theta"), cfg.get("rotary_emb_base"), fam["theta"])
        self.rope_scaling = params or cfg.get("rope_scaling") or {}
        fraction = first(params.get("partial_rotary_factor"), cfg.get("partial_rotary_factor"), cfg.get("rotary_pct"),
                         fam["rotary"])
        self.rotary_dim = cfg.get("rotary_dim", 64) if fam["interleaved"] else int(self.head_dim * fraction)
        if fam["interleaved"]:  # GPTJConfig has no RoPE base or scaling
            self.rope_theta, self.rope_scaling = fam["theta"], {}
        if fam["caps"]:  # Gemma-2 and -3
            self.score_scale = cfg.get("query_pre_attn_scalar", 256) ** -0.5
            self.attn_cap = cfg.get("attn_logit_softcapping", fam["caps"][0])
            self.final_cap = cfg.get("final_logit_softcapping", fam["caps"][1])
        else:
            self.score_scale, self.attn_cap, self.final_cap = self.head_dim ** -0.5, None, None
        experts, top_k, norm_topk = fam.get("experts", (0, 0, False))
        self.experts = first(cfg.get("num_local_experts"), cfg.get("num_experts"), experts)
        self.top_k, self.norm_topk = cfg.get("num_experts_per_tok", top_k), cfg.get("norm_topk_prob", norm_topk)
        step, dense = cfg.get("decoder_sparse_step", 1), set(cfg.get("mlp_only_layers") or [])
        self.sparse_layers = {f"{fam['layers']}{l}." for l in range(self.layers) if l not in dense and (l + 1) % step == 0}
        # SmolLM3Config.no_rope_layers (0: NoPE), by default every no_rope_layer_interval-th layer NoPE
        interval = cfg.get("no_rope_layer_interval", 4)
        self.use_rope = (cfg.get("no_rope_layers") or [int((l + 1) % interval != 0) for l in range(self.layers)]
                         if fam["nope"] else [1] * self.layers)

    def project(self, x, name):
        """nn.Linear (or Conv1D) `name`, with its bias where the checkpoint has one."""
        y = self.linear(x, self.w[name + ".weight"], self.dtype, self.fam["conv1d"])
        return y + self.w[name + ".bias"].to(self.dtype) if name + ".bias" in self.w else y

    def norm(self, x, name):
        return self.fam["norm"](self, x, name)

    def window(self, layer):
        """Layer `layer`'s sliding window (None: full causal attention)."""
        if self.fam["window"] is None:
            return None
        rule, default = self.fam["window"]
        types = self.cfg.get("layer_types")
        if rule == "gemma":  # layer_types, else Gemma-2's every other layer, Gemma-3's 5 of every 6
            pattern = self.cfg.get("sliding_window_pattern", default) if default == 6 else default
            if not (types[layer] == "sliding_attention" if types else (layer + 1) % pattern != 0):
                return None
            return self.cfg.get("sliding_window", 4096)
        if rule == "qwen":  # Qwen2Config: only with use_sliding_window, on layer_types' sliding layers
            if not self.cfg.get("use_sliding_window"):
                return None
            sliding = types[layer] == "sliding_attention" if types else layer >= self.cfg.get("max_window_layers", 28)
            if not sliding:
                return None
        if rule == "neo":  # GPTNeoConfig: attention_layers (else attention_types expanded), "local" ones windowed
            kinds = self.cfg.get("attention_layers") or [
                kind for group, n in self.cfg.get("attention_types", [[["global", "local"], 12]]) for _ in range(n)
                for kind in group]
            return self.cfg.get("window_size", default) if kinds[layer] == "local" else None
        if rule == "smollm3":  # SmolLM3Config: only with use_sliding_window, on layer_types' sliding layers
            sliding = types[layer] == "sliding_attention" if types else not self.use_rope[layer]  # else NoPE ones
            if not (self.cfg.get("use_sliding_window") and sliding):
                return None
        return self.cfg.get("sliding_window", default)

    def rope(self, layer):
        """(theta, scaling) of layer `layer`: Gemma-3's sliding layers use rope_local_base_freq, unscaled;
        (None, None) on SmolLM3's NoPE layers."""
        if not self.use_rope[layer]:
            return None, None
        if self.fam["local_rope"] and self.window(layer):
            return self.cfg.get("rope_local_base_freq", 10000.0), {}
        return self.rope_theta, self.rope_scaling


def causal_mask(t, window, dtype):
    mask = torch.full((t, t), float("-inf")).triu(1)
    if window:
        mask = mask + torch.full((t, t), float("-inf")).tril(-window)
    return mask.to(dtype)


def embed(m, tokens):
    x = m.w[m.fam["embed"]][tokens].to(m.dtype)
    if m.fam["positions"]:  # GPT-2's learned positions
        x = x + m.w[m.fam["positions"]][:tokens.shape[0]].to(m.dtype)
    if m.fam["scale_embeddings"]:  # Gemma: hidden * torch.tensor(hidden ** 0.5, dtype)
        x = x * torch.tensor(m.hidden ** 0.5, dtype=m.dtype)
    return x


def forward(cfg, w, tokens, dtype, linear):
    """The decoder on `tokens`: (hidden states after the last layer [T, hidden], before the
    final norm; every layer's attention probabilities [H, T, T])."""
    m = Model(cfg, w, dtype, linear)
    t = tokens.shape[0]
    x = embed(m, tokens)
    masks, tables = {}, {}
    attentions = []
    for layer in range(m.layers):
        p = f"{m.fam['layers']}{layer}."
        window = m.window(layer)
        if window not in masks:
            masks[window] = causal_mask(t, window, dtype)
        theta, scaling = m.rope(layer)
        if m.rotary_dim and theta and theta not in tables:
            tables[theta] = rope_tables(m, t, theta, scaling)
        cos, sin = tables[theta] if m.rotary_dim and theta else (None, None)
        attn_norm, mlp_norm, attn_post, mlp_post = (
            p + name if name else None for name in m.fam["norms"] + m.fam["post_norms"])
        h = m.norm(x, attn_norm) if attn_norm else x
        a = attention(m, p, h, cos, sin, masks[window], attentions)
        if m.parallel:  # GPT-NeoX: mlp + attn + x; Phi: attn + mlp + x, one norm for both
            x = a + m.fam["mlp"](m, p, h if mlp_norm == attn_norm else m.norm(x, mlp_norm)) + x
        else:
            x = x + (m.norm(a, attn_post) if attn_post else a)
            f = m.fam["mlp"](m, p, m.norm(x, mlp_norm) if mlp_norm else x)
            x = x + (m.norm(f, mlp_post) if mlp_post else f)
    return x, attentions


def logits(cfg, w, x, dtype, linear):
    """The final norm and lm_head (tied: the token embeddings; Phi's with a bias) on forward()'s x."""
    m = Model(cfg, w, dtype, linear)
    head = m.fam["embed"] if m.tied else m.fam["head"]
    y = m.linear(m.norm(x, m.fam["final_norm"]), m.w[head], dtype)
    if m.final_cap:  # Gemma-2: cap * tanh(logits / cap)
        y = torch.tanh(y / m.final_cap) * m.final_cap
    return y + m.w["lm_head.bias"].to(dtype) if m.fam["head_bias"] else y


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
