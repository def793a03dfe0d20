#!/usr/bin/python3
"""Checks the numpy reference itself, so a bug in the oracle cannot hide one in the engine.

  test_reference_self.py --fixtures DIR

1. Hand-computed values: RMSNorm, SiLU, ReLU, tanh-GELU, RoPE, masks, bf16 rounding.
2. A second, structurally different forward (token by token with a KV cache, scalar
   loops over heads and keys, RoPE as explicit pair rotations) must agree with the
   batched reference on every fixture to 1e-10; GPT-J's too, with its interleaved pairs
   (2i, 2i + 1), and with pairs (i, i + R/2) once its q/k rows are de-interleaved; SmolLM3's
   with its NoPE layers left unturned; GPT-Neo's with learned positions, unscaled scores and
   windows on its local layers only; OPT's with positions from row t + 2; Falcon's with each head's rows
   of the fused query_key_value found by index arithmetic (reference_self_falcon.py); BLOOM's and MPT's
   with ALiBi slopes from transcriptions of transformers' two recipes (reference_self_alibi.py); OLMo-1's,
   OLMoE's and MPT's with q, k, v clamped to clip_qkv (reference_self_clip.py); StarCoder2's and GPTBigCode's
   (reference_self_code.py); StableLM's partial rotary and parallel residual and Granite's multipliers
   (reference_self_stablelm_granite.py). Qwen2-MoE's sparse block (routed experts and the sigmoid-gated shared expert)
   against one written token by token.
3. The fixtures are useful: some heads are peaky, everything is finite, and a float32
   run of the reference stays well inside the engine's tolerances.
"""
import argparse
import json
import math
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools"))
import reference_forward as rf  # noqa: E402
from reference_model import Model  # noqa: E402
import reference_ops as ops  # noqa: E402
import st_reader  # noqa: E402
from checkpoint_files import Tensor, f32_to_bf16_bits, write_safetensors  # noqa: E402
from reference_self_lib import (check, check_loop_forward, close, failures, float32_errors,  # noqa: E402
                                loop_buffers, prompt_tokens, scalar_attention)
from reference_self_gpt import gpt_neo_checks, gptj_checks, opt_checks  # noqa: E402
from reference_self_falcon import falcon_checks  # noqa: E402
from reference_self_alibi import alibi_checks  # noqa: E402
from reference_self_clip import clip_checks  # noqa: E402
from reference_self_code import code_checks  # noqa: E402
from reference_self_stablelm_granite import stablelm_granite_checks  # noqa: E402

