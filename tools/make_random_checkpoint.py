#!/usr/bin/python3
"""Random-weight Hugging Face checkpoints (config.json + safetensors + tokenizer.model or .json).

Writes a model directory of any family attngeom reads (LLaMA, Mistral, Gemma, Gemma-2,
Gemma-3, Qwen2, Qwen3, OLMo-2, GPT-NeoX, GPT-2, Phi, Phi-3, Mixtral, OLMoE, Qwen3-MoE) and any
shape, streaming every
tensor to disk in chunks, so a 7B bf16 checkpoint (13.5 GB) never sits in RAM.
Values are finite and scaled like a trained model's (projections ~ 1/sqrt(fan_in),
norm weights ~ 1, or ~ 0 for Gemma's (1 + w)); they carry no meaning.

Also the shared writer used by tools/make_fixtures.py: `write_checkpoint`,
`write_safetensors`, `hf_config`, `tensor_shapes`, `spm_vocab_size`, `tokenizer_vocab_size`.

  make_random_checkpoint.py --preset llama-1b --tokenizer T.model --out DIR
  make_random_checkpoint.py --model-type mistral --hidden 64 --intermediate 128 \
      --layers 2 --heads 4 --kv-heads 2 --tokenizer T.model --dtype f16 --out DIR
Presets: llama2-7b, mistral-7b, mixtral-8x7b, olmoe-1b-7b, qwen3-30b-a3b, gemma-7b, llama3-8b, qwen2.5-7b,
llama-1b, pythia-6.9b, pythia-1.4b, gpt2-xl, phi-3-mini, h1024-l8 (a LLaMA
of hidden size 1024, 8 layers and 16 heads: mid-sized, for memory measurements). Explicit
flags override a preset: `--preset mixtral-8x7b --layers 4` keeps its layer shapes with 4 of its
32 layers (12 GB in bf16 instead of 93). --tokenizer takes a sentencepiece tokenizer.model or a Hugging Face
tokenizer.json, copied under its own name. Mixtures of experts: --experts, --experts-per-tok,
--moe-intermediate (Qwen3-MoE's expert width), and --fused-experts to write the experts as
transformers 5.x holds them (save_pretrained(save_original_format=False): the router under
mlp.gate, mlp.experts.gate_up_proj [experts, 2 * inter, hidden] and mlp.experts.down_proj
[experts, hidden, inter] in place of one tensor per expert).
"""
import argparse
import json
import math
import os
import shutil
import sys

import numpy as np

# safetensors dtype name -> (numpy storage dtype, bytes per element)
ST_DTYPES = {"F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (np.uint16, 2)}
DTYPE_ALIASES = {"f32": "F32", "float32": "F32", "f16": "F16", "float16": "F16",
                 "bf16": "BF16", "bfloat16": "BF16"}
ST_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
            "U8": 1, "BOOL": 1}
TORCH_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}

