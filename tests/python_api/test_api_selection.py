#!/usr/bin/python3
"""python.api_selection: attngeom.selection equals `attngeom metrics` on the same arrays (a
dump of them): P, R, F and the counts exactly, radii and margins to 1e-12; on captured
attention (MHA and GQA), on synthetic rows, on the default grid and every N, from float32,
float64, strided views and 2-D attn."""
import filecmp
import os

import numpy as np

import api_lib
import attngeom

args = api_lib.parse_args(cli=True)


def same_tables(cli_run, py_run, where):
    """attngeom.metrics wrote the CLI's tables, byte for byte."""
    tables = sorted(f for f in os.listdir(cli_run) if f.endswith((".csv", ".npy")))
    assert tables, f"{cli_run}: no tables"
    for name in tables:
        same = filecmp.cmp(os.path.join(cli_run, name), os.path.join(py_run, name), shallow=False)
        assert same or args.other_build, f"{where}: attngeom.metrics' {name} differs from the CLI's"


def check(dump_layers, tokens, qpos, where):
    dump = os.path.join(args.scratch, f"{where}.safetensors")
    attngeom.write_dump(dump, tokens, qpos, dump_layers)
    for flags, n_grid in (([], None), (["--every-n"], "all")):
        out = os.path.join(args.scratch, f"{where}-run{len(flags)}")
        record, grid = api_lib.metrics_record(args.bin, dump, out, *flags)
        run = attngeom.metrics(dump, out + "-py", every_n=bool(flags), threads=2)
        same_tables(out, out + "-py", where)
        assert run.info["complete"], f"{where}: attngeom.metrics' run is not complete"
        for l, (attn, values) in enumerate(dump_layers):
            geo = attngeom.selection(attn, values, n_grid=n_grid, query_positions=qpos, threads=2)
            api_lib.check_selection_equals_metrics(geo, record, grid, l, f"{where} layer {l} n_grid={n_grid}")
    print(f"ok: {where}")


for name in ("llama", "mistral"):  # mistral's fixture has grouped kv heads
    model = attngeom.Model(os.path.join(args.fixtures, name), precision="fp32")
    tokens = model.tokenize("The quick brown fox jumps over the lazy dog, and then it runs far away.")
    cap = model.capture(tokens, queries="stride:4")
    layers = [(cap[f"layers.{l}.attn"], cap[f"layers.{l}.values"]) for l in range(model.config["layers"])]
    check(layers, cap["tokens"], cap["query_positions"], name)

# Synthetic rows in float64, one query row per head given as 2-D attn [H, T].
rng = np.random.default_rng(7)
H, T, d = 4, 40, 16
logits = rng.normal(size=(H, T)) * 3
attn = np.exp(logits - logits.max(axis=1, keepdims=True))
attn /= attn.sum(axis=1, keepdims=True)
values = rng.normal(size=(2, T, d))
check([(attn[:, None, :].astype(np.float32), values)], np.arange(T), [T - 1], "synthetic")
geo2d = attngeom.selection(attn, values)
geo3d = attngeom.selection(attn.astype(np.float32)[:, None, :], values.astype(np.float32))
for key in geo3d:
    a, b = geo2d[key], geo3d[key] if key == "n" else geo3d[key][:, 0, :]
    assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"float64 2-D input differs from float32 3-D in {key}"
# A strided view (every other key of a wider array) works through a documented copy.
wide = np.zeros((2, T, 2 * d), np.float32)
wide[:, :, ::2] = values
geo_view = attngeom.selection(attn, wide[:, :, ::2])
assert np.array_equal(geo_view["f"], geo2d["f"], equal_nan=True), "strided values view gives other numbers"
print("ok: float64, 2-D attn and strided views equal the float32 path")

# attngeom.metrics refuses what the CLI refuses, naming keyword arguments.
for exc, words, call in (
        (TypeError, "'every_nn' (did you mean every_n?)",
         lambda: attngeom.metrics(os.path.join(args.scratch, "synthetic.safetensors"), args.scratch + "/x", every_nn=1)),
        (ValueError, "dumps", lambda: attngeom.metrics([], os.path.join(args.scratch, "none"))),
        (ValueError, "top_k", lambda: attngeom.metrics(os.path.join(args.scratch, "synthetic.safetensors"),
                                                       os.path.join(args.scratch, "none"), top_k=0))):
    try:
        call()
        raise AssertionError(f"no {exc.__name__} for {words}")
    except exc as e:
        assert words in str(e) and "--" not in str(e), f"message {str(e)!r} lacks {words!r} or names a flag"
print("ok: attngeom.metrics writes the CLI's tables and refuses bad settings by keyword")
