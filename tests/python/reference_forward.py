"""Independent numpy forward for the Hugging Face checkpoints attngeom reads.

Written from transformers 4.57's eager modeling code (modeling_llama, modeling_mistral,
modeling_gemma, modeling_gemma2, modeling_gemma3, modeling_qwen2, modeling_qwen3,
modeling_olmo2, modeling_olmo3, modeling_gpt_neox, modeling_gpt2, modeling_gptj, modeling_gpt_neo,
modeling_phi, modeling_phi3, modeling_mixtral, modeling_olmoe, modeling_qwen3_moe, modeling_qwen2_moe,
modeling_smollm3, modeling_opt, modeling_falcon, modeling_bloom, modeling_mpt, modeling_olmo, modeling_starcoder2,
modeling_gpt_bigcode, modeling_stablelm, modeling_granite and modeling_rope_utils), not from
the C++ engine. Computes in float64 (or `dtype`) from the stored weights, widened. With dtype float32 and
hf_rounding=True it stands in for HF's fp32 eager forward: RoPE frequencies, angles and attention factor in
float32 as LlamaRotaryEmbedding computes them, sqrt(hidden) rounded to float32, ALiBi slopes in float32 as
build_alibi_tensor / build_mpt_alibi_tensor compute them (Falcon's, then rounded to bfloat16, in both). Shapes: T
tokens, H query heads, Hkv kv heads, D head_dim. The checkpoint is a reference_model.Model; the operations are in
reference_ops.py, the GPT-2-like families' forwards (GPT-2, GPT-J, GPT-Neo, OPT, Falcon, GPTBigCode) in
reference_forward_gpt.py, the ALiBi families' (BLOOM, MPT) in reference_forward_alibi.py.
"""
import json
import math

import numpy as np

from reference_forward_alibi import alibi_layer0_value_input, forward_bloom, forward_mpt
from reference_forward_gpt import (bigcode_split, falcon_split, forward_falcon, forward_gpt2, forward_gpt_bigcode,
                                  forward_gpt_neo, forward_gptj, forward_opt, opt_embed)
from reference_ops import (apply_partial_rope, attend, attention_mask, keep_top_n, layer_norm, named_layer_norm,
                           rms_norm, rope_cos_sin, soft_cap, softmax_masked)


