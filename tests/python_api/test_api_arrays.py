#!/usr/bin/python3
"""python.api_arrays: arrays as researchers hold them. attn [B, H, Q, T] batches, float16 and
(through torch) bfloat16 values, torch tensors with gradients, token ids of any integer width
and [1, T], and n_grid as a list, each giving the numbers of the plain float32 call; every
refused dtype or shape names what was given and what is accepted. write_dump takes the same
arrays and writes the bytes of the float32 ones."""
import os

import numpy as np

import api_lib
import attngeom

args = api_lib.parse_args(cli=False)
rng = np.random.default_rng(11)
B, H, Hkv, Q, T, d = 3, 4, 2, 2, 24, 8


def causal_rows(batch):
    logits = rng.normal(size=(batch, H, Q, T)) * 3
    positions = np.arange(T - Q, T)
    logits[..., np.arange(T)[None, :] > positions[:, None]] = -np.inf  # keys after each query
    p = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)).astype(np.float32)


def same(a, b, where):
    for key in a:
        assert a[key].shape == b[key].shape, f"{where}: {key} shape {a[key].shape} != {b[key].shape}"
        assert np.array_equal(a[key], b[key], equal_nan=a[key].dtype.kind == "f"), f"{where}: {key} differs"


def refuses(kind, words, call):
    try:
        call()
    except kind as e:
        assert all(w in str(e) for w in words), f"message {str(e)!r} lacks {words}"
        return
    raise AssertionError(f"no {kind.__name__} for {words}")


attn = causal_rows(B)
values = rng.normal(size=(B, Hkv, T, d)).astype(np.float32)

# A batch equals its items one at a time, with a leading B axis.
batched = attngeom.selection(attn, values)
for b in range(B):
    one = attngeom.selection(attn[b], values[b])
    same({k: (x if k == "n" else x[b]) for k, x in batched.items()}, one, f"batch item {b}")
refuses(ValueError, ["[B, H_kv, T, d]", "values"], lambda: attngeom.selection(attn, values[0]))
print("ok: [B, H, Q, T] equals its items")

def renormalised(rows16):
    wide = np.asarray(rows16, np.float64)
    return (wide / wide.sum(axis=-1, keepdims=True)).astype(np.float32)


# float16: widened exactly (values) and renormalised (rows), as float32 input of those numbers.
half = attn[0].astype(np.float16)
same(attngeom.selection(half, values[0].astype(np.float16)),
     attngeom.selection(renormalised(half), values[0].astype(np.float16).astype(np.float32)), "float16")
refuses(TypeError, ["attn", "int64", "float16, bfloat16, float32 or float64"],
        lambda: attngeom.selection(np.ones((H, Q, T), np.int64), values[0]))
refuses(ValueError, ["[H, Q, T]", "(4,)"], lambda: attngeom.selection(attn[0, :, 0, 0], values[0]))
print("ok: float16 widened; integer and misshapen attn refused with what is accepted")

# n_grid as a list: the default grid's numbers at those N.
default = attngeom.selection(attn[0], values[0])
chosen = attngeom.selection(attn[0], values[0], n_grid=[1, 4, 16])
assert list(chosen["n"]) == [1, 4, 16], chosen["n"]
columns = [list(default["n"]).index(n) for n in (1, 4, 16)]
same(chosen, {k: chosen["n"] if k == "n" else x[..., columns] for k, x in default.items()}, "n_grid list")
refuses(ValueError, ["n_grid", "ascending"], lambda: attngeom.selection(attn[0], values[0], n_grid=[4, 2]))
refuses(ValueError, ["n_grid", "'some'"], lambda: attngeom.selection(attn[0], values[0], n_grid="some"))
refuses(TypeError, ["n_grid"], lambda: attngeom.selection(attn[0], values[0], n_grid=[1.5]))
print("ok: n_grid=[1, 4, 16] gives the default grid's numbers at those N")

# Token ids of any integer width, [T] or [1, T].
model = attngeom.Model(os.path.join(args.fixtures, "llama"), precision="fp32")
ids = model.tokenize("A short sentence for the ids.")
base = model.capture(ids)
for given, where in ((ids.astype(np.int64), "int64"), (ids.astype(np.uint16), "uint16"), (ids[None, :], "[1, T]")):
    got = model.capture(given)
    assert all(np.array_equal(got[k], base[k]) for k in base), f"tokens as {where} changed the capture"
refuses(ValueError, ["tokens", "[1, T]", "(2,"], lambda: model.capture(np.stack([ids, ids])))
refuses(TypeError, ["tokens", "float32"], lambda: model.capture(ids.astype(np.float32)))
print("ok: int64, uint16 and [1, T] token ids")

# write_dump: the bytes of the float32 arrays, whatever form they came in.
qpos = np.arange(T - Q, T)
plain = os.path.join(args.scratch, "plain.safetensors")
attngeom.write_dump(plain, np.arange(T), qpos, [(attn[0], values[0])])
widened = os.path.join(args.scratch, "widened.safetensors")
attngeom.write_dump(widened, np.arange(T, dtype=np.int16)[None, :], qpos.astype(np.uint8),
                    [(attn[0].astype(np.float64), values[0].astype(np.float64))])
assert open(plain, "rb").read() == open(widened, "rb").read(), "write_dump of float64 / int16 arrays differs"
refuses(ValueError, ["layers[0] attn", "[H, 2, 24]"],
        lambda: attngeom.write_dump(plain, np.arange(T), qpos, [(attn[0][:, :1], values[0])]))
print("ok: write_dump")

try:
    import torch
except ImportError:
    print("SKIP: torch checks (apt-get install python3-torch)")
    raise SystemExit(0)
t_attn = torch.tensor(attn[0], requires_grad=True)
same(attngeom.selection(t_attn, torch.tensor(values[0])), default, "torch float32 with requires_grad")
bf16 = torch.tensor(attn[0]).to(torch.bfloat16)
same(attngeom.selection(bf16, torch.tensor(values[0]).to(torch.bfloat16)),
     attngeom.selection(renormalised(bf16.float().numpy()), torch.tensor(values[0]).to(torch.bfloat16).float().numpy()),
     "bfloat16")
batched_t = attngeom.selection(torch.tensor(attn), torch.tensor(values))
same(batched_t, batched, "torch batch")
got = model.capture(torch.tensor(ids, dtype=torch.int64)[None, :])
assert all(np.array_equal(got[k], base[k]) for k in base), "torch int64 [1, T] tokens changed the capture"
from_torch = os.path.join(args.scratch, "torch.safetensors")
attngeom.write_dump(from_torch, torch.arange(T), torch.tensor(qpos), [(t_attn, torch.tensor(values[0]))])
assert open(plain, "rb").read() == open(from_torch, "rb").read(), "write_dump of torch tensors differs"
print("ok: torch float32 (with gradients), bfloat16, batches, int64 [1, T] ids and write_dump")
