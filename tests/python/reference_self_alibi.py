"""The reference's self-checks of the ALiBi families (test_reference_self.py): the slope rule against
transcriptions of transformers' two recipes, the BLOOM tokenizer reading, the bloom and mpt fixtures against a forward
written token by token (each head's rows of the fused projection found by index arithmetic, the bias slope * j for
BLOOM and slope * (j - t) for MPT at query t), bloom-prefixed against bloom; then each quirk bites (no bias, slopes
out of order, no embedding norm, another qkv split, another gelu), the bias's origin does not matter, and the configs
the engine refuses are refused here too. Falcon-RW (falcon-rw) against reference_self_falcon's loop forward, its
quirks (the bias before the scale, linear biases, no RoPE, HF's bfloat16 bias) biting."""
import json
import math
import os

import numpy as np

from harness import bpe_encode  # tools/bpe_encode.py, the test suite's reader of BLOOM's tokenizer.json
import reference_forward as rf
import reference_ops as ops
from reference_model import Model, load_weights
from reference_forward_alibi import falcon_alibi_bias
from reference_self_falcon import bf16, check_bites, forward_incremental_falcon
from reference_self_gpt import scalar_layer_norm
from reference_self_lib import (PROMPT, check, check_loop_forward, check_useful, checked_fixture, float32_errors,
                                loop_buffers, prompt_tokens, read_variants, scalar_attention)


def bloom_recipe(n):
    """build_alibi_tensor's slopes, in float64: c = 2^floor(log2 n); (2^(-8/c))^k for k = 1..c; then
    (2^(-4/c))^k for k = 1, 3, .. (n - c of them, at most c)."""
    c = 2 ** math.floor(math.log2(n))
    slopes = [(2.0 ** (-8.0 / c)) ** k for k in range(1, c + 1)]
    return slopes + [(2.0 ** (-4.0 / c)) ** k for k in range(1, 2 * min(c, n - c), 2)]


def mpt_recipe(n, bias_max=8):
    """build_mpt_alibi_tensor's slopes, in float64: p = 2^ceil(log2 n); 1 / 2^(m bias_max / p) for m = 1..p, then
    where p != n the odd-indexed ones before the even-indexed ones, the first n."""
    p = 2 ** math.ceil(math.log2(n))
    slopes = [1.0 / 2.0 ** (m * (bias_max / p)) for m in range(1, p + 1)]
    return slopes if p == n else (slopes[1::2] + slopes[::2])[:n]


def slope_checks():
    """alibi_slopes (closed form) against both recipes for 1..256 heads, BLOOM's 6 by hand; the float32 slopes of
    the fp32 stand-in against the closed form rounded."""
    six = ops.alibi_slopes(6)
    check(list(six) == [4.0 ** -1, 4.0 ** -2, 4.0 ** -3, 4.0 ** -4, 2.0 ** -1, 2.0 ** -3],
          f"alibi slopes of 6 heads: {', '.join(f'2^{math.log2(s):.0f}' for s in six)}")
    rel = lambda a, b: float(np.max(np.abs(np.asarray(a) / np.asarray(b) - 1)))
    worst = max(max(rel(ops.alibi_slopes(n), bloom_recipe(n)), rel(ops.alibi_slopes(n), mpt_recipe(n)))
                for n in range(1, 257))
    other = max(rel(ops.alibi_slopes(n, b), mpt_recipe(n, b)) for n in range(1, 65) for b in (4, 12, 16))
    check(worst < 1e-13 and other < 1e-13,  # a power k <= 128 of a rounded base: k ulps at most
          f"alibi slopes == BLOOM's recipe == MPT's (bias max 8) for 1..256 heads (max rel diff {worst:.1e}); "
          f"== MPT's at bias max 4, 12, 16 ({other:.1e})")
    ulps = max(rel(ops.alibi_slopes_torch_f32(n, fam).astype(np.float64), ops.alibi_slopes(n).astype(np.float32))
               for n in range(1, 129) for fam in ("bloom", "mpt")) / 2.0 ** -24
    exact = all(np.array_equal(ops.alibi_slopes_torch_f32(n, fam), ops.alibi_slopes(n).astype(np.float32))
                for n in (6, 8) for fam in ("bloom", "mpt"))
    check(ulps < 64 and exact, f"torch's float32 slopes within {ulps:.0f} float32 ulps of the closed form "
                               f"(1..128 heads), equal for the fixtures' 6 and 8")
    bf16_slopes = lambda n, torch_f32: ops.round_bf16(ops.alibi_slopes_torch_f32(n, "bloom") if torch_f32
                                                      else ops.alibi_slopes(n))
    same = all(np.array_equal(bf16_slopes(n, False), bf16_slopes(n, True)) for n in range(1, 257))
    got = [float(x) for x in ops.round_bf16(ops.alibi_slopes(12))[8:]]
    check(same and got == [181 / 256, 181 / 512, 181 / 1024, 181 / 2048],
          f"Falcon's bfloat16 slopes: the closed form's == torch's float32 ones' for 1..256 heads; 12 heads' extra "
          f"2^-0.5 .. 2^-3.5 as 181 / 2^8 .. 181 / 2^11 ({got})")


