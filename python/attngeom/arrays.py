"""User arrays to the C-contiguous float32 numpy arrays the engine reads."""
import numpy as np


def as_numpy(x, name):
    """A numpy view of `x`: numpy arrays as they are, else DLPack (``__dlpack__``, e.g. a CPU
    torch tensor) or ``__array__``, without a copy where the producer allows one."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (TypeError, RuntimeError, BufferError) as e:  # e.g. a GPU tensor, or one that needs grad
            raise TypeError(f"{name}: cannot read this {type(x).__name__} through DLPack ({e}); "
                            "move it to the CPU (and .detach() it) first") from None
    if hasattr(x, "__array__") or isinstance(x, (list, tuple)):
        return np.asarray(x)
    raise TypeError(f"{name}: expected a numpy array or an object with __array__/__dlpack__, got {type(x).__name__}")


def as_float32_array(x, name):
    """`x` as a C-contiguous float32 array: a view of float32 C-contiguous input, a copy of
    float64 input (converted) or of a strided view (made contiguous)."""
    a = as_numpy(x, name)
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"{name}: expected float32 or float64, got {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.float32)


def as_int32_array(x, name):
    """`x` (token ids) as a C-contiguous int32 array, refusing non-integer or out-of-range ids."""
    a = as_numpy(x, name)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integer token ids, got {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of token ids, got shape {a.shape}")
    if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
        raise ValueError(f"{name}: token ids must fit in int32")
    return np.ascontiguousarray(a, dtype=np.int32)
