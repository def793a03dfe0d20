"""The tensor layouts of the families without LLaMA's decoder layer (GPT-NeoX, Phi and Phi-3, GPT-2,
GPT-J, GPT-Neo, OPT, Falcon, BLOOM, MPT, StarCoder2, GPTBigCode, StableLM): each one's tensors' names and shapes in
the order a save writes them, and the configs of BLOOM, MPT, StarCoder2, GPTBigCode, StableLM and Granite (whose
tensors are LLaMA's). Used by hf_layouts.tensor_shapes and hf_config."""

# The LLaMA-style keys that GPT-2, GPT-J, GPT-Neo, OPT, Falcon, BLOOM and MPT configs spell their own way (n_embd,
# n_layer, d_model, ...) or lack.
LLAMA_STYLE_KEYS = ("num_key_value_heads", "head_dim", "rms_norm_eps", "rope_theta", "attention_bias", "hidden_size",
                    "intermediate_size", "num_hidden_layers", "num_attention_heads", "max_position_embeddings",
                    "attention_dropout")


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


def gptj_tensor_shapes(cfg):
    """GPTJForCausalLM's tensors (transformer.*): nn.Linear weights [out, in], q/k/v/out_proj
    without biases, LayerNorms and fc_in / fc_out with them, no position table; lm_head with a
    bias (its weight only when untied)."""
    h, v = cfg["n_embd"], cfg["vocab_size"]
    inter = cfg.get("n_inner") or 4 * h
    out = [("transformer.wte.weight", (v, h))]
    for i in range(cfg["n_layer"]):
        p = f"transformer.h.{i}."
        out += [(p + "ln_1.weight", (h,)), (p + "ln_1.bias", (h,))]
        out += [(p + f"attn.{name}.weight", (h, h)) for name in ("k_proj", "v_proj", "q_proj", "out_proj")]
        out += [(p + "mlp.fc_in.weight", (inter, h)), (p + "mlp.fc_in.bias", (inter,)),
                (p + "mlp.fc_out.weight", (h, inter)), (p + "mlp.fc_out.bias", (h,))]
    out += [("transformer.ln_f.weight", (h,)), ("transformer.ln_f.bias", (h,))]
    if not cfg["tie_word_embeddings"]:
        out.append(("lm_head.weight", (v, h)))
    out.append(("lm_head.bias", (v,)))
    return out


def gpt_neo_tensor_shapes(cfg):
    """GPTNeoForCausalLM's tensors (transformer.*): learned positions wpe, nn.Linear weights
    [out, in], q/k/v under attn.attention. without biases, out_proj and the c_fc / c_proj MLP with
    them, LayerNorms with biases; lm_head only when untied, without a bias."""
    h, v = cfg["hidden_size"], cfg["vocab_size"]
    inter = cfg.get("intermediate_size") or 4 * h
    out = [("transformer.wte.weight", (v, h)), ("transformer.wpe.weight", (cfg["max_position_embeddings"], h))]
    for i in range(cfg["num_layers"]):
        p = f"transformer.h.{i}."
        out += [(p + "ln_1.weight", (h,)), (p + "ln_1.bias", (h,))]
        out += [(p + f"attn.attention.{name}.weight", (h, h)) for name in ("k_proj", "v_proj", "q_proj")]
        out += [(p + "attn.attention.out_proj.weight", (h, h)), (p + "attn.attention.out_proj.bias", (h,))]
        out += [(p + "ln_2.weight", (h,)), (p + "ln_2.bias", (h,))]
        out += [(p + "mlp.c_fc.weight", (inter, h)), (p + "mlp.c_fc.bias", (inter,)),
                (p + "mlp.c_proj.weight", (h, inter)), (p + "mlp.c_proj.bias", (h,))]
    out += [("transformer.ln_f.weight", (h,)), ("transformer.ln_f.bias", (h,))]
    if not cfg["tie_word_embeddings"]:
        out.append(("lm_head.weight", (v, h)))
    return out


