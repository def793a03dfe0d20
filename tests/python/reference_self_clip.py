"""The reference's self-checks of clip_qkv and OLMo-1 (test_reference_self.py): the olmo fixture (LayerNorms without
weight or bias, q, k and v clamped to clip_qkv before RoPE), olmoe-clip (the clamp after OLMoE's q/k norms) and
mpt-clip (Wqkv's output clamped) against forwards written token by token; then each quirk bites (no clamp, the clamp
before the q/k norms, an RMSNorm in place of OLMo's LayerNorm, another eps), a LayerNorm of unit weight and zero bias
gives OLMo's forward, and the configs the engine refuses are refused here too (the quirks on the prompt's first
BITE_TOKENS tokens: enough for every one to bite, and quicker). forward_incremental_layer, the token-by-token forward
of these LLaMA-style layers, serves StarCoder2's, StableLM's and Granite's checks too (reference_self_code.py,
reference_self_stablelm_granite.py)."""
import json
import math
import os

import numpy as np

import reference_forward as rf
from reference_model import Model, load_weights
from reference_self_alibi import edited, forward_incremental_alibi
from reference_self_falcon import check_bites
from reference_self_gpt import scalar_layer_norm
from reference_self_lib import (check, checked_fixture, loop_buffers, loop_errors, read_variants, scalar_attention,
                               scalar_rope)

# The config classes' defaults (OlmoConfig, OlmoeConfig, Starcoder2Config, StableLmConfig, GraniteConfig) the loop
# forward needs.
KV_HEADS = {"olmo": None, "olmoe": None, "starcoder2": 2, "stablelm": 32, "granite": None}
TIED = {"olmo": False, "olmoe": False, "starcoder2": True, "stablelm": False, "granite": False}
# The prompt's first tokens on which the quirks are shown to bite (over 3 x StarCoder2's window of 48).
BITE_TOKENS = 160
# The values' tolerance of the parity test (relative to their largest): an eps that changes them by 100 x it bites.
VALUES_TOL = 1e-5


