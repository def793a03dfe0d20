"""Independent numpy forward for the Hugging Face checkpoints attngeom reads.

Written from transformers 4.57's eager modeling code (modeling_llama, modeling_mistral,
modeling_gemma, modeling_gemma2, modeling_gemma3, modeling_qwen2, modeling_qwen3,
modeling_olmo2, modeling_gpt_neox, modeling_gpt2, modeling_phi, modeling_phi3, modeling_mixtral,
modeling_olmoe, modeling_qwen3_moe and modeling_rope_utils), not from the C++ engine. Computes in float64
(or `dtype`) from the stored weights, widened. With dtype float32 and hf_rounding=True it
stands in for HF's fp32 eager forward: RoPE frequencies and angles in float32 as
LlamaRotaryEmbedding computes them, sqrt(hidden) rounded to float32. Shapes: T tokens,
H query heads, Hkv kv heads, D head_dim.
"""
import json
import math
import os

import numpy as np

import st_reader

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
    "olmoe":       dict(norms=PRE, qk="whole", gemma=False, kv=None, hd=None, theta=1e4, eps=1e-5),
    "qwen3_moe":   dict(norms=PRE, qk="head", gemma=False, kv=4, hd=None, theta=1e4, eps=1e-6),
}
# Mixtures of experts (transformers 4.57 MixtralSparseMoeBlock, OlmoeSparseMoeBlock,
# Qwen3MoeSparseMoeBlock): the sparse block's prefix, the expert count's key and default, top_k's
# default, whether the top-k weights are renormalised (None: norm_topk_prob, default False), and
# each expert's gate, up and down projections.
MOE = {"mixtral": ("block_sparse_moe.", "num_local_experts", 8, 2, True, ("w1", "w3", "w2")),
       "olmoe": ("mlp.", "num_experts", 64, 8, None, ("gate_proj", "up_proj", "down_proj")),
       "qwen3_moe": ("mlp.", "num_experts", 128, 8, None, ("gate_proj", "up_proj", "down_proj"))}


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
        self.bos = cfg.get("bos_token_id", 2 if gemma else 1)
        self.tied = top.get("tie_word_embeddings", gemma)
        self.norm_offset = 1.0 if gemma else 0.0          # GemmaRMSNorm: * (1 + w)
        self.embed_scale = self.hidden ** 0.5 if gemma else 1.0
        act = cfg.get("hidden_activation") or "gelu_pytorch_tanh" if gemma else cfg.get("hidden_act", "silu")
        assert act in ("silu", "gelu_pytorch_tanh"), act
        self.act = silu if act == "silu" else gelu_tanh
        # Biases: Qwen2 has q/k/v biases always (o_proj none); the others follow attention_bias
        # on q, k, v and o (Mistral has no biases).
        bias = cfg.get("attention_bias", False) and self.model_type not in ("mistral", "qwen2")
        self.qkv_bias = bias or self.model_type == "qwen2"
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
        # The old single-setting attributes, for families with one window and one RoPE.
        self.window = self.layer_window[0] if len(set(self.layer_window)) == 1 else "per-layer"
        self.theta = self.layer_rope[0]["theta"]
        # Mixtures of experts: `experts` per sparse layer, top_k of them per token. Qwen3MoeDecoderLayer:
        # layer i is sparse iff i not in mlp_only_layers and num_experts > 0 and
        # (i + 1) % decoder_sparse_step == 0 (Mixtral, OLMoE: every layer); a dense one has the
        # plain MLP of intermediate_size. Qwen3MoeConfig in 5.x writes num_experts as num_local_experts.
        moe = MOE.get(self.model_type)
        self.experts = 0 if moe is None else cfg.get(moe[1], cfg.get("num_local_experts", moe[2]))
        self.top_k = cfg.get("num_experts_per_tok", moe[3] if moe else 0)
        self.renormalize = moe is not None and (moe[4] if moe[4] is not None else cfg.get("norm_topk_prob", False))
        self.moe_names = moe and (moe[0], moe[5])
        dense = cfg.get("mlp_only_layers") or []
        step = cfg.get("decoder_sparse_step", 1) if self.model_type == "qwen3_moe" else 1
        self.sparse = [self.experts > 0 and i not in dense and (i + 1) % step == 0 for i in range(self.layers)]
        assert not cfg.get("clip_qkv"), "clip_qkv"
        self.expert_load = []  # [sparse layers] x [experts] tokens routed, filled by forward
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
        assert not (self.model_type == "qwen3_moe" and cfg.get("use_sliding_window")), "use_sliding_window"
        return self.model_type in ("mistral", "mixtral")

    def _window(self, cfg, i):
        if not self._sliding(cfg, i):
            return None  # LlamaModel has no window whatever the config says
        return cfg.get("sliding_window", 4096)  # MistralConfig etc. default 4096; null: none

    def _rope(self, cfg, fam, i):
        """{theta, scaling} of layer i: Gemma-3 sliding layers use rope_local_base_freq, plain."""
        if self.model_type == "gemma3_text" and self._sliding(cfg, i):
            return {"theta": cfg.get("rope_local_base_freq", 10000.0), "scaling": None}
        params = cfg.get("rope_parameters")  # transformers 5.x: rope_theta and the scaling in one object
        if params:
            return {"theta": params.get("rope_theta", fam["theta"]),
                    "scaling": None if params.get("rope_type", "default") == "default" else params}
        return {"theta": cfg.get("rope_theta", fam["theta"]), "scaling": cfg.get("rope_scaling")}

    def weight(self, name):
        return self.w[self.prefix + name]

    def has(self, name):
        return self.prefix + name in self.w

    def lm_head(self):
        if self.model_type == "gpt_neox":
            return self.weight("gpt_neox.embed_in.weight" if self.tied else "embed_out.weight")
        if self.model_type == "gpt2":
            return self.weight("transformer.wte.weight" if self.tied else "lm_head.weight")
        if self.model_type == "phi":
            return self.weight("model.embed_tokens.weight" if self.tied else "lm_head.weight")
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


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    # transformers' gelu_pytorch_tanh == torch gelu(approximate="tanh")
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu_erf(x):
    """transformers' "gelu" (nn.functional.gelu, exact): 0.5 x (1 + erf(x / sqrt(2)))."""
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)).astype(x.dtype))