def opt_tensor_shapes(cfg):
    """OPTForCausalLM's tensors (model.decoder.*) in OPTDecoder's order: embed_tokens, the learned
    positions embed_positions with 2 rows beyond max_position_embeddings (OPTLearnedPositionalEmbedding's
    offset), the final LayerNorm, then per layer k/v/q/out_proj, self_attn_layer_norm, fc1 [ffn_dim, h],
    fc2 and final_layer_norm (the MLP's input norm), every one with a bias; lm_head only when untied,
    without a bias. The released facebook/opt-* files write the same names without "model."."""
    h, v, ffn = cfg["hidden_size"], cfg["vocab_size"], cfg["ffn_dim"]
    p = "model.decoder."
    out = [(p + "embed_tokens.weight", (v, h)), (p + "embed_positions.weight", (cfg["max_position_embeddings"] + 2, h)),
           (p + "final_layer_norm.weight", (h,)), (p + "final_layer_norm.bias", (h,))]
    for i in range(cfg["num_hidden_layers"]):
        lp = f"{p}layers.{i}."
        for name in ("k_proj", "v_proj", "q_proj", "out_proj"):
            out += [(f"{lp}self_attn.{name}.weight", (h, h)), (f"{lp}self_attn.{name}.bias", (h,))]
        out += [(lp + "self_attn_layer_norm.weight", (h,)), (lp + "self_attn_layer_norm.bias", (h,))]
        out += [(lp + "fc1.weight", (ffn, h)), (lp + "fc1.bias", (ffn,)), (lp + "fc2.weight", (h, ffn)),
                (lp + "fc2.bias", (h,))]
        out += [(lp + "final_layer_norm.weight", (h,)), (lp + "final_layer_norm.bias", (h,))]
    if not cfg["tie_word_embeddings"]:
        out.append(("lm_head.weight", (v, h)))
    return out


def falcon_layout(cfg):
    """FalconConfig's layout (transformers 4.57 FalconAttention, FalconDecoderLayer): (kv heads, the
    layer's norms in the order FalconDecoderLayer builds them, parallel). new_decoder_architecture:
    num_kv_heads groups and, with num_ln_in_parallel_attn 2 (its default there), ln_attn and ln_mlp;
    else one kv head with multi_query (default true), one per head without; parallel_attn (default
    true) feeds attention and MLP from input_layernorm, sequential adds post_attention_layernorm."""
    heads, new = cfg["num_attention_heads"], cfg.get("new_decoder_architecture", False)
    kv = (cfg.get("num_kv_heads") or heads) if new else 1 if cfg.get("multi_query", True) else heads
    parallel = new or cfg.get("parallel_attn", True)
    two_norms = new and (cfg.get("num_ln_in_parallel_attn") or 2) == 2
    norms = (("ln_attn", "ln_mlp") if two_norms else ("input_layernorm",)) if parallel else \
        ("post_attention_layernorm", "input_layernorm")
    return kv, norms, parallel


def falcon_tensor_shapes(cfg):
    """FalconForCausalLM's tensors (transformer.*), linear biases only with bias (Falcon-RW): word_embeddings, per
    layer the fused query_key_value [(heads + 2 kv heads) head_dim, h] and dense, the MLP dense_h_to_4h
    [ffn_hidden_size (null: 4 h), h] and dense_4h_to_h, each followed by its bias with bias, then falcon_layout's
    LayerNorms with biases; ln_f; lm_head only when untied."""
    h, v, heads = cfg["hidden_size"], cfg["vocab_size"], cfg["num_attention_heads"]
    kv, norms, _ = falcon_layout(cfg)
    ffn, d = cfg.get("ffn_hidden_size") or 4 * h, h // heads
    out = [("transformer.word_embeddings.weight", (v, h))]
    for i in range(cfg["num_hidden_layers"]):
        p = f"transformer.h.{i}."
        for name, rows, cols in (("self_attention.query_key_value", (heads + 2 * kv) * d, h),
                                 ("self_attention.dense", h, h), ("mlp.dense_h_to_4h", ffn, h),
                                 ("mlp.dense_4h_to_h", h, ffn)):
            out += [(p + name + ".weight", (rows, cols))] + ([(p + name + ".bias", (rows,))] if cfg.get("bias") else [])
        out += [(p + norm + suffix, (h,)) for norm in norms for suffix in (".weight", ".bias")]
    out += [("transformer.ln_f.weight", (h,)), ("transformer.ln_f.bias", (h,))]
    if not cfg["tie_word_embeddings"]:
        out.append(("lm_head.weight", (v, h)))
    return out