def forward_incremental_layer(m, tokens, clip_first=False, stats=None):
    """OLMo-1, OLMoE, StarCoder2, StableLM and Granite token by token with a KV cache, scalar loops, from
    config.json's keys and the tensors: the norms (OLMo-1: LayerNorm without weight or bias at eps 1e-5; StarCoder2,
    StableLM: LayerNorm with weight and bias at norm_epsilon, layer_norm_eps; OLMoE, Granite: RMSNorm at
    rms_norm_eps), q, k, v, o biases by attention_bias (StarCoder2: use_bias, its MLP's too; StableLM: q, k, v by
    use_qkv_bias), OLMoE's q/k RMSNorm over the whole projection, q, k and v clamped to clip_qkv after it (with
    clip_first, before it), the pairs (i, i + R/2) of the first R channels turned by pos * rope_theta^(-2i / R) (R:
    D, StableLM's int(partial_rotary_factor D)), scores q . k / sqrt(D) (Granite's q . k attention_multiplier),
    StarCoder2's sliding_window on every layer, the MLP (gated SiLU; StarCoder2's c_proj(tanh gelu(c_fc)); OLMoE's
    top num_experts_per_tok experts weighted by their router probabilities, renormalised only with
    norm_topk_prob) after attention or, with StableLM's use_parallel_residual, beside it on the same input; Granite's
    embeddings times embedding_multiplier, branches times residual_multiplier, logits over logits_scaling; the head
    tied or not. `stats` {"q" | "k" | "v": [entries beyond clip_qkv, entries]} is filled in."""
    cfg = m.cfg
    mt = cfg["model_type"]
    T, L, H = len(tokens), cfg["num_hidden_layers"], cfg["num_attention_heads"]
    D, Hkv = cfg["hidden_size"] // H, cfg.get("num_key_value_heads") or KV_HEADS[mt] or H
    theta, clip = cfg.get("rope_theta", 10000.0), cfg.get("clip_qkv")
    window = cfg.get("sliding_window") if mt == "starcoder2" else None
    bias = {"starcoder2": cfg.get("use_bias", True), "stablelm": cfg.get("use_qkv_bias", False)}.get(
        mt, cfg.get("attention_bias", False))
    o_bias = bias and mt != "stablelm"
    eps = {"olmo": 1e-5, "starcoder2": cfg.get("norm_epsilon", 1e-5), "stablelm": cfg.get("layer_norm_eps", 1e-5)}.get(
        mt, cfg.get("rms_norm_eps", 1e-6 if mt == "granite" else 1e-5))
    R = int(D * cfg.get("partial_rotary_factor", 0.25)) if mt == "stablelm" else D
    parallel = mt == "stablelm" and cfg.get("use_parallel_residual", False)
    granite = lambda key, default: cfg.get(key, 1.0) if mt == "granite" else default
    scale, residual = granite("attention_multiplier", 1.0 / math.sqrt(D)), granite("residual_multiplier", 1.0)
    cache_k, cache_v, attn, logits = loop_buffers(L, H, Hkv, T, m.vocab)
    W = m.weight
    silu = lambda vec: np.array([u / (1.0 + math.exp(-u)) for u in vec])
    gelu = lambda vec: np.array([0.5 * u * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u ** 3)))
                                 for u in vec])
    linear = lambda vec, name, b=bias: W(name + ".weight") @ vec + (W(name + ".bias") if b else 0.0)

    def rms(vec, w):
        ms = sum(float(u) * float(u) for u in vec) / len(vec)
        return np.array([u / math.sqrt(ms + eps) for u in vec]) * w

    def norm(vec, name):
        if mt == "olmo":
            return scalar_layer_norm(vec, 1.0, 0.0, eps)
        if mt in ("starcoder2", "stablelm"):
            return scalar_layer_norm(vec, W(name + ".weight"), W(name + ".bias"), eps)
        return rms(vec, W(name + ".weight"))

    def clamp(vec, role):
        if clip is None:
            return vec
        if stats is not None:
            count = stats.setdefault(role, [0, 0])
            count[0] += sum(abs(float(u)) > clip for u in vec)
            count[1] += len(vec)
        return np.array([min(max(float(u), -clip), clip) for u in vec])

    def rotate(vec, pos):
        return scalar_rope(vec, pos, theta, R)

    def experts(h, p):
        router = [float(np.dot(W(p + "mlp.gate.weight")[e], h)) for e in range(cfg["num_experts"])]
        e_x = [math.exp(u - max(router)) for u in router]
        probs = [u / sum(e_x) for u in e_x]
        chosen = sorted(range(len(probs)), key=lambda e: (-probs[e], e))[:cfg["num_experts_per_tok"]]
        total = sum(probs[e] for e in chosen) if cfg.get("norm_topk_prob") else 1.0
        out = np.zeros(len(h))
        for e in chosen:
            E = lambda n: W(f"{p}mlp.experts.{e}.{n}.weight")
            out += probs[e] / total * (E("down_proj") @ (silu(E("gate_proj") @ h) * (E("up_proj") @ h)))
        return out

    def mlp(h, p):
        if mt == "starcoder2":
            return linear(gelu(linear(h, p + "mlp.c_fc")), p + "mlp.c_proj")
        if mt == "olmoe":
            return experts(h, p)
        gate, up = W(p + "mlp.gate_proj.weight") @ h, W(p + "mlp.up_proj.weight") @ h
        return W(p + "mlp.down_proj.weight") @ (silu(gate) * up)

    for t, tok in enumerate(tokens):
        x = W("model.embed_tokens.weight")[tok] * granite("embedding_multiplier", 1.0)
        for layer in range(L):
            p = f"model.layers.{layer}."
            h = norm(x, p + "input_layernorm")
            q, k, v = (linear(h, p + f"self_attn.{r}_proj") for r in "qkv")
            if clip_first:
                q, k, v = clamp(q, "q"), clamp(k, "k"), clamp(v, "v")
            if mt == "olmoe":
                q, k = rms(q, W(p + "self_attn.q_norm.weight")), rms(k, W(p + "self_attn.k_norm.weight"))
            if not clip_first:
                q, k, v = clamp(q, "q"), clamp(k, "k"), clamp(v, "v")
            for g in range(Hkv):
                cache_k[layer][g].append(rotate(k[g * D:(g + 1) * D], t))
                cache_v[layer][g].append(v[g * D:(g + 1) * D])
            first = 0 if window is None else max(0, t - window + 1)
            ctx = np.zeros(H * D)
            for head in range(H):
                g, qh = head * Hkv // H, rotate(q[head * D:(head + 1) * D], t)
                scores = [float(np.dot(qh, cache_k[layer][g][j])) * scale for j in range(first, t + 1)]
                scalar_attention(scores, range(first, t + 1), cache_v[layer][g], attn[layer, head, t],
                                 ctx[head * D:(head + 1) * D])
            x = x + linear(ctx, p + "self_attn.o_proj", o_bias) * residual
            x = x + mlp(h if parallel else norm(x, p + "post_attention_layernorm"), p) * residual
        tied = cfg.get("tie_word_embeddings", TIED[mt])
        logits[t] = W("model.embed_tokens.weight" if tied else "lm_head.weight") @ norm(x, "model.norm") / \
            granite("logits_scaling", 1.0)
    values = [np.array([[cache_v[l][g][t] for t in range(T)] for g in range(Hkv)]) for l in range(L)]
    return attn, values, logits


