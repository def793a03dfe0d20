#!/usr/bin/python3
"""The Hugging Face layouts of the families attngeom reads: each family's config.json fields
(`hf_config`) and its tensors' names and shapes in order (`tensor_shapes`), mixtures of experts
per expert or fused as transformers 5.x holds them. Shared by tools/make_random_checkpoint.py,
make_fixtures.py, make_planted_model.py and the tests. The families without LLaMA's layer have their
tensor layouts in hf_layouts_gpt.py (BLOOM's, MPT's, StarCoder2's, GPTBigCode's, StableLM's and Granite's configs
too)."""
import numpy as np

from hf_layouts_gpt import (LLAMA_STYLE_KEYS, bloom_config, bloom_tensor_shapes, falcon_tensor_shapes,
                            gpt2_tensor_shapes, gpt_bigcode_config, gpt_bigcode_tensor_shapes, gpt_neo_tensor_shapes,
                            gptj_tensor_shapes, granite_config, mpt_config, mpt_tensor_shapes, neox_tensor_shapes,
                            opt_tensor_shapes, phi_tensor_shapes, stablelm_config, stablelm_tensor_shapes,
                            starcoder2_config, starcoder2_tensor_shapes)

# safetensors dtype -> config.json's torch_dtype
TORCH_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "gemma": "GemmaForCausalLM",
                 "gemma2": "Gemma2ForCausalLM", "gemma3_text": "Gemma3ForCausalLM",
                 "gemma3": "Gemma3ForConditionalGeneration", "qwen2": "Qwen2ForCausalLM",
                 "qwen3": "Qwen3ForCausalLM", "olmo2": "Olmo2ForCausalLM", "olmo3": "Olmo3ForCausalLM",
                 "gpt_neox": "GPTNeoXForCausalLM", "gpt2": "GPT2LMHeadModel", "gptj": "GPTJForCausalLM",
                 "gpt_neo": "GPTNeoForCausalLM", "phi": "PhiForCausalLM", "phi3": "Phi3ForCausalLM",
                 "mixtral": "MixtralForCausalLM", "olmoe": "OlmoeForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM",
                 "smollm3": "SmolLM3ForCausalLM", "opt": "OPTForCausalLM", "qwen2_moe": "Qwen2MoeForCausalLM",
                 "falcon": "FalconForCausalLM", "bloom": "BloomForCausalLM",
                 "mpt": "MPTForCausalLM",  # mosaicml/mpt-7b's spelling (its remote code's; transformers': Mpt...)
                 "olmo": "OlmoForCausalLM", "starcoder2": "Starcoder2ForCausalLM",
                 "gpt_bigcode": "GPTBigCodeForCausalLM", "stablelm": "StableLmForCausalLM",
                 "granite": "GraniteForCausalLM"}
GEMMAS = ("gemma", "gemma2", "gemma3_text", "gemma3")


