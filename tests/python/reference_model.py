"""The checkpoints of the independent numpy forward (reference_forward.py): each family's
config fields, norm slots, activations and mixture-of-experts layout, read from config.json and
the safetensors files (st_reader.py), weights widened to float64 (or `dtype`).
"""
import json
import os

import numpy as np

from reference_model_gpt import LayerNormFamilies, load_weights  # noqa: F401 (load_weights: read from here too)
from reference_ops import gelu_erf, gelu_tanh, layer_norm, named_layer_norm, rms_norm, silu


# Per family (config.json model_type; gemma3 multimodal reads text_config as gemma3_text):
#   norms: the decoder layer's four norm slots (attention input, attention output, MLP input,
#          MLP output) as tensor names, None where the family has none (RMSNorms, except NORM_KINDS').
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
    "olmo":        dict(norms=PRE, qk=None, gemma=False, kv=None, hd=None, theta=1e4, eps=1e-5),
    "starcoder2":  dict(norms=PRE, qk=None, gemma=False, kv=2, hd=None, theta=1e4, eps=1e-5),
    "stablelm":    dict(norms=PRE, qk=None, gemma=False, kv=32, hd=None, theta=1e4, eps=1e-5),
    "granite":     dict(norms=PRE, qk=None, gemma=False, kv=None, hd=None, theta=1e4, eps=1e-6),
}
# The families whose norms are no RMSNorms: OLMo-1's OlmoLayerNorm (F.layer_norm without weight or bias, eps fixed
# at 1e-5; no tensors), StarCoder2's and StableLM's nn.LayerNorm (weight and bias, eps norm_epsilon, layer_norm_eps).
NORM_KINDS = {"olmo": "weightless", "starcoder2": "layer", "stablelm": "layer"}
# Config defaults that differ from LLaMA's: bos_token_id (OlmoConfig: None), tie_word_embeddings, hidden_act.
BOS = {"olmo": None, "starcoder2": 50256, "stablelm": 0}
TIED = ("smollm3", "starcoder2")
ACTIVATIONS = {"silu": silu, "gelu_pytorch_tanh": gelu_tanh, "gelu_new": gelu_tanh, "gelu": gelu_erf}
# Mixtures of experts (transformers 4.57 MixtralSparseMoeBlock, OlmoeSparseMoeBlock,
# Qwen3MoeSparseMoeBlock, Qwen2MoeSparseMoeBlock): the sparse block's prefix, the expert count's key and
# default, top_k's default, whether the top-k weights are renormalised (None: norm_topk_prob, default
# False), and each expert's gate, up and down projections.
MOE = {"mixtral": ("block_sparse_moe.", "num_local_experts", 8, 2, True, ("w1", "w3", "w2")),
       "olmoe": ("mlp.", "num_experts", 64, 8, None, ("gate_proj", "up_proj", "down_proj")),
       "qwen3_moe": ("mlp.", "num_experts", 128, 8, None, ("gate_proj", "up_proj", "down_proj")),
       "qwen2_moe": ("mlp.", "num_experts", 60, 4, None, ("gate_proj", "up_proj", "down_proj"))}