def clip_checks(fixture_dir, n_loop):
    """olmo, olmoe-clip and mpt-clip against their loop forwards, useful, the clamp and OLMo's norms biting; the
    refusals."""
    olmo_checks(fixture_dir, n_loop)
    olmoe_clip_checks(fixture_dir, n_loop)
    mpt_clip_checks(fixture_dir, n_loop)
    clip_refusals(fixture_dir)


def shares(stats):
    """'q 12%, k 9%, v 8%' of a loop forward's clamp counts."""
    return ", ".join(f"{role} {n / total:.0%}" for role, (n, total) in sorted(stats.items()))


def values_diff(a, b, layer=0):
    return float(np.abs(a["values"][layer] - b["values"][layer]).max())


def olmo_checks(fixture_dir, n_loop):
    """olmo: no norm tensors, no biases, GQA, untied; clip_qkv clamps a share of q, k and v; dropping the clamp
    (olmo-noclip) and an RMSNorm in place of the LayerNorm bite, a LayerNorm of unit weight and zero bias changes
    nothing, eps 1e-6 in place of the fixed 1e-5 changes the BOS token's values."""
    stats = {}
    d, m, tokens, ref = checked_fixture(fixture_dir, "olmo", n_loop,
                                        lambda mm, tt: forward_incremental_layer(mm, tt, stats=stats))
    names = list(load_weights(d))
    clip = m.cfg["clip_qkv"]
    check(all(0.05 < n / total < 0.3 for n, total in stats.values()) and len(stats) == 3
          and not any("norm" in k or k.endswith(".bias") for k in names) and m.has("lm_head.weight")
          and m.kv_heads == 2 < m.heads and "rms_norm_eps" not in m.cfg,
          f"olmo: clip_qkv {clip} clamps q, k, v entries of the first {n_loop} tokens: {shares(stats)}; "
          f"{len(names)} tensors, none a norm or a bias; untied lm_head; {m.heads} heads on {m.kv_heads} kv heads")
    tokens = tokens[:BITE_TOKENS]
    ref = rf.forward(m, tokens)
    layer_names = [f"model.layers.{l}.{n}" for l in range(m.layers) for n in ("input_layernorm",
                                                                             "post_attention_layernorm")]
    unit = lambda kind, bias: edited(d, norm_kind=kind, w=dict(
        m.w, **{n + ".weight": np.ones(m.hidden) for n in layer_names + ["model.norm"]},
        **({n + ".bias": np.zeros(m.hidden) for n in layer_names + ["model.norm"]} if bias else {})))
    same = rf.forward(unit("layer", True), tokens)
    diff = max(float(np.abs(same["logits"] - ref["logits"]).max()),
               max(float(np.abs(a - b).max()) for a, b in zip(same["attn"], ref["attn"])))
    check(diff < 1e-12, f"olmo: LayerNorms of unit weight and zero bias give the weightless ones' forward "
                        f"(max diff {diff:.1e})")
    noclip = rf.forward(Model(os.path.join(fixture_dir, "olmo-noclip")), tokens)
    check_bites("olmo", ref, {"no clamp (olmo-noclip)": (noclip, 0, None),
                              "RMSNorm of unit weight in place of the LayerNorm": (rf.forward(unit("rms", False),
                                                                                               tokens), 0, None)})
    at_clip = float(np.mean(np.abs(ref["values"][0]) == clip))
    dv = values_diff(noclip, ref)
    check(dv > 0.1 and at_clip > 0.05, f"olmo: v's clamp bites: {at_clip:.0%} of layer 0's values at +-{clip}, "
                                       f"{dv:.2f} from olmo-noclip's")
    other = rf.forward(edited(d, eps=1e-6), tokens)
    dv = values_diff(other, ref) / float(np.abs(ref["values"][0]).max())
    check(dv > 100 * VALUES_TOL, f"olmo: eps 1e-6 in place of 1e-5 changes layer 0's values (the small BOS "
                                 f"embedding's) by {dv:.1e} of their max (> 100 x the tolerance {VALUES_TOL:.0e})")


