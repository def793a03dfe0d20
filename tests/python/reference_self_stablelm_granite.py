"""The reference's self-checks of StableLM and Granite (test_reference_self.py): stablelm (StableLM-2-1.6B's
sequential layer: LayerNorms with biases, q/k/v biases, a quarter of each head turned), stablelm-parallel
(use_parallel_residual: one input_layernorm feeding attention and MLP, half of each head turned) and granite (its
four multipliers) against reference_self_clip's token-by-token forward of the LLaMA-style layer; then each quirk
bites (the whole head or another fraction turned, no q/k/v or LayerNorm biases, an RMSNorm, another eps, the
parallel layer for the sequential one and back; each multiplier left out), the config readings, and the configs
the engine refuses refused here too (the quirks on the prompt's first BITE_TOKENS tokens)."""
import json
import os

import numpy as np

import reference_forward as rf
from reference_model import load_weights
from reference_self_alibi import edited
from reference_self_clip import BITE_TOKENS, VALUES_TOL, forward_incremental_layer, values_diff
from reference_self_code import zeroed_norm_biases
from reference_self_falcon import check_bites
from reference_self_lib import check, checked_fixture, read_variants


def stablelm_granite_checks(fixture_dir, n_loop):
    """stablelm, stablelm-parallel and granite against their loop forwards, useful, their quirks biting; the
    readings and refusals."""
    stablelm_checks(fixture_dir, n_loop)
    stablelm_parallel_checks(fixture_dir, n_loop)
    granite_checks(fixture_dir, n_loop)
    stablelm_granite_configs(fixture_dir)