def layer_norm(x, w, b, eps):
    """nn.LayerNorm: (x - mean) / sqrt(biased var + eps) * w + b; x: [..., dim]."""
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps, offset):
    """x * rsqrt(mean(x^2) + eps) * (offset + w); x: [..., dim]."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (offset + w)


def soft_cap(x, cap):
    """Gemma-2: cap * tanh(x / cap); None: unchanged."""
    return x if cap is None else cap * np.tanh(x / cap)


def rope_inv_freq(head_dim, theta, scaling=None, ftype=np.float64):
    """modeling_rope_utils: default, linear and llama3 inverse frequencies [D/2], in ftype."""
    exps = np.arange(0, head_dim, 2, dtype=np.int64).astype(ftype) / ftype(head_dim)
    inv_freq = ftype(1.0) / np.power(ftype(theta), exps)
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "default":
        return inv_freq
    factor = ftype(scaling["factor"])
    if kind == "linear":
        return inv_freq / factor
    assert kind == "llama3", kind
    low, high = ftype(scaling["low_freq_factor"]), ftype(scaling["high_freq_factor"])
    old_len = ftype(scaling["original_max_position_embeddings"])
    low_freq_wavelen, high_freq_wavelen = old_len / low, old_len / high
    wavelen = ftype(2 * math.pi) / inv_freq
    inv_freq_llama = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * inv_freq_llama / factor + smooth * inv_freq_llama
    medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return np.where(medium, smoothed, inv_freq_llama).astype(ftype)


def rope_cos_sin(positions, head_dim, theta, dtype, scaling=None, hf_rounding=False):
    """LlamaRotaryEmbedding: emb = cat(freqs, freqs); returns cos, sin [T, D]. Exact (float64)
    angles, or with hf_rounding the float32 frequencies and angles HF computes."""
    ftype = np.float32 if hf_rounding else np.float64
    inv_freq = rope_inv_freq(head_dim, theta, scaling, ftype)
    freqs = np.outer(np.asarray(positions, dtype=ftype), inv_freq).astype(ftype)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(dtype), np.sin(emb).astype(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, cos, sin):
    """x: [heads, T, D]; q_embed = q * cos + rotate_half(q) * sin."""
    return x * cos + rotate_half(x) * sin


def attention_mask(T, window):
    """[T, T] bool, True where query i may attend key j: j <= i and i - j < window."""
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    allowed = j <= i
    if window is not None:
        allowed &= (i - j) < window
    return allowed


def softmax_masked(scores, allowed):
    """Row softmax over allowed keys; exactly 0 where masked. scores: [H, T, T]."""
    s = np.where(allowed, scores, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def keep_top_n(probs, n):
    """Top-N per row of probs [T, T] (ties to the lower index), renormalised; n <= 0: all."""
    if n <= 0:
        return probs
    T = probs.shape[-1]
    order = np.lexsort((np.broadcast_to(np.arange(T), probs.shape), -probs), axis=-1)  # desc p, asc index
    keep = np.zeros(probs.shape, dtype=bool)
    np.put_along_axis(keep, order[:, :n], True, axis=-1)
    kept = np.where(keep, probs, 0.0)
    return kept / kept.sum(axis=-1, keepdims=True)


def forward(model, tokens, want_logits=True, head_gates=None, topn=None):
    """Returns {"attn": [L x [H, T, T]], "values": [L x [Hkv, T, D]], "logits": [T, V]}, and for
    a mixture of experts "experts": {layer: (chosen [T, top_k], weights [T, top_k])}, the largest first.

    Optional edits (attngeom prune, docs/method.md section 7), both [layers, heads]: `topn`
    keeps each query's top-N keys of a head (0: all), renormalised; `head_gates` multiplies
    each head's attention output before o_proj (0 removes the head)."""
    if model.model_type == "gpt_neox":
        return forward_neox(model, tokens, want_logits, head_gates, topn)
    if model.model_type == "gpt2":
        return forward_gpt2(model, tokens, want_logits, head_gates, topn)
    if model.model_type == "phi3":
        return forward_phi3(model, tokens, want_logits, head_gates, topn)
    if model.model_type == "phi":
        return forward_phi(model, tokens, want_logits, head_gates, topn)
    m, dt = model, model.dtype
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, Hkv, D = len(tokens), m.heads, m.kv_heads, m.head_dim
    assert tokens.min() >= 0 and tokens.max() < m.vocab
    # Gemma: hidden * torch.tensor(hidden ** 0.5, dtype=hidden.dtype)
    x = m.weight("model.embed_tokens.weight")[tokens] * dt(m.embed_scale)  # [T, hidden]
    tables = {}
    group = H // Hkv
    kv_of_head = np.arange(H) // group                                     # repeat_kv
    attn_in, attn_out, mlp_in, mlp_out = m.norm_names
    out = {"attn": [], "values": []}
    m.expert_load, m.expert_choice, m.route_gap, m.router_magnitude = [], [], [], []
    for layer in range(m.layers):
        p = f"model.layers.{layer}."
        W = lambda n: m.weight(p + n)
        norm = lambda v, name: v if name is None else rms_norm(v, W(name + ".weight"), m.eps, m.norm_offset)
        linear = lambda v, name: v @ W(name + ".weight").T + (W(name + ".bias") if m.has(p + name + ".bias") else 0)
        h = norm(x, attn_in)                                               # [T, hidden]
        q, k, v = linear(h, "self_attn.q_proj"), linear(h, "self_attn.k_proj"), linear(h, "self_attn.v_proj")
        if m.qk_norm == "whole":                                           # OLMo-2: over the projection
            q = rms_norm(q, W("self_attn.q_norm.weight"), m.eps, m.norm_offset)
            k = rms_norm(k, W("self_attn.k_norm.weight"), m.eps, m.norm_offset)
        q = q.reshape(T, H, D).transpose(1, 0, 2)                          # [H, T, D]
        k = k.reshape(T, Hkv, D).transpose(1, 0, 2)                        # [Hkv, T, D]
        v = v.reshape(T, Hkv, D).transpose(1, 0, 2)
        out["values"].append(v.copy())                                     # [Hkv, T, D]
        if m.qk_norm == "head":                                            # Qwen3, Gemma-3: per head
            q = rms_norm(q, W("self_attn.q_norm.weight"), m.eps, m.norm_offset)
            k = rms_norm(k, W("self_attn.k_norm.weight"), m.eps, m.norm_offset)
        rope = m.layer_rope[layer]
        key = (rope["theta"], json.dumps(rope["scaling"], sort_keys=True))
        if key not in tables:
            tables[key] = rope_cos_sin(np.arange(T), D, rope["theta"], dt, rope["scaling"], m.hf_rounding)
        cos, sin = tables[key]                                             # [T, D]
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        scores = soft_cap((q @ k[kv_of_head].transpose(0, 2, 1)) * dt(m.scale), m.attn_cap)  # [H, T, T]
        probs = softmax_masked(scores, attention_mask(T, m.layer_window[layer]))
        if topn is not None:
            probs = np.stack([keep_top_n(probs[h], int(topn[layer][h])) for h in range(H)])
        out["attn"].append(probs)
        heads_out = probs @ v[kv_of_head]                                  # [H, T, D]
        if head_gates is not None:
            heads_out = heads_out * np.asarray(head_gates[layer], dtype=dt)[:, None, None]
        ctx = heads_out.transpose(1, 0, 2).reshape(T, H * D)               # [T, H*D]
        x = x + norm(linear(ctx, "self_attn.o_proj"), attn_out)
        h = norm(x, mlp_in)
        if m.experts and m.sparse[layer]:
            x = x + sparse_moe(m, h, W, p)
            out.setdefault("experts", {})[layer] = m.expert_choice[-1]
            continue
        gate = h @ W("mlp.gate_proj.weight").T                             # [T, inter]
        up = h @ W("mlp.up_proj.weight").T
        x = x + norm((m.act(gate) * up) @ W("mlp.down_proj.weight").T, mlp_out)
    if want_logits:
        h = rms_norm(x, m.weight("model.norm.weight"), m.eps, m.norm_offset)
        out["logits"] = soft_cap(h @ m.lm_head().T, m.final_cap)           # [T, vocab]
    return out


