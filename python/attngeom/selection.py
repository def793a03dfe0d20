"""attngeom.selection: the top-N selection geometry (docs/method.md section 2) of user arrays."""
import numpy as np

from . import _attngeom
from .arrays import as_float32_array, as_numpy
from .model import _threads


def _query_positions(query_positions, rows, seq):
    if query_positions is None:
        return np.arange(seq - rows, seq, dtype=np.int32)  # the last `rows` positions
    q = as_numpy(query_positions, "query_positions")
    if q.dtype.kind not in "iu" or q.ndim != 1:
        raise TypeError(f"query_positions: expected a 1-D integer array, got {q.dtype} of shape {q.shape}")
    if q.shape[0] != rows:
        raise ValueError(f"query_positions: {q.shape[0]} positions for {rows} query rows of attn")
    if q.size and (q.min() < 0 or q.max() >= seq):
        raise ValueError("selection: query_positions must be ascending, in [0, T)")
    return np.ascontiguousarray(q, dtype=np.int32)


def selection(attn, values, n_grid=None, query_positions=None, threads=None):
    """P, R, F, the radii and margins of top-N selection, per head and query row.

    attn: [H, Q, T] or [H, T] softmax rows over T keys, causal (zero after each query's
    position); values: [H_kv, T, d], H_kv dividing H (head h reads kv head h // (H / H_kv)).
    float32 or float64, numpy or anything with __dlpack__ / __array__ (a CPU torch tensor).
    float32 C-contiguous input is read in place; float64 input is converted and strided
    views made contiguous (copies), since the engine computes on float32 as `metrics` does.
    query_positions: the position of each of the Q rows (default: the last Q, T-Q..T-1).
    n_grid: None (the default grid 1,2,3,4,5,6,8,...,512 clipped to M-1) or "all" (every N),
    as `attngeom metrics` without and with --every-n.

    Returns a dict: "n" int64 [G]; "precision", "recall", "f", "r_max", "r_min", "margin"
    float64 [H, Q, G] (NaN where N >= a row's keys); "unselected_inside_r_max" and
    "selected_inside_r_min" int64 [H, Q, G] (-1 there), the counts behind P and R. With a
    2-D attn the Q axis is dropped. Equal to `attngeom metrics` on a dump of these arrays.
    """
    if n_grid is not None and n_grid != "all":
        raise ValueError(f"n_grid: expected None (the default grid) or 'all', got {n_grid!r}")
    a = as_float32_array(attn, "attn")
    v = as_float32_array(values, "values")
    one_row = a.ndim == 2
    if one_row:
        a = a[:, None, :]
    if a.ndim != 3 or v.ndim != 3:
        raise ValueError(f"selection: attn must be [H, Q, T] (or [H, T]) and values [H_kv, T, d]; "
                         f"got attn {tuple(as_numpy(attn, 'attn').shape)} and values {tuple(v.shape)}")
    q = _query_positions(query_positions, a.shape[1], a.shape[2])
    out = _attngeom._selection(a, v, q, n_grid == "all", _threads(threads))
    if one_row:
        out = {k: (x if k == "n" else x[:, 0, :]) for k, x in out.items()}
    return out
