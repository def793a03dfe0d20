"""The operations of bench/torch_eager.py, written like Hugging Face's eager code (transformers
4.57): norms and activations, RoPE tables and rotations, each family's q, k, v and attention,
and the MLPs. `m` is torch_eager.Model: the config read once and the weights."""
import math

import torch

F = torch.nn.functional


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


def weightless_layer_norm(m, x, name):
    """OlmoLayerNorm (OLMo-1): F.layer_norm without weight or bias, in fp32, cast back; no tensors."""
    return F.layer_norm(x.float(), (x.shape[-1],), None, None, m.eps).to(x.dtype)


def layer_norm(m, x, name):
    """nn.LayerNorm with its bias (GPT-NeoX, Phi, GPT-2, GPT-J, GPT-Neo, OPT, Falcon, BLOOM, StarCoder2,
    GPTBigCode), or without one where the checkpoint has none (MPT's, its bias set to None)."""
    bias = m.w.get(name + ".bias")
    return F.layer_norm(x, (x.shape[-1],), m.w[name + ".weight"].to(x.dtype),
                        None if bias is None else bias.to(x.dtype), m.eps)


def gelu_new(x):
    """transformers' NewGELUActivation (gelu_new: GPT-2, Phi), written out as it is there."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def bloom_gelu(x):
    """BLOOM's tanh GELU (BloomGelu at inference), its sqrt(2 / pi) written as 0.79788456."""
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


ACTIVATIONS = {"silu": F.silu, "gelu": F.gelu, "gelu_new": gelu_new, "relu": F.relu,
               "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"), "bloom_gelu": bloom_gelu}


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


# --- ALiBi ---

def alibi_bias(m, t):
    """[H, 1, T] added to every query's scores. BLOOM (build_alibi_tensor): fp32 slopes, powers of
    2^(-8 / c) for c = 2^floor(log2 H), then odd powers of 2^(-4 / c) for the heads beyond c, times the key
    position j (the all-ones mask's cumulative sum less 1), cast to the model dtype. MPT
    (build_mpt_alibi_tensor): slopes 1 / 2^(m alibi_bias_max / p), m = 1..p, p = 2^ceil(log2 H) (for H < p
    the even m, then the odd ones), times j - (max_seq_len - 1) in fp32, of which the last T columns are used;
    kept fp32, so the scores it is added to become fp32."""
    h = m.heads
    if m.fam["alibi"] == "bloom":
        c = 2 ** math.floor(math.log2(h))
        slopes = torch.pow(torch.tensor(2 ** (-(2 ** -(math.log2(c) - 3))), dtype=torch.float32),
                           torch.arange(1, c + 1, dtype=torch.int32))
        if c != h:
            odd = torch.arange(1, 1 + 2 * min(c, h - c), 2, dtype=torch.int32)
            extra = torch.pow(torch.tensor(2 ** (-(2 ** -(math.log2(2 * c) - 3))), dtype=torch.float32), odd)
            slopes = torch.cat([slopes, extra])
        keys = torch.ones(t).cumsum(-1) - 1                                  # j, fp32
        return (slopes[:, None] * keys[None, :]).view(h, 1, t).to(m.dtype)
    width = m.cfg.get("max_seq_len", 2048)
    assert t <= width, f"{t} tokens: MPT's ALiBi table has max_seq_len {width} columns"
    p = 2 ** math.ceil(math.log2(h))
    slopes = 1.0 / torch.pow(2, torch.arange(1, p + 1, dtype=torch.int64).float() * (m.alibi_bias_max / p))
    if p != h:
        slopes = torch.cat([slopes[1::2], slopes[::2]])[:h]
    keys = torch.arange(1 - width, 1, dtype=torch.int32)                    # j - (max_seq_len - 1)
    return (keys[None, :] * slopes[:, None]).view(h, 1, width)[:, :, width - t:]


# --- attention: q, k, v [heads, T, D] per family layout ---

def split_heads(m, a, n):
    return a.view(a.shape[0], n, m.head_dim).transpose(0, 1)


def qkv_separate(m, p, h):
    """q_proj, k_proj, v_proj (GPT-J's under attn., GPT-Neo's under attn.attention.), with the
    biases the checkpoint has (Qwen2's; Phi's; attention_bias)."""
    names = [m.fam["attn_prefix"] + name for name in ("q_proj", "k_proj", "v_proj")]
    return [split_heads(m, m.project(h, p + name), n) for name, n in zip(names, (m.heads, m.kv_heads, m.kv_heads))]


