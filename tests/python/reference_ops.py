"""The operations of the independent numpy forward (reference_forward.py), from transformers
4.57's eager code: activations (SiLU, ReLU, GELU), LayerNorm and RMSNorm, soft-caps, RoPE tables (modeling_rope_utils:
default, linear, llama3, yarn) and rotation (rotate_half; GPT-J's interleaved rotate_every_two), ALiBi slopes,
bfloat16 rounding, the causal and sliding-window mask, the masked softmax and prune's top-N keys.
"""
import math

import numpy as np


def silu(x):
    return x / (1.0 + np.exp(-x))


def relu(x):
    """nn.ReLU (OPT's activation_function "relu"): max(x, 0)."""
    return np.maximum(x, 0.0)


def gelu_tanh(x):
    # transformers' gelu_pytorch_tanh == torch gelu(approximate="tanh")
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def gelu_bloom(x):
    """modeling_bloom's bloom_gelu_forward: the tanh GELU with sqrt(2 / pi) written as 0.79788456."""
    return x * 0.5 * (1.0 + np.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu_erf(x):
    """transformers' "gelu" (nn.functional.gelu, exact): 0.5 x (1 + erf(x / sqrt(2)))."""
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)).astype(x.dtype))


def layer_norm(x, w, b, eps):
    """nn.LayerNorm: (x - mean) / sqrt(biased var + eps) * w + b; x: [..., dim]."""
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def named_layer_norm(m, x, name):
    """layer_norm with the model m's tensors name.weight and name.bias, at m.eps."""
    return layer_norm(x, m.weight(name + ".weight"), m.weight(name + ".bias"), m.eps)


def rms_norm(x, w, eps, offset):
    """x * rsqrt(mean(x^2) + eps) * (offset + w); x: [..., dim]."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (offset + w)


def soft_cap(x, cap):
    """Gemma-2: cap * tanh(x / cap); None: unchanged."""
    return x if cap is None else cap * np.tanh(x / cap)


def rope_kind(scaling):
    """rope_scaling's type ("rope_type", or the older "type"); "default" for none."""
    return (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))


def rope_inv_freq(head_dim, theta, scaling=None, ftype=np.float64, max_positions=None):
    """modeling_rope_utils: default, linear, llama3 and yarn inverse frequencies [D/2], in ftype.
    max_positions: config.max_position_embeddings (YaRN's fallback for the original length)."""
    exps = np.arange(0, head_dim, 2, dtype=np.int64).astype(ftype) / ftype(head_dim)
    inv_freq = ftype(1.0) / np.power(ftype(theta), exps)
    kind = rope_kind(scaling)
    if kind == "default":
        return inv_freq
    if kind == "yarn":
        return yarn_inv_freq(head_dim, theta, scaling, ftype, max_positions)
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


def yarn_params(dim, theta, scaling, max_positions):
    """_compute_yarn_parameters' scalars (float64, as Python computes them): (factor, attention
    factor, low, high) for rotary dim `dim`. The factor is the explicit one, as 4.57 and 5.x take it,
    max_position_embeddings / original only where it is absent (some earlier 4.x releases always
    took that ratio when original_max_position_embeddings was given)."""
    original = scaling.get("original_max_position_embeddings") or max_positions
    assert original, "yarn: no original_max_position_embeddings and no max_position_embeddings"
    factor = scaling.get("factor")
    if factor is None:
        factor = max_positions / original
    mscale = lambda s, m=1.0: 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0
    attention = scaling.get("attention_factor")
    if attention is None:
        m, m_all = scaling.get("mscale"), scaling.get("mscale_all_dim")
        attention = mscale(factor, m) / mscale(factor, m_all) if m and m_all else mscale(factor)
    beta_fast, beta_slow = scaling.get("beta_fast") or 32, scaling.get("beta_slow") or 1
    # the (fractional) pair index whose frequency turns `rotations` times over the original length
    correction_dim = lambda rotations: dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))
    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    return factor, attention, max(low, 0), min(high, dim - 1)


