"""Shared by the reference's self-checks (test_reference_self.py, reference_self_gpt.py,
reference_self_falcon.py): the failure list and its check, the prompt's token ids, a loop forward
against the batched one, the float32 reference's errors, a fixture's usefulness, and the configs
a family's reader refuses."""
import json
import math
import os
import tempfile

import numpy as np

import harness
import reference_forward as rf
from reference_model import Model

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "data", "fixture_prompt.txt")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def close(a, b, tol):
    return np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))) <= tol


def prompt_tokens(model_dir, model):
    """The prompt's ids as capture gives them (harness.prompt_ids: spm_encode's after BOS, or a tokenizer.json's)."""
    return harness.prompt_ids(model_dir, model.bos, PROMPT)[0]


def float32_errors(d, tokens, ref, layers):
    """The float32 reference's largest errors against the float64 one `ref`: attention
    (absolute), values and logits (relative to their largest magnitude)."""
    f32 = rf.forward(Model(d, np.float32), tokens)
    e_a = max(np.abs(f32["attn"][l] - ref["attn"][l]).max() for l in range(layers))
    e_v = max(np.abs(f32["values"][l] - ref["values"][l]).max() / np.abs(ref["values"][l]).max() for l in range(layers))
    e_l = np.abs(f32["logits"] - ref["logits"]).max() / np.abs(ref["logits"]).max()
    return e_a, e_v, e_l


def loop_errors(m, run, ref_p):
    """The largest differences of a loop forward's (attn, values, logits) `run` from the batched
    reference `ref_p` of the same tokens."""
    attn, values, logits = run
    return (max(np.abs(attn[l] - ref_p["attn"][l]).max() for l in range(m.layers)),
            max(np.abs(values[l] - ref_p["values"][l]).max() for l in range(m.layers)),
            np.abs(logits - ref_p["logits"]).max())


def check_loop_forward(name, m, run, ref_p, n_loop, what="loop forward"):
    """A loop forward equals the batched reference to 1e-10."""
    e = loop_errors(m, run, ref_p)
    check(max(e) < 1e-10, f"{name}: {what} == batched reference on {n_loop} tokens "
                          f"(attn {e[0]:.1e}, values {e[1]:.1e}, logits {e[2]:.1e})")


def check_useful(name, d, m, tokens, ref, attn_tol=0.5e-5, values_tol=0.5e-5):
    """Finite outputs; in every layer a head with peaky rows (max p > 0.5) and one with diffuse rows
    (max p < 0.1), each on more than 5 % of its rows; a float32 run within half the tolerances (its
    attention within attn_tol, its values within values_tol)."""
    finite = all(np.isfinite(a).all() for a in ref["attn"] + ref["values"]) and np.isfinite(ref["logits"]).all()
    check(finite, f"{name}: finite outputs")
    peaky = [float((a.max(-1) > 0.5).mean(-1).max()) for a in ref["attn"]]
    diffuse = [float((a.max(-1) < 0.1).mean(-1).max()) for a in ref["attn"]]
    shares = lambda xs: ", ".join(f"{x:.2f}" for x in xs)
    check(min(peaky) > 0.05 and min(diffuse) > 0.05,
          f"{name}: every layer has a peaky and a diffuse head (their shares of rows with max p > 0.5: "
          f"{shares(peaky)}; < 0.1: {shares(diffuse)})")
    e_a, e_v, e_l = float32_errors(d, tokens, ref, m.layers)
    what = "half the tolerances" if max(attn_tol, values_tol) <= 0.5e-5 else \
        "the tolerances, logits within half" if values_tol > 0.5e-5 else "the tolerances, values and logits within half"
    check(e_a < attn_tol and e_v < values_tol and e_l < 0.5e-4,
          f"{name}: float32 reference within {what} (attn {e_a:.1e}, values rel {e_v:.1e}, logits rel {e_l:.1e})")


def checked_fixture(fixture_dir, name, n_loop, loop_forward, attn_tol=0.5e-5, values_tol=0.5e-5):
    """(dir, model, tokens, reference forward) of a fixture, its loop forward (loop_forward(model, tokens)) against
    the batched one and its usefulness checked."""
    d = os.path.join(fixture_dir, name)
    m = Model(d)
    tokens = prompt_tokens(d, m)
    ref = rf.forward(m, tokens)
    check_loop_forward(name, m, loop_forward(m, tokens[:n_loop]), rf.forward(m, tokens[:n_loop]), n_loop)
    check_useful(name, d, m, tokens, ref, attn_tol=attn_tol, values_tol=values_tol)
    return d, m, tokens, ref


def read_variants(d, variants, read):
    """{what: read(Model) or "refused"} for each config of `variants` {what: config dict}, read beside the
    fixture d's weights (linked into a scratch folder)."""
    got = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in os.listdir(d):
            if name != "config.json":
                os.symlink(os.path.abspath(os.path.join(d, name)), os.path.join(tmp, name))
        for what, cfg in variants.items():
            with open(os.path.join(tmp, "config.json"), "w") as f:
                json.dump(cfg, f)
            try:
                got[what] = read(Model(tmp))
            except AssertionError:
                got[what] = "refused"
    return got


def scalar_rope(vec, pos, theta, rotary=None, interleaved=False):
    """vec with its first `rotary` channels (default all) turned by RoPE at position `pos`, base `theta`, one pair
    at a time: (i, i + rotary / 2), or GPT-J's (2i, 2i + 1) when interleaved."""
    R = len(vec) if rotary is None else rotary
    out = np.array(vec, dtype=np.float64)
    for i in range(R // 2):
        angle = pos * theta ** (-2.0 * i / R)
        ia, ib = (2 * i, 2 * i + 1) if interleaved else (i, i + R // 2)
        a, b = vec[ia], vec[ib]
        out[ia] = a * math.cos(angle) - b * math.sin(angle)
        out[ib] = b * math.cos(angle) + a * math.sin(angle)
    return out


def scalar_attention(scores, keys, values, probs, ctx):
    """One query's softmax over `scores`, those of `keys` in order, in double: probs[j] for each
    key j (a row of the attention), and ctx (a view) += the sum of p_j values[j]."""
    top = max(scores)
    e = [math.exp(sc - top) for sc in scores]
    z = sum(e)
    for j, ej in zip(keys, e):
        probs[j] = ej / z
        ctx += (ej / z) * values[j]


def loop_buffers(layers, heads, kv_heads, T, vocab):
    """A loop forward's state: the KV caches [layers][kv_heads][pos] -> D vector (keys, values),
    the attention [layers, heads, T, T] and the logits [T, vocab]."""
    cache_k = [[[] for _ in range(kv_heads)] for _ in range(layers)]
    cache_v = [[[] for _ in range(kv_heads)] for _ in range(layers)]
    return cache_k, cache_v, np.zeros((layers, heads, T, T)), np.zeros((T, vocab))
