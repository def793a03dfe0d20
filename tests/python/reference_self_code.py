"""The reference's self-checks of BigCode's code models (test_reference_self.py): starcoder2 against
reference_self_clip's token-by-token forward of the LLaMA-style layer (LayerNorms with biases, biased projections,
the non-gated MLP, the window on every layer), gpt-bigcode (multi_query) and gpt-bigcode-mha against a forward
written token by token that finds each head's rows of c_attn by index arithmetic from the config alone; then each
quirk bites (window, biases, norm_epsilon, rope_theta; another c_attn split, no positions, unscaled scores) and the
configs the engine refuses are refused here too (the quirks on the prompt's first BITE_TOKENS tokens)."""
import json
import math
import os

import numpy as np

import reference_forward as rf
import reference_ops as ops
from reference_model import Model, load_weights
from reference_self_alibi import edited
from reference_self_clip import BITE_TOKENS, VALUES_TOL, forward_incremental_layer
from reference_self_falcon import check_bites
from reference_self_gpt import scalar_layer_norm
from reference_self_lib import check, checked_fixture, loop_buffers, read_variants, scalar_attention


def code_checks(fixture_dir, n_loop):
    """starcoder2, gpt-bigcode and gpt-bigcode-mha against their loop forwards, useful, their quirks biting; the
    refusals."""
    starcoder2_checks(fixture_dir, n_loop)
    gpt_bigcode_checks(fixture_dir, n_loop)


def zeroed_norm_biases(d):
    """A copy of fixture d's model whose LayerNorms' biases are zero."""
    other = edited(d)
    for k in [k for k in other.w if k.endswith("norm.bias")]:
        other.w[k] = np.zeros_like(other.w[k])
    return other


def starcoder2_checks(fixture_dir, n_loop):
    """starcoder2: GQA, biases on every projection and LayerNorm, tied; the window bites on every layer (zero beyond
    it), and so do the projections' biases (use_bias false), the LayerNorms' biases, norm_epsilon (at the small BOS
    embedding) and the written rope_theta."""
    d, m, tokens, ref = checked_fixture(fixture_dir, "starcoder2", n_loop, forward_incremental_layer)
    cfg, T, L = m.cfg, len(tokens), m.layers
    window = cfg["sliding_window"]
    beyond = ~ops.attention_mask(T, window) & ops.attention_mask(T, None)
    outside = max(float(np.where(beyond, a, 0).max()) for a in ref["attn"])
    names = list(load_weights(d))
    biases = sorted({k.split(".")[-2] for k in names if k.endswith(".bias")})
    check(m.layer_window == [window] * L and T > 2 * window and outside == 0 and m.tied and not m.has("lm_head.weight")
          and m.kv_heads == 2 < m.heads and "head_dim" not in cfg and m.eps == cfg["norm_epsilon"] != 1e-5,
          f"starcoder2: T={T} > 2 x sliding_window {window} on every layer, zero beyond it; tied; {m.heads} heads on "
          f"{m.kv_heads} kv heads; norm_epsilon {m.eps}; biases on {', '.join(biases)}")
    tokens = tokens[:BITE_TOKENS]
    ref = rf.forward(m, tokens)
    unbiased = read_variants(d, {"use_bias false": dict(cfg, use_bias=False)}, lambda mm: rf.forward(mm, tokens))
    check_bites("starcoder2", ref, {
        "no window": (rf.forward(edited(d, layer_window=[None] * L), tokens), 0, None),
        "use_bias false (no projection biases)": (unbiased["use_bias false"], 0, None),
        "LayerNorms without their biases": (rf.forward(zeroed_norm_biases(d), tokens), 0, None),
        "rope_theta 10000 (the default) for the written 100000": (
            rf.forward(edited(d, layer_rope=[{"theta": 10000.0, "scaling": None}] * L), tokens), 0, None)})
    other = rf.forward(edited(d, eps=1e-5), tokens)
    dv = float(np.abs(other["values"][0] - ref["values"][0]).max() / np.abs(ref["values"][0]).max())
    check(dv > 100 * VALUES_TOL and cfg["rms_norm_eps"] == 1e-5,
          f"starcoder2: eps 1e-5 (the default, and the rms_norm_eps written beside it) for norm_epsilon {m.eps} changes "
          f"layer 0's values (the small BOS embedding's) by {dv:.1e} of their max (> 100 x the tolerance "
          f"{VALUES_TOL:.0e})")