def bloom_config(cfg, hidden, intermediate, heads, kv_heads, head_dim, eps, extra):
    """BloomConfig (transformers 4.57) as bigscience/bloom writes it: n_embed (which wins over hidden_size),
    n_layer, n_head, layer_norm_epsilon; MHA, the MLP 4 x n_embed (n_inner written null, never read),
    pretraining_tp 4 with slow_but_exact false (the dense layers run unsplit), ids <unk> 0, <s> 1, </s> 2,
    <pad> 3; offset_alibi and Megatron's fusion flags, which transformers ignores; tie_word_embeddings not
    written (tied by default)."""
    if kv_heads != heads or head_dim * heads != hidden or intermediate != 4 * hidden:
        raise ValueError("bloom: kv_heads == heads, head_dim == hidden / heads, intermediate == 4 x hidden")
    layers = cfg["num_hidden_layers"]
    for key in LLAMA_STYLE_KEYS + (("tie_word_embeddings",) if cfg["tie_word_embeddings"] else ()):
        cfg.pop(key, None)  # tie_word_embeddings only where it is false
    cfg.update(n_embed=hidden, n_layer=layers, n_head=heads, n_inner=None, layer_norm_epsilon=eps,
               apply_residual_connection_post_layernorm=False, hidden_dropout=0.0, attention_dropout=0.0,
               pretraining_tp=4, slow_but_exact=False, offset_alibi=100, attention_softmax_in_fp32=True,
               masked_softmax_fusion=True, bias_dropout_fusion=True, skip_bias_add=True, skip_bias_add_qkv=False,
               unk_token_id=0, pad_token_id=3)
    cfg.update(extra or {})
    return cfg


# MptConfig's attn_config as mosaicml/mpt-7b writes it (clip_qkv null: no clamp of Wqkv's output).
MPT_ATTN_CONFIG = {"alibi": True, "alibi_bias_max": 8, "attn_impl": "torch", "attn_pdrop": 0,
                   "attn_type": "multihead_attention", "attn_uses_sequence_id": False, "clip_qkv": None,
                   "prefix_lm": False, "qk_ln": False, "softmax_scale": None}


def mpt_config(cfg, hidden, intermediate, heads, kv_heads, head_dim, max_positions, extra):
    """MptConfig (transformers 4.57) as mosaicml/mpt-7b writes it: d_model, n_heads, n_layers, expansion_ratio
    4 (transformers builds 4 x d_model whatever it says), max_seq_len (the ALiBi table's width), no
    layer_norm_epsilon (1e-5), attn_config with alibi, alibi_bias_max 8, no clip_qkv, softmax_scale or qk_ln,
    no_bias, logit_scale null, learned_pos_emb true (no wpe tensor: ALiBi instead); tied by default."""
    if kv_heads != heads or head_dim * heads != hidden or intermediate != 4 * hidden:
        raise ValueError("mpt: kv_heads == heads, head_dim == hidden / heads, intermediate == 4 x hidden")
    layers = cfg["num_hidden_layers"]
    tied = ("tie_word_embeddings",) if cfg["tie_word_embeddings"] else ()
    for key in LLAMA_STYLE_KEYS + ("initializer_range",) + tied:
        cfg.pop(key, None)  # tie_word_embeddings only where it is false
    cfg.update(d_model=hidden, n_heads=heads, n_layers=layers, expansion_ratio=intermediate // hidden,
               max_seq_len=max_positions, attn_config=dict(MPT_ATTN_CONFIG),
               emb_pdrop=0, resid_pdrop=0, embedding_fraction=1.0, init_device="cpu", learned_pos_emb=True,
               logit_scale=None, no_bias=True, norm_type="low_precision_layernorm", verbose=0, use_cache=False)
    cfg.update(extra or {})
    return cfg


