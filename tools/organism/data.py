"""The organism's data and evaluation: prep.py's token streams, training batches and held-out
windows (BOS at position 0 of each), the held-out loss, the attention on BOS per head, the bits
per byte of the unseen text and the unigram baseline."""
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

BOS, EOS = 1, 2


class Data:
    """Token streams from prep.py: documents back to back, no separators; BOS only at position 0
    of every window."""

    def __init__(self, work):
        self.train = np.load(os.path.join(work, "train_ids.npy")).astype(np.int64)
        self.held = np.load(os.path.join(work, "heldout_ids.npy")).astype(np.int64)
        self.vocab = [l.split("\t")[0] for l in open(os.path.join(work, "spm.vocab"), encoding="utf-8")]
        self.unseen = np.load(os.path.join(work, "unseen_ids.npy")).astype(np.int64)
        self.unseen_bytes = os.path.getsize(os.path.join(work, "unseen.txt"))

    def batch(self, rng, B, T, device=None):
        """B windows [BOS] + T random consecutive training tokens: inputs [B, T], targets [B, T]."""
        starts = rng.integers(0, len(self.train) - T, size=B)
        x = np.empty((B, T + 1), dtype=np.int64)
        x[:, 0] = BOS
        x[:, 1:] = self.train[starts[:, None] + np.arange(T)]
        x = torch.from_numpy(x)
        if device is not None and device.type == "cuda":
            x = x.pin_memory().to(device, non_blocking=True)
        return x[:, :-1], x[:, 1:]


def windows(stream, T):
    """Non-overlapping windows [BOS] + stream[k*(T-1):(k+1)*(T-1)] (the last one may be shorter)."""
    n = T - 1
    return [np.concatenate([[BOS], stream[i:i + n]]).astype(np.int64) for i in range(0, len(stream), n)]

# ----------------------------------------------------------------------------- eval
@torch.no_grad()
def evaluate(model, stream, T, max_windows=None):
    """Total NLL (nats) and count of the non-BOS tokens, and the per-head BOS attention of the full
    windows: mean of A[t, 0] over queries t >= 1 ([L, H]) and A[T-1, 0] at the last query ([L, H])."""
    model.eval()
    dev = model.cos.device
    wins = windows(stream, T)[:max_windows]
    tot, cnt, mean_sum, last_sum, full = 0.0, 0, 0, 0, 0
    for w in wins:
        x = torch.from_numpy(w)[None].to(dev)
        logits, attns = model(x, want_attn=True)
        tot += F.cross_entropy(logits[0, :-1], x[0, 1:], reduction="sum").item()
        cnt += x.shape[1] - 1
        if len(w) == T:
            a = torch.stack([at[0, :, 1:, 0] for at in attns])  # [L, H, T-1]
            mean_sum, last_sum, full = mean_sum + a.mean(-1), last_sum + a[..., -1], full + 1
    model.train()
    return tot, cnt, (mean_sum / full if full else None), (last_sum / full if full else None), full


def unigram_nll(data, T):
    counts = np.bincount(data.train, minlength=len(data.vocab)).astype(np.float64) + 1.0
    p = counts / counts.sum()
    tot, cnt = 0.0, 0
    for w in windows(data.held, T):
        tot += -np.log(p[w[1:]]).sum()
        cnt += len(w) - 1
    return tot / cnt


def bits_per_byte(model, data, T):
    tot, _, _, _, _ = evaluate(model, data.unseen, T)
    return tot / math.log(2) / data.unseen_bytes