def bigcode_blocks(cfg):
    """Where GPTBigCodeAttention finds each head in c_attn's output (blocks of head_dim rows), from the config:
    multi_query (default true): the query heads 0 .. H - 1, then one k and one v; else per head its q, k, v."""
    H = cfg["n_head"]
    if cfg.get("multi_query", True):
        return dict(q=list(range(H)), k=[H], v=[H + 1], kv_of=[0] * H)
    return dict(q=[3 * h for h in range(H)], k=[3 * h + 1 for h in range(H)], v=[3 * h + 2 for h in range(H)],
                kv_of=list(range(H)))


def forward_incremental_bigcode(m, tokens):
    """GPTBigCode token by token with a KV cache, scalar loops: the token's embedding plus wpe's row t, LayerNorms
    by hand, each head's q, k, v from its own rows of c_attn (bigcode_blocks) with their biases, scores
    q . k / sqrt(D), a query head reading its kv head; attention then the tanh-gelu MLP on the residual; the head
    tied to wte."""
    cfg = m.cfg
    blocks = bigcode_blocks(cfg)
    T, L, H, Hkv = len(tokens), cfg["n_layer"], cfg["n_head"], len(blocks["k"])
    D, eps = cfg["n_embd"] // H, cfg.get("layer_norm_epsilon", 1e-5)
    cache_k, cache_v, attn, logits = loop_buffers(L, H, Hkv, T, m.vocab)
    E = lambda n: m.weight("transformer." + n)
    gelu = lambda vec: np.array([0.5 * u * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u ** 3)))
                                 for u in vec])
    for t, tok in enumerate(tokens):
        x = E("wte.weight")[tok] + E("wpe.weight")[t]
        for layer in range(L):
            W = lambda n: E(f"h.{layer}.{n}")
            linear = lambda vec, name: W(name + ".weight") @ vec + W(name + ".bias")
            norm = lambda vec, name: scalar_layer_norm(vec, W(name + ".weight"), W(name + ".bias"), eps)
            h = norm(x, "ln_1")
            rows = lambda b: W("attn.c_attn.weight")[b * D:(b + 1) * D] @ h + \
                W("attn.c_attn.bias")[b * D:(b + 1) * D]
            for g in range(Hkv):
                cache_k[layer][g].append(rows(blocks["k"][g]))
                cache_v[layer][g].append(rows(blocks["v"][g]))
            ctx = np.zeros(H * D)
            for head in range(H):
                g, qh = blocks["kv_of"][head], rows(blocks["q"][head])
                scores = [float(np.dot(qh, kj)) / math.sqrt(D) for kj in cache_k[layer][g]]
                scalar_attention(scores, range(t + 1), cache_v[layer][g], attn[layer, head, t],
                                 ctx[head * D:(head + 1) * D])
            x = x + linear(ctx, "attn.c_proj")
            x = x + linear(gelu(linear(norm(x, "ln_2"), "mlp.c_fc")), "mlp.c_proj")
        logits[t] = E("wte.weight") @ scalar_layer_norm(x, E("ln_f.weight"), E("ln_f.bias"), eps)
    values = [np.array([[cache_v[l][g][t] for t in range(T)] for g in range(Hkv)]) for l in range(L)]
    return attn, values, logits


def swapped_kv(d):
    """A copy of fixture d's model (multi_query) whose c_attn k and v rows are swapped: what a reader of [q | v | k]
    sees in the stored rows."""
    other = Model(d)
    n, D = other.hidden, other.head_dim
    for key in [k for k in other.w if "attn.c_attn." in k]:
        a = other.w[key]
        other.w[key] = np.concatenate([a[:n], a[n + D:n + 2 * D], a[n:n + D]])
    return other


