"""attngeom.write_dump: user arrays as a capture dump (docs/run_format.md, the capture dump),
which `attngeom metrics` analyses like one of its own."""
import json
import os

import numpy as np

from .arrays import as_float32_array, as_int32_array


def write_dump(path, tokens, query_positions, layers):
    """Writes a capture dump to `path` (a .safetensors file): tokens [T], query_positions [Q]
    (ascending), and per layer l a pair (attn [H, Q, T], values [H_kv, T, d]). Arrays are
    taken as selection() takes them (any float dtype, numpy or torch); tokens of any integer
    width, [T] or [1, T]. The file is written whole or not at all (a temporary, renamed)."""
    tokens = as_int32_array(tokens, "tokens")
    rows = as_int32_array(query_positions, "query_positions")
    tensors = [("tokens", "I32", tokens), ("query_positions", "I32", rows)]
    for l, (attn, values) in enumerate(layers):
        a = as_float32_array(attn, f"layers[{l}] attn")
        v = as_float32_array(values, f"layers[{l}] values")
        if a.ndim != 3 or a.shape[1:] != (rows.size, tokens.size):
            raise ValueError(f"layers[{l}] attn: expected [H, {rows.size}, {tokens.size}] (heads, query rows, "
                             f"tokens), got {a.shape}")
        if v.ndim != 3 or v.shape[1] != tokens.size:
            raise ValueError(f"layers[{l}] values: expected [H_kv, {tokens.size}, d], got {v.shape}")
        tensors += [(f"layers.{l}.attn", "F32", a), (f"layers.{l}.values", "F32", v)]
    if len(tensors) == 2:
        raise ValueError("layers: expected at least one (attn, values) pair")
    header, offset = {}, 0
    for name, dtype, a in tensors:
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path = os.fspath(path)
    temporary = f"{path}.partial.{os.getpid()}"
    try:
        with open(temporary, "wb") as f:
            f.write(len(text).to_bytes(8, "little") + text)
            for _, _, a in tensors:
                f.write(a.tobytes())
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
