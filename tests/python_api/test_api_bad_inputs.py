#!/usr/bin/python3
"""python.api_bad_inputs: every bad input raises a Python exception with a one-line message,
never a crash: wrong dtypes, shapes, NaN, rows that are no distribution, wrong types,
missing files, bad settings."""
import os

import numpy as np

import api_lib
import attngeom

args = api_lib.parse_args(cli=False)
model_dir = os.path.join(args.fixtures, "llama")
model = attngeom.Model(model_dir, precision="fp32")
rng = np.random.default_rng(1)
H, T, d = 2, 12, 8
attn = rng.random((H, 3, T)).astype(np.float32)
for q, pos in enumerate(range(T - 3, T)):
    attn[:, q, pos + 1:] = 0
attn /= attn.sum(axis=2, keepdims=True)
values = rng.normal(size=(H, T, d)).astype(np.float32)
nan_values = values.copy()
nan_values[1, 3, 2] = np.nan
nan_attn = attn.copy()
nan_attn[0, 0, 0] = np.nan
acausal = attn.copy()
acausal[0, 0, T - 1] = 0.5
tokens = model.tokenize("hello world")

CASES = [
    # (exception, fragment of the message, call)
    (TypeError, "float16, bfloat16, float32 or float64", lambda: attngeom.selection(attn.astype(np.int64), values)),
    (TypeError, "float16, bfloat16, float32 or float64", lambda: attngeom.selection(attn, values.astype(np.int8))),
    (TypeError, "expected a numpy array", lambda: attngeom.selection("attn", values)),
    (ValueError, "[H_kv, T, d]", lambda: attngeom.selection(attn, values[:, :-1])),
    (ValueError, "[H, Q, T]", lambda: attngeom.selection(attn[0, 0], values)),
    (ValueError, "H_kv dividing H", lambda: attngeom.selection(attn, np.concatenate([values, values, values]))),
    (ValueError, "NaN", lambda: attngeom.selection(attn, nan_values)),
    (ValueError, "[0, 1]", lambda: attngeom.selection(nan_attn, values)),
    (ValueError, "causal rows must be 0", lambda: attngeom.selection(acausal, values)),
    (ValueError, "sums to", lambda: attngeom.selection(attn * 2, values)),
    (ValueError, "positions for 3 query rows", lambda: attngeom.selection(attn, values, query_positions=[1, 2])),
    (ValueError, "ascending", lambda: attngeom.selection(attn, values, query_positions=[5, 4, 11])),
    (ValueError, "n_grid", lambda: attngeom.selection(attn, values, n_grid=[2, 1])),
    (ValueError, "n_grid", lambda: attngeom.selection(attn, values, n_grid="every")),
    (ValueError, "at least 2 keys", lambda: attngeom.selection(np.ones((H, 1, 1), np.float32), values[:, :1])),
    (TypeError, "threads", lambda: attngeom.selection(attn, values, threads="2")),
    (FileNotFoundError, "model directory not found", lambda: attngeom.Model(model_dir + "-missing")),
    (FileNotFoundError, "config.json", lambda: attngeom.Model(args.scratch)),
    (ValueError, "precision", lambda: attngeom.Model(model_dir, precision="fp64")),
    (TypeError, "precision", lambda: attngeom.Model(model_dir, precision=32)),
    (TypeError, "expected str", lambda: model.tokenize(b"bytes")),
    (TypeError, "integer token ids", lambda: model.capture(np.array([1.0, 2.0]))),
    (ValueError, "[T] or [1, T]", lambda: model.capture(np.ones((2, 2), np.int32))),
    (ValueError, "outside the vocabulary", lambda: model.capture(np.array([1, 99999]))),
    (ValueError, "outside the vocabulary", lambda: model.capture(np.array([1, -3]))),
    (ValueError, "empty", lambda: model.capture(np.array([], np.int32))),
    (ValueError, "queries", lambda: model.capture(tokens, queries="stride:0")),
    (ValueError, "queries", lambda: model.capture(tokens, queries="99")),
    (ValueError, "layers", lambda: model.capture(tokens, layers=[5])),
    (ValueError, "layers", lambda: model.capture(tokens, layers=[1, 0])),
    (ValueError, "max_position_embeddings", lambda: model.capture(np.ones(5000, np.int32))),
    (TypeError, "exactly one of text or tokens", lambda: model.perplexity()),
    (ValueError, "stride 20 must lie in", lambda: model.perplexity(tokens=tokens, context=8, stride=20)),
    (ValueError, "context", lambda: model.perplexity(tokens=tokens, context=1)),
    (ValueError, "no token could be scored", lambda: model.perplexity(tokens=tokens[:1], context=8, bos=False)),
    (TypeError, "threads", lambda: attngeom.Model(model_dir, threads=1.5)),
]
for exc, fragment, call in CASES:
    try:
        call()
    except exc as e:
        message = str(e)
        assert fragment in message, f"{exc.__name__} {message!r} does not mention {fragment!r}"
        assert "\n" not in message, f"not one line: {message!r}"
        assert "--" not in message, f"names a CLI flag, not the keyword argument: {message!r}"
        print(f"ok: {exc.__name__}: {message}")
        continue
    except Exception as e:  # noqa: BLE001 -- the wrong exception type is the failure reported
        raise AssertionError(f"expected {exc.__name__} mentioning {fragment!r}, got {type(e).__name__}: {e}")
    raise AssertionError(f"expected {exc.__name__} mentioning {fragment!r}, nothing raised")
print(f"ok: {len(CASES)} bad inputs, each a Python exception")