def yarn_inv_freq(dim, theta, scaling, ftype=np.float64, max_positions=None):
    """YaRN: each frequency blends the original (extrapolated) and the factor-slowed (interpolated)
    one by a ramp over the pair index i, 0 (kept) at i <= low to 1 (slowed) at i >= high; HF
    computes the frequencies, the ramp and the blend in float32."""
    factor, _, low, high = yarn_params(dim, theta, scaling, max_positions)
    if low == high:
        high += 0.001  # HF's guard against a zero-width ramp
    pos_freqs = np.power(ftype(theta), np.arange(0, dim, 2).astype(ftype) / ftype(dim))
    extrapolation = ftype(1.0) / pos_freqs
    interpolation = ftype(1.0) / (ftype(factor) * pos_freqs)
    ramp = np.clip((np.arange(dim // 2).astype(ftype) - ftype(low)) / ftype(high - low), 0, 1)
    keep = ftype(1.0) - ramp  # inv_freq_extrapolation_factor
    return (interpolation * (ftype(1.0) - keep) + extrapolation * keep).astype(ftype)


def rope_attention_factor(scaling, head_dim, theta, max_positions=None):
    """The factor HF multiplies cos and sin by: YaRN's (yarn_params), 1 for the others here."""
    if rope_kind(scaling) != "yarn":
        return 1.0
    return yarn_params(head_dim, theta, scaling, max_positions)[1]


def rope_cos_sin(positions, head_dim, theta, dtype, scaling=None, hf_rounding=False, max_positions=None):
    """LlamaRotaryEmbedding: emb = cat(freqs, freqs); returns cos, sin [T, D], each times the
    attention factor (YaRN's; else 1). Exact (float64) angles, or with hf_rounding the float32
    frequencies, angles and products HF computes."""
    ftype = np.float32 if hf_rounding else np.float64
    inv_freq = rope_inv_freq(head_dim, theta, scaling, ftype, max_positions)
    freqs = np.outer(np.asarray(positions, dtype=ftype), inv_freq).astype(ftype)
    emb = np.concatenate([freqs, freqs], axis=-1)
    factor = ftype(rope_attention_factor(scaling, head_dim, theta, max_positions))
    return (np.cos(emb) * factor).astype(dtype), (np.sin(emb) * factor).astype(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, cos, sin):
    """x: [heads, T, D]; q_embed = q * cos + rotate_half(q) * sin."""
    return x * cos + rotate_half(x) * sin


def apply_partial_rope(x, cos, sin):
    """x: [heads, T, D]; the first R = cos.shape[-1] channels of each head turned (apply_rope), the rest passed
    through: partial rotary (GPT-NeoX's rotary_pct, Phi's and StableLM's partial_rotary_factor)."""
    R = cos.shape[-1]
    return np.concatenate([apply_rope(x[..., :R], cos, sin), x[..., R:]], axis=-1)


def gptj_cos_sin(positions, rotary_dim, dtype, hf_rounding=False):
    """GPT-J's create_sinusoidal_positions and apply_rotary_pos_emb: inv_freq = 1 / 10000^(2i / R)
    (no configurable base), angle(t, i) = t * inv_freq[i], sin and cos repeat_interleave'd by 2, so
    channels 2i and 2i + 1 share angle i; returns cos, sin [T, R]. Exact (float64) angles, or with
    hf_rounding the float32 frequencies and angles HF computes."""
    ftype = np.float32 if hf_rounding else np.float64
    inv_freq = rope_inv_freq(rotary_dim, 10000.0, None, ftype)
    freqs = np.outer(np.asarray(positions, dtype=ftype), inv_freq).astype(ftype)  # [T, R/2]
    emb = np.repeat(freqs, 2, axis=-1)                                             # [T, R]: i, i, ...
    return np.cos(emb).astype(dtype), np.sin(emb).astype(dtype)


def rotate_every_two(x):
    """GPT-J: stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2): out[2i] = -x[2i + 1],
    out[2i + 1] = x[2i]."""
    return np.stack([-x[..., 1::2], x[..., ::2]], axis=-1).reshape(x.shape)


def apply_rope_interleaved(x, cos, sin):
    """x: [heads, T, R]; GPT-J's x * cos + rotate_every_two(x) * sin, with gptj_cos_sin's tables."""
    return x * cos + rotate_every_two(x) * sin


def alibi_slopes(heads, bias_max=8.0):
    """ALiBi's slope per head [heads], float64, in closed form: with p = 2^ceil(log2 heads), 2^(-bias_max m / p)
    for m = 1..p; when heads < p, those of even m, then those of odd m, the first `heads` of them. BLOOM's
    build_alibi_tensor (2^(-8/c) to the powers 1..c for c = 2^floor(log2 heads), then 2^(-4/c) to the odd
    powers 1, 3, ..) and MPT's build_mpt_alibi_tensor (its alibi_bias_max) give this list (bias_max 8 for BLOOM;
    reference_self_alibi.py checks both recipes)."""
    p = 2 ** math.ceil(math.log2(heads))
    slopes = 2.0 ** (-bias_max * np.arange(1, p + 1) / p)
    return slopes if p == heads else np.concatenate([slopes[1::2], slopes[::2]])[:heads]


def alibi_slopes_torch_f32(heads, family):
    """The slopes in float32 as transformers' torch code computes them (the fp32 eager stand-in's): BLOOM
    pow(float32 base, k) for the powers of alibi_slopes' docstring; MPT 1 / pow(2, float32(m) * (8 / p)), then
    reordered."""
    f32 = np.float32
    if family == "bloom":
        c = 2 ** math.floor(math.log2(heads))
        slopes = np.power(f32(2 ** (-(2 ** -(math.log2(c) - 3)))), np.arange(1, c + 1).astype(f32))
        extra = np.power(f32(2 ** (-(2 ** -(math.log2(2 * c) - 3)))),
                         np.arange(1, 1 + 2 * min(c, heads - c), 2).astype(f32))
        return np.concatenate([slopes, extra]).astype(f32)
    p = 2 ** math.ceil(math.log2(heads))
    slopes = f32(1.0) / np.power(f32(2), np.arange(1, p + 1).astype(f32) * f32(8 / p))
    return slopes if p == heads else np.concatenate([slopes[1::2], slopes[::2]])[:heads]


def round_bf16(x):
    """x rounded to bfloat16 (8 significant bits, to nearest even), as float32: torch's .bfloat16() and the
    product of a bfloat16 tensor (Falcon's build_alibi_tensor rounds its slopes and slope * j so)."""
    u = np.array(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    half, low = np.uint64(0x7FFF), np.uint64(16)
    return ((u + half + ((u >> low) & np.uint64(1))) >> low << low).astype(np.uint32).view(np.float32)


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


def attend(m, q, k, v, allowed, layer, out, head_gates, topn, bias=None, scale_bias=False):
    """Multi-head attention without GQA or soft-cap: q, k, v [H, T, D] -> [T, H*D]; the
    probabilities are appended to out["attn"]. `bias` (ALiBi's [H, 1, T] or [H, T, T]) is added to the
    scaled scores, or with scale_bias to q.k before the scale (Falcon's (q.k + alibi) * inv_norm_factor).
    Edits as in forward()."""
    H, T, D = q.shape
    if bias is not None and scale_bias:
        scores = (q @ k.transpose(0, 2, 1) + bias) * m.dtype(m.scale)      # [H, T, T]
    else:
        scores = (q @ k.transpose(0, 2, 1)) * m.dtype(m.scale)
        scores = scores if bias is None else scores + bias
    probs = softmax_masked(scores, allowed)
    if topn is not None:
        probs = np.stack([keep_top_n(probs[h], int(topn[layer][h])) for h in range(H)])
    out["attn"].append(probs)
    heads_out = probs @ v
    if head_gates is not None:
        heads_out = heads_out * np.asarray(head_gates[layer], dtype=m.dtype)[:, None, None]
    return heads_out.transpose(1, 0, 2).reshape(T, H * D)
