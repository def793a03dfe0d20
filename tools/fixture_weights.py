"""The random weights of tools/make_fixtures.py's checkpoints: scaled so activations stay O(1), the
heads run from peaky to diffuse, a content direction makes head 0 pick keys by token identity, and
each family's quirk bites (learned positions, routers, the fused query_key_value of Falcon, BLOOM and MPT and
GPTBigCode's c_attn, OLMo-1's clip_qkv, Granite's multipliers)."""
import re

import numpy as np

from hf_layouts import GEMMAS, tensor_shapes, text_config
from hf_layouts_gpt import falcon_layout

# Query-scale per head: score std grows ~ q_scale * k_scale, so the heads range from
# diffuse to peaky. One rank-1 "content" component on the slowest rotary pair makes
# head 0 pick keys by token identity, nearly independent of distance.
Q_SCALES = [2.7, 0.5, 1.2, 2.0]
CONTENT_GAIN = 2.5
# GPT-Neo divides no score by sqrt(head_dim) (4 here): its q rows at 0.55 give scores 2.2x the
# other families', heads still running from diffuse to peaky (at 1, layer 1 has no diffuse row).
NEO_Q_GAIN = 0.55
# OPT's pre-LN layers on random weights attend diffusely past layer 0 (as GPT-2's fixture does); its q rows
# at 2.5x give every layer peaky rows (max p > 0.5: 10-48 %) beside diffuse ones (< 0.1: 13-53 %).
OPT_Q_GAIN = 2.5
# GPTBigCode's pre-LN layers diffuse past layer 0 too (as GPT-2's, OPT's); its q rows at 2x give every layer
# peaky rows beside diffuse ones.
BIGCODE_Q_GAIN = 2.0
# OLMo-1's k and v rows at 1.5x: with clip_qkv 2.5 about a tenth of q, k and v entries alike are clamped (at 1x, k's
# and v's a fifth as many), and every layer keeps peaky heads.
OLMO_KV_GAIN = 1.5
ROUTER_GAIN = 3.0  # router logits of std ~3: decisive top-k choices, every expert in use
# Qwen2-MoE's shared_expert_gate keeps the 1 / sqrt(hidden) scale of the other projections: logits of std
# ~1, so its sigmoid runs from ~0.1 to ~0.9 over the prompt's tokens.
POSITION_STD = 0.3  # learned position rows (GPT-2's wpe, OPT's embed_positions) that matter beside the tokens
BOS_EMBED_SCALE = 0.01  # a tiny BOS embedding, so rms_norm_eps visibly matters there
# Falcon's fixtures have 8 heads: Q_SCALES' spread over twice as many, so each layer keeps peaky and
# diffuse heads.
FALCON_Q_SCALES = [2.2, 0.5, 1.2, 2.0, 0.8, 1.6, 0.3, 1.0]
# Falcon-RW's 12 heads, by ALiBi slope (2^-1 .. 2^-8, then 2^-0.5 .. 2^-3.5): as ALIBI_Q_SCALES, the two
# steepest (0 and 8) larger, so each layer keeps a peaky head.
FALCON_RW_Q_SCALES = [3.0, 0.5, 1.2, 0.3, 0.8, 1.6, 0.4, 0.3, 2.2, 0.6, 1.4, 0.5]
# BLOOM's and MPT's heads, by ALiBi slope (BLOOM's 6: 4^-1 .. 4^-4, 2^-1, 2^-3; MPT's 8: 2^-1 .. 2^-8): steep
# slopes make a head local (peaky), so the diffuse ones are those of gentle slope and small q scale.
ALIBI_Q_SCALES = [2.2, 0.5, 1.2, 0.3, 0.8, 1.6, 0.4, 0.3]