def olmoe_clip_checks(fixture_dir, n_loop):
    """olmoe-clip: olmoe's weights with clip_qkv; the clamp bites, and comes after the q/k norms (before them,
    attention differs)."""
    stats = {}
    d, m, tokens, ref = checked_fixture(fixture_dir, "olmoe-clip", n_loop,
                                        lambda mm, tt: forward_incremental_layer(mm, tt, stats=stats))
    check(stats["q"][0] and stats["k"][0] and stats["v"][0] and m.clip_qkv == m.cfg["clip_qkv"],
          f"olmoe-clip: clip_qkv {m.clip_qkv} clamps q, k, v entries of the first {n_loop} tokens: {shares(stats)}")
    tokens = tokens[:BITE_TOKENS]
    check_bites("olmoe-clip", rf.forward(m, tokens), {
        "no clamp (olmoe)": (rf.forward(Model(os.path.join(fixture_dir, "olmoe")), tokens), 0, None)})
    n = n_loop // 2
    e = loop_errors(m, forward_incremental_layer(m, tokens[:n], clip_first=True), rf.forward(m, tokens[:n]))
    check(e[0] > 0.1, f"olmoe-clip: the clamp before the q/k norms changes attention by {e[0]:.2f} (> 0.1) on "
                      f"{n} tokens")


def mpt_clip_checks(fixture_dir, n_loop):
    """mpt-clip: mpt's weights with attn_config.clip_qkv, against reference_self_alibi's loop forward (Wqkv's rows
    clamped); the clamp bites. Its clamped values (the largest then clip_qkv) leave the float32 reference's values
    error within the tolerance, not half (the engine answers to the fp32 stand-in's, as on mpt)."""
    d, m, tokens, ref = checked_fixture(fixture_dir, "mpt-clip", n_loop, forward_incremental_alibi, attn_tol=1e-5,
                                        values_tol=1e-5)
    clip = m.cfg["attn_config"]["clip_qkv"]
    at_clip = float(np.mean(np.abs(ref["values"][0]) == clip))
    check(m.clip_qkv == clip and at_clip > 0.01, f"mpt-clip: attn_config.clip_qkv {clip}: {at_clip:.1%} of layer 0's "
                                                 f"values at +-{clip}")
    tokens = tokens[:BITE_TOKENS]
    check_bites("mpt-clip", rf.forward(m, tokens), {
        "no clamp (mpt)": (rf.forward(Model(os.path.join(fixture_dir, "mpt")), tokens), 0, None)})


def clip_refusals(fixture_dir):
    """clip_qkv 0 or below refused for OLMo and OLMoE (HF would clamp every entry to 0, or invert the bounds), below 0
    for MPT (0 is no clamp there: MptAttention tests it for truth), and anywhere on a family without it (LLaMA);
    OLMo's eps fixed whatever rms_norm_eps says."""
    cfgs = {}
    for name in ("olmo", "olmoe-clip", "mpt-clip", "llama"):
        with open(os.path.join(fixture_dir, name, "config.json")) as f:
            cfgs[name] = json.load(f)
    olmo, mpt = cfgs["olmo"], cfgs["mpt-clip"]
    attn = lambda clip: dict(mpt, attn_config=dict(mpt["attn_config"], clip_qkv=clip))
    got = {}
    for name, variants in (("olmo", {"olmo: clip_qkv 0": dict(olmo, clip_qkv=0), "olmo: clip_qkv -1":
                                     dict(olmo, clip_qkv=-1.0)}),
                           ("olmoe-clip", {"olmoe: clip_qkv 0": dict(cfgs["olmoe-clip"], clip_qkv=0.0)}),
                           ("mpt-clip", {"mpt: clip_qkv -1": attn(-1.0)}),
                           ("llama", {"llama: clip_qkv 2": dict(cfgs["llama"], clip_qkv=2.0)})):
        got.update(read_variants(os.path.join(fixture_dir, name), variants, lambda mm: "read"))
    check(set(got.values()) == {"refused"}, "refused: " + ", ".join(f"{k} {v}" for k, v in got.items()))
    got = read_variants(os.path.join(fixture_dir, "olmo"), {"olmo: rms_norm_eps 0.1": dict(olmo, rms_norm_eps=0.1)},
                        lambda mm: (mm.eps, mm.norm_kind, mm.clip_qkv))
    got.update(read_variants(os.path.join(fixture_dir, "mpt-clip"), {"mpt: clip_qkv 0": attn(0)},
                             lambda mm: (mm.clip_qkv,)))
    check(list(got.values()) == [(1e-5, "weightless", olmo["clip_qkv"]), (0,)],
          "read: " + "; ".join(f"{k}: {v}" for k, v in got.items()))