FIXTURES = ["llama", "mistral", "gemma", "mistral-nowindow", "smollm3", "smollm3-windowed"]
def hand_computed():
    x = np.array([[3.0, 4.0]])
    check(close(ops.rms_norm(x, np.array([1.0, 2.0]), 0.0, 0.0), [[3 / math.sqrt(12.5), 8 / math.sqrt(12.5)]], 1e-15),
          "rms_norm([3,4], w=[1,2], eps=0)")
    check(close(ops.rms_norm(x, np.array([0.0, 1.0]), 0.5, 1.0), [[3 / math.sqrt(13.0), 8 / math.sqrt(13.0)]], 1e-15),
          "rms_norm gemma (1 + w), eps=0.5")
    check(close(ops.silu(np.array([1.0, -2.0])), [0.7310585786300049, -0.2384058440442351], 1e-15), "silu(1), silu(-2)")
    check(close(ops.relu(np.array([-1.5, 0.0, 2.5])), [0.0, 0.0, 2.5], 0), "relu(-1.5), relu(0), relu(2.5)")
    # torch.nn.functional.gelu(torch.tensor([1., -0.5, 3.]), approximate="tanh")
    check(close(ops.gelu_tanh(np.array([1.0, -0.5, 3.0])),
                [0.8411919906082768, -0.15428599017485606, 2.996362607918227], 1e-14), "gelu_tanh known values")
    check(close(ops.rotate_half(np.array([1.0, 2.0, 3.0, 4.0])), [-3.0, -4.0, 1.0, 2.0], 0), "rotate_half")
    # head_dim 2: inv_freq = [1]; position p rotates (x0, x1) by angle p
    cos, sin = ops.rope_cos_sin([0, 1, 2], 2, 10000.0, np.float64)
    v = ops.apply_rope(np.array([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]]), cos, sin)
    check(close(v, [[[1, 0], [math.cos(1), math.sin(1)], [-math.sin(2), math.cos(2)]]], 1e-15), "rope 2-d rotation")
    # head_dim 4, theta 100: inv_freq = [1, 0.1]; pairs are (0, 2) and (1, 3)
    cos, sin = ops.rope_cos_sin([3], 4, 100.0, np.float64)
    v = ops.apply_rope(np.array([[[1.0, 1.0, 0.0, 0.0]]]), cos, sin)
    check(close(v, [[[math.cos(3), math.cos(0.3), math.sin(3), math.sin(0.3)]]], 1e-15), "rope pairs (i, i + D/2)")
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(1, 1, 16)), rng.normal(size=(1, 1, 16))
    def dot_at(m, n):
        cq, sq = ops.rope_cos_sin([m], 16, 500.0, np.float64)
        ck, sk = ops.rope_cos_sin([n], 16, 500.0, np.float64)
        return float(np.sum(ops.apply_rope(q, cq, sq) * ops.apply_rope(k, ck, sk)))
    check(abs(dot_at(7, 3) - dot_at(107, 103)) < 1e-12, "rope scores depend on relative position only")
    check(close(ops.rotate_every_two(np.array([1.0, 2.0, 3.0, 4.0])), [-2.0, 1.0, -4.0, 3.0], 0), "rotate_every_two")
    # GPT-J, rotary_dim 4: inv_freq = [1, 0.01]; pairs are (0, 1) and (2, 3)
    cos, sin = ops.gptj_cos_sin([3], 4, np.float64)
    v = ops.apply_rope_interleaved(np.array([[[1.0, 0.0, 1.0, 0.0]]]), cos, sin)
    check(close(v, [[[math.cos(3), math.sin(3), math.cos(0.03), math.sin(0.03)]]], 1e-15),
          "gptj rope pairs (2i, 2i + 1)")
    mask = ops.attention_mask(5, 2).astype(int)
    check((mask == np.array([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 1, 1, 0, 0],
                            [0, 0, 1, 1, 0], [0, 0, 0, 1, 1]])).all(), "sliding window 2 mask")
    check((ops.attention_mask(3, None) == np.tril(np.ones((3, 3), bool))).all(), "causal mask, no window")
    causal = np.tril(np.ones((7, 7), bool))  # GPT-Neo's local layers: bias ^ tril(bias, -window_size)
    check((ops.attention_mask(7, 3) == causal ^ np.tril(causal, -3)).all(), "gpt-neo local mask, window_size 3")
    p = ops.softmax_masked(np.array([[[0.0, 5.0], [1.0, 1.0]]]), np.array([[True, False], [True, True]]))
    check(close(p, [[[1.0, 0.0], [0.5, 0.5]]], 1e-15), "masked softmax")
    bits = f32_to_bf16_bits(np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, -2.5, 1e-40], np.float32))
    check(list(bits) == [0x3F80, 0x3F80, 0x3F82, 0xC020, 0x0001], "bf16 round-to-nearest-even")