def qkv_concat(m, p, h):
    """One projection of rows [q | k | v]: Phi-3's qkv_proj, GPT-2's c_attn (Conv1D), MPT's Wqkv, GPTBigCode's
    multi_query c_attn ([q heads | k | v] of one kv head)."""
    qkv = m.project(h, p + m.fam["qkv_name"])
    q_end, k_end = m.heads * m.head_dim, (m.heads + m.kv_heads) * m.head_dim
    return (split_heads(m, qkv[:, :q_end], m.heads), split_heads(m, qkv[:, q_end:k_end], m.kv_heads),
            split_heads(m, qkv[:, k_end:], m.kv_heads))


def qkv_per_head(m, p, h, name="attention.query_key_value"):
    """GPT-NeoX's query_key_value: qkv.view(T, H, 3 D), each head's [q | k | v], chunk(3)."""
    qkv = m.project(h, p + name)
    return qkv.view(h.shape[0], m.heads, 3 * m.head_dim).transpose(0, 1).chunk(3, dim=-1)


def qkv_bigcode(m, p, h):
    """GPTBigCode's c_attn: multi_query [q heads | k | v] (qkv_concat), else each head's [q | k | v]."""
    return qkv_concat(m, p, h) if m.kv_heads == 1 else qkv_per_head(m, p, h, "attn.c_attn")


def qkv_falcon(m, p, h):
    """Falcon's query_key_value as FalconAttention._split_heads views it: per kv group its query heads,
    its k, its v (new_decoder_architecture; multi_query's one group), or per head q, k, v (as BLOOM's
    view(T, H, 3, D) too)."""
    t, d = h.shape[0], m.head_dim
    qkv = m.project(h, p + "self_attention.query_key_value")
    if m.per_head_qkv:
        q, k, v = qkv.view(t, m.heads, 3, d).unbind(2)
    else:
        a = qkv.view(t, m.kv_heads, m.heads // m.kv_heads + 2, d)
        q, k, v = a[:, :, :-2].reshape(t, m.heads, d), a[:, :, -2], a[:, :, -1]
    return q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)


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
    if m.clip_qkv is not None:  # OLMo's, OLMoE's (after its q/k norms), MPT's (of Wqkv's output): elementwise
        q, k, v = (a.clamp(min=-m.clip_qkv, max=m.clip_qkv) for a in (q, k, v))
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
    elif m.fam["alibi"] == "bloom":
        # BLOOM's: alibi.baddbmm(q, k^T, beta 1, alpha 1 / sqrt(D)) in the working dtype, softmax in fp32, cast back
        scores = m.alibi.baddbmm(q, k.transpose(1, 2), beta=1.0, alpha=1.0 / math.sqrt(m.head_dim))
        probs = torch.softmax(scores + mask, dim=-1, dtype=torch.float32).to(m.dtype)
    elif m.fam["alibi"] == "mpt":
        # MPT's: q k^T * softmax_scale, plus the fp32 bias (so fp32 from here), softmax of that, cast back
        scores = q @ k.transpose(1, 2) * m.score_scale + m.alibi
        probs = torch.softmax(scores.float() + mask.float(), dim=-1).to(m.dtype)
    elif m.fam["scale_query"]:
        # OPT's: q_proj's output times head_dim^-0.5 first, then the product unscaled, softmax in fp32
        scores = (q * m.score_scale) @ k.transpose(1, 2)
        probs = torch.softmax(scores + mask, dim=-1, dtype=torch.float32).to(m.dtype)
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
    """down(act(up(h))) with the biases the checkpoint has: GPT-NeoX and Falcon dense_h_to_4h / 4h_to_h, Phi
    fc1 / fc2, GPT-2 and GPT-Neo c_fc / c_proj."""
    up, down = m.fam["mlp_names"]
    return m.project(m.act(m.project(h, p + up)), p + down)


def mlp_sparse_moe(m, p, h):
    """MixtralSparseMoeBlock, OlmoeSparseMoeBlock, Qwen3MoeSparseMoeBlock, Qwen2MoeSparseMoeBlock (eager):
    router logits, softmax in fp32, top-k, the k weights renormalised (Mixtral; the others with
    norm_topk_prob) and cast back, then a loop over the experts hit, each adding its tokens' gated MLP
    down(act(gate h) * up h) times their weight with index_add_; Qwen2-MoE then adds its shared expert's
    gated MLP times sigmoid(shared_expert_gate h). Qwen3-MoE's and Qwen2-MoE's layers outside
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
    if m.fam["shared_expert"]:
        s = p + "mlp.shared_expert."
        shared = m.project(m.act(m.project(h, s + "gate_proj")) * m.project(h, s + "up_proj"), s + "down_proj")
        out = out + torch.sigmoid(m.project(h, p + "mlp.shared_expert_gate")) * shared
    return out
