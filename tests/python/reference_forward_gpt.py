"""The numpy forwards of the GPT-2-like families (transformers 4.57 modeling_gpt2, modeling_gptj,
modeling_gpt_neo, modeling_opt, modeling_falcon, modeling_gpt_bigcode): learned positions or RoPE of their own,
LayerNorms with biases, fused or renamed projections. Each returns what reference_forward.forward() returns.
"""
import numpy as np

from reference_forward_alibi import falcon_alibi_bias
from reference_ops import (apply_rope, apply_rope_interleaved, attend, attention_mask, gptj_cos_sin, named_layer_norm,
                           rope_cos_sin)


def forward_gpt2(m, tokens, want_logits=True, head_gates=None, topn=None):
    """GPT2LMHeadModel (transformers 4.57 modeling_gpt2): the same outputs as forward()."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, D, hidden = len(tokens), m.heads, m.head_dim, m.hidden
    x = m.weight("transformer.wte.weight")[tokens] + m.weight("transformer.wpe.weight")[np.arange(T)]
    allowed = attention_mask(T, None)
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"transformer.h.{layer}."
        W = lambda n: m.weight(p + n)
        conv1d = lambda v, name: v @ W(name + ".weight") + W(name + ".bias")   # Conv1D: W [in, out]
        ln = lambda v, name: named_layer_norm(m, v, p + name)
        qkv = conv1d(ln(x, "ln_1"), "attn.c_attn")                          # [T, 3 hidden]
        heads = lambda a: a.reshape(T, H, D).transpose(1, 0, 2)               # [H, T, D]
        q, k, v = heads(qkv[:, :hidden]), heads(qkv[:, hidden:2 * hidden]), heads(qkv[:, 2 * hidden:])
        out["values"].append(v.copy())
        x = x + conv1d(attend(m, q, k, v, allowed, layer, out, head_gates, topn), "attn.c_proj")
        x = x + conv1d(m.act(conv1d(ln(x, "ln_2"), "mlp.c_fc")), "mlp.c_proj")
    if want_logits:
        h = named_layer_norm(m, x, "transformer.ln_f")
        out["logits"] = h @ m.lm_head().T
    return out


def forward_gpt_bigcode(m, tokens, want_logits=True, head_gates=None, topn=None):
    """GPTBigCodeForCausalLM (transformers 4.57 modeling_gpt_bigcode, eager): the same outputs as forward()."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H = len(tokens), m.heads
    assert T <= m.max_positions, f"{T} tokens: GPTBigCode's wpe has n_positions {m.max_positions} rows"
    x = m.weight("transformer.wte.weight")[tokens] + m.weight("transformer.wpe.weight")[np.arange(T)]
    allowed = attention_mask(T, None)
    kv_of_head = np.arange(H) // (H // m.kv_heads)                      # multi_query: every head reads kv head 0
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"transformer.h.{layer}."
        W = lambda n: m.weight(p + n)
        linear = lambda v, name: v @ W(name + ".weight").T + W(name + ".bias")   # nn.Linear: W [out, in]
        ln = lambda v, name: named_layer_norm(m, v, p + name)
        q, k, v = bigcode_split(m, linear(ln(x, "ln_1"), "attn.c_attn"))
        out["values"].append(v.copy())
        x = x + linear(attend(m, q, k[kv_of_head], v[kv_of_head], allowed, layer, out, head_gates, topn), "attn.c_proj")
        x = x + linear(m.act(linear(ln(x, "ln_2"), "mlp.c_fc")), "mlp.c_proj")
    if want_logits:
        h = named_layer_norm(m, x, "transformer.ln_f")
        out["logits"] = h @ m.lm_head().T                                  # no lm_head bias
    return out


def bigcode_split(m, qkv):
    """GPTBigCodeAttention's split of c_attn's output [T, rows] -> q [H, T, D], k and v [Hkv, T, D]: with
    multi_query ("grouped") the first n_embd columns the query heads, then one k and one v of head_dim; without
    ("per_head") each head's q, k, v of head_dim in turn; "concat" reads GPT-2's [q heads | k heads | v heads]
    (not GPTBigCode's: for the self-checks)."""
    T, H, D = qkv.shape[0], m.heads, m.head_dim
    heads = lambda a: a.reshape(T, -1, D).transpose(1, 0, 2)
    if m.qkv_layout == "per_head":
        return tuple(qkv.reshape(T, H, 3, D).transpose(2, 1, 0, 3))      # view(T, H, 3 D), split D, D, D
    kv = D if m.qkv_layout == "grouped" else H * D
    return heads(qkv[:, :H * D]), heads(qkv[:, H * D:H * D + kv]), heads(qkv[:, H * D + kv:])