def stablelm_checks(fixture_dir, n_loop):
    """stablelm: GQA, untied, LayerNorms with biases at layer_norm_eps, q/k/v biases (no o_proj or MLP bias), 8 of
    head_dim 32 channels turned; the whole head or half of it turned, no q/k/v biases (use_qkv_bias false), no
    LayerNorm biases, an RMSNorm, the parallel layer and StableLmConfig's eps (at the small BOS embedding) bite."""
    d, m, tokens, ref = checked_fixture(fixture_dir, "stablelm", n_loop, forward_incremental_layer)
    cfg, D = m.cfg, m.head_dim
    biases = sorted({k.split(".")[-2] for k in load_weights(d) if k.endswith(".bias")})
    check(m.rotary_dim == int(D * cfg["partial_rotary_factor"]) == 8 and D == 32 and "head_dim" not in cfg
          and biases == ["input_layernorm", "k_proj", "norm", "post_attention_layernorm", "q_proj", "v_proj"]
          and m.has("lm_head.weight") and not m.tied and m.kv_heads == 2 < m.heads and not m.parallel
          and m.eps == cfg["layer_norm_eps"] != 1e-5 and "rms_norm_eps" not in cfg,
          f"stablelm: {m.rotary_dim} of head_dim {D} channels turned; biases on {', '.join(biases)}; untied; "
          f"{m.heads} heads on {m.kv_heads} kv heads; layer_norm_eps {m.eps}")
    tokens = tokens[:BITE_TOKENS]
    ref = rf.forward(m, tokens)
    unbiased = read_variants(d, {"use_qkv_bias false": dict(cfg, use_qkv_bias=False)},
                             lambda mm: rf.forward(mm, tokens))
    check_bites("stablelm", ref, {
        "RoPE over the whole head": (rf.forward(edited(d, rotary_dim=D), tokens), 0, None),
        "RoPE over half the head": (rf.forward(edited(d, rotary_dim=D // 2), tokens), 0, None),
        "use_qkv_bias false (no q/k/v biases)": (unbiased["use_qkv_bias false"], 0, None),
        "LayerNorms without their biases": (rf.forward(zeroed_norm_biases(d), tokens), 0, None),
        "RMSNorm in place of the LayerNorm": (rf.forward(edited(d, norm_kind="rms"), tokens), 0, None),
        "the parallel layer (input_layernorm feeding the MLP too)": (rf.forward(edited(d, parallel=True), tokens), 1,
                                                                     None)})
    dv = values_diff(rf.forward(edited(d, eps=1e-5), tokens), ref) / float(np.abs(ref["values"][0]).max())
    check(dv > 100 * VALUES_TOL, f"stablelm: eps 1e-5 (StableLmConfig's) for layer_norm_eps {m.eps} changes layer 0's "
                                 f"values (the small BOS embedding's) by {dv:.1e} of their max (> 100 x the "
                                 f"tolerance {VALUES_TOL:.0e})")


def stablelm_parallel_checks(fixture_dir, n_loop):
    """stablelm-parallel: MHA, no post_attention_layernorm and no projection bias in the file, 8 of head_dim 16
    channels turned; the sequential layer (input_layernorm feeding the MLP after attention) and StableLmConfig's
    default fraction 0.25 bite."""
    d, m, tokens, ref = checked_fixture(fixture_dir, "stablelm-parallel", n_loop, forward_incremental_layer)
    D, names = m.head_dim, list(load_weights(d))
    check(m.parallel and not any("post_attention_layernorm" in k or k.endswith("_proj.bias") for k in names)
          and m.rotary_dim == D // 2 == 8 and m.kv_heads == m.heads and not m.cfg["use_qkv_bias"],
          f"stablelm-parallel: use_parallel_residual, no post_attention_layernorm, no projection biases; "
          f"{m.rotary_dim} of head_dim {D} channels turned; {m.heads} heads on {m.kv_heads} kv heads")
    tokens = tokens[:BITE_TOKENS]
    sequential = edited(d, parallel=False, norm_names=("input_layernorm", None, "input_layernorm", None))
    check_bites("stablelm-parallel", rf.forward(m, tokens), {
        "the sequential layer (input_layernorm again before the MLP)": (rf.forward(sequential, tokens), 1, None),
        "a quarter of the head turned (StableLmConfig's default)": (rf.forward(edited(d, rotary_dim=D // 4), tokens),
                                                                    0, None)})


def granite_checks(fixture_dir, n_loop):
    """granite: GQA, tied, no biases, the four multipliers as written; leaving out the embedding multiplier, the
    attention multiplier (1 / sqrt(head_dim)) or the residual multiplier bites; logits_scaling divides the logits
    and nothing else."""
    d, m, tokens, ref = checked_fixture(fixture_dir, "granite", n_loop, forward_incremental_layer)
    cfg, D = m.cfg, m.head_dim
    names = list(load_weights(d))
    check(m.embed_scale == cfg["embedding_multiplier"] and m.scale == cfg["attention_multiplier"] != D ** -0.5
          and m.residual_multiplier == cfg["residual_multiplier"] != 1 and m.logits_scaling == cfg["logits_scaling"]
          != 1 and m.tied and not m.has("lm_head.weight") and not any(k.endswith(".bias") for k in names)
          and m.kv_heads == 2 < m.heads,
          f"granite: embedding x {m.embed_scale:g}, scores x {m.scale:g} (not 1 / sqrt({D})), branches x "
          f"{m.residual_multiplier:g}, logits / {m.logits_scaling:g}; tied; no biases; {m.heads} heads on "
          f"{m.kv_heads} kv heads")
    tokens = tokens[:BITE_TOKENS]
    ref = rf.forward(m, tokens)
    check_bites("granite", ref, {
        "no embedding_multiplier": (rf.forward(edited(d, embed_scale=1.0), tokens), 1, None),
        "scores times 1 / sqrt(head_dim) for attention_multiplier": (rf.forward(edited(d, scale=D ** -0.5), tokens),
                                                                     0, None),
        "no residual_multiplier": (rf.forward(edited(d, residual_multiplier=1.0), tokens), 1, None)})
    alt = rf.forward(edited(d, logits_scaling=1.0), tokens)
    dl = float(np.abs(alt["logits"] - m.logits_scaling * ref["logits"]).max() / np.abs(alt["logits"]).max())
    da = max(float(np.abs(a - b).max()) for a, b in zip(alt["attn"], ref["attn"]))
    check(dl < 1e-15 and da == 0, f"granite: without logits_scaling the logits are {m.logits_scaling:g} x as large "
                                  f"(rel diff {dl:.0e}), attention the same")


def stablelm_granite_configs(fixture_dir):
    """StableLmConfig's and GraniteConfig's defaults read where the keys are not written (partial_rotary_factor
    0.25, layer_norm_eps 1e-5, sequential; multipliers 1.0, so scores unscaled, rms_norm_eps 1e-6), StableLM's
    5.x rope_parameters; refused: qk_layernorm, an odd count of turned channels, a head_dim key unlike hidden /
    heads, num_key_value_heads not written with heads other than a multiple of 32 (StableLmConfig's default 32),
    Granite's mlp_bias."""
    cfgs = {}
    for name in ("stablelm", "stablelm-parallel", "granite"):
        with open(os.path.join(fixture_dir, name, "config.json")) as f:
            cfgs[name] = json.load(f)
    without = lambda name, *keys: {k: v for k, v in cfgs[name].items() if k not in keys}
    stable, parallel, granite = cfgs["stablelm"], cfgs["stablelm-parallel"], cfgs["granite"]
    got = read_variants(os.path.join(fixture_dir, "stablelm"), {
        "qk_layernorm true": dict(stable, qk_layernorm=True),
        "partial_rotary_factor 0.15625 (5 channels)": dict(stable, partial_rotary_factor=0.15625),
        "head_dim 16": dict(stable, head_dim=16),
        "num_key_value_heads not written (32)": without("stablelm", "num_key_value_heads")}, lambda mm: "read")
    got.update(read_variants(os.path.join(fixture_dir, "granite"), {"mlp_bias true": dict(granite, mlp_bias=True)},
                             lambda mm: "read"))
    check(set(got.values()) == {"refused"}, "refused: " + ", ".join(f"{k} {v}" for k, v in got.items()))
    stable_read = lambda mm: (mm.rotary_dim, mm.eps, mm.parallel)
    got = read_variants(os.path.join(fixture_dir, "stablelm-parallel"), {
        "stablelm-parallel, partial_rotary_factor, layer_norm_eps and use_parallel_residual not written": without(
            "stablelm-parallel", "partial_rotary_factor", "layer_norm_eps", "use_parallel_residual"),
        "stablelm-parallel, 5.x rope_parameters (factor 0.75)": dict(
            without("stablelm-parallel", "partial_rotary_factor", "rope_theta"), transformers_version="5.0.0",
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.75})},
        stable_read)
    got.update(read_variants(os.path.join(fixture_dir, "granite"), {
        "granite, multipliers and rms_norm_eps not written": without(
            "granite", "embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling",
            "rms_norm_eps")},
        lambda mm: (mm.embed_scale, mm.scale, mm.residual_multiplier, mm.logits_scaling, mm.eps)))
    want = [(4, 1e-5, False), (12, 1e-5, True), (1.0, 1.0, 1.0, 1.0, 1e-6)]
    check(list(got.values()) == want and parallel["partial_rotary_factor"] == 0.5,
          "read: " + "; ".join(f"{k}: {v}" for k, v in got.items()))
