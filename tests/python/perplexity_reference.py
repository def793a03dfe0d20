"""The perplexity protocol of eval/perplexity.h, recomputed on reference_forward in float64:
the reference that test_prune.py and test_organism.py hold the engine's scores to."""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_forward as rf  # noqa: E402


def log_softmax(x):
    """Row log-softmax [..., vocab], in float64."""
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def reference_scores(model, streams, context, stride, bos, gates=None, topn=None):
    """Per scored token, pooled over documents: (targets, log-probs [tokens, vocab]).
    Windows of context - BOS content tokens every `stride` (default context - 1: without BOS
    consecutive windows share one token, which only gives context); each token is scored
    once, by the first window that predicts it, and every token is scored (but a stream's
    first without BOS)."""
    content = context - 1 if bos else context
    stride = stride or context - 1
    targets, logps = [], []
    for stream in streams:
        scored_until = 0 if bos else 1
        start = 0
        while start < len(stream):
            end = min(len(stream), start + content)
            window = ([model.bos] if bos else []) + list(stream[start:end])
            off = 1 if bos else 0
            rows = [t - start + off - 1 for t in range(max(start, scored_until), end) if not (t == start and not bos)]
            if rows:
                lp = log_softmax(rf.forward(model, window, head_gates=gates, topn=topn)["logits"])
                for r in rows:
                    targets.append(window[r + 1])
                    logps.append(lp[r])
            scored_until = end
            if end == len(stream):
                break
            start += stride
    assert len(targets) == sum(len(s) - (0 if bos else 1) for s in streams), "a token went unscored"
    return np.array(targets), np.array(logps)


def summary(targets, logps, ref_logps=None):
    nll = -logps[np.arange(len(targets)), targets]
    out = {"tokens": len(targets), "mean_nll": float(nll.mean()), "ppl": float(math.exp(nll.mean()))}
    if ref_logps is not None:
        out["kl"] = float((np.exp(ref_logps) * (ref_logps - logps)).sum(axis=1).mean())
        out["top1"] = float((ref_logps.argmax(axis=1) == logps.argmax(axis=1)).mean())
    return out