def forward_gptj(m, tokens, want_logits=True, head_gates=None, topn=None):
    """GPTJForCausalLM (transformers 4.57 modeling_gptj): the same outputs as forward()."""
    dt = m.dtype
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, D, R = len(tokens), m.heads, m.head_dim, m.rotary_dim
    assert T <= m.max_positions, f"{T} tokens: GPT-J's sin/cos table has n_positions {m.max_positions} rows"
    x = m.weight("transformer.wte.weight")[tokens]                      # no position table
    cos, sin = gptj_cos_sin(np.arange(T), R, dt, m.hf_rounding)         # [T, R]
    allowed = attention_mask(T, None)
    # Partial rotary: GPT-J's interleaved pairs over the first R channels of each head, the rest passed through.
    rotate = lambda a: np.concatenate([apply_rope_interleaved(a[..., :R], cos, sin), a[..., R:]], axis=-1)
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"transformer.h.{layer}."
        W = lambda n: m.weight(p + n)
        linear = lambda v, name: v @ W(name + ".weight").T + W(name + ".bias")
        h = named_layer_norm(m, x, p + "ln_1")       # one norm, both branches
        heads = lambda a: a.reshape(T, H, D).transpose(1, 0, 2)           # [H, T, D]
        q, k, v = (heads(h @ W(f"attn.{n}_proj.weight").T) for n in "qkv")  # no biases
        out["values"].append(v.copy())
        attn = attend(m, rotate(q), rotate(k), v, allowed, layer, out, head_gates, topn) @ W("attn.out_proj.weight").T
        ff = linear(m.act(linear(h, "mlp.fc_in")), "mlp.fc_out")
        x = attn + ff + x
    if want_logits:
        h = named_layer_norm(m, x, "transformer.ln_f")
        out["logits"] = h @ m.lm_head().T + m.weight("lm_head.bias")  # lm_head has a bias, tied or not
    return out


def forward_gpt_neo(m, tokens, want_logits=True, head_gates=None, topn=None):
    """GPTNeoForCausalLM (transformers 4.57 modeling_gpt_neo): the same outputs as forward()."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, D = len(tokens), m.heads, m.head_dim
    assert T <= m.max_positions, f"{T} tokens: GPT-Neo's wpe has max_position_embeddings {m.max_positions} rows"
    x = m.weight("transformer.wte.weight")[tokens] + m.weight("transformer.wpe.weight")[np.arange(T)]
    masks = {w: attention_mask(T, w) for w in set(m.layer_window)}      # local layers: window_size keys
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"transformer.h.{layer}."
        W = lambda n: m.weight(p + n)
        linear = lambda v, name: v @ W(name + ".weight").T + W(name + ".bias")
        ln = lambda v, name: named_layer_norm(m, v, p + name)
        h = ln(x, "ln_1")
        heads = lambda a: a.reshape(T, H, D).transpose(1, 0, 2)           # [H, T, D]
        q, k, v = (heads(h @ W(f"attn.attention.{n}_proj.weight").T) for n in "qkv")  # no biases
        out["values"].append(v.copy())
        # attend() scales by m.scale, 1 here: GPT-Neo never divides by sqrt(D)
        ctx = attend(m, q, k, v, masks[m.layer_window[layer]], layer, out, head_gates, topn)
        x = x + linear(ctx, "attn.attention.out_proj")
        x = x + linear(m.act(linear(ln(x, "ln_2"), "mlp.c_fc")), "mlp.c_proj")
    if want_logits:
        h = named_layer_norm(m, x, "transformer.ln_f")
        out["logits"] = h @ m.lm_head().T                                  # no lm_head bias
    return out


def forward_opt(m, tokens, want_logits=True, head_gates=None, topn=None):
    """OPTForCausalLM (transformers 4.57 modeling_opt, pre-LN): the same outputs as forward()."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, D = len(tokens), m.heads, m.head_dim
    assert T <= m.max_positions, f"{T} tokens: OPT's embed_positions has max_position_embeddings {m.max_positions} rows"
    x = opt_embed(m, tokens)
    allowed = attention_mask(T, None)
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"model.decoder.layers.{layer}."
        W = lambda n: m.weight(p + n)
        linear = lambda v, name: v @ W(name + ".weight").T + W(name + ".bias")
        ln = lambda v, name: named_layer_norm(m, v, p + name)
        h = ln(x, "self_attn_layer_norm")
        heads = lambda a: a.reshape(T, H, D).transpose(1, 0, 2)           # [H, T, D]
        # OPTAttention: the projected query, bias included, times head_dim^-0.5; attend() scales by 1
        q = heads(linear(h, "self_attn.q_proj") * m.dtype(m.q_scale))
        k, v = heads(linear(h, "self_attn.k_proj")), heads(linear(h, "self_attn.v_proj"))
        out["values"].append(v.copy())
        x = x + linear(attend(m, q, k, v, allowed, layer, out, head_gates, topn), "self_attn.out_proj")
        x = x + linear(m.act(linear(ln(x, "final_layer_norm"), "fc1")), "fc2")  # the layer's MLP-input norm
    if want_logits:
        h = named_layer_norm(m, x, "model.decoder.final_layer_norm")
        out["logits"] = h @ m.lm_head().T                                  # no lm_head bias
    return out


