"""The model organism's network: a small LLaMA (RMSNorm, RoPE with the Hugging Face rotate_half
convention, SwiGLU MLP, no biases), its attention explicit (the probes read every weight) or
torch's fused kernel (training on a GPU)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(T, hd, theta):
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    t = torch.arange(T, dtype=torch.float32)
    f = torch.outer(t, inv)
    emb = torch.cat([f, f], dim=-1)  # HF convention
    return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, H, hd, ff = c["hidden_size"], c["num_attention_heads"], c["head_dim"], c["intermediate_size"]
        self.H, self.hd = H, hd
        self.input_layernorm = RMSNorm(d, c["rms_norm_eps"])
        self.qkv = nn.Linear(d, 3 * H * hd, bias=False)  # fused q,k,v (split on export)
        self.o_proj = nn.Linear(H * hd, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d, c["rms_norm_eps"])
        self.gate_up = nn.Linear(d, 2 * ff, bias=False)  # fused gate,up (split on export)
        self.down_proj = nn.Linear(ff, d, bias=False)
        self.ff = ff

    def forward(self, x, cos, sin, mask, want_attn=False, sdpa=False):
        B, T, D = x.shape
        h = self.input_layernorm(x)
        q, k, v = self.qkv(h).view(B, T, 3, self.H, self.hd).permute(2, 0, 3, 1, 4)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if sdpa and not want_attn:  # the same causal softmax attention in one fused kernel (torch >= 2.0);
            # under autocast v is bf16 and q, k are F32 after RoPE, as they are for the explicit product
            a, y = None, F.scaled_dot_product_attention(q.to(v.dtype), k.to(v.dtype), v, is_causal=True)
        else:
            s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.hd)) + mask
            a = torch.softmax(s, dim=-1)
            y = torch.matmul(a, v)
        y = y.transpose(1, 2).reshape(B, T, self.H * self.hd)
        x = x + self.o_proj(y)
        g, u = self.gate_up(self.post_attention_layernorm(x)).split(self.ff, dim=-1)
        x = x + self.down_proj(F.silu(g) * u)
        return x, (a if want_attn else None)


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList([Block(c) for _ in range(c["num_hidden_layers"])])
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        cos, sin = rope_tables(c["max_position_embeddings"], c["head_dim"], c["rope_theta"])
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self._masks = {}
        self.sdpa = False  # training forward through F.scaled_dot_product_attention (probes never use it)
        std = 0.02
        for n, p in self.named_parameters():
            if p.dim() == 2:
                s = std / math.sqrt(2 * c["num_hidden_layers"]) if n.endswith(("o_proj.weight", "down_proj.weight")) else std
                nn.init.normal_(p, 0.0, s)

    def mask(self, T):
        dev = self.cos.device
        if (T, dev) not in self._masks:
            self._masks[(T, dev)] = torch.full((T, T), float("-inf"), device=dev).triu(1)
        return self._masks[(T, dev)]

    def forward(self, idx, want_attn=False):
        B, T = idx.shape
        x = self.embed_tokens(idx)
        cos, sin, m = self.cos[:T], self.sin[:T], self.mask(T)
        attns = []
        for L in self.layers:
            x, a = L(x, cos, sin, m, want_attn, self.sdpa)
            attns.append(a)
        return self.lm_head(self.norm(x)), attns

