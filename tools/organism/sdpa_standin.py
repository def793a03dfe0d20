#!/usr/bin/python3
"""Runs train.py with a reference causal attention standing in for F.scaled_dot_product_attention,
so that `--attn sdpa` (the GPU's training forward) can be exercised on Debian's torch 1.13, which
lacks the fused kernel. Usage: sdpa_standin.py TRAIN_ARGS... --attn sdpa
It prints how often the stand-in ran: once a layer for each training step and for the start-up check
(the probes and the export never use it)."""
import math, os, sys
import torch
import torch.nn.functional as F

calls = [0]


def reference(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
    assert is_causal and attn_mask is None and dropout_p == 0.0 and q.dtype == k.dtype == v.dtype
    calls[0] += 1
    T = q.shape[-2]
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s.float(), -1).to(v.dtype) @ v


F.scaled_dot_product_attention = reference
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train  # noqa: E402

sys.argv = ["train.py"] + sys.argv[1:]
train.main()
print("the stand-in ran %d times" % calls[0])