def forward(model, tokens, want_logits=True, head_gates=None, topn=None):
    """Returns {"attn": [L x [H, T, T]], "values": [L x [Hkv, T, D]], "logits": [T, V]}, and for
    a mixture of experts "experts": {layer: (chosen [T, top_k], weights [T, top_k])}, the largest first.

    Optional edits (attngeom prune, docs/method.md section 7), both [layers, heads]: `topn`
    keeps each query's top-N keys of a head (0: all), renormalised; `head_gates` multiplies
    each head's attention output before o_proj (0 removes the head). The LLaMA-style layer here also runs
    StableLM's partial rotary and parallel residual and Granite's multipliers (reference_model's
    _stablelm_granite)."""
    own = FAMILY_FORWARDS.get(model.model_type)
    if own is not None:
        return own(model, tokens, want_logits, head_gates, topn)
    m, dt = model, model.dtype
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, Hkv, D = len(tokens), m.heads, m.kv_heads, m.head_dim
    assert tokens.min() >= 0 and tokens.max() < m.vocab
    # Gemma: hidden * torch.tensor(hidden ** 0.5, dtype=hidden.dtype); Granite: embedding_multiplier
    x = m.weight("model.embed_tokens.weight")[tokens] * dt(m.embed_scale)  # [T, hidden]
    residual = dt(m.residual_multiplier)                                   # Granite's; else 1
    tables = {}
    group = H // Hkv
    kv_of_head = np.arange(H) // group                                     # repeat_kv
    attn_in, attn_out, mlp_in, mlp_out = m.norm_names
    out = {"attn": [], "values": []}
    m.expert_load, m.expert_choice, m.route_gap, m.router_magnitude, m.shared_gate = [], [], [], [], []
    for layer in range(m.layers):
        p = f"model.layers.{layer}."
        W = lambda n: m.weight(p + n)
        norm = lambda v, name: v if name is None else m.norm(v, p + name)
        linear = lambda v, name: v @ W(name + ".weight").T + (W(name + ".bias") if m.has(p + name + ".bias") else 0)
        h = norm(x, attn_in)                                               # [T, hidden]
        q, k, v = linear(h, "self_attn.q_proj"), linear(h, "self_attn.k_proj"), linear(h, "self_attn.v_proj")
        if m.qk_norm == "whole":                                           # OLMo-2: over the projection
            q = rms_norm(q, W("self_attn.q_norm.weight"), m.eps, m.norm_offset)
            k = rms_norm(k, W("self_attn.k_norm.weight"), m.eps, m.norm_offset)
        if m.clip_qkv is not None:                                         # OLMo, OLMoE: clamp before RoPE
            q, k, v = (np.clip(a, -dt(m.clip_qkv), dt(m.clip_qkv)) for a in (q, k, v))
        q = q.reshape(T, H, D).transpose(1, 0, 2)                          # [H, T, D]
        k = k.reshape(T, Hkv, D).transpose(1, 0, 2)                        # [Hkv, T, D]
        v = v.reshape(T, Hkv, D).transpose(1, 0, 2)
        out["values"].append(v.copy())                                     # [Hkv, T, D]
        if m.qk_norm == "head":                                            # Qwen3, Gemma-3: per head
            q = rms_norm(q, W("self_attn.q_norm.weight"), m.eps, m.norm_offset)
            k = rms_norm(k, W("self_attn.k_norm.weight"), m.eps, m.norm_offset)
        rope = m.layer_rope[layer]
        if rope is not None:                                               # None: SmolLM3's NoPE layers
            key = (rope["theta"], json.dumps(rope["scaling"], sort_keys=True))
            if key not in tables:
                tables[key] = rope_cos_sin(np.arange(T), m.rotary_dim, rope["theta"], dt, rope["scaling"],
                                           m.hf_rounding, m.max_positions)
            cos, sin = tables[key]                                         # [T, R]: StableLM's R < D
            q, k = apply_partial_rope(q, cos, sin), apply_partial_rope(k, cos, sin)
        scores = soft_cap((q @ k[kv_of_head].transpose(0, 2, 1)) * dt(m.scale), m.attn_cap)  # [H, T, T]
        probs = softmax_masked(scores, attention_mask(T, m.layer_window[layer]))
        if topn is not None:
            probs = np.stack([keep_top_n(probs[h], int(topn[layer][h])) for h in range(H)])
        out["attn"].append(probs)
        heads_out = probs @ v[kv_of_head]                                  # [H, T, D]
        if head_gates is not None:
            heads_out = heads_out * np.asarray(head_gates[layer], dtype=dt)[:, None, None]
        ctx = heads_out.transpose(1, 0, 2).reshape(T, H * D)               # [T, H*D]
        x = x + norm(linear(ctx, "self_attn.o_proj"), attn_out) * residual
        h = h if m.parallel else norm(x, mlp_in)                           # StableLM's parallel: ln(x) for both
        if m.experts and m.sparse[layer]:
            x = x + sparse_moe(m, h, W, p)
            out.setdefault("experts", {})[layer] = m.expert_choice[-1]
            continue
        if m.mlp_kind == "plain":                                          # StarCoder2: c_proj(act(c_fc h))
            x = x + norm(linear(m.act(linear(h, "mlp.c_fc")), "mlp.c_proj"), mlp_out)
            continue
        gate = h @ W("mlp.gate_proj.weight").T                             # [T, inter]
        up = h @ W("mlp.up_proj.weight").T
        x = x + norm((m.act(gate) * up) @ W("mlp.down_proj.weight").T, mlp_out) * residual
    if want_logits:
        h = m.norm(x, "model.norm")
        out["logits"] = soft_cap(h @ m.lm_head().T, m.final_cap) / dt(m.logits_scaling)  # [T, vocab]
    return out