def tokenizer_checks(fixture_dir):
    """bpe_encode's reading of BLOOM's Split: Oniguruma's one class (whitespace, ( | ) and the marks out); the prompt's
    ids spell the prompt byte for byte, with no BOS, the same as the tokenizer_config asks for none."""
    got = bpe_encode.pieces("f(x) | a  b...c,d\n\ne (ok)")
    want = ["f", "(", "x", ") |", " a", " ", " b", "...", "c", ",", "d", "\n\n", "e", " (", "ok", ")"]
    check(got == want, f"BLOOM's Split (Isolated): {got}")
    d = os.path.join(fixture_dir, "bloom")
    with open(os.path.join(d, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    with open(os.path.join(d, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    spelled = {i: s for s, i in tok["model"]["vocab"].items()}
    to_byte = {c: b for b, c in bpe_encode.byte_alphabet().items()}
    ids = prompt_tokens(d, Model(d))
    text = bytes(to_byte[c] for i in ids for c in spelled[i]).decode("utf-8")
    with open(PROMPT, encoding="utf-8") as f:
        prompt = f.read().removesuffix("\n")
    check(text == prompt and ids[0] != 1 and "add_bos_token" not in config,
          f"bloom: the prompt's {len(ids)} ids spell it byte for byte; position 0 is the text's (no <s>)")


def forward_incremental_alibi(m, tokens):
    """BLOOM or MPT token by token with a KV cache, scalar loops: LayerNorms by hand (MPT's without bias, BLOOM's
    embedding norm first), each head's q, k, v rows of the fused projection by index (BLOOM: block 3 h + r of
    head_dim rows, MPT: block r H + h), the score at query t and key j q . k / sqrt(D) + slope_h j (BLOOM) or
    q . k softmax_scale + slope_h (j - t) (MPT), slopes from the recipes above, MPT's q, k and v entries clamped to
    attn_config's clip_qkv where it is set; BLOOM's gelu with its 0.79788456, MPT's erf; the tied head."""
    bloom = m.model_type == "bloom"
    T, H, D, L = len(tokens), m.heads, m.head_dim, m.layers
    slopes = bloom_recipe(H) if bloom else mpt_recipe(H)
    cache_k, cache_v, attn, logits = loop_buffers(L, H, H, T, m.vocab)
    E = lambda n: m.weight("transformer." + n)
    norm = lambda vec, name: scalar_layer_norm(vec, E(name + ".weight"), E(name + ".bias") if bloom else 0.0, m.eps)
    if bloom:
        gelu = lambda u: u * 0.5 * (1.0 + math.tanh(0.79788456 * u * (1 + 0.044715 * u * u)))
    else:
        gelu = lambda u: 0.5 * u * (1.0 + math.erf(u / math.sqrt(2.0)))
    block = (lambda h, r: 3 * h + r) if bloom else (lambda h, r: r * H + h)
    clip = None if bloom else (m.cfg.get("attn_config") or {}).get("clip_qkv")
    clamp = (lambda vec: vec) if not clip else (lambda vec: np.array([min(max(float(u), -clip), clip) for u in vec]))
    for t, tok in enumerate(tokens):
        x = norm(E("word_embeddings.weight")[tok], "word_embeddings_layernorm") if bloom else E("wte.weight")[tok]
        for layer in range(L):
            p = f"h.{layer}." if bloom else f"blocks.{layer}."
            fused = E(p + ("self_attention.query_key_value.weight" if bloom else "attn.Wqkv.weight"))
            h = norm(x, p + ("input_layernorm" if bloom else "norm_1"))
            bias = E(p + "self_attention.query_key_value.bias") if bloom else np.zeros(len(fused))
            rows = lambda head, r: clamp(fused[block(head, r) * D:(block(head, r) + 1) * D] @ h +
                                         bias[block(head, r) * D:(block(head, r) + 1) * D])
            ctx = np.zeros(H * D)
            for head in range(H):
                cache_k[layer][head].append(rows(head, 1))
                cache_v[layer][head].append(rows(head, 2))
                q, origin = rows(head, 0), 0 if bloom else t
                scores = [float(np.dot(q, kj)) / math.sqrt(D) + slopes[head] * (j - origin)
                          for j, kj in enumerate(cache_k[layer][head])]
                scalar_attention(scores, range(t + 1), cache_v[layer][head], attn[layer, head, t],
                                 ctx[head * D:(head + 1) * D])
            if bloom:
                x = x + E(p + "self_attention.dense.weight") @ ctx + E(p + "self_attention.dense.bias")
                up = E(p + "mlp.dense_h_to_4h.weight") @ norm(x, p + "post_attention_layernorm") + \
                    E(p + "mlp.dense_h_to_4h.bias")
                x = x + E(p + "mlp.dense_4h_to_h.weight") @ np.array([gelu(u) for u in up]) + \
                    E(p + "mlp.dense_4h_to_h.bias")
            else:
                x = x + E(p + "attn.out_proj.weight") @ ctx
                up = E(p + "ffn.up_proj.weight") @ norm(x, p + "norm_2")
                x = x + E(p + "ffn.down_proj.weight") @ np.array([gelu(u) for u in up])
        head_w = E("word_embeddings.weight" if bloom else "wte.weight")
        logits[t] = head_w @ norm(x, "ln_f" if bloom else "norm_f")
    values = [np.array([[cache_v[l][g][t] for t in range(T)] for g in range(H)]) for l in range(L)]
    return attn, values, logits


def alibi_checks(fixture_dir, n_loop):
    """The slope rule and BLOOM's tokenizer reading; every ALiBi fixture against its loop forward, useful, its quirks
    biting; then the refusals."""
    slope_checks()
    tokenizer_checks(fixture_dir)
    bloom_checks(fixture_dir, n_loop)
    mpt_checks(fixture_dir, n_loop)
    falcon_rw_checks(fixture_dir, n_loop)
    refusals(fixture_dir)


def common(fixture_dir, name, n_loop):
    """(dir, model, tokens, reference forward) of an ALiBi fixture, its loop forward and usefulness checked."""
    # The bias reaches slope 1/2 x ~600 keys: scores near 300, whose float32 ulp (3e-5) rounds the attention
    # more than elsewhere, as HF's fp32 eager does: within the tolerance, not half (the engine answers to the
    # fp32 stand-in's error, as on gpt-neo).
    return checked_fixture(fixture_dir, name, n_loop, forward_incremental_alibi, attn_tol=1e-5)


def edited(d, **attrs):
    """A fresh copy of fixture d's model with attributes changed (slopes, embed_norm, act, ...)."""
    other = Model(d)
    for key, value in attrs.items():
        setattr(other, key, value)
    return other


def origin_invariance(name, d, m, tokens, ref):
    """The bias from the other end (slope * (j - (T - 1)) for BLOOM, slope * j for MPT) gives the same forward
    within float64 rounding: softmax ignores a constant added to a row."""
    alt = rf.forward(edited(d, alibi_shift=not m.alibi_shift), tokens)
    da = max(float(np.abs(a - b).max()) for a, b in zip(alt["attn"], ref["attn"]))
    dl = float(np.abs(alt["logits"] - ref["logits"]).max() / np.abs(ref["logits"]).max())
    other = "j" if m.alibi_shift else "j - (T - 1)"
    check(da < 1e-12 and dl < 1e-12, f"{name}: the bias slope * ({other}) gives the same attention (max diff "
                                     f"{da:.1e}) and logits ({dl:.1e} of their max)")


def bloom_checks(fixture_dir, n_loop):
    """bloom: 6 heads (the extra slopes), the embedding LayerNorm, per-head qkv, bare names; bloom-prefixed equal."""
    d, m, tokens, ref = common(fixture_dir, "bloom", n_loop)
    bare, prefixed = list(load_weights(d)), list(load_weights(os.path.join(fixture_dir, "bloom-prefixed")))
    alt = rf.forward(Model(os.path.join(fixture_dir, "bloom-prefixed")), tokens)
    diff = max(np.abs(alt["logits"] - ref["logits"]).max(), max(np.abs(a - b).max() for a, b in zip(alt["attn"],
                                                                                                   ref["attn"])))
    check(diff == 0 and not any(k.startswith("transformer.") for k in bare)
          and all(k.startswith("transformer.") for k in prefixed),
          f"bloom-prefixed: {len(prefixed)} transformer.* tensors give bloom's forward ({len(bare)} bare names) "
          f"exactly (max diff {diff:.1e})")
    H = m.heads
    blocks = Model(d)  # rows moved so that reading per head sees what a [q | k | v] reader of the stored rows sees
    for key in [k for k in blocks.w if "query_key_value" in k]:
        w = blocks.w[key]
        blocks.w[key] = w.reshape(3, H, m.head_dim, -1).transpose(1, 0, 2, 3).reshape(w.shape)
    plain = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
    check_bites("bloom", ref, {
        "no ALiBi": (rf.forward(edited(d, slopes=0 * m.slopes), tokens), 0, None),
        "slopes 2^(-8k/6) in order": (rf.forward(edited(d, slopes=plain), tokens), 0, None),
        "slopes reversed": (rf.forward(edited(d, slopes=m.slopes[::-1].copy()), tokens), 0, None),
        "no word_embeddings_layernorm": (rf.forward(edited(d, embed_norm=None), tokens), 0, None),
        "query_key_value read as [q | k | v]": (rf.forward(blocks, tokens), 0, None)})
    origin_invariance("bloom", d, m, tokens, ref)


def mpt_checks(fixture_dir, n_loop):
    """mpt: 8 heads, exact gelu, [q | k | v] Wqkv, the bias relative to the last key."""
    d, m, tokens, ref = common(fixture_dir, "mpt", n_loop)
    check_bites("mpt", ref, {
        "no ALiBi": (rf.forward(edited(d, slopes=0 * m.slopes), tokens), 0, None),
        "slopes reversed": (rf.forward(edited(d, slopes=m.slopes[::-1].copy()), tokens), 0, None)})
    # tanh gelu instead of erf: small (the two differ by < 1e-3), but far above the fp32 stand-in's error
    alt = rf.forward(edited(d, act=ops.gelu_tanh), tokens)
    da = min(float(np.abs(a - b).max()) for a, b in zip(alt["attn"][1:], ref["attn"][1:]))
    dl = float(np.abs(alt["logits"] - ref["logits"]).max() / np.abs(ref["logits"]).max())
    e_a, _, e_l = float32_errors(d, tokens, ref, m.layers)
    check(da > 100 * e_a and dl > 100 * e_l,
          f"mpt: tanh gelu instead of erf changes attention by >= {da:.1e} on layers 1.. and the logits by {dl:.1e} "
          f"of their max (> 100 x the float32 reference's {e_a:.1e}, {e_l:.1e})")
    origin_invariance("mpt", d, m, tokens, ref)


def refusals(fixture_dir):
    """The configs the engine refuses (transformers would run another model than the config says), refused here;
    the key spellings read beside them."""
    cfgs = {}
    for name in ("bloom", "mpt"):
        with open(os.path.join(fixture_dir, name, "config.json")) as f:
            cfgs[name] = json.load(f)
    bloom, mpt = cfgs["bloom"], cfgs["mpt"]
    attn = lambda **kw: dict(mpt, attn_config=dict(mpt["attn_config"], **kw))
    refused = {"apply_residual_connection_post_layernorm": dict(bloom, apply_residual_connection_post_layernorm=True),
               "slow_but_exact with pretraining_tp 4": dict(bloom, slow_but_exact=True)}
    got = read_variants(os.path.join(fixture_dir, "bloom"), refused, lambda m: "read")
    refused = {"expansion_ratio 2": dict(mpt, expansion_ratio=2), "alibi false": attn(alibi=False),
               "alibi_bias_max 16": attn(alibi_bias_max=16), "qk_ln": attn(qk_ln=True),
               "prefix_lm": attn(prefix_lm=True), "multiquery_attention": attn(attn_type="multiquery_attention"),
               "logit_scale 0.5": dict(mpt, logit_scale=0.5), "no_bias false": dict(mpt, no_bias=False),
               "norm_type rmsnorm": dict(mpt, norm_type="rmsnorm")}
    got.update(read_variants(os.path.join(fixture_dir, "mpt"), refused, lambda m: "read"))
    check(set(got.values()) == {"refused"}, "bloom, mpt: refused: " + ", ".join(f"{k} {v}" for k, v in got.items()))
    layout = lambda m: (m.hidden, m.layers, m.heads, round(m.scale, 12), m.clip_qkv if m.model_type == "mpt" else None)
    read = {"bloom: hidden_size 64 beside n_embed 96": dict(bloom, hidden_size=64),
            "bloom: num_hidden_layers 2, num_attention_heads 3 over n_layer, n_head": dict(bloom, num_hidden_layers=2,
                                                                                           num_attention_heads=3),
            "bloom: slow_but_exact, pretraining_tp 1": dict(bloom, slow_but_exact=True, pretraining_tp=1)}
    got = read_variants(os.path.join(fixture_dir, "bloom"), read, layout)
    read = {"mpt: hidden_size, num_hidden_layers, num_attention_heads": dict(mpt, hidden_size=32, num_hidden_layers=2,
                                                                              num_attention_heads=4),
            "mpt: softmax_scale 0.5, clip_qkv 2": attn(softmax_scale=0.5, clip_qkv=2.0)}
    got.update(read_variants(os.path.join(fixture_dir, "mpt"), read, layout))
    want = [(96, 3, 6, 0.25, None), (96, 2, 3, round(32 ** -0.5, 12), None), (96, 3, 6, 0.25, None),
            (32, 2, 4, round(8 ** -0.5, 12), None), (64, 3, 8, 0.5, 2.0)]
    check(list(got.values()) == want, "bloom, mpt: read: " + "; ".join(f"{k}: {v}" for k, v in got.items()))


def falcon_rw_checks(fixture_dir, n_loop):
    """falcon-rw: Falcon-RW-1B's layout (12 heads) against reference_self_falcon's loop forward with the recipe's
    slopes, useful; its quirks bite; the bias's origin matters only through HF's bfloat16 rounding, which bites."""
    d = os.path.join(fixture_dir, "falcon-rw")
    m = Model(d)
    tokens, H = prompt_tokens(d, m), m.heads
    ref = rf.forward(m, tokens)
    check_loop_forward("falcon-rw", m, forward_incremental_falcon(m, tokens[:n_loop], bloom_recipe(H)),
                       rf.forward(m, tokens[:n_loop]), n_loop)
    check_useful("falcon-rw", d, m, tokens, ref)
    T, bias = len(tokens), falcon_alibi_bias(m, len(tokens))[:, 0]
    scalar = np.array([[bf16(bf16(s) * bf16(j)) for j in range(T)] for s in bloom_recipe(H)])
    off = int((bias != np.outer(ops.alibi_slopes(H), np.arange(T))).sum())
    check(np.array_equal(bias, scalar), f"falcon-rw: the bias == bf16(bf16(slope) bf16(j)) by frexp for all {T} keys "
                                        f"({off} of {H * T} not slope * j)")
    cfg, p = m.cfg, "transformer.h.0."
    biases = [n for n in ("self_attention.query_key_value", "self_attention.dense", "mlp.dense_h_to_4h",
                          "mlp.dense_4h_to_h") if m.has(p + n + ".bias")]
    check(cfg["alibi"] and cfg["bias"] and "rope_theta" not in cfg and not m.rotary and len(biases) == 4
          and m.qkv_layout == "per_head" and not m.parallel and m.tied,
          f"falcon-rw: alibi and bias, no rope_theta, per head [q | k | v], sequential, tied; biases on {biases}")
    check_bites("falcon-rw", ref, {
        "no ALiBi": (rf.forward(edited(d, slopes=0 * m.slopes), tokens), 0, None),
        "ALiBi added after the scale (BLOOM's order)": (rf.forward(edited(d, alibi_scaled=False), tokens), 0, None),
        "no linear biases": (rf.forward(edited(d, linear_bias=False), tokens), 0, None),
        "RoPE as well": (rf.forward(edited(d, rotary=True), tokens), 0, None),
        "ALiBi twice (HF eager's: its mask holds alibi / sqrt(D) too)": (rf.forward(edited(d, slopes=2 * m.slopes),
                                                                                    tokens), 0, None)})
    exact = dict(slopes=ops.alibi_slopes(H), alibi_bf16=False)
    plain = rf.forward(edited(d, **exact), tokens)
    moved = rf.forward(edited(d, alibi_origin="query", **exact), tokens)
    diff = lambda a, b: (max(float(np.abs(x - y).max()) for x, y in zip(a["attn"], b["attn"])),
                         float(np.abs(a["logits"] - b["logits"]).max() / np.abs(b["logits"]).max()))
    da, dl = diff(moved, plain)
    check(da < 1e-12 and dl < 1e-12, f"falcon-rw: unrounded, the bias slope * (j - i) gives slope * j's attention "
                                      f"(max diff {da:.1e}) and logits ({dl:.1e} of their max)")
    e_a, _, e_l = float32_errors(d, tokens, ref, m.layers)
    (ra, rl), (oa, ol) = diff(plain, ref), diff(rf.forward(edited(d, alibi_origin="query"), tokens), ref)
    check(min(ra, oa) > 100 * e_a and min(rl, ol) > 100 * e_l,
          f"falcon-rw: HF's bfloat16 bias bites: unrounded slopes and products change attention by {ra:.1e} and the "
          f"logits by {rl:.1e} of their max, rounded from the query (j - i) by {oa:.1e} and {ol:.1e} (> 100 x the "
          f"float32 reference's {e_a:.1e}, {e_l:.1e})")
