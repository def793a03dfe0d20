"""The checkpoints of the independent numpy forward (reference_forward.py): each family's
config fields, norm slots, activations and mixture-of-experts layout, read from config.json and
the safetensors files (st_reader.py), weights widened to float64 (or `dtype`).
"""
import json
import os

import numpy as np

import st_reader
from reference_ops import (alibi_slopes, alibi_slopes_torch_f32, gelu_bloom, gelu_erf, gelu_tanh, relu,
                           round_bf16, silu)


# Per family (config.json model_type; gemma3 multimodal reads text_config as gemma3_text):
#   norms: the decoder layer's four norm slots (attention input, attention output, MLP input,
#          MLP output) as tensor names, None where the family has none.
PRE = ("input_layernorm", None, "post_attention_layernorm", None)
SANDWICH = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")
POST = (None, "post_attention_layernorm", None, "post_feedforward_layernorm")
FAMILIES = {
    #              norms     qk_norm   gemma-style  defaults: kv heads, head_dim, theta, eps
    "llama":       dict(norms=PRE, qk=None, gemma=False, kv=None, hd=None, theta=1e4, eps=1e-6),
    "mistral":     dict(norms=PRE, qk=None, gemma=False, kv=8, hd=None, theta=1e4, eps=1e-6),
    "mixtral":     dict(norms=PRE, qk=None, gemma=False, kv=8, hd=None, theta=1e6, eps=1e-5),
    "qwen2":       dict(norms=PRE, qk=None, gemma=False, kv=32, hd=None, theta=1e4, eps=1e-6),
    "qwen3":       dict(norms=PRE, qk="head", gemma=False, kv=32, hd=128, theta=1e4, eps=1e-6),
    "gemma":       dict(norms=PRE, qk=None, gemma=True, kv=16, hd=256, theta=1e4, eps=1e-6),
    "gemma2":      dict(norms=SANDWICH, qk=None, gemma=True, kv=4, hd=256, theta=1e4, eps=1e-6),
    "gemma3_text": dict(norms=SANDWICH, qk="head", gemma=True, kv=4, hd=256, theta=1e6, eps=1e-6),
    "olmo2":       dict(norms=POST, qk="whole", gemma=False, kv=None, hd=None, theta=1e4, eps=1e-5),
    "olmo3":       dict(norms=POST, qk="whole", gemma=False, kv=None, hd=None, theta=1e4, eps=1e-5),
    "olmoe":       dict(norms=PRE, qk="whole", gemma=False, kv=None, hd=None, theta=1e4, eps=1e-5),
    "qwen3_moe":   dict(norms=PRE, qk="head", gemma=False, kv=4, hd=None, theta=1e4, eps=1e-6),
    "qwen2_moe":   dict(norms=PRE, qk=None, gemma=False, kv=16, hd=None, theta=1e4, eps=1e-6),
    "smollm3":     dict(norms=PRE, qk=None, gemma=False, kv=4, hd=None, theta=2e6, eps=1e-6),
}
# Mixtures of experts (transformers 4.57 MixtralSparseMoeBlock, OlmoeSparseMoeBlock,
# Qwen3MoeSparseMoeBlock, Qwen2MoeSparseMoeBlock): the sparse block's prefix, the expert count's key and
# default, top_k's default, whether the top-k weights are renormalised (None: norm_topk_prob, default
# False), and each expert's gate, up and down projections.
MOE = {"mixtral": ("block_sparse_moe.", "num_local_experts", 8, 2, True, ("w1", "w3", "w2")),
       "olmoe": ("mlp.", "num_experts", 64, 8, None, ("gate_proj", "up_proj", "down_proj")),
       "qwen3_moe": ("mlp.", "num_experts", 128, 8, None, ("gate_proj", "up_proj", "down_proj")),
       "qwen2_moe": ("mlp.", "num_experts", 60, 4, None, ("gate_proj", "up_proj", "down_proj"))}