class Model(LayerNormFamilies):
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
        if top["model_type"] == "gpt_bigcode":
            self._init_gpt_bigcode(top, model_dir, dtype, hf_rounding)
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
        # OLMo-1: eps 1e-5 whatever the config says; StarCoder2: norm_epsilon (an rms_norm_eps beside it unread);
        # StableLM: layer_norm_eps
        self.norm_kind = NORM_KINDS.get(self.model_type, "rms")
        self.eps = {"olmo": 1e-5, "starcoder2": cfg.get("norm_epsilon", 1e-5),
                    "stablelm": cfg.get("layer_norm_eps", 1e-5)}.get(self.model_type,
                                                                      cfg.get("rms_norm_eps", fam["eps"]))
        self.vocab = cfg["vocab_size"]
        self.max_positions = cfg.get("max_position_embeddings")  # YaRN's fallback original length
        self.bos = cfg.get("bos_token_id", BOS.get(self.model_type, 2 if gemma else 1))
        self.tied = top.get("tie_word_embeddings", gemma or self.model_type in TIED)  # SmolLM3Config ties too
        self.norm_offset = 1.0 if gemma else 0.0          # GemmaRMSNorm: * (1 + w)
        self.embed_scale = self.hidden ** 0.5 if gemma else 1.0
        self._stablelm_granite(cfg)
        default_act = "gelu_pytorch_tanh" if self.model_type == "starcoder2" else "silu"
        act = cfg.get("hidden_activation") or "gelu_pytorch_tanh" if gemma else cfg.get("hidden_act", default_act)
        assert act in ACTIVATIONS and (act in ("silu", "gelu_pytorch_tanh") or self.model_type == "starcoder2"), act
        self.act = ACTIVATIONS[act]
        # StarCoder2's MLP: c_proj(act(c_fc h)) (Starcoder2MLP); the others' gated down(act(gate h) * up h).
        self.mlp_kind = "plain" if self.model_type == "starcoder2" else "gated"
        # Biases: Qwen2 has q/k/v biases always, Qwen2-MoE by qkv_bias (default true; o_proj none in
        # both); StarCoder2 by use_bias (default true; its MLP's too); StableLM by use_qkv_bias (q, k, v: its other
        # bias tensors dropped below); the others follow attention_bias on q, k, v and o (Mistral has no biases).
        # forward() reads whichever bias tensors the checkpoint holds.
        bias = cfg.get("attention_bias", False) and self.model_type not in ("mistral", "qwen2", "qwen2_moe", "stablelm")
        bias = cfg.get("use_bias", True) if self.model_type == "starcoder2" else bias
        self.qkv_bias = bias or self.model_type == "qwen2" or (self.model_type == "qwen2_moe" and
                                                                cfg.get("qkv_bias", True)) or \
            (self.model_type == "stablelm" and cfg.get("use_qkv_bias", False))
        self.o_bias = bias
        # Score scale and soft-caps (Gemma-2/3: query_pre_attn_scalar; caps default 50 / 30 in Gemma-2).
        if self.model_type in ("gemma2", "gemma3_text"):
            self.scale = cfg.get("query_pre_attn_scalar", 256) ** -0.5
            caps = (50.0, 30.0) if self.model_type == "gemma2" else (None, None)
            self.attn_cap = cfg.get("attn_logit_softcapping", caps[0])
            self.final_cap = cfg.get("final_logit_softcapping", caps[1])
        else:
            granite = self.attention_multiplier is not None
            self.scale = self.attention_multiplier if granite else self.head_dim ** -0.5
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
        # OlmoAttention, OlmoeAttention: q, k, v (after OLMoE's q/k norms) clamped to [-clip_qkv, clip_qkv] when
        # it is not None; 0 or below would clamp them to nothing or invert the bounds: refused.
        self.clip_qkv = cfg.get("clip_qkv") if self.model_type in ("olmo", "olmoe") else None
        assert self.clip_qkv is None or self.clip_qkv > 0, f"clip_qkv {self.clip_qkv}"
        assert self.model_type in ("olmo", "olmoe") or not cfg.get("clip_qkv"), "clip_qkv"
        assert not cfg.get("mlp_bias"), "mlp_bias"  # LLaMA's and SmolLM3's MLP biases are not read here
        self.expert_load = []  # [sparse layers] x [experts] tokens routed, filled by forward
        self.shared_gate = []  # [sparse layers] x [T] Qwen2-MoE's sigmoid(shared_expert_gate h), filled by forward
        self.route_gap = []    # [layers] the smallest router-logit gap between a chosen and an unchosen expert
        self.dtype, self.hf_rounding = dtype, hf_rounding
        self.w = {k: v.astype(dtype) for k, v in load_weights(model_dir).items() if k.startswith(self.prefix)}
        if self.model_type == "starcoder2" and not bias:  # use_bias false: Starcoder2 builds no projection biases
            self.w = {k: v for k, v in self.w.items() if not k.endswith(("_proj.bias", "c_fc.bias"))}
        if self.model_type == "stablelm":  # q/k/v biases only under use_qkv_bias; o_proj and the MLP none
            kept = ("input_layernorm.bias", "post_attention_layernorm.bias", "model.norm.bias") + \
                (("q_proj.bias", "k_proj.bias", "v_proj.bias") if cfg.get("use_qkv_bias", False) else ())
            self.w = {k: v for k, v in self.w.items() if not k.endswith(".bias") or k.endswith(kept)}

    def _stablelm_granite(self, cfg):
        """StableLmAttention and StableLmDecoderLayer: RoPE on the leading int(partial_rotary_factor head_dim)
        channels of each head (default 0.25; 5.x: in rope_parameters), head_dim hidden / heads (a head_dim key
        that differs is refused: the attention ignores it, the RoPE tables read it), with use_parallel_residual
        one input_layernorm feeding attention and MLP: x + attn(ln x) + mlp(ln x). Refused: qk_layernorm
        (StableLM-2-12B's per-head LayerNorms), an odd count of turned channels. Granite: embeddings times
        embedding_multiplier, scores times attention_multiplier in place of 1 / sqrt(head_dim), each branch
        times residual_multiplier before its residual add, logits divided by logits_scaling (GraniteConfig:
        each 1.0 by default, so unscaled scores). The other families: 1 / sqrt(head_dim), the whole head turned,
        no multipliers."""
        stablelm, granite = self.model_type == "stablelm", self.model_type == "granite"
        params = cfg.get("rope_parameters") or {}
        fraction = params.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 0.25)) if stablelm else 1.0
        self.rotary_dim = int(self.head_dim * fraction)
        assert self.rotary_dim % 2 == 0, f"{self.rotary_dim} rotary channels"
        assert not (stablelm and cfg.get("head_dim") not in (None, self.hidden // self.heads)), "head_dim"
        assert not (stablelm and cfg.get("qk_layernorm")), "qk_layernorm"
        self.parallel = stablelm and cfg.get("use_parallel_residual", False)
        multiplier = lambda key: cfg.get(key, 1.0) if granite else 1.0
        if granite:
            self.embed_scale = multiplier("embedding_multiplier")
        self.attention_multiplier = multiplier("attention_multiplier") if granite else None
        self.residual_multiplier, self.logits_scaling = multiplier("residual_multiplier"), multiplier("logits_scaling")

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
        return self.model_type in ("mistral", "mixtral", "starcoder2")

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
        # MistralConfig etc. default 4096, Starcoder2Config None; null: none
        return cfg.get("sliding_window", None if self.model_type == "starcoder2" else 4096)

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

    def norm(self, x, name):
        """The LLaMA-style layer's norm `name` (a tensor prefix) of x: RMSNorm with name.weight, OLMo-1's LayerNorm
        without weight or bias, or StarCoder2's LayerNorm with name.weight and name.bias."""
        if self.norm_kind == "weightless":
            return layer_norm(x, 1.0, 0.0, self.eps)
        if self.norm_kind == "layer":
            return named_layer_norm(self, x, name)
        return rms_norm(x, self.weight(name + ".weight"), self.eps, self.norm_offset)

    def has(self, name):
        return self.prefix + name in self.w

    def lm_head(self):
        if self.model_type == "gpt_neox":
            return self.weight("gpt_neox.embed_in.weight" if self.tied else "embed_out.weight")
        if self.model_type in ("gpt2", "gptj", "gpt_neo", "gpt_bigcode"):
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