def starcoder2_config(cfg, hidden, heads, head_dim, eps, sliding_window, extra):
    """Starcoder2Config (transformers 4.57) as bigcode/starcoder2-* write it: LLaMA's key names with norm_epsilon
    (nn.LayerNorm's eps; an rms_norm_eps beside it, as starcoder2-15b writes one, is not read), use_bias (every
    projection and the MLP with biases), gelu_pytorch_tanh, sliding_window on every layer (null: none), no head_dim
    key (hidden / heads), no attention_bias; norm_type and mlp_type, which transformers ignores; tied by default
    (tie_word_embeddings not written)."""
    if head_dim * heads != hidden:
        raise ValueError("starcoder2: head_dim == hidden / heads")
    for key in ("rms_norm_eps", "head_dim", "attention_bias") + (("tie_word_embeddings",) if cfg["tie_word_embeddings"]
                                                                  else ()):
        cfg.pop(key, None)
    cfg.update(hidden_act="gelu_pytorch_tanh", norm_epsilon=eps, use_bias=True, sliding_window=sliding_window,
               rope_scaling=None, residual_dropout=0.0, embedding_dropout=0.0, norm_type="layer_norm",
               mlp_type="default")
    cfg.update(extra or {})
    return cfg


def stablelm_config(cfg, hidden, heads, head_dim, eps, extra):
    """StableLmConfig (transformers 4.57) as stabilityai/stablelm-2-1_6b writes it: LLaMA's key names with
    layer_norm_eps (nn.LayerNorm's eps; no rms_norm_eps), use_qkv_bias (default here false), qk_layernorm false,
    use_parallel_residual false, partial_rotary_factor 0.25 (the leading quarter of each head turned), silu,
    rope_scaling null, no head_dim key (hidden / heads), no attention_bias; untied by default."""
    if head_dim * heads != hidden:
        raise ValueError("stablelm: head_dim == hidden / heads")
    for key in ("rms_norm_eps", "head_dim", "attention_bias"):
        cfg.pop(key, None)
    cfg.update(hidden_act="silu", layer_norm_eps=eps, use_qkv_bias=False, qk_layernorm=False,
               use_parallel_residual=False, partial_rotary_factor=0.25, rope_scaling=None, hidden_dropout=0.0)
    cfg.update(extra or {})
    return cfg


def granite_config(cfg, extra):
    """GraniteConfig (transformers 4.57) as ibm-granite/granite-3.x-* write it: LLaMA's keys and the four
    multipliers (embedding_multiplier, attention_multiplier in place of 1 / sqrt(head_dim), residual_multiplier,
    logits_scaling), here at GraniteConfig's defaults 1.0 unless `extra` says; mlp_bias false, no head_dim key
    where it is hidden / heads."""
    if cfg.get("head_dim") == cfg["hidden_size"] // cfg["num_attention_heads"]:
        cfg.pop("head_dim")
    cfg.update(hidden_act="silu", rope_scaling=None, mlp_bias=False, embedding_multiplier=1.0,
               attention_multiplier=1.0, residual_multiplier=1.0, logits_scaling=1.0)
    cfg.update(extra or {})
    return cfg


def gpt_bigcode_config(cfg, hidden, intermediate, heads, kv_heads, head_dim, eps, max_positions, extra):
    """GPTBigCodeConfig (transformers 4.57) as bigcode/starcoder writes it: GPT-2's key names (n_embd, n_layer,
    n_head, n_positions, n_inner: null where it is 4 * n_embd), gelu_pytorch_tanh, layer_norm_epsilon,
    scale_attn_weights, the fp32-softmax switches, multi_query (kv_heads 1: one kv head; else MHA); tied by
    default (tie_word_embeddings not written)."""
    if kv_heads not in (1, heads) or head_dim * heads != hidden:
        raise ValueError("gpt_bigcode: kv_heads 1 or heads, head_dim == hidden / heads")
    layers = cfg["num_hidden_layers"]
    for key in LLAMA_STYLE_KEYS + (("tie_word_embeddings",) if cfg["tie_word_embeddings"] else ()):
        cfg.pop(key, None)
    cfg.update(n_embd=hidden, n_inner=None if intermediate == 4 * hidden else intermediate, n_layer=layers,
               n_head=heads, n_positions=max_positions, activation_function="gelu_pytorch_tanh",
               layer_norm_epsilon=eps, scale_attn_weights=True, attention_softmax_in_fp32=True,
               scale_attention_softmax_in_fp32=True, multi_query=kv_heads == 1, resid_pdrop=0.0, embd_pdrop=0.0,
               attn_pdrop=0.0)
    cfg.update(extra or {})
    return cfg


