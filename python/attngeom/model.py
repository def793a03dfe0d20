"""attngeom.Model: a checkpoint, loaded once, run like `attngeom capture` / `perplexity`."""
import os

import numpy as np

from . import _attngeom
from .arrays import as_int32_array


def _threads(threads):
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads: expected int or None, got {type(threads).__name__}")
    if not 1 <= threads <= 1024:
        raise ValueError(f"threads: expected an integer in [1, 1024], found {threads}")
    return threads


def _text(value, name):
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected str, got {type(value).__name__}")
    return value


class Model:
    """A Hugging Face checkpoint directory of any family attngeom reads (README, Supported
    checkpoints: LLaMA, Mistral, Qwen2/3, Gemma 1/2/3, OLMo-2, GPT-2, GPT-NeoX, Phi, Phi-3),
    memory-mapped once.

    precision: "auto" (bf16 where it is fast on this CPU or on a GPU, else fp32), "fp32" (the
    exact reference path, the CLI's default for capture) or "bf16". fp32_matmul: "sgemm" or
    "bf16x3" (CPU kernels). threads: worker threads for every call (None: all cores).
    device: "cpu", "cuda" or "cuda:N" (builds with CUDA, docs/gpu.md); results reach Python
    in host memory either way.
    """

    def __init__(self, path, precision="auto", threads=None, fp32_matmul="sgemm", device="cpu"):
        path = os.fspath(path)
        self._threads = _threads(threads)
        self._native = _attngeom._Model(path, _text(precision, "precision"), _text(fp32_matmul, "fp32_matmul"),
                                        self._threads, _text(device, "device"))
        self.path = path

    @property
    def precision(self):
        """The precision the model runs at ("fp32" or "bf16"), "auto" resolved."""
        return self._native.precision

    @property
    def config(self):
        """The model's shape: layers, heads, kv_heads, head_dim, hidden, vocab, max_positions, ..."""
        return self._native.config

    def tokenize(self, text, bos=True):
        """`text` as int32 token ids, BOS first unless bos=False (as `attngeom capture --text`)."""
        ids = self._native.encode(_text(text, "text"))
        if not bos:
            return ids
        return np.concatenate([np.array([self.config["bos_token_id"]], dtype=np.int32), ids])

    def capture(self, tokens, queries="last", layers=None, logits=False, force=False):
        """One forward pass over `tokens` (used verbatim), as `attngeom capture --tokens`.

        Returns a dict of numpy arrays named as in the capture dump: "tokens" int32 [T],
        "query_positions" int32 [Q], "layers.{l}.attn" float32 [H, Q, T] (zero outside the
        causal/window range), "layers.{l}.values" float32 [H_kv, T, d], and with logits=True
        "logits" float32 [T, vocab]. queries: "last", "all", "stride:K" or "i,j,k"; layers:
        ascending layer indices (None: all). The arrays are the engine's own buffers, not copies.
        """
        tokens = as_int32_array(tokens, "tokens")
        if layers is not None:
            layers = [int(l) for l in layers]
        return self._native.capture(tokens, _text(queries, "queries"), layers, bool(logits), bool(force))

    def perplexity(self, text=None, tokens=None, context=256, stride=None, bos=True, force=False):
        """Held-out perplexity under `attngeom perplexity`'s protocol (windows of `context`
        tokens advancing by `stride`, default context - 1, each starting with BOS unless
        bos=False). Give exactly one of `text` (tokenized without BOS) or `tokens` (the stream).

        Returns {"perplexity", "mean_nll", "tokens", "context", "stride", "bos", "nll" [tokens]}.
        """
        if (text is None) == (tokens is None):
            raise TypeError("perplexity: exactly one of text or tokens is required")
        stream = self._native.encode(_text(text, "text")) if text is not None else as_int32_array(tokens, "tokens")
        for name, value in (("context", context), ("stride", stride)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"{name}: expected int, got {type(value).__name__}")
        return self._native.perplexity(stream, context, 0 if stride is None else stride, bool(bos), bool(force))

    def __repr__(self):
        c = self.config
        return f"attngeom.Model({self.path!r}, {c['model_type']}, {c['layers']} layers, precision={self.precision!r})"