PRESETS = {
    # shape fields: hidden, intermediate, layers, heads, kv_heads, head_dim, vocab
    "llama2-7b": dict(model_type="llama", hidden=4096, intermediate=11008, layers=32,
                      heads=32, kv_heads=32, head_dim=128, vocab=32000, rope_theta=10000.0,
                      rms_norm_eps=1e-5, max_positions=4096),
    "mistral-7b": dict(model_type="mistral", hidden=4096, intermediate=14336, layers=32,
                       heads=32, kv_heads=8, head_dim=128, vocab=32000, rope_theta=10000.0,
                       rms_norm_eps=1e-5, max_positions=32768, sliding_window=4096),
    "gemma-7b": dict(model_type="gemma", hidden=3072, intermediate=24576, layers=28,
                     heads=16, kv_heads=16, head_dim=256, vocab=256000, rope_theta=10000.0,
                     rms_norm_eps=1e-6, max_positions=8192),
    # TinyLlama-1.1B's shape: the common "1B llama" with a sentencepiece vocabulary.
    "llama-1b": dict(model_type="llama", hidden=2048, intermediate=5632, layers=22,
                     heads=32, kv_heads=4, head_dim=64, vocab=32000, rope_theta=10000.0,
                     rms_norm_eps=1e-5, max_positions=2048),
    # Pythia-6.9B (GPT-NeoX): 32 x 128 heads, rotary_pct 0.25, parallel residual, untied.
    "pythia-6.9b": dict(model_type="gpt_neox", hidden=4096, intermediate=16384, layers=32,
                        heads=32, kv_heads=32, head_dim=128, vocab=50432, rope_theta=10000.0,
                        rms_norm_eps=1e-5, max_positions=2048, bos_token_id=0, eos_token_id=0),
    # Pythia-1.4B: 16 x 128 heads, the same layout; 2.8 GB in bf16.
    "pythia-1.4b": dict(model_type="gpt_neox", hidden=2048, intermediate=8192, layers=24,
                        heads=16, kv_heads=16, head_dim=128, vocab=50304, rope_theta=10000.0,
                        rms_norm_eps=1e-5, max_positions=2048, bos_token_id=0, eos_token_id=0),
    # GPT-2 XL: 48 layers of 25 x 64 heads, learned positions (1024), tied 50,257-token vocabulary.
    "gpt2-xl": dict(model_type="gpt2", hidden=1600, intermediate=6400, layers=48, heads=25, kv_heads=25,
                    head_dim=64, vocab=50257, rms_norm_eps=1e-5, max_positions=1024,
                    tie_word_embeddings=True, bos_token_id=50256, eos_token_id=50256),
    # Phi-3-mini-4k: 32 x 96 heads, fused qkv_proj and gate_up_proj, window 2047.
    "phi-3-mini": dict(model_type="phi3", hidden=3072, intermediate=8192, layers=32, heads=32, kv_heads=32,
                       head_dim=96, vocab=32064, rope_theta=10000.0, rms_norm_eps=1e-5, max_positions=4096,
                       sliding_window=2047, bos_token_id=1, eos_token_id=32000),
    # Mixtral-8x7B: Mistral's attention (GQA 8, no window), 8 experts of 14336, top-2, for its
    # layer shapes (its 93 GiB of bf16 weights need not fit in memory).
    "mixtral-8x7b": dict(model_type="mixtral", hidden=4096, intermediate=14336, layers=32,
                         heads=32, kv_heads=8, head_dim=128, vocab=32000, rope_theta=1000000.0,
                         rms_norm_eps=1e-5, max_positions=32768),
    # OLMoE-1B-7B-0924: 16 layers of 64 experts of 1024, top-8 not renormalised, q/k norms over
    # the whole projection, MHA, untied 50,304-token vocabulary.
    "olmoe-1b-7b": dict(model_type="olmoe", hidden=2048, intermediate=1024, layers=16, heads=16, kv_heads=16,
                        head_dim=128, vocab=50304, rope_theta=10000.0, rms_norm_eps=1e-5, max_positions=4096,
                        experts=64, experts_per_tok=8, bos_token_id=1, eos_token_id=50279),
    # Qwen3-30B-A3B: 48 layers of 128 experts of 768 (every layer sparse), top-8 renormalised, GQA 8
    # (32 / 4) of head_dim 128 (4096 != hidden 2048), untied 151,936-token vocabulary.
    "qwen3-30b-a3b": dict(model_type="qwen3_moe", hidden=2048, intermediate=6144, moe_intermediate=768, layers=48,
                          heads=32, kv_heads=4, head_dim=128, vocab=151936, rope_theta=1000000.0,
                          rms_norm_eps=1e-6, max_positions=40960, experts=128, experts_per_tok=8,
                          bos_token_id=151643, eos_token_id=151645),
    # LLaMA-3.1-8B: GQA 8, 128,256-token vocabulary, llama3 RoPE scaling.
    "llama3-8b": dict(model_type="llama", hidden=4096, intermediate=14336, layers=32,
                      heads=32, kv_heads=8, head_dim=128, vocab=128256, rope_theta=500000.0,
                      rms_norm_eps=1e-5, max_positions=131072, bos_token_id=128000, eos_token_id=128001,
                      extra={"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                              "high_freq_factor": 4.0,
                                              "original_max_position_embeddings": 8192}}),
    # Qwen2.5-7B: q/k/v biases, GQA 7 (28 / 4), untied 152,064-token vocabulary.
    "qwen2.5-7b": dict(model_type="qwen2", hidden=3584, intermediate=18944, layers=28,
                       heads=28, kv_heads=4, head_dim=128, vocab=152064, rope_theta=1000000.0,
                       rms_norm_eps=1e-6, max_positions=32768, sliding_window=131072,
                       tie_word_embeddings=False, bos_token_id=151643, eos_token_id=151643),
    # Mid-sized, for memory measurements; vocab defaults to the tokenizer's.
    "h1024-l8": dict(model_type="llama", hidden=1024, intermediate=2816, layers=8,
                     heads=16, kv_heads=16, head_dim=64, vocab=None, rope_theta=10000.0,
                     rms_norm_eps=1e-5, max_positions=8192),
}