def random_weights(cfg, seed):
    """{name: float32 array}, scaled so activations stay O(1) and attention is peaky."""
    rng = np.random.default_rng(seed)
    text, model_type, prefix = text_config(cfg)
    gemma = model_type in GEMMAS
    h = text.get("hidden_size", text.get("n_embd", text.get("n_embed", text.get("d_model"))))
    H = text.get("num_attention_heads", text.get("n_head", text.get("num_heads", text.get("n_heads"))))
    Hkv = text.get("num_key_value_heads", H)
    D = text.get("head_dim") or h // H
    w = {}
    for name, shape in tensor_shapes(cfg):
        if name.endswith(("q_norm.weight", "k_norm.weight")):
            # Non-trivial q/k norm weights: they set the score scale once q and k are normed.
            a = rng.normal(0.8 if gemma else 1.8, 0.5, size=shape)
        elif name.endswith(("norm.weight", "ln_1.weight", "ln_2.weight", "ln_f.weight", "ln_attn.weight",
                            "ln_mlp.weight", "norm_1.weight", "norm_2.weight", "norm_f.weight")):
            # LLaMA scales by w ~ 1; Gemma by (1 + w) with w ~ 0.
            a = rng.normal(0.0 if gemma else 1.0, 0.15, size=shape)
        elif name.endswith(".bias"):
            a = rng.normal(0.0, 0.5, size=shape)
        elif name in ("transformer.wpe.weight", "model.decoder.embed_positions.weight"):
            a = rng.normal(0.0, POSITION_STD, size=shape)  # each row its own: OPT's row t instead of t + 2 bites
        elif name.endswith("self_attention.query_key_value.weight") and model_type == "falcon":
            a = falcon_qkv(rng, cfg, name, seed)
        elif name.endswith(("self_attention.query_key_value.weight", "attn.Wqkv.weight")):
            a = alibi_qkv(rng, h, H, name, seed, per_head=model_type == "bloom")
        elif name.endswith("attn.c_attn.weight") and model_type == "gpt_bigcode":
            multi_query = text.get("multi_query", True)
            a = grouped_qkv(rng, h, H, 1 if multi_query else H, [BIGCODE_Q_GAIN * s for s in Q_SCALES], name, seed,
                            not multi_query)
        elif name == "transformer.word_embeddings.weight" and model_type == "falcon" and text.get("bias"):
            # Falcon-RW: embeddings of norm ~sqrt(h), above the common offset its biases add to every token
            # (of ~1 they leave all tokens alike after layer 0, and no head peaky)
            a = rng.normal(0.0, 1.0, size=shape)
        elif name == prefix + "model.embed_tokens.weight":
            # Granite's drawn at 1 / embedding_multiplier (its small-init embeddings, scaled up): the scaled ones
            # O(1), so that the branches (times residual_multiplier) move the residual stream
            scale = 1.0 / text["embedding_multiplier"] if model_type == "granite" else 1.0
            a = rng.normal(0.0, (1.0 / np.sqrt(h)) if gemma else scale, size=shape)
            a[text["bos_token_id"]] *= BOS_EMBED_SCALE
        else:
            # GPT-2's Conv1D weights [in, out] scale by their input width, shape[0].
            conv1d = model_type == "gpt2" and name.startswith("transformer.h.")
            a = rng.normal(0.0, 1.0 / np.sqrt(shape[0 if conv1d else 1]), size=shape)
            if name.endswith("q_proj.weight"):
                a = a.reshape(H, D, h) * np.array(Q_SCALES[:H])[:, None, None]
                a[0, D // 2 - 1] += CONTENT_GAIN * content_dir(h, name, seed)
                a = a.reshape(shape)
                if model_type == "gpt_neo":
                    a *= NEO_Q_GAIN
                elif model_type == "opt":
                    a *= OPT_Q_GAIN
                elif model_type == "granite":  # scores as the others' at 1 / sqrt(D): attention_multiplier bites
                    a /= text["attention_multiplier"] * np.sqrt(D)
            elif name.endswith("k_proj.weight"):
                a = a.reshape(Hkv, D, h)
                a[0, D // 2 - 1] += CONTENT_GAIN * content_dir(h, name, seed)
                a = a.reshape(shape)
            elif name.endswith("lm_head.weight"):
                a *= 3.0
            elif name.endswith(("block_sparse_moe.gate.weight", "mlp.gate.weight")):
                a *= ROUTER_GAIN
            if model_type == "olmo" and name.endswith(("k_proj.weight", "v_proj.weight")):
                a *= OLMO_KV_GAIN
        w[name] = a.astype(np.float32)
    return w


def content_dir(hidden, name, seed):
    """A unit direction per layer, shared by that layer's q and k content rows."""
    layer = int(re.search(r"(?:layers|\.h|blocks)\.(\d+)\.", name).group(1))
    v = np.random.default_rng([seed, 7, layer]).normal(size=hidden)
    return v / np.linalg.norm(v)


def falcon_qkv(rng, cfg, name, seed):
    """Falcon's fused query_key_value [rows, hidden] (grouped_qkv), laid out as FalconAttention._split_heads reads
    it: per kv group its query heads, its k, its v (new_decoder_architecture; multi_query: one group), or without
    either, per head its q, k, v."""
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    per_head = not cfg.get("new_decoder_architecture") and not cfg.get("multi_query", True)
    q_scales = FALCON_RW_Q_SCALES if cfg.get("alibi") else FALCON_Q_SCALES
    return grouped_qkv(rng, h, heads, falcon_layout(cfg)[0], q_scales, name, seed, per_head)


def grouped_qkv(rng, h, heads, kv, q_scales, name, seed, per_head):
    """A fused q, k, v projection [rows, hidden]: q, k and v rows drawn as the other families' (q scaled per head
    by q_scales, the content rows on q head 0 and on its kv head 0), then per kv group its query heads, its k, its v
    (GPTBigCode's multi_query c_attn: one group), or with per_head, each head's q, k, v in turn (GPTBigCode's MHA
    c_attn)."""
    d = h // heads
    draw = lambda n: rng.normal(0.0, 1.0 / np.sqrt(h), size=(n, d, h))
    q = draw(heads) * np.array(q_scales[:heads])[:, None, None]
    k, v = draw(kv), draw(kv)
    q[0, d // 2 - 1] += CONTENT_GAIN * content_dir(h, name, seed)
    k[0, d // 2 - 1] += CONTENT_GAIN * content_dir(h, name, seed)
    if per_head:
        rows = [np.stack([q[i], k[i], v[i]]) for i in range(heads)]
    else:
        g = heads // kv
        rows = [np.concatenate([q[j * g:(j + 1) * g], k[j:j + 1], v[j:j + 1]]) for j in range(kv)]
    return np.concatenate(rows).reshape(-1, h)


def alibi_qkv(rng, h, heads, name, seed, per_head):
    """BLOOM's query_key_value (per head its q, k, v rows) or MPT's Wqkv ([q | k | v]) [3 h, h]: q rows scaled per
    head by ALIBI_Q_SCALES, the content rows on head 0's q and k."""
    d = h // heads
    draw = lambda: rng.normal(0.0, 1.0 / np.sqrt(h), size=(heads, d, h))
    q = draw() * np.array(ALIBI_Q_SCALES[:heads])[:, None, None]
    k, v = draw(), draw()
    q[0, d // 2 - 1] += CONTENT_GAIN * content_dir(h, name, seed)
    k[0, d // 2 - 1] += CONTENT_GAIN * content_dir(h, name, seed)
    return np.stack([q, k, v], axis=1 if per_head else 0).reshape(3 * h, h)  # [H, 3, D, h] or [3, H, D, h]
