"""Independent numpy forward for Hugging Face LLaMA / Mistral / Gemma checkpoints.

Written from transformers' eager modeling code (modeling_llama / modeling_mistral /
modeling_gemma), not from the C++ engine. Computes in float64 (or `dtype`) from the
stored weights, widened. Shapes: T tokens, H query heads, Hkv kv heads, D head_dim.
"""
import json
import os

import numpy as np

import st_reader


class Model:
    """config.json fields mapped once, and the checkpoint's weights as float arrays."""

    def __init__(self, model_dir, dtype=np.float64):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        self.cfg = cfg
        self.model_type = cfg["model_type"]
        assert self.model_type in ("llama", "mistral", "gemma"), self.model_type
        self.hidden = cfg["hidden_size"]
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]
        gemma = self.model_type == "gemma"
        # Omitted keys take the defaults of transformers' LlamaConfig / MistralConfig / GemmaConfig.
        kv_default = {"llama": self.heads, "mistral": 8, "gemma": 16}[self.model_type]
        self.kv_heads = cfg.get("num_key_value_heads") or kv_default
        self.head_dim = cfg.get("head_dim") or (256 if gemma else self.hidden // self.heads)
        assert self.heads % self.kv_heads == 0, (self.heads, self.kv_heads)
        self.eps = cfg["rms_norm_eps"]
        # transformers v5 keeps the RoPE settings under rope_parameters.
        rope = cfg.get("rope_parameters") or {}
        assert rope.get("rope_type", "default") == "default", rope
        self.theta = rope.get("rope_theta", cfg.get("rope_theta", 10000.0))
        # LlamaModel has no window whatever the config says; MistralConfig defaults to 4096.
        self.window = cfg.get("sliding_window", 4096) if self.model_type == "mistral" else None
        self.vocab = cfg["vocab_size"]
        self.bos = cfg.get("bos_token_id", 2 if gemma else 1)
        self.tied = cfg.get("tie_word_embeddings", gemma)
        self.norm_offset = 1.0 if gemma else 0.0          # GemmaRMSNorm: * (1 + w)
        self.embed_scale = self.hidden ** 0.5 if gemma else 1.0
        act = (cfg.get("hidden_activation") or "gelu_pytorch_tanh") if gemma else cfg["hidden_act"]
        assert act in ("silu", "gelu_pytorch_tanh"), act
        self.act = silu if act == "silu" else gelu_tanh
        self.dtype = dtype
        self.w = {k: v.astype(dtype) for k, v in load_weights(model_dir).items()}

    def weight(self, name):
        return self.w[name]

    def lm_head(self):
        return self.w["model.embed_tokens.weight" if self.tied else "lm_head.weight"]


def load_weights(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    files = ["model.safetensors"]
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    out = {}
    for name in files:
        out.update(st_reader.read(os.path.join(model_dir, name))[0])
    return out


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    # transformers' gelu_pytorch_tanh == torch gelu(approximate="tanh")
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def rms_norm(x, w, eps, offset):
    """x * rsqrt(mean(x^2) + eps) * (offset + w); x: [T, hidden]."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (offset + w)


def rope_cos_sin(positions, head_dim, theta, dtype):
    """LlamaRotaryEmbedding: emb = cat(freqs, freqs); returns cos, sin [T, D]."""
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    freqs = np.outer(np.asarray(positions, dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(dtype), np.sin(emb).astype(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, cos, sin):
    """x: [heads, T, D]; q_embed = q * cos + rotate_half(q) * sin."""
    return x * cos + rotate_half(x) * sin


def attention_mask(T, window):
    """[T, T] bool, True where query i may attend key j: j <= i and i - j < window."""
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    allowed = j <= i
    if window is not None:
        allowed &= (i - j) < window
    return allowed


def softmax_masked(scores, allowed):
    """Row softmax over allowed keys; exactly 0 where masked. scores: [H, T, T]."""
    s = np.where(allowed, scores, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def keep_top_n(probs, n):
    """Top-N per row of probs [T, T] (ties to the lower index), renormalised; n <= 0: all."""
    if n <= 0:
        return probs
    T = probs.shape[-1]
    order = np.lexsort((np.broadcast_to(np.arange(T), probs.shape), -probs), axis=-1)  # desc p, asc index
    keep = np.zeros(probs.shape, dtype=bool)
    np.put_along_axis(keep, order[:, :n], True, axis=-1)
    kept = np.where(keep, probs, 0.0)
    return kept / kept.sum(axis=-1, keepdims=True)


def forward(model, tokens, want_logits=True, head_gates=None, topn=None):
    """Returns {"attn": [L x [H, T, T]], "values": [L x [Hkv, T, D]], "logits": [T, V]}.

    Optional edits (attngeom prune, docs/method.md section 7), both [layers, heads]: `topn` keeps
    each query's top-N keys of a head (0: all), renormalised; `head_gates` multiplies each
    head's attention output before o_proj (0 removes the head)."""
    m, dt = model, model.dtype
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, Hkv, D = len(tokens), m.heads, m.kv_heads, m.head_dim
    assert tokens.min() >= 0 and tokens.max() < m.vocab
    x = m.weight("model.embed_tokens.weight")[tokens] * dt(m.embed_scale)  # [T, hidden]
    cos, sin = rope_cos_sin(np.arange(T), D, m.theta, dt)                 # [T, D]
    allowed = attention_mask(T, m.window)                                  # [T, T]
    group = H // Hkv
    kv_of_head = np.arange(H) // group                                     # repeat_kv
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"model.layers.{layer}."
        W = lambda n: m.weight(p + n)
        h = rms_norm(x, W("input_layernorm.weight"), m.eps, m.norm_offset)     # [T, hidden]
        q = (h @ W("self_attn.q_proj.weight").T).reshape(T, H, D).transpose(1, 0, 2)
        k = (h @ W("self_attn.k_proj.weight").T).reshape(T, Hkv, D).transpose(1, 0, 2)
        v = (h @ W("self_attn.v_proj.weight").T).reshape(T, Hkv, D).transpose(1, 0, 2)
        out["values"].append(v.copy())                                     # [Hkv, T, D]
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        scores = q @ k[kv_of_head].transpose(0, 2, 1) / np.sqrt(D)         # [H, T, T]
        probs = softmax_masked(scores, allowed)
        if topn is not None:
            probs = np.stack([keep_top_n(probs[h], int(topn[layer][h])) for h in range(H)])
        out["attn"].append(probs)
        heads_out = probs @ v[kv_of_head]                                  # [H, T, D]
        if head_gates is not None:
            heads_out = heads_out * np.asarray(head_gates[layer], dtype=dt)[:, None, None]
        ctx = heads_out.transpose(1, 0, 2).reshape(T, H * D)               # [T, H*D]
        x = x + ctx @ W("self_attn.o_proj.weight").T
        h = rms_norm(x, W("post_attention_layernorm.weight"), m.eps, m.norm_offset)
        gate = h @ W("mlp.gate_proj.weight").T                             # [T, inter]
        up = h @ W("mlp.up_proj.weight").T
        x = x + (m.act(gate) * up) @ W("mlp.down_proj.weight").T
    if want_logits:
        h = rms_norm(x, m.weight("model.norm.weight"), m.eps, m.norm_offset)
        out["logits"] = h @ m.lm_head().T                                  # [T, vocab]
    return out
