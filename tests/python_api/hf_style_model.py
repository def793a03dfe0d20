"""A LLaMA written in the style of transformers' modules, for python.api_hf (no transformers needed).

Module names and forward signatures are transformers' (LlamaForCausalLM > model > layers[i] >
self_attn with q_proj, k_proj, v_proj, o_proj): the eager attention returns (attn_output,
attn_weights), causal and key-padding masks are added as the dtype's minimum, RoPE is
rotate_half's. `fused=True` builds Phi-3's attention instead: one qkv_proj whose output is
[q (H * d) | k (H_kv * d) | v (H_kv * d)]. Weights come from a LLaMA checkpoint directory
(config.json + model.safetensors, any float dtype), read with tests/python/st_reader.py.
"""
import json
import os
import types

import numpy as np
import torch
from torch import nn

import api_lib  # noqa: F401  (puts tests/python on sys.path)
import st_reader


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaRMSNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.variance_epsilon = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.variance_epsilon))


def eager_attention(q, k, v, mask, groups, scaling):
    """transformers' eager_attention_forward: probabilities in float32, then the query's dtype."""
    k = k.repeat_interleave(groups, dim=1)
    v = v.repeat_interleave(groups, dim=1)
    scores = torch.matmul(q, k.transpose(2, 3)) * scaling + mask
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(weights, v).transpose(1, 2).contiguous(), weights


class LlamaAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.head_dim = config.head_dim
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        h, kv, d = config.num_attention_heads, config.num_key_value_heads, config.head_dim
        self.q_proj = nn.Linear(config.hidden_size, h * d, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, kv * d, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, kv * d, bias=False)
        self.o_proj = nn.Linear(h * d, config.hidden_size, bias=False)

    def qkv(self, x):
        return self.q_proj(x), self.k_proj(x), self.v_proj(x)

    def forward(self, hidden_states, position_embeddings, attention_mask, output_attentions=False):
        b, t, _ = hidden_states.shape
        q, k, v = self.qkv(hidden_states)
        q = q.view(b, t, -1, self.head_dim).transpose(1, 2)
        k = k.view(b, t, -1, self.head_dim).transpose(1, 2)
        v = v.view(b, t, -1, self.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        out, weights = eager_attention(q, k, v, attention_mask, self.num_key_value_groups, self.head_dim ** -0.5)
        return self.o_proj(out.reshape(b, t, -1)), weights


class OptInWeightsAttention(LlamaAttention):
    """Returns its weights only when asked (output_attentions=True), as GPT-2's did in transformers 4.x."""

    def forward(self, hidden_states, position_embeddings, attention_mask, output_attentions=False):
        out, weights = super().forward(hidden_states, position_embeddings, attention_mask)
        return out, weights if output_attentions else None


class Phi3Attention(LlamaAttention):
    """Phi-3's fused projection: qkv_proj = [q_proj; k_proj; v_proj]."""

    def __init__(self, config):
        super().__init__(config)
        h, kv, d = config.num_attention_heads, config.num_key_value_heads, config.head_dim
        del self.q_proj, self.k_proj, self.v_proj
        self.qkv_proj = nn.Linear(config.hidden_size, (h + 2 * kv) * d, bias=False)
        self.splits = (h * d, kv * d, kv * d)

    def qkv(self, x):
        return self.qkv_proj(x).split(self.splits, dim=-1)


class LlamaMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config, attention):
        super().__init__()
        self.self_attn = attention(config)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, x, position_embeddings, attention_mask, output_attentions=False):
        h, weights = self.self_attn(self.input_layernorm(x), position_embeddings, attention_mask, output_attentions)
        x = x + h
        return x + self.mlp(self.post_attention_layernorm(x)), weights


class LlamaModel(nn.Module):
    def __init__(self, config, attention):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(LlamaDecoderLayer(config, attention) for _ in range(config.num_hidden_layers))
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, input_ids, attention_mask=None, position_ids=None, use_cache=False, output_attentions=False):
        b, t = input_ids.shape
        x = self.embed_tokens(input_ids)
        if position_ids is None:
            position_ids = torch.arange(t, device=x.device)[None].expand(b, t)
        d = self.config.head_dim
        inv = 1.0 / (self.config.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d))
        angles = position_ids[..., None].double() * inv                       # [B, T, d/2]
        emb = torch.cat((angles, angles), dim=-1)
        cos, sin = emb.cos().to(x.dtype)[:, None], emb.sin().to(x.dtype)[:, None]  # [B, 1, T, d]
        allowed = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()[None, None]
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :].bool()
        mask = torch.zeros(allowed.shape, dtype=x.dtype, device=x.device)
        mask = mask.masked_fill(~allowed, torch.finfo(x.dtype).min)
        attentions = []
        for layer in self.layers:
            x, weights = layer(x, (cos, sin), mask, output_attentions)
            attentions.append(weights)
        self.attentions = tuple(attentions) if output_attentions else None  # what the model kept
        return types.SimpleNamespace(last_hidden_state=self.norm(x), attentions=self.attentions)


class LlamaForCausalLM(nn.Module):
    def __init__(self, config, attention=LlamaAttention):
        super().__init__()
        self.config = config
        self.model = LlamaModel(config, attention)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids, **kwargs):
        hidden = self.model(input_ids, **kwargs).last_hidden_state
        return types.SimpleNamespace(logits=self.lm_head(hidden))


def config_of(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    heads = c["num_attention_heads"]
    return types.SimpleNamespace(
        model_type=c["model_type"], hidden_size=c["hidden_size"], intermediate_size=c["intermediate_size"],
        num_hidden_layers=c["num_hidden_layers"], num_attention_heads=heads,
        num_key_value_heads=c.get("num_key_value_heads", heads), head_dim=c.get("head_dim", c["hidden_size"] // heads),
        rms_norm_eps=c["rms_norm_eps"], rope_theta=c.get("rope_theta", 10000.0), vocab_size=c["vocab_size"],
        bos_token_id=c.get("bos_token_id"), _name_or_path=model_dir)


def load(model_dir, dtype=torch.float64, fused=False, attention=LlamaAttention):
    """The checkpoint's LLaMA as LlamaForCausalLM with `attention` (fused: Phi3Attention), in `dtype`."""
    config = config_of(model_dir)
    model = LlamaForCausalLM(config, Phi3Attention if fused else attention)
    tensors, _, _ = st_reader.read(os.path.join(model_dir, "model.safetensors"))
    state = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in tensors.items()}
    state.setdefault("lm_head.weight", state["model.embed_tokens.weight"])  # tied embeddings
    if fused:
        for i in range(config.num_hidden_layers):
            p = f"model.layers.{i}.self_attn."
            state[p + "qkv_proj.weight"] = torch.cat([state.pop(p + n + "_proj.weight") for n in "qkv"])
    model.load_state_dict(state)
    return model.to(dtype).eval()