def sparse_moe(m, h, W, p):
    """A sparse block: each token's router probabilities (softmax over the experts), its top_k
    experts, their probabilities rescaled to sum to one where the family renormalises (Mixtral;
    OLMoE, Qwen3-MoE and Qwen2-MoE with norm_topk_prob), and the sum of those experts' gated MLPs
    down(act(gate h) * up h) weighted so; Qwen2-MoE adds its shared expert's gated MLP times
    sigmoid(shared_expert_gate h), for every token. The experts are read per expert, or fused as
    transformers 5.x saves them (mlp.gate, mlp.experts.gate_up_proj [E, 2 I, H] whose rows are
    each expert's [gate | up], mlp.experts.down_proj [E, H, I]). p: the layer's tensor prefix;
    h [T, hidden] -> [T, hidden]."""
    block, (gate_name, up_name, down_name) = m.moe_names
    fused = m.has(p + "mlp.experts.gate_up_proj")
    router = W("mlp.gate.weight" if fused else block + "gate.weight")    # [experts, hidden]
    probs = h @ router.T                                                   # [T, experts] logits
    magnitude = float((np.abs(h) @ np.abs(router).T).max())              # max sum_j |h_j w_j|
    probs = np.exp(probs - probs.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    # argsort of -p, stable: the largest first, ties to the lower expert
    chosen = np.argsort(-probs, axis=1, kind="stable")[:, :m.top_k]         # [T, top_k]
    weight = np.take_along_axis(probs, chosen, axis=1)
    if m.renormalize:
        weight /= weight.sum(axis=1, keepdims=True)
    out = np.zeros_like(h)
    load = []
    for e in range(m.experts):
        tokens, slot = np.nonzero(chosen == e)
        load.append(len(tokens))
        if not len(tokens):
            continue
        if fused:
            gate_up, down = W("mlp.experts.gate_up_proj")[e], W("mlp.experts.down_proj")[e]
            gate, up = np.split(gate_up, 2, axis=0)                        # chunk(2): [gate | up]
        else:
            E = lambda n: W(f"{block}experts.{e}.{n}.weight")
            gate, up, down = E(gate_name), E(up_name), E(down_name)
        he = h[tokens]
        y = (m.act(he @ gate.T) * (he @ up.T)) @ down.T                    # [n, hidden]
        out[tokens] += weight[tokens, slot][:, None] * y
    if m.shared_expert:
        out += shared_expert(m, h, W)
    m.router_magnitude.append(magnitude)
    m.expert_load.append(load)
    m.expert_choice.append((chosen, weight))  # [T, top_k] each, the largest first
    # log p_k - log p_(k+1) of the k-th and (k+1)-th largest: the router-logit gap, how near a tie
    ranked = -np.sort(-np.log(probs), axis=1)
    m.route_gap.append(float((ranked[:, m.top_k - 1] - ranked[:, m.top_k]).min()) if m.top_k < m.experts else 1.0)
    return out


def shared_expert(m, h, W):
    """Qwen2MoeSparseMoeBlock's shared expert: sigmoid(shared_expert_gate h) * down(act(gate h) * up h),
    the gate one scalar per token (recorded in m.shared_gate); h [T, hidden] -> [T, hidden]."""
    E = lambda n: W(f"mlp.shared_expert.{n}.weight")
    y = (m.act(h @ E("gate_proj").T) * (h @ E("up_proj").T)) @ E("down_proj").T
    gate = 1.0 / (1.0 + np.exp(-(h @ W("mlp.shared_expert_gate.weight").T)))  # [T, 1]
    m.shared_gate.append(gate[:, 0])
    return gate * y


def forward_neox(m, tokens, want_logits=True, head_gates=None, topn=None):
    """GPTNeoXForCausalLM (transformers 4.57 modeling_gpt_neox): the same outputs as forward()."""
    dt = m.dtype
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, D, R = len(tokens), m.heads, m.head_dim, m.rotary_dim
    x = m.weight("gpt_neox.embed_in.weight")[tokens]                    # [T, hidden]
    cos, sin = rope_cos_sin(np.arange(T), R, m.theta, dt, None, m.hf_rounding)  # [T, R]
    allowed = attention_mask(T, None)
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"gpt_neox.layers.{layer}."
        W = lambda n: m.weight(p + n)
        linear = lambda v, name: v @ W(name + ".weight").T + (W(name + ".bias") if m.has(p + name + ".bias") else 0)
        ln = lambda v, name: named_layer_norm(m, v, p + name)
        # qkv.view(T, H, 3 * D).transpose -> chunk(3): per head, [q | k | v]
        qkv = linear(ln(x, "input_layernorm"), "attention.query_key_value").reshape(T, H, 3 * D).transpose(1, 0, 2)
        q, k, v = qkv[..., :D], qkv[..., D:2 * D], qkv[..., 2 * D:]     # [H, T, D]
        out["values"].append(v.copy())
        # Partial rotary: rotate_half over the first R dims, the rest passed through.
        q, k = apply_partial_rope(q, cos, sin), apply_partial_rope(k, cos, sin)
        attn = linear(attend(m, q, k, v, allowed, layer, out, head_gates, topn), "attention.dense")
        mlp = lambda v: linear(m.act(linear(ln(v, "post_attention_layernorm"), "mlp.dense_h_to_4h")),
                               "mlp.dense_4h_to_h")
        if m.parallel:
            x = mlp(x) + attn + x
        else:
            a = attn + x
            x = mlp(a) + a
    if want_logits:
        h = named_layer_norm(m, x, "gpt_neox.final_layer_norm")
        out["logits"] = h @ m.lm_head().T
    return out


def forward_phi(m, tokens, want_logits=True, head_gates=None, topn=None):
    """PhiForCausalLM (transformers 4.57 modeling_phi): the same outputs as forward()."""
    dt = m.dtype
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, Hkv, D, R = len(tokens), m.heads, m.kv_heads, m.head_dim, m.rotary_dim
    x = m.weight("model.embed_tokens.weight")[tokens]
    cos, sin = rope_cos_sin(np.arange(T), R, m.theta, dt, None, m.hf_rounding)  # [T, R]
    allowed = attention_mask(T, None)
    kv_of_head = np.arange(H) // (H // Hkv)
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"model.layers.{layer}."
        W = lambda n: m.weight(p + n)
        linear = lambda v, name: v @ W(name + ".weight").T + W(name + ".bias")
        h = named_layer_norm(m, x, p + "input_layernorm")  # one norm, both branches
        heads = lambda a, n: a.reshape(T, n, D).transpose(1, 0, 2)
        q, k = heads(linear(h, "self_attn.q_proj"), H), heads(linear(h, "self_attn.k_proj"), Hkv)
        v = heads(linear(h, "self_attn.v_proj"), Hkv)
        out["values"].append(v.copy())
        # Partial rotary: the first R dims of each head, the rest passed through.
        q, k = apply_partial_rope(q, cos, sin), apply_partial_rope(k, cos, sin)
        attn = linear(attend(m, q, k[kv_of_head], v[kv_of_head], allowed, layer, out, head_gates, topn),
                      "self_attn.dense")
        ff = linear(m.act(linear(h, "mlp.fc1")), "mlp.fc2")
        x = attn + ff + x
    if want_logits:
        h = named_layer_norm(m, x, "model.final_layernorm")
        out["logits"] = h @ m.lm_head().T + m.weight("lm_head.bias")
    return out


def longrope_cos_sin(m, T):
    """_compute_longrope_parameters: inv_freq = 1 / (ext * base^(2i / R)), ext the long factors when
    T exceeds original_max_position_embeddings; cos and sin times the attention factor."""
    kind = m.rope.get("rope_type", m.rope.get("type", "default"))
    if kind == "default":
        return rope_cos_sin(np.arange(T), m.rotary_dim, m.theta, m.dtype, None, m.hf_rounding)
    assert kind == "longrope", kind
    ftype = np.float32 if m.hf_rounding else np.float64
    ext = np.asarray(m.rope["long_factor" if T > m.original else "short_factor"], dtype=ftype)
    R = m.rotary_dim
    inv_freq = ftype(1.0) / (ext * np.power(ftype(m.theta), np.arange(0, R, 2).astype(ftype) / ftype(R)))
    scale = m.max_positions / m.original
    af = m.rope.get("attention_factor") or (1.0 if scale <= 1 else math.sqrt(1 + math.log(scale) / math.log(m.original)))
    freqs = np.outer(np.arange(T).astype(ftype), inv_freq).astype(ftype)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return (np.cos(emb) * ftype(af)).astype(m.dtype), (np.sin(emb) * ftype(af)).astype(m.dtype)


def forward_phi3(m, tokens, want_logits=True, head_gates=None, topn=None):
    """Phi3ForCausalLM (transformers 4.57 modeling_phi3): the same outputs as forward()."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, Hkv, D = len(tokens), m.heads, m.kv_heads, m.head_dim
    x = m.weight("model.embed_tokens.weight")[tokens]
    cos, sin = longrope_cos_sin(m, T)                                     # [T, R]
    allowed = attention_mask(T, m.window)
    kv_of_head = np.arange(H) // (H // Hkv)
    rotate = lambda a: apply_partial_rope(a, cos, sin)
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        W = lambda n: m.weight(f"model.layers.{layer}." + n)
        h = rms_norm(x, W("input_layernorm.weight"), m.eps, 0.0)
        qkv = h @ W("self_attn.qkv_proj.weight").T                         # [T, (H + 2 Hkv) D]
        heads = lambda a, n: a.reshape(T, n, D).transpose(1, 0, 2)
        q, k = heads(qkv[:, :H * D], H), heads(qkv[:, H * D:(H + Hkv) * D], Hkv)
        v = heads(qkv[:, (H + Hkv) * D:], Hkv)
        out["values"].append(v.copy())
        ctx = attend(m, rotate(q), rotate(k)[kv_of_head], v[kv_of_head], allowed, layer, out, head_gates, topn)
        x = x + ctx @ W("self_attn.o_proj.weight").T
        gate_up = rms_norm(x, W("post_attention_layernorm.weight"), m.eps, 0.0) @ W("mlp.gate_up_proj.weight").T
        gate, up = np.split(gate_up, 2, axis=-1)                          # chunk(2, dim=-1)
        x = x + (up * m.act(gate)) @ W("mlp.down_proj.weight").T
    if want_logits:
        out["logits"] = rms_norm(x, m.weight("model.norm.weight"), m.eps, 0.0) @ m.lm_head().T
    return out


def layer0_value_input(m, tokens):
    """(h [T, hidden], W_v [kv_heads*D, hidden], b_v or None): layer 0's value projection and
    its input, the attention's normed input (for bounds on the values' rounding; clip_qkv's clamp, 1-Lipschitz,
    keeps a bound on the product one on the values)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    if m.model_type in ("bloom", "mpt"):
        return alibi_layer0_value_input(m, tokens)
    if m.model_type == "gpt_neox":
        p, H, D = "gpt_neox.layers.0.", m.heads, m.head_dim
        x = m.weight("gpt_neox.embed_in.weight")[tokens]
        h = named_layer_norm(m, x, p + "input_layernorm")
        w = m.weight(p + "attention.query_key_value.weight").reshape(H, 3 * D, -1)[:, 2 * D:]
        b = m.weight(p + "attention.query_key_value.bias").reshape(H, 3 * D)[:, 2 * D:]
        return h, w.reshape(H * D, -1), b.reshape(-1)
    if m.model_type == "gpt2":
        p, hidden = "transformer.h.0.", m.hidden
        x = m.weight("transformer.wte.weight")[tokens] + m.weight("transformer.wpe.weight")[np.arange(len(tokens))]
        h = named_layer_norm(m, x, p + "ln_1")
        return h, m.weight(p + "attn.c_attn.weight")[:, 2 * hidden:].T, m.weight(p + "attn.c_attn.bias")[2 * hidden:]
    if m.model_type == "gptj":
        p = "transformer.h.0."
        x = m.weight("transformer.wte.weight")[tokens]
        h = named_layer_norm(m, x, p + "ln_1")
        return h, m.weight(p + "attn.v_proj.weight"), None
    if m.model_type == "gpt_neo":
        p = "transformer.h.0."
        x = m.weight("transformer.wte.weight")[tokens] + m.weight("transformer.wpe.weight")[np.arange(len(tokens))]
        h = named_layer_norm(m, x, p + "ln_1")
        return h, m.weight(p + "attn.attention.v_proj.weight"), None
    if m.model_type == "opt":
        p = "model.decoder.layers.0."
        x = opt_embed(m, np.asarray(tokens, dtype=np.int64))
        W = lambda n: m.weight(p + n)
        h = named_layer_norm(m, x, p + "self_attn_layer_norm")
        return h, W("self_attn.v_proj.weight"), W("self_attn.v_proj.bias")
    if m.model_type == "gpt_bigcode":  # c_attn's v rows: where bigcode_split puts the row indices
        W = lambda n: m.weight("transformer.h.0." + n)
        x = m.weight("transformer.wte.weight")[tokens] + m.weight("transformer.wpe.weight")[np.arange(len(tokens))]
        rows = bigcode_split(m, np.arange(len(W("attn.c_attn.weight")), dtype=np.float64)[None])[2]
        rows = rows.reshape(-1).astype(np.int64)
        h = named_layer_norm(m, x, "transformer.h.0.ln_1")
        return h, W("attn.c_attn.weight")[rows], W("attn.c_attn.bias")[rows]
    if m.model_type == "falcon":  # query_key_value's v rows: where falcon_split puts the row indices
        W = lambda n: m.weight("transformer.h.0." + n)
        h = layer_norm(m.weight("transformer.word_embeddings.weight")[tokens], W(m.attn_norm + ".weight"),
                       W(m.attn_norm + ".bias"), m.eps)
        w = W("self_attention.query_key_value.weight")
        rows = falcon_split(m, np.arange(len(w), dtype=np.float64)[None])[2].reshape(-1).astype(np.int64)
        return h, w[rows], W("self_attention.query_key_value.bias")[rows] if m.linear_bias else None
    if m.model_type == "phi3":
        p, q_rows, kv_rows = "model.layers.0.", m.heads * m.head_dim, m.kv_heads * m.head_dim
        h = rms_norm(m.weight("model.embed_tokens.weight")[tokens], m.weight(p + "input_layernorm.weight"), m.eps, 0.0)
        return h, m.weight(p + "self_attn.qkv_proj.weight")[q_rows + kv_rows:], None
    if m.model_type == "phi":
        p = "model.layers.0."
        x = m.weight("model.embed_tokens.weight")[tokens]
        h = named_layer_norm(m, x, p + "input_layernorm")
        return h, m.weight(p + "self_attn.v_proj.weight"), m.weight(p + "self_attn.v_proj.bias")
    x = m.weight("model.embed_tokens.weight")[tokens] * m.embed_scale
    norm = m.norm_names[0]
    h = x if norm is None else m.norm(x, f"model.layers.0.{norm}")
    bias = "model.layers.0.self_attn.v_proj.bias"
    return h, m.weight("model.layers.0.self_attn.v_proj.weight"), m.weight(bias) if m.has(bias) else None


# The families whose layer differs from the LLaMA-style one forward() runs itself.
FAMILY_FORWARDS = {"gpt_neox": forward_neox, "gpt2": forward_gpt2, "gptj": forward_gptj, "gpt_neo": forward_gpt_neo,
                   "opt": forward_opt, "falcon": forward_falcon, "phi3": forward_phi3, "phi": forward_phi,
                   "bloom": forward_bloom, "mpt": forward_mpt, "gpt_bigcode": forward_gpt_bigcode}
