"""A minimal, independent safetensors reader (numpy), for checking dumps and fixtures."""
import json

import numpy as np

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16,
           "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
           "U8": np.uint8, "BOOL": np.bool_}


def read(path):
    """Returns ({name: array}, metadata, {name: dtype string}). BF16 is widened to F32."""
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    data = memoryview(raw)[8 + n:]
    meta = header.pop("__metadata__", {})
    tensors, dtypes = {}, {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        np_dtype = np.dtype(_DTYPES[info["dtype"]])
        count = int(np.prod(info["shape"], dtype=np.int64))
        assert end - begin == count * np_dtype.itemsize and end <= len(data), name
        a = np.frombuffer(data[begin:end], dtype=np_dtype.newbyteorder("<")).reshape(info["shape"])
        if info["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        tensors[name], dtypes[name] = a, info["dtype"]
    return tensors, meta, dtypes
