"""attngeom.selection: the top-N selection geometry (docs/method.md section 2) of user arrays."""
import numpy as np

from . import _attngeom
from .arrays import as_float32_array, as_numpy, as_probability_rows
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


def _grid(n_grid):
    """(every N?, the chosen N list) of the n_grid argument."""
    if n_grid is None:
        return False, []
    if isinstance(n_grid, str):
        if n_grid != "all":
            raise ValueError(f"n_grid: expected None (the default grid), 'all' or a list of N, got {n_grid!r}")
        return True, []
    grid = as_numpy(n_grid, "n_grid")
    if grid.dtype.kind not in "iu" or grid.ndim != 1 or grid.size == 0:
        raise TypeError(f"n_grid: expected None, 'all' or a non-empty list of integers, got {n_grid!r}")
    if grid.min() < 1 or np.any(np.diff(grid) <= 0):
        raise ValueError(f"n_grid: expected ascending N of at least 1, got {list(grid)}")
    return False, [int(n) for n in grid]


def selection(attn, values, n_grid=None, query_positions=None, threads=None):
    """P, R, F, the radii and margins of top-N selection, per head and query row.

    attn: [H, Q, T] or [H, T] softmax rows over T keys, causal (zero after each query's
    position), or a batch [B, H, Q, T] as transformers returns attentions; values:
    [H_kv, T, d] ([B, H_kv, T, d] with a batch), H_kv dividing H (head h reads kv head
    h // (H / H_kv)). float16, bfloat16, float32 or float64: numpy, torch tensors (CPU or
    GPU, copied to the CPU), or anything with __dlpack__ / __array__. float32 C-contiguous
    input is read in place; anything else is converted to a float32 copy, since the engine
    computes on float32 as `metrics` does. Rows stored in 16 bits are renormalised after
    widening, since their rounding moves their sums off 1 by more than the row check allows.
    query_positions: the position of each of the Q rows (default: the last Q, T-Q..T-1).
    n_grid: None (the default grid 1,2,3,4,5,6,8,...,512 clipped to M-1), "all" (every N),
    as `attngeom metrics` without and with --every-n, or a list of ascending N (each row
    reports those below its key count).

    Returns a dict: "n" int64 [G]; "precision", "recall", "f", "r_max", "r_min", "margin"
    float64 [H, Q, G] (NaN where N >= a row's keys); "unselected_inside_r_max" and
    "selected_inside_r_min" int64 [H, Q, G] (-1 there), the counts behind P and R. With a
    2-D attn the Q axis is dropped; with a batch a leading B axis is added. Equal to
    `attngeom metrics` on a dump of these arrays.
    """
    all_n, grid = _grid(n_grid)
    a = as_probability_rows(attn, "attn")
    v = as_float32_array(values, "values")
    if a.ndim == 4:
        if v.ndim != 4 or v.shape[0] != a.shape[0]:
            raise ValueError(f"selection: a batch of attn {tuple(a.shape)} needs values [B, H_kv, T, d] with the "
                             f"same B; got values {tuple(v.shape)}")
        per_item = [_selection_one(a[b], v[b], all_n, grid, query_positions, threads) for b in range(a.shape[0])]
        return {k: per_item[0][k] if k == "n" else np.stack([p[k] for p in per_item]) for k in per_item[0]}
    return _selection_one(a, v, all_n, grid, query_positions, threads)


def _selection_one(a, v, all_n, grid, query_positions, threads):
    one_row = a.ndim == 2
    if one_row:
        a = a[:, None, :]
    if a.ndim != 3 or v.ndim != 3:
        raise ValueError(f"selection: attn must be [H, Q, T], [H, T] or [B, H, Q, T] and values [H_kv, T, d] "
                         f"([B, H_kv, T, d] with a batch); got attn {tuple(a.shape)} and values {tuple(v.shape)}")
    q = _query_positions(query_positions, a.shape[1], a.shape[2])
    out = _attngeom._selection(a, v, q, all_n, grid, _threads(threads))
    if one_row:
        out = {k: (x if k == "n" else x[:, 0, :]) for k, x in out.items()}
    return out
