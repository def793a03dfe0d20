#!/usr/bin/env python3
"""PyTorch eager reference forward, written like Hugging Face's eager attention path (transformers
4.57) with output_attentions=True (every layer's full [heads, T, T] probabilities are
materialised and returned), on the same safetensors checkpoint attngeom reads. Families: LLaMA
(incl. llama3 / linear RoPE), Mistral, Gemma, Gemma-2 (pre- and post-norms, score and logit
soft-caps, sliding windows on alternate layers), Gemma-3 (and its multimodal wrapper's text
model: per-head q/k norms, local RoPE on its sliding layers), OLMo-2 (post-norms, q/k norms over
the whole projection), Qwen2 with its biases, Qwen3 (per-head q/k norms), the mixtures of experts Mixtral, OLMoE and Qwen3-MoE (top-k of the experts, renormalised
where the family does, as their sparse MoE blocks loop over them; OLMoE's q/k norms over the
whole projection; Qwen3-MoE's dense layers; Qwen2-MoE's q/k/v biases, dense layers and shared expert
gated by a sigmoid), Phi-3 (fused qkv_proj and
gate_up_proj, longrope, partial rotary), GPT-NeoX (Pythia: fused per-head query_key_value,
partial rotary, parallel or sequential residual), Phi (Phi-2: one LayerNorm feeding attention
and MLP in parallel), GPT-J (Phi's parallel layer without attention biases, RoPE in interleaved
pairs on rotary_dim channels, lm_head's bias), SmolLM3 (LLaMA's layer, NoPE layers, windows on
them with use_sliding_window), GPT-2 (learned positions, Conv1D), GPT-Neo (GPT-2's layer with
nn.Linear weights, unscaled scores, windows on its local layers), OPT (GPT-2's layer with nn.Linear
weights, learned positions read 2 rows on, the query scaled before the product, ReLU) and Falcon (the
fused query_key_value per kv group or per head, one or two LayerNorms feeding attention and MLP in
parallel, or a sequential layer; RoPE over the whole head; GPT-2's eager softmax), and the ALiBi families
BLOOM (word_embeddings_layernorm, query_key_value per head, alibi.baddbmm scores, BLOOM's tanh GELU; tensors
with or without "transformer.") and MPT (LayerNorms without bias, Wqkv, scores plus fp32 slopes times
j - (T - 1), exact GELU, no linear biases), OLMo-1 (LLaMA's layer with LayerNorms without weight or bias), StarCoder2
(LLaMA's attention with LayerNorms and biases, the non-gated c_fc / c_proj MLP, windows on every layer), GPTBigCode
(GPT-2's layer with nn.Linear weights, c_attn of one kv head with multi_query, else per head [q | k | v]); q, k and v
clamped to clip_qkv for OLMo, OLMoE (after its q/k norms) and MPT, StableLM (LLaMA's names with LayerNorms, q/k/v
biases, RoPE on the leading partial_rotary_factor of each head, parallel or sequential residual) and Granite (LLaMA's
layer with its embedding, attention, residual and logits multipliers). For
benchmarking; its fp32 logits are checked against the float64 reference
(tests/python/test_torch_eager.py).

  torch_eager.py --model DIR --seq-len T [--threads 2] [--dtype bf16|fp32]

Before the timed forward, a short warm-up forward pages in every weight and creates the
matmul primitives, as attngeom bench's warm-up does. The timed forward stops after the last
decoder layer, as attngeom bench's stages do (the final norm and lm_head, `logits()`, are not
timed). Prints one JSON line: seconds for the forward, the part of it spent in the linear
layers (in bf16, the same oneDNN matmul on AMX that attngeom uses) with their FLOPs and
TFLOP/s, and the peak RSS.
"""
import argparse
import json
import math
import os
import resource
import sys
import time
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_eager_ops import (ACTIVATIONS, alibi_bias, attention, layer_norm, mlp_gate_up, mlp_gated,  # noqa: E402
                             mlp_plain, mlp_sparse_moe, qkv_bigcode, qkv_concat, qkv_falcon, qkv_per_head, qkv_separate,
                             rms_norm, rope_tables, weightless_layer_norm)

