"""The numpy forwards of the ALiBi families (transformers 4.57 modeling_bloom, modeling_mpt): no position
embedding, instead each head's slope times the key's position added to its scaled scores. Each returns what
reference_forward.forward() returns. Falcon-RW's bias (modeling_falcon) is here too; its forward is
reference_forward_gpt.forward_falcon.
"""
import numpy as np

from reference_ops import attend, attention_mask, layer_norm, round_bf16


def alibi_bias(m, T):
    """[H, 1, T], the same for every query: m.slopes times the key position j (BLOOM's build_alibi_tensor: the
    attention mask's cumulative sum less 1), or with m.alibi_shift times j - (T - 1) (MPT: the last T columns of
    build_mpt_alibi_tensor's table); both give the same softmax. In m.dtype, as HF rounds the product."""
    keys = (np.arange(T) - (T - 1 if m.alibi_shift else 0)).astype(m.dtype)   # [T]
    return (m.slopes[:, None] * keys[None, :])[:, None, :]


def falcon_alibi_bias(m, T):
    """Falcon-RW's ALiBi (modeling_falcon's own build_alibi_tensor, not BLOOM's): [H, 1, T], m.slopes (already
    rounded to bfloat16: slopes.bfloat16()) times the key position j, in m.dtype. With m.alibi_bf16 (HF's, whatever
    the model's dtype) that product is a bfloat16 tensor times an int64 one: j is cast to bfloat16 first (from 256
    on, j rounds to even; from 512, to a multiple of 4), the product rounded to bfloat16 again. forward_falcon adds
    it to q.k before the scale. m.alibi_origin "query" measures from the query instead ([H, T, T], j - i)."""
    keys = np.arange(T)[None, :] - (np.arange(T)[:, None] if m.alibi_origin == "query" else 0)   # [1 or T, T]
    if m.alibi_bf16:
        return round_bf16(m.slopes.astype(np.float64)[:, None, None] * round_bf16(keys)[None]).astype(m.dtype)
    return (m.slopes.astype(np.float64)[:, None, None] * keys[None]).astype(m.dtype)


def forward_bloom(m, tokens, want_logits=True, head_gates=None, topn=None):
    """BloomForCausalLM (transformers 4.57 modeling_bloom, eager): the same outputs as forward()."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, D = len(tokens), m.heads, m.head_dim
    W = lambda n: m.weight("transformer." + n)
    ln = lambda v, name: layer_norm(v, W(name + ".weight"), W(name + ".bias"), m.eps)
    x = W("word_embeddings.weight")[tokens]                                # [T, hidden]
    if m.embed_norm:                                                       # word_embeddings_layernorm
        x = ln(x, m.embed_norm)
    allowed, bias = attention_mask(T, None), alibi_bias(m, T)
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"h.{layer}."
        linear = lambda v, name: v @ W(p + name + ".weight").T + W(p + name + ".bias")
        qkv = linear(ln(x, p + "input_layernorm"), "self_attention.query_key_value")  # [T, 3 hidden]
        q, k, v = qkv.reshape(T, H, 3, D).transpose(2, 1, 0, 3)           # view(T, H, 3, D): [H, T, D] each
        out["values"].append(v.copy())
        # baddbmm(alibi, q, k^T, beta 1, alpha 1 / sqrt(D)); the residual is the layer's input
        x = x + linear(attend(m, q, k, v, allowed, layer, out, head_gates, topn, bias), "self_attention.dense")
        x = x + linear(m.act(linear(ln(x, p + "post_attention_layernorm"), "mlp.dense_h_to_4h")), "mlp.dense_4h_to_h")
    if want_logits:
        out["logits"] = ln(x, "ln_f") @ m.lm_head().T                      # [T, vocab]
    return out


def forward_mpt(m, tokens, want_logits=True, head_gates=None, topn=None):
    """MptForCausalLM (transformers 4.57 modeling_mpt): the same outputs as forward()."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, D = len(tokens), m.heads, m.head_dim
    assert T <= m.max_positions, f"{T} tokens: MPT's ALiBi table has max_seq_len {m.max_positions} columns"
    W = lambda n: m.weight("transformer." + n)
    ln = lambda v, name: layer_norm(v, W(name + ".weight"), 0.0, m.eps)  # LayerNorm with its bias set to None
    x = W("wte.weight")[tokens]                                            # [T, hidden]
    allowed, bias = attention_mask(T, None), alibi_bias(m, T)
    heads = lambda a: a.reshape(T, H, D).transpose(1, 0, 2)                # [H, T, D]
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"blocks.{layer}."
        qkv = ln(x, p + "norm_1") @ W(p + "attn.Wqkv.weight").T           # [T, 3 hidden]
        if m.clip_qkv:                                                     # attn_config.clip_qkv: clamp
            qkv = np.clip(qkv, -m.clip_qkv, m.clip_qkv)
        q, k, v = (heads(a) for a in np.split(qkv, 3, axis=1))            # chunk(3): [q | k | v]
        out["values"].append(v.copy())
        x = x + attend(m, q, k, v, allowed, layer, out, head_gates, topn, bias) @ W(p + "attn.out_proj.weight").T
        up = m.act(ln(x, p + "norm_2") @ W(p + "ffn.up_proj.weight").T)    # [T, 4 hidden]
        x = x + up @ W(p + "ffn.down_proj.weight").T
    if want_logits:
        out["logits"] = ln(x, "norm_f") @ m.lm_head().T                    # [T, vocab]
    return out


def alibi_layer0_value_input(m, tokens):
    """(h [T, hidden], W_v [H*D, hidden], b_v or None) of layer 0 (reference_forward.layer0_value_input):
    BLOOM's v rows are each head's third block of query_key_value, MPT's the last third of Wqkv."""
    W = lambda n: m.weight("transformer." + n)
    if m.model_type == "bloom":
        ln = lambda v, name: layer_norm(v, W(name + ".weight"), W(name + ".bias"), m.eps)
        x = W("word_embeddings.weight")[tokens]
        h = ln(ln(x, "word_embeddings_layernorm") if m.embed_norm else x, "h.0.input_layernorm")
        w = W("h.0.self_attention.query_key_value.weight").reshape(m.heads, 3, m.head_dim, -1)[:, 2]
        b = W("h.0.self_attention.query_key_value.bias").reshape(m.heads, 3, m.head_dim)[:, 2]
        return h, w.reshape(m.hidden, -1), b.reshape(-1)
    h = layer_norm(W("wte.weight")[tokens], W("blocks.0.norm_1.weight"), 0.0, m.eps)
    return h, W("blocks.0.attn.Wqkv.weight")[2 * m.hidden:], None
