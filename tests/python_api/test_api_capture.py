#!/usr/bin/python3
"""python.api_capture: Model.tokenize and Model.capture equal `attngeom capture` bit for bit on
the fixtures (every array of the dump, its names, shapes and dtypes); Model.perplexity equals
`attngeom perplexity`. With --other-build (the sanitizer build's module against the release
CLI) floating-point arrays agree to fp32 rounding instead (api_lib.same_as_cli)."""
import json
import os

import numpy as np

import api_lib
import attngeom
from api_lib import st_reader

args = api_lib.parse_args(cli=True)
# Perplexity over the corpus's first lines: windows enough for the stride bookkeeping, at a
# fraction of the whole corpus's forward passes.
ppl_text = os.path.join(args.scratch, "ppl.txt")
with open(api_lib.CORPUS, encoding="utf-8") as f, open(ppl_text, "w", encoding="utf-8") as g:
    g.writelines(f.readlines()[:20])
for name in api_lib.PARITY_FIXTURES:
    model_dir = os.path.join(args.fixtures, name)
    model = attngeom.Model(model_dir, precision="fp32", threads=2)
    with open(api_lib.PROMPT, encoding="utf-8") as f:
        tokens = model.tokenize(f.read().removesuffix("\n"))  # the CLI drops a text file's final newline
    cli_text = os.path.join(args.scratch, f"{name}-text.safetensors")
    api_lib.run(args.bin, "capture", "--model", model_dir, "--text", api_lib.PROMPT, "--out", cli_text)
    assert np.array_equal(st_reader.read(cli_text)[0]["tokens"], tokens), f"{name}: tokenize differs from capture --text"

    token_file = os.path.join(args.scratch, f"{name}.tokens")
    with open(token_file, "w") as f:
        f.write(" ".join(map(str, tokens)))
    for flags, kwargs in ((["--queries", "all", "--logits"], {"queries": "all", "logits": True}),
                          (["--queries", "stride:3"], {"queries": "stride:3"})):
        cli = os.path.join(args.scratch, f"{name}.safetensors")
        api_lib.run(args.bin, "capture", "--model", model_dir, "--tokens", token_file, "--out", cli, *flags)
        expected, _, dtypes = st_reader.read(cli)
        got = model.capture(tokens, **kwargs)
        assert sorted(got) == sorted(expected), f"{name}: names {sorted(got)} != {sorted(expected)}"
        for key, a in expected.items():
            b = got[key]
            assert b.dtype == a.dtype and b.shape == a.shape, f"{name} {key}: {b.dtype}{b.shape} != {a.dtype}{a.shape}"
            assert api_lib.same_as_cli(args, b, a), f"{name} {key}: differs from the CLI's dump"
    one = model.capture(tokens, layers=[1])
    assert sorted(one) == ["layers.1.attn", "layers.1.values", "query_positions", "tokens"], sorted(one)

    ppl_json = os.path.join(args.scratch, f"{name}-ppl.json")
    api_lib.run(args.bin, "perplexity", "--model", model_dir, "--text", ppl_text, "--context", "32", "--out", ppl_json)
    with open(ppl_text, encoding="utf-8") as f:
        mine = model.perplexity(text=f.read().removesuffix("\n"), context=32)
    with open(ppl_json) as f:
        theirs = json.load(f)
    assert mine["tokens"] == theirs["tokens"] and api_lib.same_as_cli(args, mine["perplexity"], theirs["perplexity"]), \
        f"{name}: perplexity {mine['perplexity']} over {mine['tokens']} != CLI {theirs['perplexity']} over {theirs['tokens']}"
    assert api_lib.same_as_cli(args, mine["nll"], np.array(theirs["nll"])), f"{name}: per-token NLL differs"
    print(f"ok: {name}: capture, tokenize and perplexity equal the CLI's")