class Model:
    """config.json fields mapped once, and the checkpoint's weights as float arrays."""

    def __init__(self, model_dir, dtype=np.float64, hf_rounding=False):
        with open(os.path.join(model_dir, "config.json")) as f:
            top = json.load(f)
        if top["model_type"] == "gpt_neox":
            self._init_neox(top, model_dir, dtype, hf_rounding)
            return
        if top["model_type"] == "phi3":
            self._init_phi3(top, model_dir, dtype, hf_rounding)
            return
        if top["model_type"] == "phi":
            self._init_phi(top, model_dir, dtype, hf_rounding)
            return
        if top["model_type"] == "gpt2":
            self._init_gpt2(top, model_dir, dtype, hf_rounding)
            return
        if top["model_type"] == "gptj":
            self._init_gptj(top, model_dir, dtype, hf_rounding)
            return
        if top["model_type"] == "gpt_neo":
            self._init_gpt_neo(top, model_dir, dtype, hf_rounding)
            return
        if top["model_type"] == "opt":
            self._init_opt(top, model_dir, dtype, hf_rounding)
            return
        if top["model_type"] == "falcon":
            self._init_falcon(top, model_dir, dtype, hf_rounding)
            return
        if top["model_type"] in ("bloom", "mpt"):
            (self._init_bloom if top["model_type"] == "bloom" else self._init_mpt)(top, model_dir, dtype, hf_rounding)
            return
        multimodal = top["model_type"] == "gemma3"
        cfg = top["text_config"] if multimodal else top
        self.cfg, self.top_cfg = cfg, top
        self.model_type = "gemma3_text" if multimodal else top["model_type"]
        fam = FAMILIES[self.model_type]
        self.prefix = "language_model." if multimodal else ""
        self.norm_names = fam["norms"]
        self.qk_norm = fam["qk"]
        self.hidden = cfg["hidden_size"]
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]
        gemma = fam["gemma"]
        self.kv_heads = cfg.get("num_key_value_heads") or fam["kv"] or self.heads
        self.head_dim = cfg.get("head_dim") or fam["hd"] or self.hidden // self.heads
        assert self.heads % self.kv_heads == 0, (self.heads, self.kv_heads)
        self.eps = cfg.get("rms_norm_eps", fam["eps"])
        self.vocab = cfg["vocab_size"]
        self.max_positions = cfg.get("max_position_embeddings")  # YaRN's fallback original length
        self.bos = cfg.get("bos_token_id", 2 if gemma else 1)
        self.tied = top.get("tie_word_embeddings", gemma or self.model_type == "smollm3")  # SmolLM3Config ties too
        self.norm_offset = 1.0 if gemma else 0.0          # GemmaRMSNorm: * (1 + w)
        self.embed_scale = self.hidden ** 0.5 if gemma else 1.0
        act = cfg.get("hidden_activation") or "gelu_pytorch_tanh" if gemma else cfg.get("hidden_act", "silu")
        assert act in ("silu", "gelu_pytorch_tanh"), act
        self.act = silu if act == "silu" else gelu_tanh
        # Biases: Qwen2 has q/k/v biases always, Qwen2-MoE by qkv_bias (default true; o_proj none in
        # both); the others follow attention_bias on q, k, v and o (Mistral has no biases).
        bias = cfg.get("attention_bias", False) and self.model_type not in ("mistral", "qwen2", "qwen2_moe")
        self.qkv_bias = bias or self.model_type == "qwen2" or (self.model_type == "qwen2_moe" and
                                                                cfg.get("qkv_bias", True))
        self.o_bias = bias
        # Score scale and soft-caps (Gemma-2/3: query_pre_attn_scalar; caps default 50 / 30 in Gemma-2).
        if self.model_type in ("gemma2", "gemma3_text"):
            self.scale = cfg.get("query_pre_attn_scalar", 256) ** -0.5
            caps = (50.0, 30.0) if self.model_type == "gemma2" else (None, None)
            self.attn_cap = cfg.get("attn_logit_softcapping", caps[0])
            self.final_cap = cfg.get("final_logit_softcapping", caps[1])
        else:
            self.scale = self.head_dim ** -0.5
            self.attn_cap = self.final_cap = None
        self.layer_window = [self._window(cfg, i) for i in range(self.layers)]
        self.layer_rope = [self._rope(cfg, fam, i) for i in range(self.layers)]
        # The old single-setting attributes, for families with one window and one RoPE (SmolLM3's
        # NoPE layers have none: its RoPE layers').
        self.window = self.layer_window[0] if len(set(self.layer_window)) == 1 else "per-layer"
        self.theta = next((rope["theta"] for rope in self.layer_rope if rope), None)
        # Mixtures of experts: `experts` per sparse layer, top_k of them per token. Qwen3MoeDecoderLayer
        # and Qwen2MoeDecoderLayer: layer i is sparse iff i not in mlp_only_layers and num_experts > 0 and
        # (i + 1) % decoder_sparse_step == 0 (Mixtral, OLMoE: every layer); a dense one has the
        # plain MLP of intermediate_size. Qwen3MoeConfig in 5.x writes num_experts as num_local_experts.
        # Qwen2-MoE's sparse layers add a shared expert scaled by sigmoid(shared_expert_gate).
        moe = MOE.get(self.model_type)
        self.experts = 0 if moe is None else cfg.get(moe[1], cfg.get("num_local_experts", moe[2]))
        self.top_k = cfg.get("num_experts_per_tok", moe[3] if moe else 0)
        self.renormalize = moe is not None and (moe[4] if moe[4] is not None else cfg.get("norm_topk_prob", False))
        self.moe_names = moe and (moe[0], moe[5])
        dense = cfg.get("mlp_only_layers") or []
        step = cfg.get("decoder_sparse_step", 1) if self.model_type in ("qwen3_moe", "qwen2_moe") else 1
        self.shared_expert = self.model_type == "qwen2_moe"
        self.sparse = [self.experts > 0 and i not in dense and (i + 1) % step == 0 for i in range(self.layers)]
        assert not cfg.get("clip_qkv"), "clip_qkv"
        assert not cfg.get("mlp_bias"), "mlp_bias"  # LLaMA's and SmolLM3's MLP biases are not read here
        self.expert_load = []  # [sparse layers] x [experts] tokens routed, filled by forward
        self.shared_gate = []  # [sparse layers] x [T] Qwen2-MoE's sigmoid(shared_expert_gate h), filled by forward
        self.route_gap = []    # [layers] the smallest router-logit gap between a chosen and an unchosen expert
        self.dtype, self.hf_rounding = dtype, hf_rounding
        self.w = {k: v.astype(dtype) for k, v in load_weights(model_dir).items() if k.startswith(self.prefix)}

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
        attn_config's softmax_scale (null: 1 / sqrt(head_dim)) and clip_qkv (q, k, v clamped), tied by default; bos
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

    def _sliding(self, cfg, i):
        """True where layer i is a sliding-attention layer type."""
        if self.model_type in ("gemma2", "gemma3_text"):
            if cfg.get("layer_types"):
                return cfg["layer_types"][i] == "sliding_attention"
            # Gemma2: even layers slide; Gemma3: every sliding_window_pattern-th layer is global.
            pattern = 2 if self.model_type == "gemma2" else cfg.get("sliding_window_pattern", 6)
            return (i + 1) % pattern != 0
        if self.model_type in ("qwen2", "qwen3"):
            if not cfg.get("use_sliding_window", False):
                return False
            if cfg.get("layer_types"):
                return cfg["layer_types"][i] == "sliding_attention"
            return i >= cfg.get("max_window_layers", 28)
        if self.model_type == "olmo3":
            if cfg.get("layer_types"):
                return cfg["layer_types"][i] == "sliding_attention"
            return (i + 1) % 4 != 0  # Olmo3Config: every fourth layer is full attention
        if self.model_type == "smollm3":
            return self._smollm3_sliding(cfg, i)
        # Qwen3-MoE, Qwen2-MoE: no window without use_sliding_window, whatever sliding_window says. With it
        # transformers disagrees with itself (4.5x eager: every layer, flash: layers >= max_window_layers;
        # 5.x: even layers < max_window_layers), so such a config is refused, not guessed.
        assert not (self.model_type in ("qwen3_moe", "qwen2_moe") and cfg.get("use_sliding_window")), \
            "use_sliding_window"
        return self.model_type in ("mistral", "mixtral")

    def _smollm3_rope_layers(self, cfg):
        """SmolLM3Config.no_rope_layers: 1 where the layer turns q and k, 0 where it is NoPE; not
        written, every no_rope_layer_interval-th layer is NoPE (3, 7, 11, .. at 4)."""
        flags = cfg.get("no_rope_layers")
        if flags is None:
            interval = cfg.get("no_rope_layer_interval", 4)
            return [int((i + 1) % interval != 0) for i in range(self.layers)]
        assert len(flags) >= self.layers, f"no_rope_layers has {len(flags)} entries for {self.layers} layers"
        return flags

    def _smollm3_sliding(self, cfg, i):
        """SmolLM3: layer_types, not written, is "sliding_attention" on the NoPE layers when
        use_sliding_window and sliding_window are set. A written sliding layer is windowed by eager
        and SDPA attention (SmolLM3Model picks the mask by layer type) whatever use_sliding_window
        says, by flash-attention only with it (SmolLM3Attention.sliding_window), and without a
        sliding_window eager fails: such configs are refused, not guessed."""
        types = cfg.get("layer_types")
        if not types:
            nope = not self._smollm3_rope_layers(cfg)[i]
            return bool(cfg.get("use_sliding_window") and cfg.get("sliding_window") is not None and nope)
        sliding = types[i] == "sliding_attention"
        assert not sliding or (cfg.get("use_sliding_window") and cfg.get("sliding_window") is not None), \
            f"layer {i} is sliding_attention without use_sliding_window and a sliding_window: backends disagree"
        return sliding

    def _window(self, cfg, i):
        if not self._sliding(cfg, i):
            return None  # LlamaModel has no window whatever the config says
        return cfg.get("sliding_window", 4096)  # MistralConfig etc. default 4096; null: none

    def _rope(self, cfg, fam, i):
        """{theta, scaling} of layer i: Gemma-3 sliding layers use rope_local_base_freq, plain;
        OLMo-3 sliding layers rope_theta, plain (Olmo3Model's rotary_embs["sliding_attention"] is
        rope_type "default"), its full layers the configured scaling; None on SmolLM3's NoPE
        layers (no rotation of q and k)."""
        if self.model_type == "smollm3" and not self._smollm3_rope_layers(cfg)[i]:
            return None
        layer_type = "sliding_attention" if self._sliding(cfg, i) else "full_attention"
        params = cfg.get("rope_parameters")  # transformers 5.x: rope_theta and the scaling in one object
        if params and set(params) <= {"sliding_attention", "full_attention"}:
            params = params.get(layer_type)  # 5.x per layer type: {layer type: parameters}
        elif self.model_type == "gemma3_text" and layer_type == "sliding_attention":
            return {"theta": cfg.get("rope_local_base_freq", 10000.0), "scaling": None}
        if params:
            rope = {"theta": params.get("rope_theta", fam["theta"]),
                    "scaling": None if params.get("rope_type", "default") == "default" else params}
        else:
            rope = {"theta": cfg.get("rope_theta", fam["theta"]), "scaling": cfg.get("rope_scaling")}
        if self.model_type == "olmo3" and layer_type == "sliding_attention":
            rope["scaling"] = None
        return rope

    def weight(self, name):
        return self.w[self.prefix + name]

    def has(self, name):
        return self.prefix + name in self.w

    def lm_head(self):
        if self.model_type == "gpt_neox":
            return self.weight("gpt_neox.embed_in.weight" if self.tied else "embed_out.weight")
        if self.model_type in ("gpt2", "gptj", "gpt_neo"):
            return self.weight("transformer.wte.weight" if self.tied else "lm_head.weight")
        if self.model_type == "opt":
            return self.weight("model.decoder.embed_tokens.weight" if self.tied else "lm_head.weight")
        if self.model_type == "falcon":
            return self.weight("transformer.word_embeddings.weight" if self.tied else "lm_head.weight")
        if self.model_type == "phi":
            return self.weight("model.embed_tokens.weight" if self.tied else "lm_head.weight")
        if self.model_type in ("bloom", "mpt"):
            embed = "transformer.word_embeddings.weight" if self.model_type == "bloom" else "transformer.wte.weight"
            return self.weight(embed if self.tied else "lm_head.weight")
        return self.weight("model.embed_tokens.weight" if self.tied else "lm_head.weight")


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

