"""The config readers of the families with LayerNorms (GPT-NeoX, Phi, Phi-3, GPT-2, GPT-J, GPT-Neo, OPT, Falcon,
BLOOM, MPT, GPTBigCode) for reference_model.Model, and the reader of a checkpoint's weights.
"""
import json
import os

import st_reader
from reference_ops import alibi_slopes, alibi_slopes_torch_f32, gelu_bloom, gelu_erf, gelu_tanh, relu, round_bf16, silu


class LayerNormFamilies:
    """reference_model.Model's readers of the LayerNorm families' config.json."""

    def _init_layernorm_family(self, cfg, model_type, hidden, layers, heads, eps, bos, tied, dtype, hf_rounding):
        """The fields GPT-NeoX and GPT-2 set alike: MHA, head_dim = hidden / heads, no window."""
        self.cfg = self.top_cfg = cfg
        self.model_type, self.prefix = model_type, ""
        self.hidden, self.layers, self.heads = hidden, layers, heads
        self.kv_heads, self.head_dim = heads, hidden // heads
        self.eps, self.bos, self.tied = eps, bos, tied
        self.vocab = cfg["vocab_size"]
        self.scale = self.head_dim ** -0.5
        self.layer_window, self.window = [None] * layers, None
        self.dtype, self.hf_rounding = dtype, hf_rounding

    def _init_neox(self, cfg, model_dir, dtype, hf_rounding):
        """GPTNeoXConfig: 4.x keys (rotary_pct, rotary_emb_base, partial_rotary_factor, rope_theta)
        or 5.x rope_parameters; defaults as the config class's."""
        self._init_layernorm_family(cfg, "gpt_neox", cfg["hidden_size"], cfg["num_hidden_layers"],
                                    cfg["num_attention_heads"], cfg.get("layer_norm_eps", 1e-5),
                                    cfg.get("bos_token_id", 0), cfg.get("tie_word_embeddings", False), dtype,
                                    hf_rounding)
        self.parallel = cfg.get("use_parallel_residual", True)
        params = cfg.get("rope_parameters") or {}
        fraction = params.get("partial_rotary_factor", cfg.get("partial_rotary_factor", cfg.get("rotary_pct", 0.25)))
        self.theta = params.get("rope_theta", cfg.get("rope_theta", cfg.get("rotary_emb_base", 10000)))
        self.rotary_dim = int(self.head_dim * fraction)
        assert cfg.get("hidden_act", "gelu") == "gelu", cfg.get("hidden_act")
        self.act = gelu_erf
        self.w = {k: v.astype(dtype) for k, v in load_weights(model_dir).items()}

    def _init_phi(self, cfg, model_dir, dtype, hf_rounding):
        """PhiConfig: layer_norm_eps, partial_rotary_factor (default 0.5; 5.x: in rope_parameters),
        rope_theta, gelu_new, untied; GQA allowed by num_key_value_heads."""
        self._init_layernorm_family(cfg, "phi", cfg["hidden_size"], cfg["num_hidden_layers"],
                                    cfg["num_attention_heads"], cfg.get("layer_norm_eps", 1e-5),
                                    cfg.get("bos_token_id", 1), cfg.get("tie_word_embeddings", False), dtype,
                                    hf_rounding)
        self.kv_heads = cfg.get("num_key_value_heads") or self.heads
        params = cfg.get("rope_parameters") or {}
        self.theta = params.get("rope_theta", cfg.get("rope_theta", 10000.0))
        self.rotary_dim = int(self.head_dim * params.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 0.5)))
        assert cfg.get("hidden_act", "gelu_new") in ("gelu_new", "silu") and not cfg.get("qk_layernorm")
        self.act = gelu_tanh
        self.w = {k: v.astype(dtype) for k, v in load_weights(model_dir).items()}

    def _init_phi3(self, cfg, model_dir, dtype, hf_rounding):
        """Phi3Config: RMSNorm (rms_norm_eps), silu, sliding_window on every layer (null: none),
        partial_rotary_factor, RoPE default or longrope (rope_scaling, 5.x rope_parameters)."""
        self._init_phi(cfg, model_dir, dtype, hf_rounding)
        self.model_type = "phi3"
        self.eps = cfg.get("rms_norm_eps", 1e-5)
        self.act = silu
        params = cfg.get("rope_parameters") or {}
        self.rotary_dim = int(self.head_dim * params.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0)))
        self.window = cfg.get("sliding_window")
        self.layer_window = [self.window] * self.layers
        self.rope = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
        self.max_positions = cfg.get("max_position_embeddings", 4096)
        self.original = self.rope.get("original_max_position_embeddings",
                                      cfg.get("original_max_position_embeddings", self.max_positions))

    def _init_gpt2(self, cfg, model_dir, dtype, hf_rounding):
        """GPT2Config: n_embd, n_layer, n_head, n_positions, n_inner, layer_norm_epsilon, gelu_new; tied
        by default; tensors under transformer. (or bare, as GPT2Model saves them)."""
        self._init_layernorm_family(cfg, "gpt2", cfg["n_embd"], cfg["n_layer"], cfg["n_head"],
                                    cfg.get("layer_norm_epsilon", 1e-5), cfg.get("bos_token_id", 50256),
                                    cfg.get("tie_word_embeddings", True), dtype, hf_rounding)
        assert cfg.get("activation_function", "gelu_new") == "gelu_new"
        self.act = gelu_tanh  # gelu_new: the tanh approximation
        w = load_weights(model_dir)
        bare = "transformer.wte.weight" not in w
        self.w = {("transformer." + k if bare and k != "lm_head.weight" else k): v.astype(dtype) for k, v in w.items()}

    def _init_gpt_bigcode(self, cfg, model_dir, dtype, hf_rounding):
        """GPTBigCodeConfig: n_embd, n_layer, n_head, n_positions (hidden_size, num_hidden_layers,
        num_attention_heads, max_position_embeddings through its attribute_map, set after them and so winning),
        n_inner (null: 4 n_embd), layer_norm_epsilon, activation_function (default gelu_pytorch_tanh), tied by
        default, bos 50256. GPTBigCodeAttention (nn.Linear c_attn, biases everywhere): multi_query (default true)
        gives one kv head of head_dim shared by every query head, c_attn's output [q (n_embd) | k | v]; without it
        each head's [q | k | v] in turn (view(T, H, 3 D)). Scores times head_dim^-0.5; the fp32-softmax switches
        change no fp32 result. Refused: scale_attn_weights false (unscaled scores), which the engine refuses."""
        hidden = cfg.get("hidden_size", cfg.get("n_embd", 768))
        heads = cfg.get("num_attention_heads", cfg.get("n_head", 12))
        self._init_layernorm_family(cfg, "gpt_bigcode", hidden, cfg.get("num_hidden_layers", cfg.get("n_layer", 12)),
                                    heads, cfg.get("layer_norm_epsilon", 1e-5), cfg.get("bos_token_id", 50256),
                                    cfg.get("tie_word_embeddings", True), dtype, hf_rounding)
        assert self.head_dim * heads == hidden, (hidden, heads)
        assert cfg.get("scale_attn_weights", True), "scale_attn_weights false"
        self.qkv_layout = "grouped" if cfg.get("multi_query", True) else "per_head"
        self.kv_heads = 1 if self.qkv_layout == "grouped" else heads
        self.ffn = cfg.get("n_inner") or 4 * hidden
        self.max_positions = cfg.get("max_position_embeddings", cfg.get("n_positions", 1024))  # wpe's rows
        act = cfg.get("activation_function", "gelu_pytorch_tanh")  # gelu_fast (SantaCoder's): the tanh formula too
        assert act in ("gelu_pytorch_tanh", "gelu_new", "gelu_fast", "gelu"), act
        self.act = gelu_erf if act == "gelu" else gelu_tanh
        w = load_weights(model_dir)
        bare = "transformer.wte.weight" not in w  # saved from GPTBigCodeModel
        self.w = {("transformer." + k if bare and k != "lm_head.weight" else k): v.astype(dtype) for k, v in w.items()}

    def _init_gptj(self, cfg, model_dir, dtype, hf_rounding):
        """GPTJConfig: GPT-2's key names (n_embd, n_layer, n_head, n_positions, n_inner,
        layer_norm_epsilon), gelu_new, untied by default; rotary_dim (default 64) leading channels of
        each head turned at the fixed base 10000."""
        self._init_layernorm_family(cfg, "gptj", cfg["n_embd"], cfg["n_layer"], cfg["n_head"],
                                    cfg.get("layer_norm_epsilon", 1e-5), cfg.get("bos_token_id", 50256),
                                    cfg.get("tie_word_embeddings", False), dtype, hf_rounding)
        self.theta = 10000.0
        self.rotary_dim = cfg.get("rotary_dim", 64)
        # GPTJAttention builds its sin/cos table over rotary_dim or, null, over n_embd (not head_dim):
        # only an even rotary_dim within the head broadcasts against the rotated channels.
        assert self.rotary_dim and self.rotary_dim % 2 == 0 and self.rotary_dim <= self.head_dim, self.rotary_dim
        self.max_positions = cfg.get("n_positions", 2048)  # the sin/cos table's rows
        assert cfg.get("activation_function", "gelu_new") == "gelu_new"
        self.act = gelu_tanh  # gelu_new: the tanh approximation
        self.w = {k: v.astype(dtype) for k, v in load_weights(model_dir).items()}

    def _init_gpt_neo(self, cfg, model_dir, dtype, hf_rounding):
        """GPTNeoConfig: hidden_size, num_layers, num_heads (num_hidden_layers and num_attention_heads
        through its attribute_map, set after them and so winning), layer_norm_epsilon, gelu_new, tied
        by default; no score scale at all; attention_layers, one "global" or "local" per layer, local
        ones seeing window_size keys (j <= i and i - j < window_size)."""
        layers = cfg.get("num_hidden_layers", cfg.get("num_layers", 24))
        self._init_layernorm_family(cfg, "gpt_neo", cfg.get("hidden_size", 2048), layers,
                                    cfg.get("num_attention_heads", cfg.get("num_heads", 16)),
                                    cfg.get("layer_norm_epsilon", 1e-5), cfg.get("bos_token_id", 50256),
                                    cfg.get("tie_word_embeddings", True), dtype, hf_rounding)
        assert self.head_dim * self.heads == self.hidden, (self.hidden, self.heads)
        self.scale = 1.0  # GPTNeoSelfAttention._attn: q @ k^T as it is
        # GPTNeoConfig expands attention_types ([[kinds, n], ...]: kinds n times over) and checks the
        # count against num_layers; a written attention_layers is then set over the expansion.
        expanded = [kind for kinds, n in cfg.get("attention_types", [[["global", "local"], 12]])
                    for _ in range(n) for kind in kinds]
        assert len(expanded) == cfg.get("num_layers", 24), f"attention_types give {len(expanded)} layers"
        self.attention_layers = cfg.get("attention_layers", expanded)
        assert len(self.attention_layers) >= layers and set(self.attention_layers[:layers]) <= {"global", "local"}, \
            self.attention_layers
        window = cfg.get("window_size", 256)
        self.layer_window = [window if kind == "local" else None for kind in self.attention_layers[:layers]]
        self.window = "per-layer" if len(set(self.layer_window)) > 1 else self.layer_window[0]
        self.max_positions = cfg.get("max_position_embeddings", 2048)  # wpe's rows
        assert cfg.get("activation_function", "gelu_new") == "gelu_new"
        self.act = gelu_tanh  # gelu_new: the tanh approximation
        self.w = {k: v.astype(dtype) for k, v in load_weights(model_dir).items()}

    def _init_opt(self, cfg, model_dir, dtype, hf_rounding):
        """OPTConfig: hidden_size, num_hidden_layers, num_attention_heads (MHA), ffn_dim; LayerNorms of
        eps 1e-5 (nn.LayerNorm's default: no config key); ReLU; tied by default; bos 2. Only the
        layout of the released models: pre-LN, biases everywhere, affine LayerNorms, the final
        LayerNorm kept, word_embed_proj_dim == hidden_size. Tensors under model.decoder. (or decoder.,
        as OPTModel saves them, renamed here). OPTAttention scales the projected query (bias included)
        by head_dim^-0.5 before the product, so `scale` is 1 for attend() and `q_scale` the factor."""
        self._init_layernorm_family(cfg, "opt", cfg.get("hidden_size", 768), cfg.get("num_hidden_layers", 12),
                                    cfg.get("num_attention_heads", 12), 1e-5, cfg.get("bos_token_id", 2),
                                    cfg.get("tie_word_embeddings", True), dtype, hf_rounding)
        assert self.head_dim * self.heads == self.hidden, (self.hidden, self.heads)
        required = {"do_layer_norm_before": True, "enable_bias": True, "layer_norm_elementwise_affine": True,
                    "_remove_final_layer_norm": False, "word_embed_proj_dim": self.hidden, "activation_function": "relu"}
        for key, want in required.items():
            assert cfg.get(key, want) == want, f"{key} {cfg.get(key)!r}: only {want!r} is read here"
        self.ffn = cfg.get("ffn_dim", 3072)
        self.q_scale, self.scale = self.head_dim ** -0.5, 1.0
        self.max_positions = cfg.get("max_position_embeddings", 2048)
        self.position_offset = 2  # OPTLearnedPositionalEmbedding: token t (no padding) reads row t + 2
        self.act = relu
        w = load_weights(model_dir)
        bare = "model.decoder.embed_tokens.weight" not in w
        self.w = {("model." + k if bare and k != "lm_head.weight" else k): v.astype(dtype) for k, v in w.items()}

    def _init_falcon(self, cfg, model_dir, dtype, hf_rounding):
        """FalconConfig (transformers 4.57; n_layer, n_head and n_head_kv also read, as the RW remote code's
        attribute_map has them): LayerNorms of layer_norm_epsilon, exact gelu, RoPE over the whole head at
        rope_theta, tied by default, bos 11. FalconAttention: num_kv_heads groups under
        new_decoder_architecture, else one kv head with multi_query (default true), one per head without;
        query_key_value holds per group its query heads, its k and its v (multi_query: one group), or per
        head q, k, v ("per_head"). FalconDecoderLayer: num_ln_in_parallel_attn (None: 2 in the new
        architecture) picks ln_attn / ln_mlp or one input_layernorm for both branches of the parallel
        layer; parallel_attn false is sequential with post_attention_layernorm. bias (Falcon-RW): every FalconLinear
        with a bias. alibi (Falcon-RW): no RoPE (FalconConfig.rotary), instead modeling_falcon's own
        build_alibi_tensor: BLOOM's slopes rounded to bfloat16 times the key position j (cast to bfloat16 too),
        the product rounded to bfloat16 again (whatever the model's dtype), added to q.k before the
        1 / sqrt(head_dim) scale (reference_forward_alibi.falcon_alibi_bias). Refused, as the layers HF would not
        build: the layouts asserted below."""
        layers = cfg.get("num_hidden_layers", cfg.get("n_layer", 32))
        heads = cfg.get("num_attention_heads", cfg.get("n_head", 71))
        self._init_layernorm_family(cfg, "falcon", cfg.get("hidden_size", 4544), layers, heads,
                                    cfg.get("layer_norm_epsilon", 1e-5), cfg.get("bos_token_id", 11),
                                    cfg.get("tie_word_embeddings", True), dtype, hf_rounding)
        assert self.head_dim * heads == self.hidden, (self.hidden, heads)
        self.alibi, self.linear_bias = bool(cfg.get("alibi", False)), bool(cfg.get("bias", False))
        self.rotary, self.alibi_scaled, self.alibi_origin, self.alibi_bf16 = not self.alibi, True, "key0", True
        if self.alibi:
            exact = alibi_slopes(heads)  # float64; with hf_rounding torch's float32 ones; then .bfloat16()
            self.slopes = round_bf16(alibi_slopes_torch_f32(heads, "bloom") if hf_rounding else exact).astype(dtype)
        new, parallel = cfg.get("new_decoder_architecture", False), cfg.get("parallel_attn", True)
        multi_query, kv = cfg.get("multi_query", True), cfg.get("num_kv_heads", cfg.get("n_head_kv")) or heads
        n_ln = cfg.get("num_ln_in_parallel_attn")
        assert new or multi_query or kv == heads, f"num_kv_heads {kv} without multi_query or the new architecture"
        assert not (new and not parallel), "parallel_attn false with new_decoder_architecture"
        assert not (n_ln == 2 and not new), "num_ln_in_parallel_attn 2 without new_decoder_architecture"
        assert n_ln is None or n_ln <= 2 and (n_ln >= 1 or not new), f"num_ln_in_parallel_attn {n_ln}"
        self.kv_heads = kv if new else 1 if multi_query else heads
        assert heads % self.kv_heads == 0, (heads, self.kv_heads)
        self.qkv_layout = "grouped" if new or multi_query else "per_head"
        self.parallel = new or parallel
        if not self.parallel:
            self.attn_norm, self.mlp_norm = "input_layernorm", "post_attention_layernorm"
        elif new and (n_ln or 2) == 2:
            self.attn_norm, self.mlp_norm = "ln_attn", "ln_mlp"
        else:
            self.attn_norm = self.mlp_norm = "input_layernorm"
        self.ffn = cfg.get("ffn_hidden_size") or 4 * self.hidden
        assert cfg.get("activation", "gelu") == "gelu", cfg.get("activation")
        self.act = gelu_erf
        self.theta, self.rope_scaling = cfg.get("rope_theta", 10000.0), cfg.get("rope_scaling")
        self.rotary_dim, self.max_positions = self.head_dim, cfg.get("max_position_embeddings", 2048)
        self.w = {k: v.astype(dtype) for k, v in load_weights(model_dir).items()}

    def _init_bloom(self, cfg, model_dir, dtype, hf_rounding):
        """BloomConfig: n_embed (which wins over hidden_size), n_layer and n_head (num_hidden_layers and
        num_attention_heads through its attribute_map, set after them and so winning), layer_norm_epsilon, bos 1,
        tied by default. BloomModel: word_embeddings_layernorm on the embeddings, query_key_value per head
        [q | k | v], biases everywhere, a 4 x hidden MLP whatever n_inner says, BLOOM's tanh gelu, ALiBi slopes
        times the key's position j. Refused: apply_residual_connection_post_layernorm (the normed input as the
        residual) and slow_but_exact with pretraining_tp > 1 (its split dense layers drop their biases). Tensors
        under transformer. (BloomForCausalLM) or bare (BloomModel: the released bigscience/bloom* files)."""
        hidden = cfg["n_embed"] if cfg.get("n_embed") is not None else cfg.get("hidden_size", 64)
        heads = cfg.get("num_attention_heads", cfg.get("n_head", 8))
        self._init_layernorm_family(cfg, "bloom", hidden, cfg.get("num_hidden_layers", cfg.get("n_layer", 2)), heads,
                                    cfg.get("layer_norm_epsilon", 1e-5), cfg.get("bos_token_id", 1),
                                    cfg.get("tie_word_embeddings", True), dtype, hf_rounding)
        assert self.head_dim * heads == hidden, (hidden, heads)
        assert not cfg.get("apply_residual_connection_post_layernorm"), "apply_residual_connection_post_layernorm"
        assert not (cfg.get("slow_but_exact") and cfg.get("pretraining_tp", 1) > 1), "slow_but_exact, pretraining_tp"
        self.act, self.embed_norm = gelu_bloom, "word_embeddings_layernorm"
        self._alibi(8, alibi_shift=False)
        w = load_weights(model_dir)
        bare = "word_embeddings.weight" in w
        self.w = {("transformer." + k if bare and k != "lm_head.weight" else k): v.astype(dtype) for k, v in w.items()}

    def _init_mpt(self, cfg, model_dir, dtype, hf_rounding):
        """MptConfig: d_model, n_heads, n_layers (hidden_size, num_attention_heads, num_hidden_layers through its
        attribute_map, winning), layer_norm_epsilon 1e-5, max_seq_len (ALiBi's table: longer inputs fail),
        attn_config's softmax_scale (null: 1 / sqrt(head_dim)) and clip_qkv (Wqkv's output clamped before the split
        into q, k, v; null or 0: no clamp), tied by default; bos
        as written (MptConfig has none). MptModel: LayerNorms with their bias set to None, Wqkv [q | k | v] and no
        linear bias, an exact-gelu MLP of 4 x d_model, ALiBi of bias max 8 relative to the last key. Refused, as
        transformers ignores what the MosaicML code reads: expansion_ratio != 4, attn_config alibi false,
        alibi_bias_max != 8, qk_ln, prefix_lm, attn_type multiquery, logit_scale, no_bias false, norm_type other
        than a LayerNorm, a wpe tensor."""
        attn = {"alibi": True, "alibi_bias_max": 8, "qk_ln": False, "prefix_lm": False, "clip_qkv": None,
                "softmax_scale": None, "attn_type": "multihead_attention", **(cfg.get("attn_config") or {})}
        hidden = cfg.get("hidden_size", cfg.get("d_model", 2048))
        heads = cfg.get("num_attention_heads", cfg.get("n_heads", 16))
        self._init_layernorm_family(cfg, "mpt", hidden, cfg.get("num_hidden_layers", cfg.get("n_layers", 24)), heads,
                                    cfg.get("layer_norm_epsilon", 1e-5), cfg.get("bos_token_id"),
                                    cfg.get("tie_word_embeddings", True), dtype, hf_rounding)
        assert self.head_dim * heads == hidden, (hidden, heads)
        norm = cfg.get("norm_type", "low_precision_layernorm")
        refused = {"expansion_ratio": cfg.get("expansion_ratio", 4) != 4, "alibi": not attn["alibi"],
                   "alibi_bias_max": attn["alibi_bias_max"] != 8, "qk_ln": attn["qk_ln"],
                   "prefix_lm": attn["prefix_lm"], "attn_type": attn["attn_type"] != "multihead_attention",
                   "logit_scale": cfg.get("logit_scale") is not None, "no_bias": not cfg.get("no_bias", True),
                   "norm_type": norm not in ("layernorm", "low_precision_layernorm")}
        assert not any(refused.values()), [k for k, v in refused.items() if v]
        # MptAttention clamps Wqkv's output where clip_qkv is truthy (0: none); below 0 the bounds invert: refused
        assert not attn["clip_qkv"] or attn["clip_qkv"] > 0, f"clip_qkv {attn['clip_qkv']}"
        self.scale = attn["softmax_scale"] if attn["softmax_scale"] is not None else self.head_dim ** -0.5
        self.clip_qkv, self.max_positions, self.act = attn["clip_qkv"], cfg.get("max_seq_len", 2048), gelu_erf
        self._alibi(8, alibi_shift=True)
        self.w = {k: v.astype(dtype) for k, v in load_weights(model_dir).items()}
        assert not self.has("transformer.wpe.weight"), "transformer.wpe: learned positions are not read here"

    def _alibi(self, bias_max, alibi_shift):
        """ALiBi's slopes [H] in the model's dtype (with hf_rounding: float32 as transformers' torch code makes
        them) and whether the bias is relative to the last key (MPT) or the first (BLOOM)."""
        exact = alibi_slopes(self.heads, bias_max).astype(self.dtype)
        self.slopes = alibi_slopes_torch_f32(self.heads, self.model_type) if self.hf_rounding else exact
        self.alibi_shift = alibi_shift


def load_weights(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    files = ["model.safetensors"]
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    out = {}
    for name in files:
        out.update(st_reader.read(os.path.join(model_dir, name))[0])
    return out