def spm_vocab_size(path):
    """Number of pieces in a sentencepiece model (ModelProto field 1, repeated)."""
    buf = open(path, "rb").read()
    pos, count = 0, 0

    def varint(p):
        value, shift = 0, 0
        while True:
            b = buf[p]
            value |= (b & 0x7F) << shift
            p += 1
            if b < 0x80:
                return value, p
            shift += 7

    while pos < len(buf):
        key, pos = varint(pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = varint(pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, pos = varint(pos)
            pos += length
            count += field == 1
        else:
            raise ValueError(f"{path}: unexpected protobuf wire type {wire}")
    return count


def is_tokenizer_json(path):
    """A Hugging Face tokenizer.json (a JSON object) rather than a sentencepiece model."""
    with open(path, "rb") as f:
        return f.read(64).lstrip().startswith(b"{")


def tokenizer_vocab_size(path):
    """The vocabulary a tokenizer needs: sentencepiece pieces, or 1 + tokenizer.json's largest id."""
    if not is_tokenizer_json(path):
        return spm_vocab_size(path)
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
    vocab = (tok.get("model") or {}).get("vocab")
    ids = list(vocab.values()) if isinstance(vocab, dict) else list(range(len(vocab or [])))
    ids += [t["id"] for t in tok.get("added_tokens") or []]
    if not ids:
        raise ValueError(f"{path}: tokenizer.json has no model.vocab")
    return max(ids) + 1


def tokenizer_file_name(path):
    return "tokenizer.json" if is_tokenizer_json(path) else "tokenizer.model"


ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "gemma": "GemmaForCausalLM",
                 "gemma2": "Gemma2ForCausalLM", "gemma3_text": "Gemma3ForCausalLM",
                 "gemma3": "Gemma3ForConditionalGeneration", "qwen2": "Qwen2ForCausalLM",
                 "qwen3": "Qwen3ForCausalLM", "olmo2": "Olmo2ForCausalLM", "gpt_neox": "GPTNeoXForCausalLM",
                 "gpt2": "GPT2LMHeadModel", "phi": "PhiForCausalLM",
                 "phi3": "Phi3ForCausalLM", "mixtral": "MixtralForCausalLM", "olmoe": "OlmoeForCausalLM",
                 "qwen3_moe": "Qwen3MoeForCausalLM"}
GEMMAS = ("gemma", "gemma2", "gemma3_text", "gemma3")


def hf_config(model_type, hidden, intermediate, layers, heads, kv_heads, head_dim, vocab,
              dtype, rope_theta=10000.0, rms_norm_eps=1e-5, max_positions=4096,
              sliding_window=None, tie_word_embeddings=None, bos_token_id=1,
              eos_token_id=2, pad_token_id=None, write_head_dim=True, experts=None, experts_per_tok=None,
              moe_intermediate=None, extra=None):
    """A config.json dict with the fields transformers' config class of `model_type` uses.
    `extra` adds or overrides family fields (rope_scaling, soft-caps, layer_types, ...). Mixtures
    of experts: `experts` and `experts_per_tok` (else the family's usual), `moe_intermediate`
    (Qwen3-MoE's experts; else `intermediate`). A
    gemma3 (multimodal) config nests the text fields under text_config, beside a vision_config."""
    if tie_word_embeddings is None:
        tie_word_embeddings = model_type in GEMMAS
    text_type = "gemma3_text" if model_type == "gemma3" else model_type
    cfg = {
        "architectures": [ARCHITECTURES[model_type]],
        "model_type": text_type,
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "rms_norm_eps": rms_norm_eps,
        "rope_theta": rope_theta,
        "max_position_embeddings": max_positions,
        "vocab_size": vocab,
        "bos_token_id": bos_token_id,
        "eos_token_id": eos_token_id,
        "tie_word_embeddings": tie_word_embeddings,
        "torch_dtype": TORCH_DTYPE[dtype],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "initializer_range": 0.02,
        "use_cache": True,
        "transformers_version": "4.57.0",
    }
    if write_head_dim:
        cfg["head_dim"] = head_dim
    elif head_dim * heads != hidden:
        raise ValueError("head_dim must be written when heads * head_dim != hidden")
    if pad_token_id is not None:
        cfg["pad_token_id"] = pad_token_id
    if model_type == "gpt2":
        # GPT2Config (transformers 4.57) writes n_embd, n_layer, n_head, n_positions, n_inner.
        if kv_heads != heads or head_dim * heads != hidden:
            raise ValueError("gpt2: kv_heads == heads and head_dim == hidden / heads")
        for key in ("num_key_value_heads", "head_dim", "rms_norm_eps", "rope_theta", "attention_bias",
                    "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                    "max_position_embeddings", "attention_dropout"):
            cfg.pop(key, None)
        cfg.update(n_embd=hidden, n_inner=intermediate, n_layer=layers, n_head=heads, n_positions=max_positions,
                   activation_function="gelu_new", layer_norm_epsilon=rms_norm_eps, scale_attn_weights=True,
                   scale_attn_by_inverse_layer_idx=False, reorder_and_upcast_attn=False)
        return cfg
    if model_type == "phi3":
        # Phi3Config (transformers 4.57): original_max_position_embeddings beside max_position_embeddings
        # (longrope's pretrained length), sliding_window (null: none), partial_rotary_factor.
        cfg.pop("head_dim", None)
        cfg.update(hidden_act="silu", original_max_position_embeddings=max_positions, sliding_window=sliding_window,
                   rope_scaling=None, partial_rotary_factor=1.0, resid_pdrop=0.0, embd_pdrop=0.0)
        cfg.update(extra or {})
        return cfg
    if model_type == "phi":
        # PhiConfig (transformers 4.57): layer_norm_eps, partial_rotary_factor, gelu_new, qk_layernorm.
        for key in ("rms_norm_eps", "attention_bias", "head_dim"):
            cfg.pop(key, None)
        cfg.update(hidden_act="gelu_new", layer_norm_eps=rms_norm_eps, partial_rotary_factor=0.4,
                   qk_layernorm=False, rope_scaling=None, resid_pdrop=0.0, embd_pdrop=0.0)
        return cfg
    if model_type == "gpt_neox":
        # GPTNeoXConfig (transformers 4.57): no num_key_value_heads or head_dim, layer_norm_eps,
        # rotary_pct and rotary_emb_base (4.x keys), biases everywhere, parallel residual.
        if kv_heads != heads or head_dim * heads != hidden:
            raise ValueError("gpt_neox: kv_heads == heads and head_dim == hidden / heads")
        for key in ("num_key_value_heads", "head_dim", "rms_norm_eps", "rope_theta", "attention_bias"):
            cfg.pop(key, None)
        cfg.update(hidden_act="gelu", layer_norm_eps=rms_norm_eps, rotary_pct=0.25, rotary_emb_base=rope_theta,
                   use_parallel_residual=True, attention_bias=True, rope_scaling=None)
    elif model_type in ("llama", "olmo2"):
        cfg.update(hidden_act="silu", rope_scaling=None)
        if model_type == "llama":
            cfg.update(pretraining_tp=1, mlp_bias=False)
    elif model_type == "mistral":
        cfg.update(hidden_act="silu", sliding_window=sliding_window)
    elif model_type == "mixtral":
        # MixtralConfig (transformers 4.57): Mistral's attention, 8 experts of which each token
        # uses 2; the router's jitter and auxiliary loss act only in training.
        cfg.update(hidden_act="silu", sliding_window=sliding_window, num_local_experts=experts or 8,
                   num_experts_per_tok=experts_per_tok or 2, router_jitter_noise=0.0, router_aux_loss_coef=0.02,
                   output_router_logits=False)
    elif model_type == "olmoe":
        # OlmoeConfig (transformers 4.57): LLaMA's layer with q/k RMSNorm over the whole projection
        # (so head_dim is hidden / heads, and not written), num_experts experts of intermediate_size,
        # num_experts_per_tok per token, their weights not renormalised (norm_topk_prob false).
        if head_dim * heads != hidden:
            raise ValueError("olmoe: head_dim == hidden / heads (its q_norm spans hidden_size)")
        cfg.pop("head_dim", None)
        cfg.update(hidden_act="silu", rope_scaling=None, num_experts=experts or 64,
                   num_experts_per_tok=experts_per_tok or 8, norm_topk_prob=False, clip_qkv=None,
                   router_aux_loss_coef=0.01, output_router_logits=False)
    elif model_type == "qwen3_moe":
        # Qwen3MoeConfig (transformers 4.57): Qwen3's attention; experts of moe_intermediate_size on
        # the layers decoder_sparse_step and mlp_only_layers choose, dense MLPs of intermediate_size
        # on the others; the released models renormalise the top-k weights (norm_topk_prob true).
        cfg.update(hidden_act="silu", rope_scaling=None, use_sliding_window=False, sliding_window=None,
                   max_window_layers=layers, num_experts=experts or 128, num_experts_per_tok=experts_per_tok or 8,
                   norm_topk_prob=True, moe_intermediate_size=moe_intermediate or intermediate,
                   decoder_sparse_step=1, mlp_only_layers=[], router_aux_loss_coef=0.001,
                   output_router_logits=False)
    elif model_type in ("qwen2", "qwen3"):
        cfg.update(hidden_act="silu", rope_scaling=None, use_sliding_window=False,
                   sliding_window=sliding_window, max_window_layers=layers)
    elif model_type in GEMMAS:
        # Real Gemma configs say "gelu" and override it with hidden_activation.
        cfg.update(hidden_act="gelu", hidden_activation="gelu_pytorch_tanh")
        if model_type != "gemma":
            cfg.update(query_pre_attn_scalar=head_dim, sliding_window=sliding_window or 4096,
                       attn_logit_softcapping=50.0 if model_type == "gemma2" else None,
                       final_logit_softcapping=30.0 if model_type == "gemma2" else None)
    else:
        raise ValueError(f"unsupported model_type {model_type!r}")
    cfg.update(extra or {})
    if model_type != "gemma3":
        return cfg
    # The multimodal layout: text tower under text_config, weights under language_model.
    top = {key: cfg.pop(key) for key in ("architectures", "torch_dtype", "transformers_version")}
    top.update(model_type="gemma3", tie_word_embeddings=cfg.pop("tie_word_embeddings"), text_config=cfg,
               vision_config={"model_type": "siglip_vision_model", "hidden_size": 32, "patch_size": 14},
               mm_tokens_per_image=256)
    return top


# The decoder layer's norm slots per family (HF *DecoderLayer), relative to "model.layers.N.":
# (attention input, attention output, MLP input, MLP output), None where there is none.
LAYER_NORMS = {
    "pre": ("input_layernorm", None, "post_attention_layernorm", None),
    "sandwich": ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                 "post_feedforward_layernorm"),
    "post": (None, "post_attention_layernorm", None, "post_feedforward_layernorm"),
}


def text_config(cfg):
    """(the text model's config, its model_type, the weight name prefix)."""
    if cfg["model_type"] == "gemma3":
        return cfg["text_config"], "gemma3_text", "language_model."
    return cfg, cfg["model_type"], ""


# Mixtures of experts (transformers 4.57): the sparse block's prefix, the key of the expert
# count, and each expert's (name, role) in the order a save writes them.
MOE = {"mixtral": ("block_sparse_moe.", "num_local_experts", (("w1", "gate"), ("w2", "down"), ("w3", "up"))),
       "olmoe": ("mlp.", "num_experts", (("gate_proj", "gate"), ("up_proj", "up"), ("down_proj", "down"))),
       "qwen3_moe": ("mlp.", "num_experts", (("gate_proj", "gate"), ("up_proj", "up"), ("down_proj", "down")))}


def expert_count(text, model_type):
    """The config's expert count (Qwen3MoeConfig in transformers 5.x may write num_local_experts)."""
    key = MOE[model_type][1]
    return text[key] if key in text else text["num_local_experts"]


def sparse_layer(text, model_type, i):
    """Whether layer i is a mixture of experts: every layer of Mixtral and OLMoE; Qwen3MoeDecoderLayer:
    i not in mlp_only_layers and num_experts > 0 and (i + 1) % decoder_sparse_step == 0."""
    if model_type not in MOE:
        return False
    if model_type != "qwen3_moe":
        return True
    return (i not in (text.get("mlp_only_layers") or []) and expert_count(text, model_type) > 0
            and (i + 1) % text.get("decoder_sparse_step", 1) == 0)


def expert_shapes(text, model_type, p, fused=False):
    """A sparse layer's tensors under prefix p: the router and one gated MLP per expert or, fused
    as transformers 5.x holds and (save_original_format=False) saves them, the router under mlp.gate,
    every expert's [gate | up] in mlp.experts.gate_up_proj and down in mlp.experts.down_proj."""
    block, _, names = MOE[model_type]
    n, h = expert_count(text, model_type), text["hidden_size"]
    inter = text.get("moe_intermediate_size", text["intermediate_size"]) if model_type == "qwen3_moe" \
        else text["intermediate_size"]
    if fused:
        return [(p + "mlp.gate.weight", (n, h)), (p + "mlp.experts.gate_up_proj", (n, 2 * inter, h)),
                (p + "mlp.experts.down_proj", (n, h, inter))]
    out = [(p + block + "gate.weight", (n, h))]
    for e in range(n):
        out += [(f"{p}{block}experts.{e}.{name}.weight", (h, inter) if role == "down" else (inter, h))
                for name, role in names]
    return out


def fuse_experts(cfg, weights):
    """{name: array} with each sparse layer's per-expert tensors replaced by the fused ones of
    expert_shapes(fused=True): gate_up_proj[e] = [gate_e | up_e] (MergeModulelist(dim=0) then
    Concatenate(dim=1) in transformers 5.x conversion_mapping.py), down_proj[e] = down_e."""
    text, mt, prefix = text_config(cfg)
    out = dict(weights)
    block, _, names = MOE[mt]
    for i in range(text["num_hidden_layers"]):
        if not sparse_layer(text, mt, i):
            continue
        p = f"{prefix}model.layers.{i}."
        role = {r: n for n, r in names}
        take = lambda e, r: out.pop(f"{p}{block}experts.{e}.{role[r]}.weight")
        n = expert_count(text, mt)
        gate_up = [np.concatenate([take(e, "gate"), take(e, "up")]) for e in range(n)]
        out[p + "mlp.experts.gate_up_proj"] = np.stack(gate_up)
        out[p + "mlp.experts.down_proj"] = np.stack([take(e, "down") for e in range(n)])
        out[p + "mlp.gate.weight"] = out.pop(p + block + "gate.weight")
    return out


def tensor_shapes(cfg, fused_experts=False):
    """[(name, shape)] in Hugging Face order and layout ([out, in] for projections); a mixture's
    experts fused as transformers 5.x writes them with `fused_experts` (expert_shapes)."""
    text, mt, prefix = text_config(cfg)
    if mt == "gpt_neox":
        return neox_tensor_shapes(cfg)
    if mt == "gpt2":
        return gpt2_tensor_shapes(cfg)
    if mt == "phi":
        return phi_tensor_shapes(cfg)
    if mt == "phi3":
        return phi_tensor_shapes(cfg)
    h, inter = text["hidden_size"], text["intermediate_size"]
    nh, nkv = text["num_attention_heads"], text["num_key_value_heads"]
    hd = text.get("head_dim") or h // nh
    norms = LAYER_NORMS["sandwich" if mt in ("gemma2", "gemma3_text") else "post" if mt == "olmo2" else "pre"]
    attention_bias = text.get("attention_bias", False) and mt not in ("mistral", "qwen2")
    qkv_bias = attention_bias or mt == "qwen2"
    out = [(prefix + "model.embed_tokens.weight", (text["vocab_size"], h))]
    for i in range(text["num_hidden_layers"]):
        p = f"{prefix}model.layers.{i}."
        norm = lambda slot: [(p + norms[slot] + ".weight", (h,))] if norms[slot] else []
        out += norm(0)
        for name, rows in (("q", nh * hd), ("k", nkv * hd), ("v", nkv * hd)):
            out.append((p + f"self_attn.{name}_proj.weight", (rows, h)))
            if qkv_bias:
                out.append((p + f"self_attn.{name}_proj.bias", (rows,)))
        out.append((p + "self_attn.o_proj.weight", (h, nh * hd)))
        if attention_bias:
            out.append((p + "self_attn.o_proj.bias", (h,)))
        if mt in ("qwen3", "qwen3_moe", "gemma3_text"):
            out += [(p + "self_attn.q_norm.weight", (hd,)), (p + "self_attn.k_norm.weight", (hd,))]
        elif mt in ("olmo2", "olmoe"):
            out += [(p + "self_attn.q_norm.weight", (nh * hd,)), (p + "self_attn.k_norm.weight", (nkv * hd,))]
        out += norm(1) + norm(2)
        if sparse_layer(text, mt, i):
            # Mixtral's block_sparse_moe (w1 gate, w2 down, w3 up), OLMoE's and Qwen3-MoE's mlp
            out += expert_shapes(text, mt, p, fused_experts)
        else:
            out += [(p + "mlp.gate_proj.weight", (inter, h)),
                    (p + "mlp.up_proj.weight", (inter, h)),
                    (p + "mlp.down_proj.weight", (h, inter))]
        out += norm(3)
    out.append((prefix + "model.norm.weight", (h,)))
    if not cfg["tie_word_embeddings"]:
        out.append((prefix + "lm_head.weight", (text["vocab_size"], h)))
    return out


def neox_tensor_shapes(cfg):
    """GPTNeoXForCausalLM's tensors: LayerNorms with biases, the fused per-head query_key_value,
    attention.dense, a non-gated MLP with biases, embed_out."""
    h, inter, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    bias = cfg.get("attention_bias", True)
    out = [("gpt_neox.embed_in.weight", (v, h))]
    for i in range(cfg["num_hidden_layers"]):
        p = f"gpt_neox.layers.{i}."
        out += [(p + "input_layernorm.weight", (h,)), (p + "input_layernorm.bias", (h,)),
                (p + "post_attention_layernorm.weight", (h,)), (p + "post_attention_layernorm.bias", (h,))]
        for name, rows, cols, has_bias in (("attention.query_key_value", 3 * h, h, bias),
                                           ("attention.dense", h, h, bias),
                                           ("mlp.dense_h_to_4h", inter, h, True),
                                           ("mlp.dense_4h_to_h", h, inter, True)):
            out.append((p + name + ".weight", (rows, cols)))
            if has_bias:
                out.append((p + name + ".bias", (rows,)))
    out += [("gpt_neox.final_layer_norm.weight", (h,)), ("gpt_neox.final_layer_norm.bias", (h,))]
    if not cfg["tie_word_embeddings"]:
        out.append(("embed_out.weight", (v, h)))
    return out


def phi_tensor_shapes(cfg):
    """PhiForCausalLM's tensors: one input LayerNorm per layer, q/k/v/dense with biases, fc1/fc2
    with biases, final_layernorm, lm_head with a bias. Phi3ForCausalLM's: RMSNorms, fused
    qkv_proj [q | k | v] and gate_up_proj [gate | up], no biases."""
    h, inter, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh = cfg["num_attention_heads"]
    nkv, hd = cfg.get("num_key_value_heads") or nh, h // nh
    phi3 = cfg["model_type"] == "phi3"
    out = [("model.embed_tokens.weight", (v, h))]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        if phi3:
            out += [(p + "input_layernorm.weight", (h,)), (p + "self_attn.qkv_proj.weight", ((nh + 2 * nkv) * hd, h)),
                    (p + "self_attn.o_proj.weight", (h, nh * hd)), (p + "post_attention_layernorm.weight", (h,)),
                    (p + "mlp.gate_up_proj.weight", (2 * inter, h)), (p + "mlp.down_proj.weight", (h, inter))]
            continue
        out += [(p + "input_layernorm.weight", (h,)), (p + "input_layernorm.bias", (h,))]
        for name, rows, cols in (("self_attn.q_proj", nh * hd, h), ("self_attn.k_proj", nkv * hd, h),
                                 ("self_attn.v_proj", nkv * hd, h), ("self_attn.dense", h, nh * hd),
                                 ("mlp.fc1", inter, h), ("mlp.fc2", h, inter)):
            out += [(p + name + ".weight", (rows, cols)), (p + name + ".bias", (rows,))]
    out += [("model.norm.weight", (h,))] if phi3 else \
        [("model.final_layernorm.weight", (h,)), ("model.final_layernorm.bias", (h,))]
    if not cfg["tie_word_embeddings"]:
        out.append(("lm_head.weight", (v, h)))
    if not phi3:
        out.append(("lm_head.bias", (v,)))
    return out


def gpt2_tensor_shapes(cfg):
    """GPT2LMHeadModel's tensors (transformer.*): Conv1D weights stored [in, out], biases on every
    projection and LayerNorm, learned positions wpe; lm_head only when untied."""
    h, v = cfg["n_embd"], cfg["vocab_size"]
    inter = cfg.get("n_inner") or 4 * h
    out = [("transformer.wte.weight", (v, h)), ("transformer.wpe.weight", (cfg["n_positions"], h))]
    for i in range(cfg["n_layer"]):
        p = f"transformer.h.{i}."
        out += [(p + "ln_1.weight", (h,)), (p + "ln_1.bias", (h,))]
        out += [(p + "attn.c_attn.weight", (h, 3 * h)), (p + "attn.c_attn.bias", (3 * h,)),
                (p + "attn.c_proj.weight", (h, h)), (p + "attn.c_proj.bias", (h,))]
        out += [(p + "ln_2.weight", (h,)), (p + "ln_2.bias", (h,))]
        out += [(p + "mlp.c_fc.weight", (h, inter)), (p + "mlp.c_fc.bias", (inter,)),
                (p + "mlp.c_proj.weight", (inter, h)), (p + "mlp.c_proj.bias", (h,))]
    out += [("transformer.ln_f.weight", (h,)), ("transformer.ln_f.bias", (h,))]
    if not cfg["tie_word_embeddings"]:
        out.append(("lm_head.weight", (v, h)))
    return out


def f32_to_bf16_bits(a):
    """Round float32 to bfloat16 (nearest even); returns the uint16 bit patterns."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def encode(a, dtype):
    """An array as the raw bytes of safetensors dtype `dtype` (floats rounded, ints cast)."""
    if dtype == "BF16":
        return f32_to_bf16_bits(a).tobytes()
    np_dtype = ST_DTYPES[dtype][0] if dtype in ST_DTYPES else {"I64": np.int64, "I32": np.int32}[dtype]
    return np.ascontiguousarray(a, dtype=np.dtype(np_dtype).newbyteorder("<")).tobytes()


class Tensor:
    """One tensor to write: name, safetensors dtype, shape, and a chunk source.

    `chunks()` yields bytes objects whose total length is nbytes."""

    def __init__(self, name, dtype, shape, chunks):
        self.name, self.dtype, self.shape, self.chunks = name, dtype, tuple(shape), chunks

    @property
    def nbytes(self):
        return math.prod(self.shape) * ST_SIZES[self.dtype]

    @staticmethod
    def from_array(name, dtype, array):
        data = encode(array, dtype)
        return Tensor(name, dtype, array.shape, lambda: iter([data]))


def write_safetensors(path, tensors, metadata=None):
    """Stream tensors into a safetensors file: u64 header length, JSON, packed data."""
    header = {"__metadata__": dict(metadata or {"format": "pt"})}
    offset = 0
    for t in tensors:
        header[t.name] = {"dtype": t.dtype, "shape": list(t.shape),
                          "data_offsets": [offset, offset + t.nbytes]}
        offset += t.nbytes
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)  # data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(len(blob).to_bytes(8, "little"))
        f.write(blob)
        for t in tensors:
            written = 0
            for chunk in t.chunks():
                f.write(chunk)
                written += len(chunk)
            if written != t.nbytes:
                raise RuntimeError(f"{t.name}: wrote {written} bytes, expected {t.nbytes}")


def write_checkpoint(out_dir, config, tensors, tokenizer, max_shard_bytes=None):
    """config.json, model.safetensors or shards + index, and a copy of tokenizer (under its kind's name)."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    shutil.copyfile(tokenizer, os.path.join(out_dir, tokenizer_file_name(tokenizer)))
    total = sum(t.nbytes for t in tensors)
    if not max_shard_bytes or total <= max_shard_bytes:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors)
        return ["model.safetensors"]
    shards, current, size = [], [], 0
    for t in tensors:
        if current and size + t.nbytes > max_shard_bytes:
            shards.append(current)
            current, size = [], 0
        current.append(t)
        size += t.nbytes
    shards.append(current)
    names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    weight_map = {}
    for name, shard in zip(names, shards):
        write_safetensors(os.path.join(out_dir, name), shard)
        weight_map.update({t.name: name for t in shard})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")
    return names


# --- random weights, generated as bit patterns so 7B models write at disk speed ---

# (sign mask, exponent shift, exponent bias, mantissa mask, storage dtype) per dtype
_BITS = {"BF16": (0x8000, 7, 127, 0x007F, np.uint16),
         "F16": (0x8000, 10, 15, 0x03FF, np.uint16),
         "F32": (0x80000000, 23, 127, 0x007FFFFF, np.uint32)}


def random_chunks(dtype, count, scale, rng, positive=False, chunk_elems=1 << 24):
    """Random values with |x| in [scale/8, 4*scale), random (or + when positive) sign.

    Drawn as raw bits: 2 random exponent bits put the magnitude in one of the four
    octaves around `scale`, so every value is finite and sensibly scaled."""
    sign, shift, bias, mant, store = _BITS[dtype]
    base = int(math.floor(math.log2(scale))) - 2 + bias
    if not 1 <= base <= (0x1F if dtype == "F16" else 0xFF) - 4:
        raise ValueError(f"scale {scale} not representable in {dtype}")
    done = 0
    while done < count:
        n = min(chunk_elems, count - done)
        words = -(-n * np.dtype(store).itemsize // 8)  # draw 64-bit words: fastest
        r = rng.integers(0, 2**64 - 1, size=words, dtype=np.uint64, endpoint=True).view(store)[:n]
        # keep sign, mantissa and the 2 low exponent bits; add the base exponent
        # (no carry: base + 3 fits the exponent field)
        r &= store((mant if positive else sign | mant) | (3 << shift))
        r += store(base << shift)
        yield r.tobytes()
        done += n


def constant_chunks(dtype, count, value):
    yield encode(np.full(count, value, dtype=np.float32), dtype)


def random_tensors(config, dtype, seed, fused_experts=False):
    """Tensor list for a random checkpoint; each tensor's values come from its own seed."""
    _, model_type, _ = text_config(config)
    gemma = model_type in GEMMAS
    out = []
    for k, (name, shape) in enumerate(tensor_shapes(config, fused_experts)):
        rng_seed = [seed, k]
        count = math.prod(shape)
        if name.endswith(("norm.weight", "ln_1.weight", "ln_2.weight", "ln_f.weight", "final_layernorm.weight")):
            # w in [1/4, 4) for LLaMA-style norms; w = 0 for Gemma's (1 + w).
            chunks = (lambda c=count: constant_chunks(dtype, c, 0.0)) if gemma else \
                     (lambda c=count, s=rng_seed: random_chunks(dtype, c, 1.0, np.random.default_rng(s), True))
        else:
            embedding = name.endswith(("model.embed_tokens.weight", "embed_in.weight", "wte.weight"))
            scale = 1.0 if embedding and not gemma else 0.0625 if len(shape) == 1 else shape[-1] ** -0.5
            chunks = lambda c=count, s=rng_seed, sc=scale: random_chunks(
                dtype, c, sc, np.random.default_rng(s))
        out.append(Tensor(name, dtype, shape, chunks))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS))
    ap.add_argument("--model-type", choices=sorted(ARCHITECTURES))
    for flag in ["hidden", "intermediate", "layers", "heads", "kv-heads", "head-dim", "vocab"]:
        ap.add_argument("--" + flag, type=int)
    ap.add_argument("--sliding-window", type=int, help="mistral, qwen2/3 (unused there), gemma2/3; omit for null")
    ap.add_argument("--experts", type=int, help="mixtral, olmoe, qwen3_moe: experts per sparse layer")
    ap.add_argument("--experts-per-tok", type=int, help="mixtral, olmoe, qwen3_moe: experts each token uses")
    ap.add_argument("--moe-intermediate", type=int, help="qwen3_moe: each expert's width (default --intermediate)")
    ap.add_argument("--fused-experts", action="store_true",
                    help="write the experts fused, as transformers 5.x's save_original_format=False does")
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPE_ALIASES))
    ap.add_argument("--tokenizer", required=True, help="tokenizer.model (sentencepiece) or tokenizer.json to copy")
    ap.add_argument("--out", required=True, help="output model directory")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-shard-gb", type=float, default=5.0,
                    help="shard when the weights exceed this (0: never)")
    ap.add_argument("--bos-id", type=int, help="default: the preset's, else 1")
    ap.add_argument("--eos-id", type=int, help="default: the preset's, else 2")
    args = ap.parse_args(argv)

    shape = dict(PRESETS[args.preset]) if args.preset else {}
    for key in ["model_type", "hidden", "intermediate", "layers", "heads", "kv_heads",
                "head_dim", "vocab", "sliding_window", "experts", "experts_per_tok", "moe_intermediate"]:
        if getattr(args, key) is not None:
            shape[key] = getattr(args, key)
    for key in ["model_type", "hidden", "intermediate", "layers", "heads"]:
        if shape.get(key) is None:
            ap.error(f"--{key.replace('_', '-')} is required without a preset")
    shape.setdefault("kv_heads", shape["heads"])
    if shape["kv_heads"] > shape["heads"] or shape["heads"] % shape["kv_heads"]:
        ap.error(f"heads {shape['heads']} is not a multiple of kv_heads {shape['kv_heads']}")
    if shape.get("head_dim") is None:
        shape["head_dim"] = shape["hidden"] // shape["heads"]
    try:
        tok_vocab = tokenizer_vocab_size(args.tokenizer)
    except (OSError, ValueError, IndexError, KeyError, TypeError) as e:
        print(f"{ap.prog}: error: --tokenizer {args.tokenizer}: expected a sentencepiece tokenizer.model or a "
              f"Hugging Face tokenizer.json ({e})", file=sys.stderr)
        return 2
    if shape.get("vocab") is None:
        shape["vocab"] = tok_vocab
    if shape["vocab"] < tok_vocab:
        ap.error(f"vocab {shape['vocab']} is smaller than the tokenizer's {tok_vocab}")
    if shape["model_type"] in ("llama", "gemma", "olmo2", "gpt_neox", "gpt2", "phi", "phi3", "olmoe", "qwen3_moe"):
        shape.pop("sliding_window", None)
    if args.fused_experts and shape["model_type"] not in MOE:
        ap.error("--fused-experts needs a mixture of experts (mixtral, olmoe, qwen3_moe)")
    dtype = DTYPE_ALIASES[args.dtype]
    for key, given, fallback in (("bos_token_id", args.bos_id, 1), ("eos_token_id", args.eos_id, 2)):
        shape[key] = given if given is not None else shape.get(key, fallback)
    config = hf_config(dtype=dtype, **shape)
    tensors = random_tensors(config, dtype, args.seed, args.fused_experts)
    total = sum(t.nbytes for t in tensors)
    print(f"writing {args.out}: {shape['model_type']} {len(tensors)} tensors, "
          f"{total / 2**30:.2f} GiB {dtype}", flush=True)
    files = write_checkpoint(args.out, config, tensors, args.tokenizer,
                             int(args.max_shard_gb * 1e9) if args.max_shard_gb > 0 else None)
    print(f"wrote {', '.join(files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