def opt_embed(m, tokens):
    """OPT's input: token embeddings plus embed_positions' row t + position_offset (2) for token t."""
    rows = np.arange(len(tokens)) + m.position_offset
    positions = m.weight("model.decoder.embed_positions.weight")
    return m.weight("model.decoder.embed_tokens.weight")[tokens] + positions[rows]


def forward_falcon(m, tokens, want_logits=True, head_gates=None, topn=None):
    """FalconForCausalLM (transformers 4.57 modeling_falcon, eager; RoPE, or ALiBi with alibi): the same outputs as
    forward(). With alibi, FalconAttention's eager branch: (q.k + alibi) * inv_norm_factor; its softmax mask
    holds alibi * inv_norm_factor too (FalconModel._update_causal_mask), so HF's eager path adds it twice, its
    SDPA path and the RW code once: once here (reference_self_alibi.py measures the other)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H = len(tokens), m.heads
    x = m.weight("transformer.word_embeddings.weight")[tokens]
    cos, sin = rope_cos_sin(np.arange(T), m.head_dim, m.theta, m.dtype, m.rope_scaling, m.hf_rounding, m.max_positions)
    allowed, bias = attention_mask(T, None), falcon_alibi_bias(m, T) if m.alibi else None
    kv_of_head = np.arange(H) // (H // m.kv_heads)                    # a group's query heads share its k, v
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"transformer.h.{layer}."
        W = lambda n: m.weight(p + n)
        ln = lambda v, name: named_layer_norm(m, v, p + name)
        linear = lambda v, name: v @ W(name + ".weight").T + (W(name + ".bias") if m.linear_bias else 0)  # bias
        mlp = lambda v: linear(m.act(linear(v, "mlp.dense_h_to_4h")), "mlp.dense_4h_to_h")
        h = ln(x, m.attn_norm)
        q, k, v = falcon_split(m, linear(h, "self_attention.query_key_value"))
        out["values"].append(v.copy())
        if m.rotary:                                                   # FalconConfig.rotary: not alibi
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        ctx = attend(m, q, k[kv_of_head], v[kv_of_head], allowed, layer, out, head_gates, topn, bias, m.alibi_scaled)
        attn = linear(ctx, "self_attention.dense")
        if m.parallel:  # mlp + attn + x, the MLP from the attention's norm or from its own
            x = x + (mlp(h if m.mlp_norm == m.attn_norm else ln(x, m.mlp_norm)) + attn)
        else:
            x = x + attn
            x = x + mlp(ln(x, m.mlp_norm))
    if want_logits:
        h = named_layer_norm(m, x, "transformer.ln_f")
        out["logits"] = h @ m.lm_head().T                                  # no lm_head bias
    return out


def falcon_split(m, qkv):
    """FalconAttention._split_heads of query_key_value's output [T, rows] -> q [H, T, D], k and v [Hkv, T, D]:
    per kv group its H / Hkv query heads, then its k, then its v ("grouped"; multi_query is one group),
    or per head its q, k, v ("per_head")."""
    T, H, Hkv, D = qkv.shape[0], m.heads, m.kv_heads, m.head_dim
    if m.qkv_layout == "per_head":
        return tuple(qkv.reshape(T, H, 3, D).transpose(2, 1, 0, 3))      # [H, T, D] each
    group = H // Hkv
    a = qkv.reshape(T, Hkv, group + 2, D)
    q = a[:, :, :group].reshape(T, H, D).transpose(1, 0, 2)
    return q, a[:, :, group].transpose(1, 0, 2), a[:, :, group + 1].transpose(1, 0, 2)
