"""User arrays to the C-contiguous numpy arrays the engine reads.

Accepted: numpy arrays, torch tensors (CPU or GPU, any dtype torch has, gradients or not),
anything with ``__dlpack__`` or ``__array__``, and lists. Floating-point arrays (float16,
bfloat16, float32, float64) are widened or rounded to float32; token ids of any integer
width to int32.
"""
import numpy as np

FLOAT_DTYPES = "float16, bfloat16, float32 or float64"


def _is_torch_tensor(x):
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach") and hasattr(x, "device")


def _torch_to_numpy(t):
    """A CPU numpy array of torch tensor `t`: detached, copied off a GPU, bfloat16 (which numpy
    lacks) widened to float32; a view where no copy is needed."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if str(t.dtype) == "torch.bfloat16":
        t = t.float()
    return t.numpy()


def as_numpy(x, name):
    """A numpy view of `x`, without a copy where the producer allows one."""
    if isinstance(x, np.ndarray):
        return x
    if _is_torch_tensor(x):
        return _torch_to_numpy(x)
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (TypeError, RuntimeError, BufferError) as e:  # e.g. memory on another device
            raise TypeError(f"{name}: cannot read this {type(x).__name__} through DLPack ({e}); "
                            "pass a numpy array or a torch tensor") from None
    if hasattr(x, "__array__") or isinstance(x, (list, tuple)):
        return np.asarray(x)
    raise TypeError(f"{name}: expected a numpy array, a torch tensor or an object with __array__/__dlpack__, "
                    f"got {type(x).__name__}")


def as_float32_array(x, name):
    """`x` as a C-contiguous float32 array: a view of float32 C-contiguous input, else a copy
    (float16 widened exactly, float64 rounded, strided views made contiguous)."""
    a = as_numpy(x, name)
    if a.dtype.kind != "f":
        raise TypeError(f"{name}: expected {FLOAT_DTYPES} values, got {a.dtype} of shape {a.shape}")
    return np.ascontiguousarray(a, dtype=np.float32)


def is_half_precision(x):
    """Whether `x` holds 16-bit floats (float16, or bfloat16 in a torch tensor)."""
    if _is_torch_tensor(x):
        return x.is_floating_point() and x.element_size() == 2
    dtype = getattr(x, "dtype", None)
    return isinstance(dtype, np.dtype) and dtype.kind == "f" and dtype.itemsize == 2


def as_probability_rows(x, name):
    """Attention rows [..., T] as float32 (as_float32_array). Rows stored in 16 bits sum to 1
    only within their rounding (2^-8 for bfloat16), which the engine's row check (1e-3) would
    refuse: they are renormalised, in float64, after widening."""
    a = as_float32_array(x, name)
    if not is_half_precision(x):
        return a
    wide = a.astype(np.float64)
    sums = wide.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # an all-zero row stays invalid for the row check
        return np.ascontiguousarray(wide / sums, dtype=np.float32)


def as_int32_array(x, name):
    """`x` (one sequence of token ids, [T] or [1, T], any integer width) as a C-contiguous
    int32 array [T], refusing non-integer or out-of-range ids."""
    a = as_numpy(x, name)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integer token ids (any width), got {a.dtype}")
    if a.ndim == 2 and a.shape[0] == 1:
        a = a[0]
    if a.ndim != 1:
        raise ValueError(f"{name}: expected one sequence of token ids, [T] or [1, T], got shape {a.shape}")
    if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
        raise ValueError(f"{name}: token ids must fit in int32")
    return np.ascontiguousarray(a, dtype=np.int32)