# Enough tokens to touch every weight; far fewer than a timed sequence, so the warm-up is cheap.
WARMUP_TOKENS = 16
DTYPES = {"BF16": (np.int16, torch.bfloat16), "F16": (np.float16, torch.float16), "F32": (np.float32, torch.float32)}


# Weights are read-only memory maps; torch warns about that once, harmlessly.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


def load_safetensors(model_dir):
    """{name: tensor} memory-mapped from every shard (no copy for bf16/f16/f32)."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    tensors = {}
    for name in files:
        raw = np.memmap(os.path.join(model_dir, name), dtype=np.uint8, mode="r")
        n = int.from_bytes(raw[:8].tobytes(), "little")
        header = json.loads(raw[8:8 + n].tobytes())
        for key, spec in header.items():
            if key == "__metadata__":
                continue
            np_dtype, t_dtype = DTYPES[spec["dtype"]]
            b, e = spec["data_offsets"]
            arr = raw[8 + n + b:8 + n + e].view(np_dtype).reshape(spec["shape"])
            tensors[key] = torch.from_numpy(arr).view(t_dtype)
    return tensors


class LinearLayers:
    """x @ w^T for every projection (x @ w for GPT-2's Conv1D, stored [in, out]), timed:
    seconds and FLOPs summed over calls."""

    def __init__(self):
        self.seconds = 0.0
        self.flops = 0.0

    def __call__(self, x, weight, dtype, conv1d=False):
        start = time.perf_counter()
        w = weight.to(dtype)
        y = x @ (w if conv1d else w.T)
        self.seconds += time.perf_counter() - start
        self.flops += 2.0 * x.shape[0] * weight.shape[0] * weight.shape[1]
        return y


# --- the families ---

# Per family (transformers 4.57 modeling_*.py and their config classes' defaults): tensor names,
# the pieces above, the residual ("sequential": x += p1(attn(n1(x))); x += p2(mlp(n2(x))), where
# the pre-norms n and the post-norms p a family lacks are identities; "parallel":
# x += attn(n1(x)) + mlp(n2(x)), with n2 = n1 where both name the same norm), and the defaults
# of config keys a config.json may leave out. Gemma-2 and -3 scale scores by
# query_pre_attn_scalar^-1/2 and may soft-cap scores and logits ("caps": their defaults).
LLAMA = dict(layers="model.layers.", embed="model.embed_tokens.weight", positions=None, head="lm_head.weight",
             head_bias=False, final_norm="model.norm", norms=("input_layernorm", "post_attention_layernorm"),
             post_norms=(None, None), norm=rms_norm, norm_offset=False, scale_embeddings=False, qkv=qkv_separate,
             attn_prefix="self_attn.", o_name="self_attn.o_proj", gpt2_attention=False, mlp=mlp_gated, conv1d=False,
             parallel=False, eps=("rms_norm_eps", 1e-6), act=("hidden_act", "silu"), theta=10000.0, rotary=1.0,
             interleaved=False, tied=False, window=None, qk_norm=None, caps=None, local_rope=False, nope=False,
             unscaled=False, scale_query=False, position_offset=0, shared_expert=False, alibi=None, embed_norm=None,
             multipliers=False)
# Mixtures of experts: (block prefix, router, the experts' gate, up and down) and the config
# class's defaults (experts, experts per token, norm_topk_prob).
MOE_NAMES = ("mlp.", "gate", ("gate_proj", "up_proj", "down_proj"))
QWEN3 = dict(LLAMA, window=("qwen", 4096), qk_norm="head")
GEMMA = dict(LLAMA, norm_offset=True, scale_embeddings=True, tied=True, act=("hidden_activation", "gelu_pytorch_tanh"))
GEMMA_SANDWICH = dict(GEMMA, norms=("input_layernorm", "pre_feedforward_layernorm"),
                      post_norms=("post_attention_layernorm", "post_feedforward_layernorm"))
LAYER_NORMED = dict(LLAMA, norm=layer_norm, mlp=mlp_plain, eps=("layer_norm_eps", 1e-5), act=("hidden_act", "gelu_new"))
FAMILIES = {
    "llama": LLAMA,
    "mistral": dict(LLAMA, window=("every", 4096)),
    "qwen2": dict(LLAMA, window=("qwen", 4096)),
    "gemma": GEMMA,
    "gemma2": dict(GEMMA_SANDWICH, window=("gemma", 2), caps=(50.0, 30.0)),
    "gemma3_text": dict(GEMMA_SANDWICH, window=("gemma", 6), qk_norm="head", theta=1000000.0, caps=(None, None),
                        local_rope=True),
    "olmo2": dict(LLAMA, norms=(None, None), post_norms=("post_attention_layernorm", "post_feedforward_layernorm"),
                  qk_norm="projection", eps=("rms_norm_eps", 1e-5)),
    "qwen3": QWEN3,
    "mixtral": dict(LLAMA, mlp=mlp_sparse_moe, eps=("rms_norm_eps", 1e-5), theta=1000000.0, window=("every", None),
                    moe=("block_sparse_moe.", "gate", ("w1", "w3", "w2")), experts=(8, 2, True)),
    "olmoe": dict(LLAMA, mlp=mlp_sparse_moe, eps=("rms_norm_eps", 1e-5), qk_norm="projection", moe=MOE_NAMES,
                  experts=(64, 8, False)),
    "qwen3_moe": dict(QWEN3, mlp=mlp_sparse_moe, moe=MOE_NAMES, experts=(128, 8, False)),
    # Qwen2-MoE: Qwen2's attention (q/k/v biases where qkv_bias wrote them), its sparse layers' shared expert
    "qwen2_moe": dict(LLAMA, window=("qwen", 4096), mlp=mlp_sparse_moe, moe=MOE_NAMES, experts=(60, 4, False),
                      shared_expert=True),
    "phi3": dict(LLAMA, qkv=qkv_concat, qkv_name="self_attn.qkv_proj", mlp=mlp_gate_up, eps=("rms_norm_eps", 1e-5),
                 window=("every", None)),
    "gpt_neox": dict(LAYER_NORMED, layers="gpt_neox.layers.", embed="gpt_neox.embed_in.weight", head="embed_out.weight",
                     final_norm="gpt_neox.final_layer_norm", qkv=qkv_per_head, o_name="attention.dense",
                     mlp_names=("mlp.dense_h_to_4h", "mlp.dense_4h_to_h"), act=("hidden_act", "gelu"), rotary=0.25,
                     parallel=("use_parallel_residual", True)),
    "phi": dict(LAYER_NORMED, head_bias=True, final_norm="model.final_layernorm",
                norms=("input_layernorm", "input_layernorm"), o_name="self_attn.dense",
                mlp_names=("mlp.fc1", "mlp.fc2"), rotary=0.5, parallel=True),
    "gpt2": dict(LAYER_NORMED, layers="transformer.h.", embed="transformer.wte.weight", positions="transformer.wpe.weight",
                 final_norm="transformer.ln_f", norms=("ln_1", "ln_2"), qkv=qkv_concat, qkv_name="attn.c_attn",
                 o_name="attn.c_proj", gpt2_attention=True, mlp_names=("mlp.c_fc", "mlp.c_proj"), conv1d=True,
                 eps=("layer_norm_epsilon", 1e-5), act=("activation_function", "gelu_new"), rotary=0.0, tied=True),
    # GPT-J: rotary_dim counts channels (not a fraction of the head), at the fixed base 10000
    "gptj": dict(LAYER_NORMED, layers="transformer.h.", embed="transformer.wte.weight", head_bias=True,
                 final_norm="transformer.ln_f", norms=("ln_1", "ln_1"), attn_prefix="attn.", o_name="attn.out_proj",
                 mlp_names=("mlp.fc_in", "mlp.fc_out"), eps=("layer_norm_epsilon", 1e-5),
                 act=("activation_function", "gelu_new"), interleaved=True, parallel=True),
    "smollm3": dict(LLAMA, window=("smollm3", None), theta=2000000.0, tied=True, nope=True),
    # GPT-Neo: GPT-2's layer with nn.Linear weights, q/k/v without biases, window_size on "local" layers
    "gpt_neo": dict(LAYER_NORMED, layers="transformer.h.", embed="transformer.wte.weight",
                    positions="transformer.wpe.weight", final_norm="transformer.ln_f", norms=("ln_1", "ln_2"),
                    attn_prefix="attn.attention.", o_name="attn.attention.out_proj",
                    mlp_names=("mlp.c_fc", "mlp.c_proj"), eps=("layer_norm_epsilon", 1e-5),
                    act=("activation_function", "gelu_new"), rotary=0.0, tied=True, window=("neo", 256), unscaled=True),
    # OPT: pre-LN, every projection with a bias, token t reads embed_positions' row t + 2, q_proj's output
    # scaled by head_dim^-0.5 before the product; LayerNorm eps 1e-5 (no config key: None finds none)
    "opt": dict(LAYER_NORMED, layers="model.decoder.layers.", embed="model.decoder.embed_tokens.weight",
                positions="model.decoder.embed_positions.weight", position_offset=2,
                final_norm="model.decoder.final_layer_norm", norms=("self_attn_layer_norm", "final_layer_norm"),
                o_name="self_attn.out_proj", mlp_names=("fc1", "fc2"), eps=(None, 1e-5),
                act=("activation_function", "relu"), rotary=0.0, tied=True, scale_query=True),
    # Falcon: its norms, kv heads and residual from the config (falcon_layout); FalconAttention's eager path
    # divides the scores by sqrt(D) and takes the softmax in the working dtype, as GPT-2's does
    "falcon": dict(LAYER_NORMED, layers="transformer.h.", embed="transformer.word_embeddings.weight",
                   final_norm="transformer.ln_f", qkv=qkv_falcon, o_name="self_attention.dense", gpt2_attention=True,
                   mlp_names=("mlp.dense_h_to_4h", "mlp.dense_4h_to_h"), eps=("layer_norm_epsilon", 1e-5),
                   act=("activation", "gelu"), tied=True),
    # BLOOM: word_embeddings_layernorm on the embeddings, no RoPE (ALiBi), query_key_value viewed (T, H, 3, D),
    # a sequential layer with biases everywhere, the MLP's BLOOM gelu (no config key), tied
    "bloom": dict(LAYER_NORMED, layers="transformer.h.", embed="transformer.word_embeddings.weight",
                  embed_norm="transformer.word_embeddings_layernorm", final_norm="transformer.ln_f", qkv=qkv_falcon,
                  o_name="self_attention.dense", mlp_names=("mlp.dense_h_to_4h", "mlp.dense_4h_to_h"),
                  eps=("layer_norm_epsilon", 1e-5), act=(None, "bloom_gelu"), rotary=0.0, tied=True, alibi="bloom"),
    # OLMo-1: LLaMA's layer, every norm F.layer_norm without weight or bias at eps 1e-5 (no config key)
    "olmo": dict(LLAMA, norm=weightless_layer_norm, eps=(None, 1e-5)),
    # StarCoder2: nn.LayerNorm at norm_epsilon, q/k/v/o and the c_fc / c_proj MLP with biases (use_bias), tied
    "starcoder2": dict(LLAMA, norm=layer_norm, mlp=mlp_plain, mlp_names=("mlp.c_fc", "mlp.c_proj"),
                       eps=("norm_epsilon", 1e-5), act=("hidden_act", "gelu_pytorch_tanh"), tied=True,
                       window=("every", None)),
    # GPTBigCode: GPT-2's layer with nn.Linear weights; eager_attention_forward's fp32 softmax (4.57)
    "gpt_bigcode": dict(LAYER_NORMED, layers="transformer.h.", embed="transformer.wte.weight",
                        positions="transformer.wpe.weight", final_norm="transformer.ln_f", norms=("ln_1", "ln_2"),
                        qkv=qkv_bigcode, qkv_name="attn.c_attn", o_name="attn.c_proj",
                        mlp_names=("mlp.c_fc", "mlp.c_proj"), eps=("layer_norm_epsilon", 1e-5),
                        act=("activation_function", "gelu_pytorch_tanh"), rotary=0.0, tied=True),
    # StableLM: LLaMA's names, nn.LayerNorm at layer_norm_eps, a quarter of each head turned by default, the q/k/v
    # biases use_qkv_bias wrote; with use_parallel_residual one input_layernorm feeds attention and MLP
    "stablelm": dict(LLAMA, norm=layer_norm, eps=("layer_norm_eps", 1e-5), rotary=0.25,
                     parallel=("use_parallel_residual", False)),
    # Granite: LLaMA's layer, embeddings x embedding_multiplier, scores x attention_multiplier, each branch x
    # residual_multiplier, logits / logits_scaling (GraniteConfig: each 1.0 by default)
    "granite": dict(LLAMA, multipliers=True),
    # MPT: LayerNorms with their bias set to None, Wqkv [q | k | v], no linear biases, exact GELU, tied
    "mpt": dict(LAYER_NORMED, layers="transformer.blocks.", embed="transformer.wte.weight",
                final_norm="transformer.norm_f", norms=("norm_1", "norm_2"), qkv=qkv_concat, qkv_name="attn.Wqkv",
                o_name="attn.out_proj", mlp_names=("ffn.up_proj", "ffn.down_proj"), eps=("layer_norm_epsilon", 1e-5),
                act=(None, "gelu"), rotary=0.0, tied=True, alibi="mpt"),
}
# GPT2Config's, GPTNeoConfig's, BloomConfig's and MptConfig's attribute_maps (and BLOOM's and Falcon's n_embed, which
# their configs prefer to hidden_size where both are written: Model): the standard key, and the one config.json writes.
CONFIG_ALIASES = [("hidden_size", "n_embd"), ("num_hidden_layers", "n_layer"), ("num_attention_heads", "n_head"),
                  ("max_position_embeddings", "n_positions"), ("num_hidden_layers", "num_layers"),
                  ("num_attention_heads", "num_heads"), ("hidden_size", "n_embed"), ("hidden_size", "d_model"),
                  ("num_hidden_layers", "n_layers"), ("num_attention_heads", "n_heads")]


def first(*values):
    return next((v for v in values if v is not None), None)


def falcon_layout(cfg):
    """FalconConfig as FalconAttention and FalconDecoderLayer (transformers 4.57) read it: (kv heads, whether
    query_key_value holds each head's q, k, v in turn, (attention's norm, MLP's norm), parallel)."""
    heads, new = cfg["num_attention_heads"], cfg.get("new_decoder_architecture", False)
    if new:
        kv = cfg.get("num_kv_heads", cfg.get("n_head_kv")) or heads
        norms = ("ln_attn", "ln_mlp") if (cfg.get("num_ln_in_parallel_attn") or 2) == 2 else ("input_layernorm",) * 2
        return kv, False, norms, True
    multi_query, parallel = cfg.get("multi_query", True), cfg.get("parallel_attn", True)
    norms = ("input_layernorm", "input_layernorm" if parallel else "post_attention_layernorm")
    return (1 if multi_query else heads), not multi_query, norms, parallel


class Model:
    """config.json read as its family's config class reads it, the checkpoint's tensors, the
    compute dtype and the (timed) linear layers."""

    def __init__(self, cfg, weights, dtype, linear):
        if cfg["model_type"] == "gemma3":  # Gemma3ForConditionalGeneration: its text model alone
            cfg = dict(cfg["text_config"], tie_word_embeddings=cfg.get("tie_word_embeddings", True))
            weights = {k[len("language_model."):]: v for k, v in weights.items() if k.startswith("language_model.")}
        mt = cfg["model_type"]
        assert mt in FAMILIES, f"model_type {mt} not implemented here (only {', '.join(FAMILIES)})"
        fam = self.fam = FAMILIES[mt]
        self.cfg = cfg = dict({std: cfg[alias] for std, alias in CONFIG_ALIASES if alias in cfg}, **cfg)
        self.w, self.dtype, self.linear = weights, dtype, linear
        if mt in ("gpt2", "bloom") and fam["embed"] not in weights:  # GPT2Model's, BloomModel's: no transformer.
            self.w = {k if k == "lm_head.weight" else "transformer." + k: v for k, v in weights.items()}
        if mt == "opt" and fam["embed"] not in weights:  # saved from OPTModel (facebook/opt-*): decoder.*
            self.w = {k if k == "lm_head.weight" else "model." + k: v for k, v in weights.items()}
        self.hidden, self.layers, self.heads = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
        if mt in ("bloom", "falcon"):  # BloomConfig, FalconConfig: n_embed wins over hidden_size
            self.hidden = first(cfg.get("n_embed"), self.hidden)
        if mt == "bloom":  # not implemented here (nor in the reference): the normed input as the residual, split dense
            assert not cfg.get("apply_residual_connection_post_layernorm"), "apply_residual_connection_post_layernorm"
            assert not (cfg.get("slow_but_exact") and cfg.get("pretraining_tp", 1) > 1), "slow_but_exact"
        self.kv_heads = cfg.get("num_key_value_heads") or self.heads
        if mt == "gpt_bigcode":  # GPTBigCodeAttention: one kv head with multi_query (default true)
            assert cfg.get("scale_attn_weights", True), "scale_attn_weights false"
            self.kv_heads = 1 if cfg.get("multi_query", True) else self.heads
        self.head_dim = cfg.get("head_dim") or self.hidden // self.heads
        self.eps = cfg.get(fam["eps"][0], fam["eps"][1])
        self.act = ACTIVATIONS[cfg.get(fam["act"][0]) or fam["act"][1]]
        self.tied = cfg.get("tie_word_embeddings", fam["tied"])
        self.parallel = fam["parallel"] if isinstance(fam["parallel"], bool) else cfg.get(*fam["parallel"])
        self.norms, self.per_head_qkv = fam["norms"], mt == "bloom"  # BLOOM's query_key_value: per head q, k, v
        if mt == "stablelm":  # StableLmDecoderLayer: no post_attention_layernorm with use_parallel_residual
            assert not cfg.get("qk_layernorm"), "qk_layernorm"
            self.norms = ("input_layernorm",) * 2 if self.parallel else fam["norms"]
        if mt == "falcon":
            self.kv_heads, self.per_head_qkv, self.norms, self.parallel = falcon_layout(cfg)
        # RoPE: transformers 4.x keys (rope_theta / GPT-NeoX's rotary_emb_base, rope_scaling,
        # partial_rotary_factor / rotary_pct) or 5.x rope_parameters.
        params = cfg.get("rope_parameters") or {}
        self.rope_theta = first(params.get("rope_theta"), cfg.get("rope_theta"), cfg.get("rotary_emb_base"), fam["theta"])
        self.rope_scaling = params or cfg.get("rope_scaling") or {}
        fraction = first(params.get("partial_rotary_factor"), cfg.get("partial_rotary_factor"), cfg.get("rotary_pct"),
                         fam["rotary"])
        self.rotary_dim = cfg.get("rotary_dim", 64) if fam["interleaved"] else int(self.head_dim * fraction)
        if fam["interleaved"]:  # GPTJConfig has no RoPE base or scaling
            self.rope_theta, self.rope_scaling = fam["theta"], {}
        if fam["caps"]:  # Gemma-2 and -3
            self.score_scale = cfg.get("query_pre_attn_scalar", 256) ** -0.5
            self.attn_cap = cfg.get("attn_logit_softcapping", fam["caps"][0])
            self.final_cap = cfg.get("final_logit_softcapping", fam["caps"][1])
        else:
            self.score_scale, self.attn_cap, self.final_cap = self.head_dim ** -0.5, None, None
        # Granite's multipliers (the others': 1, and scores by 1 / sqrt(head_dim))
        multiplier = lambda key: cfg.get(key, 1.0) if fam["multipliers"] else 1.0
        if fam["multipliers"]:
            assert not cfg.get("mlp_bias"), "mlp_bias"
            self.score_scale = multiplier("attention_multiplier")
        self.embedding_multiplier, self.residual_multiplier = multiplier("embedding_multiplier"), \
            multiplier("residual_multiplier")
        self.logits_scaling = multiplier("logits_scaling")
        # MPT's attn_config: softmax_scale (null: 1 / sqrt(hidden / heads)), clip_qkv (0: none), alibi_bias_max;
        # OLMo's and OLMoE's clip_qkv
        attn = (cfg.get("attn_config") or {}) if mt == "mpt" else {}
        if mt == "mpt":
            self.score_scale = first(attn.get("softmax_scale"), 1 / math.sqrt(self.hidden / self.heads))
        self.clip_qkv, self.alibi_bias_max = attn.get("clip_qkv") or None, attn.get("alibi_bias_max", 8)
        if mt in ("olmo", "olmoe"):
            self.clip_qkv = cfg.get("clip_qkv")
        experts, top_k, norm_topk = fam.get("experts", (0, 0, False))
        self.experts = first(cfg.get("num_local_experts"), cfg.get("num_experts"), experts)
        self.top_k, self.norm_topk = cfg.get("num_experts_per_tok", top_k), cfg.get("norm_topk_prob", norm_topk)
        step, dense = cfg.get("decoder_sparse_step", 1), set(cfg.get("mlp_only_layers") or [])
        self.sparse_layers = {f"{fam['layers']}{l}." for l in range(self.layers) if l not in dense and (l + 1) % step == 0}
        # SmolLM3Config.no_rope_layers (0: NoPE), by default every no_rope_layer_interval-th layer NoPE
        interval = cfg.get("no_rope_layer_interval", 4)
        self.use_rope = (cfg.get("no_rope_layers") or [int((l + 1) % interval != 0) for l in range(self.layers)]
                         if fam["nope"] else [1] * self.layers)

    def project(self, x, name):
        """nn.Linear (or Conv1D) `name`, with its bias where the checkpoint has one."""
        y = self.linear(x, self.w[name + ".weight"], self.dtype, self.fam["conv1d"])
        return y + self.w[name + ".bias"].to(self.dtype) if name + ".bias" in self.w else y

    def norm(self, x, name):
        return self.fam["norm"](self, x, name)

    def window(self, layer):
        """Layer `layer`'s sliding window (None: full causal attention)."""
        if self.fam["window"] is None:
            return None
        rule, default = self.fam["window"]
        types = self.cfg.get("layer_types")
        if rule == "gemma":  # layer_types, else Gemma-2's every other layer, Gemma-3's 5 of every 6
            pattern = self.cfg.get("sliding_window_pattern", default) if default == 6 else default
            if not (types[layer] == "sliding_attention" if types else (layer + 1) % pattern != 0):
                return None
            return self.cfg.get("sliding_window", 4096)
        if rule == "qwen":  # Qwen2Config: only with use_sliding_window, on layer_types' sliding layers
            if not self.cfg.get("use_sliding_window"):
                return None
            sliding = types[layer] == "sliding_attention" if types else layer >= self.cfg.get("max_window_layers", 28)
            if not sliding:
                return None
        if rule == "neo":  # GPTNeoConfig: attention_layers (else attention_types expanded), "local" ones windowed
            kinds = self.cfg.get("attention_layers") or [
                kind for group, n in self.cfg.get("attention_types", [[["global", "local"], 12]]) for _ in range(n)
                for kind in group]
            return self.cfg.get("window_size", default) if kinds[layer] == "local" else None
        if rule == "smollm3":  # SmolLM3Config: only with use_sliding_window, on layer_types' sliding layers
            sliding = types[layer] == "sliding_attention" if types else not self.use_rope[layer]  # else NoPE ones
            if not (self.cfg.get("use_sliding_window") and sliding):
                return None
        return self.cfg.get("sliding_window", default)

    def rope(self, layer):
        """(theta, scaling) of layer `layer`: Gemma-3's sliding layers use rope_local_base_freq, unscaled;
        (None, None) on SmolLM3's NoPE layers."""
        if not self.use_rope[layer]:
            return None, None
        if self.fam["local_rope"] and self.window(layer):
            return self.cfg.get("rope_local_base_freq", 10000.0), {}
        return self.rope_theta, self.rope_scaling


def causal_mask(t, window, dtype):
    mask = torch.full((t, t), float("-inf")).triu(1)
    if window:
        mask = mask + torch.full((t, t), float("-inf")).tril(-window)
    return mask.to(dtype)


def embed(m, tokens):
    x = m.w[m.fam["embed"]][tokens].to(m.dtype)
    if m.fam["embed_norm"]:  # BLOOM's word_embeddings_layernorm
        x = m.norm(x, m.fam["embed_norm"])
    if m.fam["positions"]:  # GPT-2's learned positions; OPT's from row 2 on
        start = m.fam["position_offset"]
        x = x + m.w[m.fam["positions"]][start:start + tokens.shape[0]].to(m.dtype)
    if m.fam["scale_embeddings"]:  # Gemma: hidden * torch.tensor(hidden ** 0.5, dtype)
        x = x * torch.tensor(m.hidden ** 0.5, dtype=m.dtype)
    if m.fam["multipliers"]:  # Granite: inputs_embeds * embedding_multiplier
        x = x * m.embedding_multiplier
    return x


def forward(cfg, w, tokens, dtype, linear):
    """The decoder on `tokens`: (hidden states after the last layer [T, hidden], before the
    final norm; every layer's attention probabilities [H, T, T])."""
    m = Model(cfg, w, dtype, linear)
    t = tokens.shape[0]
    x = embed(m, tokens)
    masks, tables = {}, {}
    attentions = []
    m.alibi = alibi_bias(m, t) if m.fam["alibi"] else None  # BLOOM's, MPT's [H, 1, T]
    for layer in range(m.layers):
        p = f"{m.fam['layers']}{layer}."
        window = m.window(layer)
        if window not in masks:
            masks[window] = causal_mask(t, window, dtype)
        theta, scaling = m.rope(layer)
        if m.rotary_dim and theta and theta not in tables:
            tables[theta] = rope_tables(m, t, theta, scaling)
        cos, sin = tables[theta] if m.rotary_dim and theta else (None, None)
        attn_norm, mlp_norm, attn_post, mlp_post = (
            p + name if name else None for name in m.norms + m.fam["post_norms"])
        h = m.norm(x, attn_norm) if attn_norm else x
        a = attention(m, p, h, cos, sin, masks[window], attentions)
        if m.parallel:  # GPT-NeoX: mlp + attn + x; Phi, Falcon, StableLM: attn + mlp + x, one norm for both or two
            x = a + m.fam["mlp"](m, p, h if mlp_norm == attn_norm else m.norm(x, mlp_norm)) + x
        else:  # Granite's branches times residual_multiplier (the others' 1)
            x = x + (m.norm(a, attn_post) if attn_post else a) * m.residual_multiplier
            f = m.fam["mlp"](m, p, m.norm(x, mlp_norm) if mlp_norm else x)
            x = x + (m.norm(f, mlp_post) if mlp_post else f) * m.residual_multiplier
    return x, attentions


def logits(cfg, w, x, dtype, linear):
    """The final norm and lm_head (tied: the token embeddings; Phi's with a bias) on forward()'s x."""
    m = Model(cfg, w, dtype, linear)
    head = m.fam["embed"] if m.tied else m.fam["head"]
    y = m.linear(m.norm(x, m.fam["final_norm"]), m.w[head], dtype)
    if m.final_cap:  # Gemma-2: cap * tanh(logits / cap)
        y = torch.tanh(y / m.final_cap) * m.final_cap
    if m.fam["multipliers"]:  # Granite: logits / logits_scaling
        y = y / m.logits_scaling
    return y + m.w["lm_head.bias"].to(dtype) if m.fam["head_bias"] else y


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--seq-len", type=int, required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    weights = load_safetensors(args.model)
    tokens = torch.randint(0, cfg["vocab_size"], (args.seq_len,), generator=torch.Generator().manual_seed(7))
    linear = LinearLayers()
    with torch.inference_mode():
        forward(cfg, weights, tokens[:WARMUP_TOKENS], dtype, LinearLayers())
        start = time.perf_counter()
        forward(cfg, weights, tokens, dtype, linear)
        seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "linear_seconds": linear.seconds, "linear_flops": linear.flops,
                      "linear_tflops": linear.flops / linear.seconds * 1e-12, "peak_rss_bytes": rss,
                      "dtype": args.dtype, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