def layer_normed_llama_shapes(cfg, kv_default, tied_default, layer):
    """The tensors (model.*) of the families with LLaMA's names and nn.LayerNorms (StarCoder2, StableLM):
    embed_tokens, per layer layer(prefix, h, intermediate, heads, kv heads, head_dim) (its projections and
    LayerNorms), model.norm with weight and bias; lm_head only when untied."""
    h, inter, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh = cfg["num_attention_heads"]
    nkv, hd = cfg.get("num_key_value_heads") or kv_default, h // nh
    out = [("model.embed_tokens.weight", (v, h))]
    for i in range(cfg["num_hidden_layers"]):
        out += layer(f"model.layers.{i}.", h, inter, nh, nkv, hd)
    out += [("model.norm.weight", (h,)), ("model.norm.bias", (h,))]
    if not cfg.get("tie_word_embeddings", tied_default):
        out.append(("lm_head.weight", (v, h)))
    return out


def starcoder2_tensor_shapes(cfg):
    """Starcoder2ForCausalLM's tensors: per layer q/k/v/o_proj, mlp.c_fc [intermediate, h] and mlp.c_proj, every
    one with a bias under use_bias (default true), then the LayerNorms input_layernorm and post_attention_layernorm
    (always with biases); tied by default."""
    bias = cfg.get("use_bias", True)

    def layer(p, h, inter, nh, nkv, hd):
        out = []
        for name, rows, cols in (("self_attn.q_proj", nh * hd, h), ("self_attn.k_proj", nkv * hd, h),
                                 ("self_attn.v_proj", nkv * hd, h), ("self_attn.o_proj", h, nh * hd),
                                 ("mlp.c_fc", inter, h), ("mlp.c_proj", h, inter)):
            out += [(p + name + ".weight", (rows, cols))] + ([(p + name + ".bias", (rows,))] if bias else [])
        return out + [(p + n + s, (h,)) for n in ("input_layernorm", "post_attention_layernorm")
                      for s in (".weight", ".bias")]
    return layer_normed_llama_shapes(cfg, 2, True, layer)


def stablelm_tensor_shapes(cfg):
    """StableLmForCausalLM's tensors in StableLmDecoderLayer's order: q/k/v_proj (with biases under use_qkv_bias),
    o_proj (never a bias), the gated MLP gate/up/down_proj without biases, then the LayerNorms input_layernorm and,
    unless use_parallel_residual, post_attention_layernorm; num_key_value_heads 32 when not written (StableLmConfig's
    default); untied by default."""
    bias = cfg.get("use_qkv_bias", False)
    norms = ("input_layernorm",) + (() if cfg.get("use_parallel_residual") else ("post_attention_layernorm",))

    def layer(p, h, inter, nh, nkv, hd):
        out = []
        for name, rows in (("q", nh * hd), ("k", nkv * hd), ("v", nkv * hd)):
            out += [(f"{p}self_attn.{name}_proj.weight", (rows, h))]
            out += [(f"{p}self_attn.{name}_proj.bias", (rows,))] if bias else []
        out += [(p + "self_attn.o_proj.weight", (h, nh * hd)), (p + "mlp.gate_proj.weight", (inter, h)),
                (p + "mlp.up_proj.weight", (inter, h)), (p + "mlp.down_proj.weight", (h, inter))]
        return out + [(p + n + s, (h,)) for n in norms for s in (".weight", ".bias")]
    return layer_normed_llama_shapes(cfg, 32, False, layer)