def sparse_moe(m, h, W, p):
    """A sparse block: each token's router probabilities (softmax over the experts), its top_k
    experts, their probabilities rescaled to sum to one where the family renormalises (Mixtral;
    OLMoE and Qwen3-MoE with norm_topk_prob), and the sum of those experts' gated MLPs
    down(act(gate h) * up h) weighted so. The experts are read per expert, or fused as
    transformers 5.x saves them (mlp.gate, mlp.experts.gate_up_proj [E, 2 I, H] whose rows are
    each expert's [gate | up], mlp.experts.down_proj [E, H, I]). p: the layer's tensor prefix;
    h [T, hidden] -> [T, hidden]."""
    block, (gate_name, up_name, down_name) = m.moe_names
    fused = m.has(p + "mlp.experts.gate_up_proj")
    router = W("mlp.gate.weight" if fused else block + "gate.weight")    # [experts, hidden]
    probs = h @ router.T                                                   # [T, experts] logits
    magnitude = float((np.abs(h) @ np.abs(router).T).max())              # max sum_j |h_j w_j|
    probs = np.exp(probs - probs.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    # argsort of -p, stable: the largest first, ties to the lower expert
    chosen = np.argsort(-probs, axis=1, kind="stable")[:, :m.top_k]         # [T, top_k]
    weight = np.take_along_axis(probs, chosen, axis=1)
    if m.renormalize:
        weight /= weight.sum(axis=1, keepdims=True)
    out = np.zeros_like(h)
    load = []
    for e in range(m.experts):
        tokens, slot = np.nonzero(chosen == e)
        load.append(len(tokens))
        if not len(tokens):
            continue
        if fused:
            gate_up, down = W("mlp.experts.gate_up_proj")[e], W("mlp.experts.down_proj")[e]
            gate, up = np.split(gate_up, 2, axis=0)                        # chunk(2): [gate | up]
        else:
            E = lambda n: W(f"{block}experts.{e}.{n}.weight")
            gate, up, down = E(gate_name), E(up_name), E(down_name)
        he = h[tokens]
        y = (m.act(he @ gate.T) * (he @ up.T)) @ down.T                    # [n, hidden]
        out[tokens] += weight[tokens, slot][:, None] * y
    m.router_magnitude.append(magnitude)
    m.expert_load.append(load)
    m.expert_choice.append((chosen, weight))  # [T, top_k] each, the largest first
    # log p_k - log p_(k+1) of the k-th and (k+1)-th largest: the router-logit gap, how near a tie
    ranked = -np.sort(-np.log(probs), axis=1)
    m.route_gap.append(float((ranked[:, m.top_k - 1] - ranked[:, m.top_k]).min()) if m.top_k < m.experts else 1.0)
    return out


def attend(m, q, k, v, allowed, layer, out, head_gates, topn):
    """Multi-head attention without GQA or soft-cap: q, k, v [H, T, D] -> [T, H*D]; the
    probabilities are appended to out["attn"]. Edits as in forward()."""
    H, T, D = q.shape
    probs = softmax_masked((q @ k.transpose(0, 2, 1)) * m.dtype(m.scale), allowed)  # [H, T, T]
    if topn is not None:
        probs = np.stack([keep_top_n(probs[h], int(topn[layer][h])) for h in range(H)])
    out["attn"].append(probs)
    heads_out = probs @ v
    if head_gates is not None:
        heads_out = heads_out * np.asarray(head_gates[layer], dtype=m.dtype)[:, None, None]
    return heads_out.transpose(1, 0, 2).reshape(T, H * D)


def forward_neox(m, tokens, want_logits=True, head_gates=None, topn=None):
    """GPTNeoXForCausalLM (transformers 4.57 modeling_gpt_neox): the same outputs as forward()."""
    dt = m.dtype
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, D, R = len(tokens), m.heads, m.head_dim, m.rotary_dim
    x = m.weight("gpt_neox.embed_in.weight")[tokens]                    # [T, hidden]
    cos, sin = rope_cos_sin(np.arange(T), R, m.theta, dt, None, m.hf_rounding)  # [T, R]
    allowed = attention_mask(T, None)
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"gpt_neox.layers.{layer}."
        W = lambda n: m.weight(p + n)
        linear = lambda v, name: v @ W(name + ".weight").T + (W(name + ".bias") if m.has(p + name + ".bias") else 0)
        ln = lambda v, name: layer_norm(v, W(name + ".weight"), W(name + ".bias"), m.eps)
        # qkv.view(T, H, 3 * D).transpose -> chunk(3): per head, [q | k | v]
        qkv = linear(ln(x, "input_layernorm"), "attention.query_key_value").reshape(T, H, 3 * D).transpose(1, 0, 2)
        q, k, v = qkv[..., :D], qkv[..., D:2 * D], qkv[..., 2 * D:]     # [H, T, D]
        out["values"].append(v.copy())
        # Partial rotary: rotate_half over the first R dims, the rest passed through.
        q = np.concatenate([apply_rope(q[..., :R], cos, sin), q[..., R:]], axis=-1)
        k = np.concatenate([apply_rope(k[..., :R], cos, sin), k[..., R:]], axis=-1)
        attn = linear(attend(m, q, k, v, allowed, layer, out, head_gates, topn), "attention.dense")
        mlp = lambda v: linear(m.act(linear(ln(v, "post_attention_layernorm"), "mlp.dense_h_to_4h")),
                               "mlp.dense_4h_to_h")
        if m.parallel:
            x = mlp(x) + attn + x
        else:
            a = attn + x
            x = mlp(a) + a
    if want_logits:
        h = layer_norm(x, m.weight("gpt_neox.final_layer_norm.weight"), m.weight("gpt_neox.final_layer_norm.bias"), m.eps)
        out["logits"] = h @ m.lm_head().T
    return out


def forward_gpt2(m, tokens, want_logits=True, head_gates=None, topn=None):
    """GPT2LMHeadModel (transformers 4.57 modeling_gpt2): the same outputs as forward()."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, D, hidden = len(tokens), m.heads, m.head_dim, m.hidden
    x = m.weight("transformer.wte.weight")[tokens] + m.weight("transformer.wpe.weight")[np.arange(T)]
    allowed = attention_mask(T, None)
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"transformer.h.{layer}."
        W = lambda n: m.weight(p + n)
        conv1d = lambda v, name: v @ W(name + ".weight") + W(name + ".bias")   # Conv1D: W [in, out]
        ln = lambda v, name: layer_norm(v, W(name + ".weight"), W(name + ".bias"), m.eps)
        qkv = conv1d(ln(x, "ln_1"), "attn.c_attn")                          # [T, 3 hidden]
        heads = lambda a: a.reshape(T, H, D).transpose(1, 0, 2)               # [H, T, D]
        q, k, v = heads(qkv[:, :hidden]), heads(qkv[:, hidden:2 * hidden]), heads(qkv[:, 2 * hidden:])
        out["values"].append(v.copy())
        x = x + conv1d(attend(m, q, k, v, allowed, layer, out, head_gates, topn), "attn.c_proj")
        x = x + conv1d(m.act(conv1d(ln(x, "ln_2"), "mlp.c_fc")), "mlp.c_proj")
    if want_logits:
        h = layer_norm(x, m.weight("transformer.ln_f.weight"), m.weight("transformer.ln_f.bias"), m.eps)
        out["logits"] = h @ m.lm_head().T
    return out


def forward_phi(m, tokens, want_logits=True, head_gates=None, topn=None):
    """PhiForCausalLM (transformers 4.57 modeling_phi): the same outputs as forward()."""
    dt = m.dtype
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, Hkv, D, R = len(tokens), m.heads, m.kv_heads, m.head_dim, m.rotary_dim
    x = m.weight("model.embed_tokens.weight")[tokens]
    cos, sin = rope_cos_sin(np.arange(T), R, m.theta, dt, None, m.hf_rounding)  # [T, R]
    allowed = attention_mask(T, None)
    kv_of_head = np.arange(H) // (H // Hkv)
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        p = f"model.layers.{layer}."
        W = lambda n: m.weight(p + n)
        linear = lambda v, name: v @ W(name + ".weight").T + W(name + ".bias")
        h = layer_norm(x, W("input_layernorm.weight"), W("input_layernorm.bias"), m.eps)  # one norm, both branches
        heads = lambda a, n: a.reshape(T, n, D).transpose(1, 0, 2)
        q, k = heads(linear(h, "self_attn.q_proj"), H), heads(linear(h, "self_attn.k_proj"), Hkv)
        v = heads(linear(h, "self_attn.v_proj"), Hkv)
        out["values"].append(v.copy())
        # Partial rotary: the first R dims of each head, the rest passed through.
        q = np.concatenate([apply_rope(q[..., :R], cos, sin), q[..., R:]], axis=-1)
        k = np.concatenate([apply_rope(k[..., :R], cos, sin), k[..., R:]], axis=-1)
        attn = linear(attend(m, q, k[kv_of_head], v[kv_of_head], allowed, layer, out, head_gates, topn),
                      "self_attn.dense")
        ff = linear(m.act(linear(h, "mlp.fc1")), "mlp.fc2")
        x = attn + ff + x
    if want_logits:
        h = layer_norm(x, m.weight("model.final_layernorm.weight"), m.weight("model.final_layernorm.bias"), m.eps)
        out["logits"] = h @ m.lm_head().T + m.weight("lm_head.bias")
    return out


def longrope_cos_sin(m, T):
    """_compute_longrope_parameters: inv_freq = 1 / (ext * base^(2i / R)), ext the long factors when
    T exceeds original_max_position_embeddings; cos and sin times the attention factor."""
    kind = m.rope.get("rope_type", m.rope.get("type", "default"))
    if kind == "default":
        return rope_cos_sin(np.arange(T), m.rotary_dim, m.theta, m.dtype, None, m.hf_rounding)
    assert kind == "longrope", kind
    ftype = np.float32 if m.hf_rounding else np.float64
    ext = np.asarray(m.rope["long_factor" if T > m.original else "short_factor"], dtype=ftype)
    R = m.rotary_dim
    inv_freq = ftype(1.0) / (ext * np.power(ftype(m.theta), np.arange(0, R, 2).astype(ftype) / ftype(R)))
    scale = m.max_positions / m.original
    af = m.rope.get("attention_factor") or (1.0 if scale <= 1 else math.sqrt(1 + math.log(scale) / math.log(m.original)))
    freqs = np.outer(np.arange(T).astype(ftype), inv_freq).astype(ftype)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return (np.cos(emb) * ftype(af)).astype(m.dtype), (np.sin(emb) * ftype(af)).astype(m.dtype)


def forward_phi3(m, tokens, want_logits=True, head_gates=None, topn=None):
    """Phi3ForCausalLM (transformers 4.57 modeling_phi3): the same outputs as forward()."""
    tokens = np.asarray(tokens, dtype=np.int64)
    T, H, Hkv, D, R = len(tokens), m.heads, m.kv_heads, m.head_dim, m.rotary_dim
    x = m.weight("model.embed_tokens.weight")[tokens]
    cos, sin = longrope_cos_sin(m, T)                                     # [T, R]
    allowed = attention_mask(T, m.window)
    kv_of_head = np.arange(H) // (H // Hkv)
    rotate = lambda a: np.concatenate([apply_rope(a[..., :R], cos, sin), a[..., R:]], axis=-1)
    out = {"attn": [], "values": []}
    for layer in range(m.layers):
        W = lambda n: m.weight(f"model.layers.{layer}." + n)
        h = rms_norm(x, W("input_layernorm.weight"), m.eps, 0.0)
        qkv = h @ W("self_attn.qkv_proj.weight").T                         # [T, (H + 2 Hkv) D]
        heads = lambda a, n: a.reshape(T, n, D).transpose(1, 0, 2)
        q, k = heads(qkv[:, :H * D], H), heads(qkv[:, H * D:(H + Hkv) * D], Hkv)
        v = heads(qkv[:, (H + Hkv) * D:], Hkv)
        out["values"].append(v.copy())
        ctx = attend(m, rotate(q), rotate(k)[kv_of_head], v[kv_of_head], allowed, layer, out, head_gates, topn)
        x = x + ctx @ W("self_attn.o_proj.weight").T
        gate_up = rms_norm(x, W("post_attention_layernorm.weight"), m.eps, 0.0) @ W("mlp.gate_up_proj.weight").T
        gate, up = np.split(gate_up, 2, axis=-1)                          # chunk(2, dim=-1)
        x = x + (up * m.act(gate)) @ W("mlp.down_proj.weight").T
    if want_logits:
        out["logits"] = rms_norm(x, m.weight("model.norm.weight"), m.eps, 0.0) @ m.lm_head().T
    return out


def layer0_value_input(m, tokens):
    """(h [T, hidden], W_v [kv_heads*D, hidden], b_v or None): layer 0's value projection and
    its input, the attention's normed input (for bounds on the values' rounding)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    if m.model_type == "gpt_neox":
        p, H, D = "gpt_neox.layers.0.", m.heads, m.head_dim
        x = m.weight("gpt_neox.embed_in.weight")[tokens]
        h = layer_norm(x, m.weight(p + "input_layernorm.weight"), m.weight(p + "input_layernorm.bias"), m.eps)
        w = m.weight(p + "attention.query_key_value.weight").reshape(H, 3 * D, -1)[:, 2 * D:]
        b = m.weight(p + "attention.query_key_value.bias").reshape(H, 3 * D)[:, 2 * D:]
        return h, w.reshape(H * D, -1), b.reshape(-1)
    if m.model_type == "gpt2":
        p, hidden = "transformer.h.0.", m.hidden
        x = m.weight("transformer.wte.weight")[tokens] + m.weight("transformer.wpe.weight")[np.arange(len(tokens))]
        h = layer_norm(x, m.weight(p + "ln_1.weight"), m.weight(p + "ln_1.bias"), m.eps)
        return h, m.weight(p + "attn.c_attn.weight")[:, 2 * hidden:].T, m.weight(p + "attn.c_attn.bias")[2 * hidden:]
    if m.model_type == "phi3":
        p, q_rows, kv_rows = "model.layers.0.", m.heads * m.head_dim, m.kv_heads * m.head_dim
        h = rms_norm(m.weight("model.embed_tokens.weight")[tokens], m.weight(p + "input_layernorm.weight"), m.eps, 0.0)
        return h, m.weight(p + "self_attn.qkv_proj.weight")[q_rows + kv_rows:], None
    if m.model_type == "phi":
        p = "model.layers.0."
        x = m.weight("model.embed_tokens.weight")[tokens]
        h = layer_norm(x, m.weight(p + "input_layernorm.weight"), m.weight(p + "input_layernorm.bias"), m.eps)
        return h, m.weight(p + "self_attn.v_proj.weight"), m.weight(p + "self_attn.v_proj.bias")
    x = m.weight("model.embed_tokens.weight")[tokens] * m.embed_scale
    norm = m.norm_names[0]
    h = x if norm is None else rms_norm(x, m.weight(f"model.layers.0.{norm}.weight"), m.eps, m.norm_offset)
    bias = "model.layers.0.self_attn.v_proj.bias"
    return h, m.weight("model.layers.0.self_attn.v_proj.weight"), m.weight(bias) if m.has(bias) else None