def hf_config(model_type, hidden, intermediate, layers, heads, kv_heads, head_dim, vocab,
              dtype, rope_theta=10000.0, rms_norm_eps=1e-5, max_positions=4096,
              sliding_window=None, tie_word_embeddings=None, bos_token_id=1,
              eos_token_id=2, pad_token_id=None, write_head_dim=True, experts=None, experts_per_tok=None,
              moe_intermediate=None, extra=None):
    """A config.json dict with the fields transformers' config class of `model_type` uses.
    `extra` adds or overrides family fields (rope_scaling, soft-caps, layer_types, ...). Mixtures
    of experts: `experts` and `experts_per_tok` (else the family's usual), `moe_intermediate`
    (Qwen3-MoE's and Qwen2-MoE's experts; else `intermediate`). A
    gemma3 (multimodal) config nests the text fields under text_config, beside a vision_config."""
    if tie_word_embeddings is None:
        tied = ("smollm3", "gpt_neo", "opt", "falcon", "bloom", "mpt", "starcoder2", "gpt_bigcode")
        tie_word_embeddings = model_type in GEMMAS or model_type in tied
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
        for key in LLAMA_STYLE_KEYS:
            cfg.pop(key, None)
        cfg.update(n_embd=hidden, n_inner=intermediate, n_layer=layers, n_head=heads, n_positions=max_positions,
                   activation_function="gelu_new", layer_norm_epsilon=rms_norm_eps, scale_attn_weights=True,
                   scale_attn_by_inverse_layer_idx=False, reorder_and_upcast_attn=False)
        return cfg
    if model_type == "gptj":
        # GPTJConfig (transformers 4.57): GPT-2's key names; rotary_dim, the leading channels of each
        # head that RoPE turns (base fixed at 10000), by default GPT-J-6B's quarter of the head (64 of
        # 256); n_inner null where it is 4 * n_embd, as GPT-J-6B writes it.
        if kv_heads != heads or head_dim * heads != hidden:
            raise ValueError("gptj: kv_heads == heads and head_dim == hidden / heads")
        for key in LLAMA_STYLE_KEYS:
            cfg.pop(key, None)
        cfg.update(n_embd=hidden, n_inner=None if intermediate == 4 * hidden else intermediate, n_layer=layers,
                   n_head=heads, n_positions=max_positions, rotary_dim=max(2, head_dim // 8 * 2),
                   activation_function="gelu_new", layer_norm_epsilon=rms_norm_eps, resid_pdrop=0.0,
                   embd_pdrop=0.0, attn_pdrop=0.0)
        cfg.update(extra or {})
        return cfg
    if model_type == "gpt_neo":
        # GPTNeoConfig (transformers 4.57): hidden_size, num_layers, num_heads (num_hidden_layers and
        # num_attention_heads only through its attribute_map), intermediate_size null where it is
        # 4 * hidden_size; attention_types global and local in turn (an odd last layer global) and,
        # as the released configs write it, the expanded attention_layers; local layers see
        # window_size keys (sliding_window's value, else 256). Scores are not scaled by 1 / sqrt(head_dim).
        if kv_heads != heads or head_dim * heads != hidden:
            raise ValueError("gpt_neo: kv_heads == heads and head_dim == hidden / heads")
        for key in LLAMA_STYLE_KEYS:
            if key not in ("hidden_size", "max_position_embeddings", "attention_dropout"):
                cfg.pop(key, None)
        types = [[["global", "local"], layers // 2]] + ([[["global"], 1]] if layers % 2 else [])
        cfg.update(hidden_size=hidden, num_layers=layers, num_heads=heads,
                   intermediate_size=None if intermediate == 4 * hidden else intermediate, attention_types=types,
                   attention_layers=[kind for kinds, n in types for _ in range(n) for kind in kinds],
                   window_size=sliding_window or 256, activation_function="gelu_new", layer_norm_epsilon=rms_norm_eps,
                   resid_dropout=0.0, embed_dropout=0.0)
        cfg.update(extra or {})
        return cfg
    if model_type == "opt":
        return opt_config(cfg, hidden, intermediate, heads, kv_heads, head_dim, extra)
    if model_type == "falcon":
        return falcon_config(cfg, hidden, intermediate, heads, kv_heads, head_dim, rms_norm_eps, extra)
    if model_type == "bloom":
        return bloom_config(cfg, hidden, intermediate, heads, kv_heads, head_dim, rms_norm_eps, extra)
    if model_type == "mpt":
        return mpt_config(cfg, hidden, intermediate, heads, kv_heads, head_dim, max_positions, extra)
    if model_type == "gpt_bigcode":
        return gpt_bigcode_config(cfg, hidden, intermediate, heads, kv_heads, head_dim, rms_norm_eps, max_positions,
                                  extra)
    if model_type == "starcoder2":
        return starcoder2_config(cfg, hidden, heads, head_dim, rms_norm_eps, sliding_window, extra)
    if model_type == "stablelm":
        return stablelm_config(cfg, hidden, heads, head_dim, rms_norm_eps, extra)
    if model_type == "granite":
        return granite_config(cfg, extra)
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
    elif model_type in ("llama", "olmo2", "olmo3"):
        cfg.update(hidden_act="silu", rope_scaling=None)
        if model_type == "llama":
            cfg.update(pretraining_tp=1, mlp_bias=False)
        if model_type == "olmo3":
            # Olmo3Config (transformers 4.57): OLMo-2's layer, sliding_window (default 4096) on the
            # sliding layers; layer_types, when `extra` does not write it, defaults to every fourth
            # layer full attention and the others sliding.
            cfg.update(sliding_window=sliding_window or 4096)
    elif model_type == "olmo":
        # OlmoConfig (transformers 4.57): LLaMA's layer with every norm a LayerNorm without weight or bias at eps
        # 1e-5 (no config key: rms_norm_eps not written), no head_dim key (hidden / heads), clip_qkv (null: no
        # clamp of q, k, v), pad 1, untied by default.
        if head_dim * heads != hidden:
            raise ValueError("olmo: head_dim == hidden / heads")
        for key in ("rms_norm_eps", "head_dim"):
            cfg.pop(key, None)
        cfg.update(hidden_act="silu", rope_scaling=None, clip_qkv=None, pad_token_id=cfg.get("pad_token_id", 1))
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
    elif model_type == "qwen2_moe":
        # Qwen2MoeConfig (transformers 4.57): Qwen2's attention, its q, k, v biases by qkv_bias (default
        # true; o_proj none; no attention_bias key) and windows only with use_sliding_window; experts of
        # moe_intermediate_size on the layers decoder_sparse_step and mlp_only_layers choose (dense MLPs of
        # intermediate_size on the others), top-k weights not renormalised (norm_topk_prob false), beside
        # them a shared expert of shared_expert_intermediate_size (here `intermediate`, as in Qwen1.5-MoE,
        # unless `extra` says) scaled by sigmoid(shared_expert_gate).
        cfg.pop("attention_bias")
        cfg.update(hidden_act="silu", rope_scaling=None, use_sliding_window=False, sliding_window=sliding_window,
                   max_window_layers=layers, num_experts=experts or 60, num_experts_per_tok=experts_per_tok or 4,
                   norm_topk_prob=False, moe_intermediate_size=moe_intermediate or intermediate,
                   shared_expert_intermediate_size=intermediate, decoder_sparse_step=1, mlp_only_layers=[],
                   qkv_bias=True, router_aux_loss_coef=0.001, output_router_logits=False)
    elif model_type == "smollm3":
        # SmolLM3Config (transformers 4.57): LLaMA's layer (attention_bias on q, k, v and o), tied by
        # default; no_rope_layers (1: RoPE, 0: NoPE), when `extra` does not write it, makes every
        # no_rope_layer_interval-th layer NoPE; use_sliding_window windows the NoPE layers by
        # sliding_window when layer_types is not written.
        cfg.update(hidden_act="silu", rope_scaling=None, mlp_bias=False, use_sliding_window=False,
                   sliding_window=sliding_window, no_rope_layer_interval=4)
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
    "none": (None, None, None, None),  # OLMo-1's LayerNorms hold no tensors
}


def opt_config(cfg, hidden, intermediate, heads, kv_heads, head_dim, extra):
    """OPTConfig (transformers 4.57): hidden_size, num_hidden_layers, num_attention_heads (MHA: no
    num_key_value_heads), ffn_dim (the MLP width), max_position_embeddings (the position table has 2
    rows more); pre-LN (do_layer_norm_before), ReLU, biases on every projection (enable_bias) and
    LayerNorm (layer_norm_elementwise_affine; eps 1e-5, no config key); word_embed_proj_dim ==
    hidden_size (no project_in / project_out); ids as the released models: bos and eos 2 ("</s>"), pad 1."""
    if kv_heads != heads or head_dim * heads != hidden:
        raise ValueError("opt: kv_heads == heads and head_dim == hidden / heads")
    kept = ("hidden_size", "num_hidden_layers", "num_attention_heads", "max_position_embeddings", "attention_dropout")
    for key in LLAMA_STYLE_KEYS + ("initializer_range",):
        if key not in kept:
            cfg.pop(key, None)
    cfg.setdefault("pad_token_id", 1)
    cfg.update(ffn_dim=intermediate, word_embed_proj_dim=hidden, do_layer_norm_before=True,
               _remove_final_layer_norm=False, activation_function="relu", enable_bias=True,
               layer_norm_elementwise_affine=True, dropout=0.1, activation_dropout=0.0, layerdrop=0.0, init_std=0.02)
    cfg.update(extra or {})
    return cfg


def falcon_config(cfg, hidden, intermediate, heads, kv_heads, head_dim, eps, extra):
    """FalconConfig (transformers 4.57) as the tiiuae/falcon-* configs write it (converted by
    convert_custom_code_checkpoint.py: num_hidden_layers, num_attention_heads, num_kv_heads): RoPE (alibi
    false), no linear biases, LayerNorms of layer_norm_epsilon, exact gelu. kv_heads 1 is Falcon-7B's
    layout (multi_query, one input_layernorm feeding attention and MLP in parallel; num_kv_heads not
    written); any other is Falcon-40B's (new_decoder_architecture with num_kv_heads, ln_attn and ln_mlp;
    multi_query, its default true, written but ignored there). ffn_hidden_size only where it is not
    4 * hidden_size. `extra` may turn multi_query and parallel_attn off in the old decoder, and turn alibi and
    bias on (Falcon-RW, whose config has no RoPE keys: rope_theta and rope_scaling then not written)."""
    if head_dim * heads != hidden:
        raise ValueError("falcon: head_dim == hidden / heads")
    kept = ("hidden_size", "num_hidden_layers", "num_attention_heads", "max_position_embeddings", "rope_theta",
            "attention_dropout")
    for key in LLAMA_STYLE_KEYS:
        if key not in kept:
            cfg.pop(key, None)
    cfg.update(layer_norm_epsilon=eps, alibi=False, bias=False, multi_query=True, parallel_attn=True,
               new_decoder_architecture=kv_heads != 1, activation="gelu", hidden_dropout=0.0,
               apply_residual_connection_post_layernorm=False, rope_scaling=None)
    if kv_heads != 1:
        cfg["num_kv_heads"] = kv_heads
    if intermediate != 4 * hidden:
        cfg["ffn_hidden_size"] = intermediate
    cfg.update(extra or {})
    for key in ("rope_theta", "rope_scaling") if cfg["alibi"] else ():
        cfg.pop(key, None)
    return cfg


def text_config(cfg):
    """(the text model's config, its model_type, the weight name prefix)."""
    if cfg["model_type"] == "gemma3":
        return cfg["text_config"], "gemma3_text", "language_model."
    return cfg, cfg["model_type"], ""


# Mixtures of experts (transformers 4.57): the sparse block's prefix, the key of the expert
# count, and each expert's (name, role) in the order a save writes them.
MOE = {"mixtral": ("block_sparse_moe.", "num_local_experts", (("w1", "gate"), ("w2", "down"), ("w3", "up"))),
       "olmoe": ("mlp.", "num_experts", (("gate_proj", "gate"), ("up_proj", "up"), ("down_proj", "down"))),
       "qwen3_moe": ("mlp.", "num_experts", (("gate_proj", "gate"), ("up_proj", "up"), ("down_proj", "down"))),
       "qwen2_moe": ("mlp.", "num_experts", (("gate_proj", "gate"), ("up_proj", "up"), ("down_proj", "down")))}
# Where a sparse layer holds a shared expert beside the routed ones (Qwen2MoeSparseMoeBlock): its gated
# MLP's width key, and its scalar gate [1, hidden].
SHARED_EXPERT = {"qwen2_moe": "shared_expert_intermediate_size"}
# Mixtures whose layers are sparse by decoder_sparse_step and mlp_only_layers (the others: every layer).
SPARSE_STEP = ("qwen3_moe", "qwen2_moe")


def expert_count(text, model_type):
    """The config's expert count (Qwen3MoeConfig in transformers 5.x may write num_local_experts)."""
    key = MOE[model_type][1]
    return text[key] if key in text else text["num_local_experts"]


def sparse_layer(text, model_type, i):
    """Whether layer i is a mixture of experts: every layer of Mixtral and OLMoE; Qwen3MoeDecoderLayer and
    Qwen2MoeDecoderLayer: i not in mlp_only_layers and num_experts > 0 and (i + 1) % decoder_sparse_step == 0."""
    if model_type not in MOE:
        return False
    if model_type not in SPARSE_STEP:
        return True
    return (i not in (text.get("mlp_only_layers") or []) and expert_count(text, model_type) > 0
            and (i + 1) % text.get("decoder_sparse_step", 1) == 0)


def expert_shapes(text, model_type, p, fused=False):
    """A sparse layer's tensors under prefix p: the router and one gated MLP per expert or, fused
    as transformers 5.x holds and (save_original_format=False) saves them, the router under mlp.gate,
    every expert's [gate | up] in mlp.experts.gate_up_proj and down in mlp.experts.down_proj. Then
    Qwen2-MoE's shared expert (mlp.shared_expert.*, mlp.shared_expert_gate), named alike in both layouts."""
    block, _, names = MOE[model_type]
    n, h = expert_count(text, model_type), text["hidden_size"]
    inter = text.get("moe_intermediate_size", text["intermediate_size"]) if model_type in SPARSE_STEP \
        else text["intermediate_size"]
    if fused:
        out = [(p + "mlp.gate.weight", (n, h)), (p + "mlp.experts.gate_up_proj", (n, 2 * inter, h)),
               (p + "mlp.experts.down_proj", (n, h, inter))]
    else:
        out = [(p + block + "gate.weight", (n, h))]
        for e in range(n):
            out += [(f"{p}{block}experts.{e}.{name}.weight", (h, inter) if role == "down" else (inter, h))
                    for name, role in names]
    if model_type in SHARED_EXPERT:
        shared = text[SHARED_EXPERT[model_type]]
        out += [(p + "mlp.shared_expert.gate_proj.weight", (shared, h)),
                (p + "mlp.shared_expert.up_proj.weight", (shared, h)),
                (p + "mlp.shared_expert.down_proj.weight", (h, shared)), (p + "mlp.shared_expert_gate.weight", (1, h))]
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
    if mt == "gptj":
        return gptj_tensor_shapes(cfg)
    if mt == "gpt_neo":
        return gpt_neo_tensor_shapes(cfg)
    if mt == "phi":
        return phi_tensor_shapes(cfg)
    if mt == "phi3":
        return phi_tensor_shapes(cfg)
    if mt == "opt":
        return opt_tensor_shapes(cfg)
    if mt == "falcon":
        return falcon_tensor_shapes(cfg)
    if mt == "bloom":
        return bloom_tensor_shapes(cfg)
    if mt == "mpt":
        return mpt_tensor_shapes(cfg)
    if mt == "gpt_bigcode":
        return gpt_bigcode_tensor_shapes(cfg)
    if mt == "starcoder2":
        return starcoder2_tensor_shapes(cfg)
    if mt == "stablelm":
        return stablelm_tensor_shapes(cfg)
    h, inter = text["hidden_size"], text["intermediate_size"]
    nh, nkv = text["num_attention_heads"], text["num_key_value_heads"]
    hd = text.get("head_dim") or h // nh
    norms = LAYER_NORMS["sandwich" if mt in ("gemma2", "gemma3_text") else "post" if mt in ("olmo2", "olmo3")
                        else "none" if mt == "olmo" else "pre"]
    attention_bias = text.get("attention_bias", False) and mt not in ("mistral", "qwen2", "qwen2_moe")
    qkv_bias = attention_bias or mt == "qwen2" or (mt == "qwen2_moe" and text.get("qkv_bias", True))
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
        elif mt in ("olmo2", "olmo3", "olmoe"):
            out += [(p + "self_attn.q_norm.weight", (nh * hd,)), (p + "self_attn.k_norm.weight", (nkv * hd,))]
        out += norm(1) + norm(2)
        if sparse_layer(text, mt, i):
            # Mixtral's block_sparse_moe (w1 gate, w2 down, w3 up), OLMoE's, Qwen3-MoE's and Qwen2-MoE's mlp
            out += expert_shapes(text, mt, p, fused_experts)
        else:
            out += [(p + "mlp.gate_proj.weight", (inter, h)),
                    (p + "mlp.up_proj.weight", (inter, h)),
                    (p + "mlp.down_proj.weight", (h, inter))]
        out += norm(3)
    if mt != "olmo":
        out.append((prefix + "model.norm.weight", (h,)))
    if not cfg["tie_word_embeddings"]:
        out.append((prefix + "lm_head.weight", (text["vocab_size"], h)))
    return out