def gpt_bigcode_tensor_shapes(cfg):
    """GPTBigCodeForCausalLM's tensors (transformer.*): wte, learned positions wpe [n_positions, h], per layer ln_1,
    attn.c_attn (nn.Linear [h + 2 kv_dim, h]: kv_dim head_dim with multi_query, h without), attn.c_proj, ln_2,
    mlp.c_fc [n_inner (null: 4 h), h] and mlp.c_proj, every one with a bias; ln_f; lm_head only when untied."""
    h, v, heads = cfg["n_embd"], cfg["vocab_size"], cfg["n_head"]
    inter, kv_dim = cfg.get("n_inner") or 4 * h, h // heads if cfg.get("multi_query", True) else h
    ln = lambda name: [(name + ".weight", (h,)), (name + ".bias", (h,))]
    out = [("transformer.wte.weight", (v, h)), ("transformer.wpe.weight", (cfg["n_positions"], h))]
    for i in range(cfg["n_layer"]):
        p = f"transformer.h.{i}."
        out += ln(p + "ln_1")
        for name, rows, cols in (("attn.c_attn", h + 2 * kv_dim, h), ("attn.c_proj", h, h)):
            out += [(p + name + ".weight", (rows, cols)), (p + name + ".bias", (rows,))]
        out += ln(p + "ln_2")
        for name, rows, cols in (("mlp.c_fc", inter, h), ("mlp.c_proj", h, inter)):
            out += [(p + name + ".weight", (rows, cols)), (p + name + ".bias", (rows,))]
    out += ln("transformer.ln_f")
    if not cfg.get("tie_word_embeddings", True):
        out.append(("lm_head.weight", (v, h)))
    return out


def bloom_tensor_shapes(cfg):
    """BloomForCausalLM's tensors as save_pretrained writes them (transformer.*; the released bigscience/bloom*
    files hold the same names without "transformer."): word_embeddings and word_embeddings_layernorm, per layer
    input_layernorm, the fused query_key_value [3 h, h] (per head its q, k, v rows), dense,
    post_attention_layernorm, dense_h_to_4h [4 h, h] and dense_4h_to_h, every one with a bias; ln_f; lm_head
    only when untied."""
    h, v = cfg["n_embed"], cfg["vocab_size"]
    p = "transformer."
    ln = lambda name: [(name + ".weight", (h,)), (name + ".bias", (h,))]
    out = [(p + "word_embeddings.weight", (v, h))] + ln(p + "word_embeddings_layernorm")
    for i in range(cfg["n_layer"]):
        lp = f"{p}h.{i}."
        out += ln(lp + "input_layernorm")
        for name, rows, cols in (("self_attention.query_key_value", 3 * h, h), ("self_attention.dense", h, h)):
            out += [(lp + name + ".weight", (rows, cols)), (lp + name + ".bias", (rows,))]
        out += ln(lp + "post_attention_layernorm")
        for name, rows, cols in (("mlp.dense_h_to_4h", 4 * h, h), ("mlp.dense_4h_to_h", h, 4 * h)):
            out += [(lp + name + ".weight", (rows, cols)), (lp + name + ".bias", (rows,))]
    out += ln(p + "ln_f")
    if not cfg.get("tie_word_embeddings", True):
        out.append(("lm_head.weight", (v, h)))
    return out


def mpt_tensor_shapes(cfg):
    """MptForCausalLM's tensors (transformer.*, as mosaicml/mpt-7b holds them): wte, per block norm_1 (a
    LayerNorm without bias), attn.Wqkv [3 h, h] ([q | k | v]) and attn.out_proj, norm_2, ffn.up_proj [4 h, h]
    and ffn.down_proj, none with a bias; norm_f; lm_head only when untied."""
    h, v = cfg["d_model"], cfg["vocab_size"]
    out = [("transformer.wte.weight", (v, h))]
    for i in range(cfg["n_layers"]):
        p = f"transformer.blocks.{i}."
        out += [(p + "norm_1.weight", (h,)), (p + "attn.Wqkv.weight", (3 * h, h)), (p + "attn.out_proj.weight", (h, h)),
                (p + "norm_2.weight", (h,)), (p + "ffn.up_proj.weight", (4 * h, h)),
                (p + "ffn.down_proj.weight", (h, 4 * h))]
    out.append(("transformer.norm_f.weight", (h,)))
    if not cfg.get("tie_word_embeddings", True):
        out.append(("lm_head.weight", (v, h)))
    return out