def st_roundtrip():
    rng = np.random.default_rng(1)
    a32 = rng.normal(size=(3, 5)).astype(np.float32)
    a16 = rng.normal(size=(7,)).astype(np.float16)
    abf = rng.normal(size=(2, 2, 3)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.safetensors")
        write_safetensors(path, [Tensor.from_array("a", "F32", a32), Tensor.from_array("b", "F16", a16),
                                 Tensor.from_array("c", "BF16", abf)])
        t, meta, dt = st_reader.read(path)
        raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    check((8 + n) % 8 == 0, "safetensors data starts 8-byte aligned")
    check(meta == {"format": "pt"} and dt == {"a": "F32", "b": "F16", "c": "BF16"}, "safetensors metadata/dtypes")
    check((t["a"] == a32).all() and (t["b"] == a16).all(), "safetensors F32/F16 round trip")
    check(close(t["c"], abf, 2**-8 * np.abs(abf).max()) and t["c"].dtype == np.float32, "safetensors BF16 round trip")


def forward_incremental(m, tokens):
    """Token-by-token decode with a KV cache; scalar loops for attention; each layer's window, and
    no rotation on a layer without RoPE (SmolLM3's NoPE layers).

    Returns attention rows [L][H][T] lists (dense, zero-padded), values and logits."""
    T, H, Hkv, D = len(tokens), m.heads, m.kv_heads, m.head_dim
    half = D // 2
    cache_k, cache_v, attn, logits = loop_buffers(m.layers, H, Hkv, T, m.vocab)

    def norm(vec, w):
        ms = sum(float(u) * float(u) for u in vec) / len(vec)
        return np.array([u / math.sqrt(ms + m.eps) for u in vec]) * (m.norm_offset + w)

    def rotate(vec, pos):
        out = np.array(vec, dtype=np.float64)
        for i in range(half):
            angle = pos * m.theta ** (-2.0 * i / D)
            a, b = vec[i], vec[i + half]
            out[i] = a * math.cos(angle) - b * math.sin(angle)
            out[i + half] = b * math.cos(angle) + a * math.sin(angle)
        return out

    for t, tok in enumerate(tokens):
        x = m.weight("model.embed_tokens.weight")[tok] * m.embed_scale
        for layer in range(m.layers):
            W = lambda n: m.weight(f"model.layers.{layer}.{n}")
            rope, window = m.layer_rope[layer], m.layer_window[layer]
            assert rope is None or rope == {"theta": m.theta, "scaling": None}, rope  # plain RoPE only
            turn = (lambda vec, pos: np.array(vec, dtype=np.float64)) if rope is None else rotate
            h = norm(x, W("input_layernorm.weight"))
            q = W("self_attn.q_proj.weight") @ h
            k = W("self_attn.k_proj.weight") @ h
            v = W("self_attn.v_proj.weight") @ h
            for g in range(Hkv):
                cache_k[layer][g].append(turn(k[g * D:(g + 1) * D], t))
                cache_v[layer][g].append(v[g * D:(g + 1) * D])
            first = 0 if window is None else max(0, t - window + 1)
            ctx = np.zeros(H * D)
            for head in range(H):
                g = head * Hkv // H
                qh = turn(q[head * D:(head + 1) * D], t)
                scores = [float(np.dot(qh, cache_k[layer][g][j])) / math.sqrt(D) for j in range(first, t + 1)]
                scalar_attention(scores, range(first, t + 1), cache_v[layer][g], attn[layer, head, t],
                                 ctx[head * D:(head + 1) * D])
            x = x + W("self_attn.o_proj.weight") @ ctx
            h = norm(x, W("post_attention_layernorm.weight"))
            gate, up = W("mlp.gate_proj.weight") @ h, W("mlp.up_proj.weight") @ h
            act = np.array([m.act(np.array(u)) for u in gate])
            x = x + W("mlp.down_proj.weight") @ (act * up)
        logits[t] = m.lm_head() @ norm(x, m.weight("model.norm.weight"))
    values = [np.array([[cache_v[l][g][t] for t in range(T)] for g in range(Hkv)]) for l in range(m.layers)]
    return attn, values, logits


def fixture_checks(fixture_dir, name, n_loop):
    d = os.path.join(fixture_dir, name)
    m = Model(d)
    tokens = prompt_tokens(d, m)
    ref = rf.forward(m, tokens)
    T = len(tokens)
    # 2. the loop implementation on a prefix (long enough to cross the sliding window)
    ref_p = rf.forward(m, tokens[:n_loop])
    check_loop_forward(name, m, forward_incremental(m, tokens[:n_loop]), ref_p, n_loop)
    # a prefix of the batched forward equals the forward of the prefix (causality)
    pre = max(np.abs(ref["attn"][l][:, :n_loop, :n_loop] - ref_p["attn"][l]).max() for l in range(m.layers))
    check(pre < 1e-12 and np.abs(ref["logits"][:n_loop] - ref_p["logits"]).max() < 1e-9,
          f"{name}: causal: prefix rows unchanged by later tokens ({pre:.1e})")
    # 3. fixture usefulness
    finite = all(np.isfinite(a).all() for a in ref["attn"] + ref["values"]) and np.isfinite(ref["logits"]).all()
    check(finite, f"{name}: finite outputs")
    peaky = [float((a.max(-1) > 0.5).mean()) for a in ref["attn"]]
    diffuse = [float((a.max(-1) < 0.1).mean()) for a in ref["attn"]]
    check(min(peaky) > 0.05 and min(diffuse) > 0.05,
          f"{name}: attention mixes peaky and diffuse rows (max p > 0.5: {min(peaky):.2f}, < 0.1: {min(diffuse):.2f})")
    windowed = [l for l in range(m.layers) if m.layer_window[l] is not None]
    if windowed:
        window = max(m.layer_window[l] for l in windowed)
        outside = max(np.abs(np.where(ops.attention_mask(T, m.layer_window[l]), 0, ref["attn"][l])).max()
                      for l in windowed)
        where = "" if len(windowed) == m.layers else f" on layers {windowed}"
        check(T > 2 * window and outside == 0, f"{name}: T={T} > 2 x window {window}, zero outside it{where}")
    e_a, e_v, e_l = float32_errors(d, tokens, ref, m.layers)
    check(e_a < 0.5e-5 and e_v < 0.5e-5 and e_l < 0.5e-4,
          f"{name}: float32 reference within half the tolerances (attn {e_a:.1e}, values rel {e_v:.1e}, "
          f"logits rel {e_l:.1e})")


def moe_checks(fixture_dir, name, fused_variant=None):
    """A mixture-of-experts fixture routes to every expert, and no token's choice is a near tie
    that float32 and float64 could break differently; the variant holding the same weights with
    the experts fused (transformers 5.x's layout) gives the same forward."""
    d = os.path.join(fixture_dir, name)
    m = Model(d)
    tokens = prompt_tokens(d, m)
    ref = rf.forward(m, tokens)
    if fused_variant is not None:
        fused = rf.forward(Model(os.path.join(fixture_dir, fused_variant)), tokens)
        diff = max(np.abs(fused["logits"] - ref["logits"]).max(),
                   max(np.abs(a - b).max() for a, b in zip(fused["values"], ref["values"])))
        check(diff == 0, f"{fused_variant}: the fused experts give {name}'s forward exactly (max diff {diff:.1e})")
    sparse = [i for i in range(m.layers) if m.sparse[i]]
    check(len(m.expert_load) == len(sparse) > 0, f"{name}: sparse layers {sparse} of {m.layers}")
    least = min(min(load) for load in m.expert_load)
    check(least >= 0.05 * len(tokens) * m.top_k / m.experts,
          f"{name}: every expert of every layer gets tokens (loads {m.expert_load})")
    # An fp32 router logit over hidden terms errs by at most hidden * eps * sum|h_j w_j| (Higham);
    # the gap must exceed twice that bound, with the largest sum|h_j w_j| of the fixture.
    bound = 2 * m.hidden * np.finfo(np.float32).eps * max(m.router_magnitude)
    check(min(m.route_gap) > bound,
          f"{name}: no near-tie among the router's choices (logit gap {min(m.route_gap):.1e} > {bound:.1e})")


def qwen3_moe_layer_kinds(fixture_dir):
    """The qwen3-moe fixture has both kinds of layers, and both rules bite: decoder_sparse_step
    makes some layers dense, and mlp_only_layers makes dense a layer the step would make sparse;
    its top-k weights are renormalised, OLMoE's are not."""
    m = Model(os.path.join(fixture_dir, "qwen3-moe"))
    step, only = m.cfg["decoder_sparse_step"], m.cfg["mlp_only_layers"]
    by_step = [i for i in range(m.layers) if (i + 1) % step != 0]
    by_list = [i for i in only if (i + 1) % step == 0]
    check(any(m.sparse) and by_step and by_list and not any(m.sparse[i] for i in by_step + by_list),
          f"qwen3-moe: sparse {[i for i in range(m.layers) if m.sparse[i]]}, dense by decoder_sparse_step {by_step}, "
          f"by mlp_only_layers {by_list}")
    olmoe = Model(os.path.join(fixture_dir, "olmoe"))
    check(m.renormalize and not olmoe.renormalize and olmoe.top_k > 2,
          f"norm_topk_prob: qwen3-moe renormalises, olmoe does not (top-{olmoe.top_k})")


def moe_block_by_token(m, h, W):
    """Qwen2MoeSparseMoeBlock for one token h [hidden], by scalar loops: the router's softmax, the
    top_k experts (ties to the lower index) weighted by their probabilities as they are (no
    renormalisation), then the shared expert times sigmoid(shared_expert_gate . h)."""
    logits = [float(np.dot(W("mlp.gate.weight")[e], h)) for e in range(m.experts)]
    top = max(logits)
    e_x = [math.exp(v - top) for v in logits]
    probs = [v / sum(e_x) for v in e_x]
    silu = lambda vec: np.array([u / (1 + math.exp(-u)) for u in vec])
    gated = lambda w: W(w + "down_proj.weight") @ (silu(W(w + "gate_proj.weight") @ h) * (W(w + "up_proj.weight") @ h))
    out = np.zeros(m.hidden)
    for e in sorted(range(m.experts), key=lambda e: (-probs[e], e))[:m.top_k]:
        out += probs[e] * gated(f"mlp.experts.{e}.")
    gate = 1.0 / (1.0 + math.exp(-float(np.dot(W("mlp.shared_expert_gate.weight")[0], h))))
    return out + gate * gated("mlp.shared_expert.")


def qwen2_moe_checks(fixture_dir):
    """The qwen2-moe fixture's quirks bite: mlp_only_layers makes a dense layer among sparse ones; the
    top-k weights are not renormalised; q/k/v have biases and o_proj none; the shared expert's gate
    runs across its range and the shared expert changes the logits. Then its window and its block."""
    d = os.path.join(fixture_dir, "qwen2-moe")
    m = Model(d)
    tokens = prompt_tokens(d, m)
    ref = rf.forward(m, tokens)
    sparse = [i for i in range(m.layers) if m.sparse[i]]
    sums = np.concatenate([w.sum(axis=1) for _, w in ref["experts"].values()])

    def logits_change(edit):
        """max |logit change| / max |logit| once `edit` has changed a fresh copy of the model."""
        other = Model(d)
        edit(other)
        return float(np.abs(rf.forward(other, tokens)["logits"] - ref["logits"]).max() / np.abs(ref["logits"]).max())

    dl = logits_change(lambda other: setattr(other, "renormalize", True))
    check(sparse == [0, 2] and m.cfg["mlp_only_layers"] == [1] and not m.renormalize and sums.min() < 0.9 and dl > 0.01,
          f"qwen2-moe: sparse {sparse}, dense by mlp_only_layers {m.cfg['mlp_only_layers']}; top-{m.top_k} weights "
          f"not renormalised (their sums {sums.min():.2f} .. {sums.max():.2f}; renormalised, the logits change by "
          f"{dl:.3f} of their max)")
    p = "model.layers.0.self_attn."
    check(all(m.has(p + n + "_proj.bias") for n in "qkv") and not m.has(p + "o_proj.bias"),
          "qwen2-moe: q, k, v biases, none on o_proj")
    spread = [np.percentile(g, [5, 95]) for g in m.shared_gate]
    check(all(lo < 0.25 and hi > 0.75 for lo, hi in spread),
          "qwen2-moe: sigmoid(shared_expert_gate) per sparse layer, 5th .. 95th percentile: "
          + "; ".join(f"{lo:.2f} .. {hi:.2f}" for lo, hi in spread))
    dl = logits_change(lambda other: setattr(other, "shared_expert", False))
    check(dl > 0.1, f"qwen2-moe: without the shared expert the logits change by {dl:.2f} of their max")
    qwen2_moe_window(d, m, len(tokens))
    qwen2_moe_block(d)


def qwen2_moe_window(d, m, T):
    """sliding_window is written (below the prompt, with max_window_layers below the layer count) but,
    without use_sliding_window, windows nothing; a config that sets use_sliding_window is refused."""
    window = m.cfg["sliding_window"]
    check(set(m.layer_window) == {None} and T > 2 * window and m.cfg["max_window_layers"] < m.layers,
          f"qwen2-moe: sliding_window {window}, max_window_layers {m.cfg['max_window_layers']}, use_sliding_window "
          f"false: no window on any layer (T={T})")
    with tempfile.TemporaryDirectory() as tmp:
        for name in os.listdir(d):
            if name != "config.json":
                os.symlink(os.path.abspath(os.path.join(d, name)), os.path.join(tmp, name))
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(dict(m.cfg, use_sliding_window=True), f)
        try:
            Model(tmp)
            refused = False
        except AssertionError:
            refused = True
    check(refused, "qwen2-moe: use_sliding_window true refused (transformers' versions and backends disagree)")


def qwen2_moe_block(d):
    """The batched sparse block of the qwen2-moe fixture's layer 2 equals moe_block_by_token's on
    random inputs."""
    block = Model(d)
    for record in ("expert_load", "expert_choice", "route_gap", "router_magnitude", "shared_gate"):
        setattr(block, record, [])  # what forward() starts, for sparse_moe called alone
    h = np.random.default_rng(3).normal(size=(24, block.hidden))
    W = lambda n: block.weight("model.layers.2." + n)
    batched = rf.sparse_moe(block, h, W, "model.layers.2.")
    err = max(float(np.abs(batched[t] - moe_block_by_token(block, h[t], W)).max()) for t in range(len(h)))
    check(err < 1e-12, f"qwen2-moe: sparse block == token-by-token routed + shared experts (max diff {err:.1e})")


def smollm3_checks(fixture_dir):
    """SmolLM3's quirks bite on its fixtures: the layers no_rope_layers (written, or by default
    every no_rope_layer_interval-th) leaves unturned, and only they, change the forward if turned;
    the windowed variant slides exactly its NoPE layers, and differs from the plain fixture from
    its first differing layer on; the tied head (no lm_head.weight) shapes the logits; a config
    whose written layer_types slide a layer without use_sliding_window is refused."""
    d, dw = os.path.join(fixture_dir, "smollm3"), os.path.join(fixture_dir, "smollm3-windowed")
    m, mw = Model(d), Model(dw)
    nope = [l for l in range(m.layers) if m.layer_rope[l] is None]
    nope_w = [l for l in range(mw.layers) if mw.layer_rope[l] is None]
    windows = [l for l in range(mw.layers) if mw.layer_window[l] is not None]
    check(nope == [3] and nope_w == [1, 3] and windows == nope_w and set(mw.layer_window) == {None, 48}
          and set(m.layer_window) == {None} and m.theta == mw.theta == 2e6,
          f"smollm3: NoPE layers {nope} (no_rope_layer_interval 4); smollm3-windowed: NoPE {nope_w}, "
          f"windows {mw.layer_window}")
    tokens = prompt_tokens(d, m)
    ref = rf.forward(m, tokens)
    turned = Model(d)
    turned.layer_rope = [turned.layer_rope[0]] * m.layers
    alt = rf.forward(turned, tokens)
    diffs = [float(np.abs(a - b).max()) for a, b in zip(alt["attn"], ref["attn"])]
    check(diffs[3] > 0.1 and max(diffs[:3]) == 0,
          f"smollm3: RoPE on NoPE layer 3 changes its attention by {diffs[3]:.2f} (> 0.1), layers 0-2 by "
          f"{max(diffs[:3]):.0e}")
    ref_w = rf.forward(mw, tokens)
    diffs = [float(np.abs(a - b).max()) for a, b in zip(ref_w["attn"], ref["attn"])]
    unwindowed = Model(dw)
    unwindowed.layer_window = [None] * mw.layers
    free = rf.forward(unwindowed, tokens)
    bite = min(float(np.abs(free["attn"][l] - ref_w["attn"][l]).max()) for l in windows)
    check(diffs[0] == 0 and min(diffs[1:]) > 0.1 and bite > 0.1,
          f"smollm3-windowed: attention as smollm3's on layer 0, apart by >= {min(diffs[1:]):.2f} on 1-3; "
          f"dropping the window changes its NoPE layers by >= {bite:.2f}")
    top = float((ref["logits"].argmax(-1) == np.array(tokens)).mean())
    check(m.tied and not m.has("lm_head.weight") and top > 0.5,
          f"smollm3: tied, no lm_head.weight; the embedding as head makes the current token the top logit "
          f"at {top:.2f} of positions (chance {1 / m.vocab:.3f})")
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(os.path.abspath(os.path.join(d, "model.safetensors")), os.path.join(tmp, "model.safetensors"))
        refused = []
        for use in (False, True):
            with open(os.path.join(tmp, "config.json"), "w") as f:
                json.dump(dict(cfg, sliding_window=48, use_sliding_window=use,
                               layer_types=["full_attention", "sliding_attention"] * 2), f)
            try:
                refused.append(Model(tmp).layer_window)
            except AssertionError:
                refused.append("refused")
    check(refused == ["refused", [None, 48, None, 48]],
          f"smollm3: written layer_types slide layers 1, 3: without use_sliding_window {refused[0]}, "
          f"with it {refused[1]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--loop-tokens", type=int, default=80)
    args = ap.parse_args()
    hand_computed()
    st_roundtrip()
    for name in FIXTURES:
        fixture_checks(args.fixtures, name, args.loop_tokens)
    gptj_checks(args.fixtures, args.loop_tokens)
    gpt_neo_checks(args.fixtures, args.loop_tokens)
    smollm3_checks(args.fixtures)
    moe_checks(args.fixtures, "mixtral", "mixtral-v5")
    moe_checks(args.fixtures, "olmoe")
    moe_checks(args.fixtures, "qwen3-moe", "qwen3-moe-v5")
    qwen3_moe_layer_kinds(args.fixtures)
    opt_checks(args.fixtures, args.loop_tokens)
    moe_checks(args.fixtures, "qwen2-moe", "qwen2-moe-v5")
    qwen2_moe_checks(args.fixtures)
    falcon_checks(args.fixtures, args.loop_tokens)
    alibi_checks(args.fixtures, args.loop_tokens)
    clip_checks(args.fixtures, args.loop_tokens)
    moe_checks(args.fixtures, "olmoe-clip")
    code_checks(args.fixtures, args.loop_tokens)
    stablelm_granite_checks(args.fixtures, args.loop_tokens)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
