#!/usr/bin/python3
"""Hugging Face checkpoint files: safetensors written as streams of chunks, sharded with an
index, beside config.json and a copy of the tokenizer; the tokenizer's vocabulary size.
Shared by tools/make_random_checkpoint.py, make_fixtures.py, make_planted_model.py and the tests."""
import json
import math
import os
import shutil

import numpy as np

# safetensors dtype name -> (numpy storage dtype, bytes per element)
ST_DTYPES = {"F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (np.uint16, 2)}
DTYPE_ALIASES = {"f32": "F32", "float32": "F32", "f16": "F16", "float16": "F16",
                 "bf16": "BF16", "bfloat16": "BF16"}
ST_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
            "U8": 1, "BOOL": 1}


def spm_vocab_size(path):
    """Number of pieces in a sentencepiece model (ModelProto field 1, repeated)."""
    buf = open(path, "rb").read()
    pos, count = 0, 0

    def varint(p):
        value, shift = 0, 0
        while True:
            b = buf[p]
            value |= (b & 0x7F) << shift
            p += 1
            if b < 0x80:
                return value, p
            shift += 7

    while pos < len(buf):
        key, pos = varint(pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = varint(pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, pos = varint(pos)
            pos += length
            count += field == 1
        else:
            raise ValueError(f"{path}: unexpected protobuf wire type {wire}")
    return count


def is_tokenizer_json(path):
    """A Hugging Face tokenizer.json (a JSON object) rather than a sentencepiece model."""
    with open(path, "rb") as f:
        return f.read(64).lstrip().startswith(b"{")


def tokenizer_vocab_size(path):
    """The vocabulary a tokenizer needs: sentencepiece pieces, or 1 + tokenizer.json's largest id."""
    if not is_tokenizer_json(path):
        return spm_vocab_size(path)
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
    vocab = (tok.get("model") or {}).get("vocab")
    ids = list(vocab.values()) if isinstance(vocab, dict) else list(range(len(vocab or [])))
    ids += [t["id"] for t in tok.get("added_tokens") or []]
    if not ids:
        raise ValueError(f"{path}: tokenizer.json has no model.vocab")
    return max(ids) + 1


def tokenizer_file_name(path):
    return "tokenizer.json" if is_tokenizer_json(path) else "tokenizer.model"

def f32_to_bf16_bits(a):
    """Round float32 to bfloat16 (nearest even); returns the uint16 bit patterns."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def encode(a, dtype):
    """An array as the raw bytes of safetensors dtype `dtype` (floats rounded, ints cast)."""
    if dtype == "BF16":
        return f32_to_bf16_bits(a).tobytes()
    np_dtype = ST_DTYPES[dtype][0] if dtype in ST_DTYPES else {"I64": np.int64, "I32": np.int32}[dtype]
    return np.ascontiguousarray(a, dtype=np.dtype(np_dtype).newbyteorder("<")).tobytes()


class Tensor:
    """One tensor to write: name, safetensors dtype, shape, and a chunk source.

    `chunks()` yields bytes objects whose total length is nbytes."""

    def __init__(self, name, dtype, shape, chunks):
        self.name, self.dtype, self.shape, self.chunks = name, dtype, tuple(shape), chunks

    @property
    def nbytes(self):
        return math.prod(self.shape) * ST_SIZES[self.dtype]

    @staticmethod
    def from_array(name, dtype, array):
        data = encode(array, dtype)
        return Tensor(name, dtype, array.shape, lambda: iter([data]))


def write_safetensors(path, tensors, metadata=None):
    """Stream tensors into a safetensors file: u64 header length, JSON, packed data."""
    header = {"__metadata__": dict(metadata or {"format": "pt"})}
    offset = 0
    for t in tensors:
        header[t.name] = {"dtype": t.dtype, "shape": list(t.shape),
                          "data_offsets": [offset, offset + t.nbytes]}
        offset += t.nbytes
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)  # data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(len(blob).to_bytes(8, "little"))
        f.write(blob)
        for t in tensors:
            written = 0
            for chunk in t.chunks():
                f.write(chunk)
                written += len(chunk)
            if written != t.nbytes:
                raise RuntimeError(f"{t.name}: wrote {written} bytes, expected {t.nbytes}")


def write_checkpoint(out_dir, config, tensors, tokenizer, max_shard_bytes=None):
    """config.json, model.safetensors or shards + index, and a copy of tokenizer (under its kind's name)."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    shutil.copyfile(tokenizer, os.path.join(out_dir, tokenizer_file_name(tokenizer)))
    total = sum(t.nbytes for t in tensors)
    if not max_shard_bytes or total <= max_shard_bytes:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors)
        return ["model.safetensors"]
    shards, current, size = [], [], 0
    for t in tensors:
        if current and size + t.nbytes > max_shard_bytes:
            shards.append(current)
            current, size = [], 0
        current.append(t)
        size += t.nbytes
    shards.append(current)
    names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    weight_map = {}
    for name, shard in zip(names, shards):
        write_safetensors(os.path.join(out_dir, name), shard)
        weight_map.update({t.name: name for t in shard})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")
    return names