def gpt_bigcode_checks(fixture_dir, n_loop):
    """gpt-bigcode (one kv head: c_attn [q heads | k | v]) and gpt-bigcode-mha (per head [q | k | v]); each quirk
    bites: another split of c_attn, no learned positions, unscaled scores; then the config readings and refusals."""
    d, m, tokens, ref = checked_fixture(fixture_dir, "gpt-bigcode", n_loop, forward_incremental_bigcode)
    H, D, h = m.heads, m.head_dim, m.hidden
    rows = m.weight("transformer.h.0.attn.c_attn.weight").shape[0]
    up = m.weight("transformer.h.0.mlp.c_fc.weight").shape[0]
    check(m.cfg["multi_query"] and m.kv_heads == 1 and ref["values"][0].shape[0] == 1 and rows == h + 2 * D
          and m.cfg["n_inner"] is None and up == 4 * h and m.tied and not m.has("lm_head.weight"),
          f"gpt-bigcode: multi_query: one kv head, c_attn {rows} rows = hidden + 2 D; n_inner null: c_fc {up} rows; "
          f"tied (no lm_head.weight)")
    tokens = tokens[:BITE_TOKENS]
    ref = rf.forward(m, tokens)
    no_wpe = edited(d)
    no_wpe.w["transformer.wpe.weight"] = np.zeros_like(no_wpe.w["transformer.wpe.weight"])
    check_bites("gpt-bigcode", ref, {
        "c_attn's k and v read swapped": (rf.forward(swapped_kv(d), tokens), 0, None),
        "no learned positions (wpe)": (rf.forward(no_wpe, tokens), 0, None),
        "scores not divided by sqrt(D)": (rf.forward(edited(d, scale=1.0), tokens), 0, None)})
    d, m, tokens, ref = checked_fixture(fixture_dir, "gpt-bigcode-mha", n_loop, forward_incremental_bigcode)
    rows = m.weight("transformer.h.0.attn.c_attn.weight").shape[0]
    check(not m.cfg["multi_query"] and m.kv_heads == H and rows == 3 * h and m.cfg["n_inner"] == m.ffn != 4 * h,
          f"gpt-bigcode-mha: multi_query false: {H} kv heads, c_attn {rows} rows; n_inner {m.ffn} (not 4 x {h})")
    tokens = tokens[:BITE_TOKENS]
    check_bites("gpt-bigcode-mha", rf.forward(m, tokens), {
        "c_attn read as GPT-2's [q | k | v]": (rf.forward(edited(d, qkv_layout="concat"), tokens), 0, None)})
    gpt_bigcode_configs(fixture_dir)


def gpt_bigcode_configs(fixture_dir):
    """scale_attn_weights false (unscaled scores: the engine refuses it) refused; GPTBigCodeConfig's attribute_map
    names winning over n_embd, n_layer, n_head; multi_query true when not written; gelu (exact) read."""
    d = os.path.join(fixture_dir, "gpt-bigcode-mha")
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    got = read_variants(d, {"scale_attn_weights false": dict(cfg, scale_attn_weights=False)}, lambda mm: "read")
    check(set(got.values()) == {"refused"}, "gpt-bigcode: refused: " + ", ".join(f"{k} {v}" for k, v in got.items()))
    layout = lambda mm: (mm.hidden, mm.layers, mm.heads, mm.kv_heads, mm.qkv_layout, mm.act.__name__)
    got = read_variants(d, {
        "hidden_size 32, num_hidden_layers 2, num_attention_heads 2": dict(cfg, hidden_size=32, num_hidden_layers=2,
                                                                           num_attention_heads=2),
        "multi_query not written": {k: v for k, v in cfg.items() if k != "multi_query"},
        "activation_function gelu": dict(cfg, activation_function="gelu")}, layout)
    want = [(32, 2, 2, 2, "per_head", "gelu_tanh"), (64, 3, 4, 1, "grouped", "gelu_tanh"),
            (64, 3, 4, 4, "per_head", "gelu_erf")]
    check(list(got.values()) == want, "gpt-bigcode: read: " + "; ".join(f"{k}: {v}" for k, v in got.items()))
