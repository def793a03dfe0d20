"""The operations of the independent numpy forward (reference_forward.py), from transformers
4.57's eager code: activations, LayerNorm and RMSNorm, soft-caps, RoPE tables (modeling_rope_utils)
and rotation, the causal and sliding-window mask, the masked softmax and prune's top-N keys.
"""
import math

import numpy as np


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    # transformers' gelu_pytorch_tanh == torch gelu(approximate="tanh")
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu_erf(x):
    """transformers' "gelu" (nn.functional.gelu, exact): 0.5 x (1 + erf(x / sqrt(2)))."""
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)).astype(x.dtype))


def layer_norm(x, w, b, eps):
    """nn.LayerNorm: (x - mean) / sqrt(biased var + eps) * w + b; x: [..., dim]."""
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps, offset):
    """x * rsqrt(mean(x^2) + eps) * (offset + w); x: [..., dim]."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (offset + w)


def soft_cap(x, cap):
    """Gemma-2: cap * tanh(x / cap); None: unchanged."""
    return x if cap is None else cap * np.tanh(x / cap)


def rope_inv_freq(head_dim, theta, scaling=None, ftype=np.float64):
    """modeling_rope_utils: default, linear and llama3 inverse frequencies [D/2], in ftype."""
    exps = np.arange(0, head_dim, 2, dtype=np.int64).astype(ftype) / ftype(head_dim)
    inv_freq = ftype(1.0) / np.power(ftype(theta), exps)
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "default":
        return inv_freq
    factor = ftype(scaling["factor"])
    if kind == "linear":
        return inv_freq / factor
    assert kind == "llama3", kind
    low, high = ftype(scaling["low_freq_factor"]), ftype(scaling["high_freq_factor"])
    old_len = ftype(scaling["original_max_position_embeddings"])
    low_freq_wavelen, high_freq_wavelen = old_len / low, old_len / high
    wavelen = ftype(2 * math.pi) / inv_freq
    inv_freq_llama = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * inv_freq_llama / factor + smooth * inv_freq_llama
    medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return np.where(medium, smoothed, inv_freq_llama).astype(ftype)


def rope_cos_sin(positions, head_dim, theta, dtype, scaling=None, hf_rounding=False):
    """LlamaRotaryEmbedding: emb = cat(freqs, freqs); returns cos, sin [T, D]. Exact (float64)
    angles, or with hf_rounding the float32 frequencies and angles HF computes."""
    ftype = np.float32 if hf_rounding else np.float64
    inv_freq = rope_inv_freq(head_dim, theta, scaling, ftype)
    freqs = np.outer(np.asarray(positions, dtype=ftype), inv_freq).astype(ftype)
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


