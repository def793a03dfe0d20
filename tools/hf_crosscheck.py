#!/usr/bin/env python3
"""attngeom's capture dumps against Hugging Face transformers' own modeling code.

  tools/hf_crosscheck.py --fixtures DIR --dumps DIR [--names a,b,...] [--set NAME:KEY=JSON ...]
                         [--out report.json]

Needs torch and transformers, which `make test` does not: its parity tests compare with
numpy forwards written from the HF code (tests/python/reference_forward.py). This is the
second opinion, run where transformers is installed (docs/tests.md, "Against transformers").

For each DIR/NAME.safetensors, an fp32 `attngeom capture --queries all --logits` dump of the
fixture NAME (or any other query rows), it runs the checkpoint in transformers with eager attention on the dump's token
ids, in float64 and in float32, and compares with the dump layer by layer: attention rows
[H, Q, T] (absolute), value states [H_kv, T, d] (v_proj's output, hooked, clamped to clip_qkv where the config
sets one; relative to the layer's largest magnitude) and logits [T, vocab] (relative); it also reports both forwards'
errors against make test's numpy float64 reference. The dump passes when each error
against float64 is at most 4 x float32-transformers' error against float64, plus 4 fp32 ulps:
the parity rule of tests/python/test_capture_vs_reference.py, with transformers as the
reference; or, where it is not, within that test's fixed tolerances (FIXED_TOLERANCE).
transformers' "float64" forward is not float64 throughout: its code casts some steps to float32
whatever the model's dtype (`.float()` in the RoPE angles and Gemma's norms, the softmax's
`dtype=torch.float32`), and its float32 run shares those roundings. Where a check fails, the
errors against the numpy float64 forward say which side is off.
--set NAME:KEY=JSON changes one config field of fixture NAME before transformers reads it
(to test which reading of a field explains a difference). Exits 1 if any fixture fails or
cannot be loaded.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "python"))
import reference_forward  # noqa: E402  -- the numpy float64 forward of make test's parity tests
from reference_model import Model  # noqa: E402
from test_capture_vs_reference import (  # noqa: E402  -- that test's parity rule and fixed tolerances
    ATTN_TOL, LOGITS_TOL, PARITY_FACTOR, PARITY_FLOOR, VALUES_TOL)

FIXED_TOLERANCE = {"attention": ATTN_TOL, "values": VALUES_TOL, "logits": LOGITS_TOL}


def hf_config(model_dir, overrides):
    """The checkpoint's config as transformers reads it, with `overrides` {key: value} set on it
    (and on its text_config). A multimodal checkpoint's vision_config may name only what attngeom
    reads; transformers builds the whole vision tower, so its missing sizes are filled in with the
    smallest that build (the tower never runs on text)."""
    config = transformers.AutoConfig.from_pretrained(model_dir)
    for target in (config, getattr(config, "text_config", None)):
        for key, value in overrides.items():
            if target is not None:
                setattr(target, key, value)
    vision = getattr(config, "vision_config", None)
    if vision is not None:
        vision.num_attention_heads, vision.num_hidden_layers = 1, 1
    return config


def hf_forward(model_dir, tokens, dtype, overrides):
    """Attention [L][H, T, T], values [L][H_kv, T, d] and logits [T, vocab] from transformers."""
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, config=hf_config(model_dir, overrides),
                                                              dtype=dtype, attn_implementation="eager")
    model.eval()
    text = model.get_decoder() if hasattr(model, "get_decoder") else model.model
    values, hooks = [], []
    for layer in text.layers:
        attn = layer.self_attn
        kv_heads, head_dim = attn.config.num_key_value_heads, attn.head_dim
        clip = getattr(attn.config, "clip_qkv", None)  # OLMo, OLMoE: the value states are v_proj's output clamped

        def keep(_module, _inputs, out, kv_heads=kv_heads, head_dim=head_dim, clip=clip):
            v = out[0] if clip is None else out[0].clamp(min=-clip, max=clip)
            values.append(v.reshape(-1, kv_heads, head_dim).transpose(0, 1).detach().double().numpy())

        hooks.append(attn.v_proj.register_forward_hook(keep))
    with torch.no_grad():
        out = model(input_ids=torch.tensor([tokens], dtype=torch.long), output_attentions=True)
    for h in hooks:
        h.remove()
    attention = [a[0].double().numpy() for a in out.attentions]
    return attention, values, out.logits[0].double().numpy()


def errors(attn_rows, values, logits, reference, query_positions):
    """Per layer (attention abs, values rel) and the logits' relative error of one run's
    attention rows [L][H, Q, T], values [L][H_kv, T, d] and logits against `reference`."""
    ref_attention, ref_values, ref_logits = reference
    rows = []
    for layer, (attn, v) in enumerate(zip(attn_rows, values)):
        e_attn = float(np.max(np.abs(attn - ref_attention[layer][:, query_positions, :])))
        ref_v = ref_values[layer]
        rows.append((e_attn, float(np.max(np.abs(v - ref_v)) / max(np.max(np.abs(ref_v)), 1e-30))))
    return rows, float(np.max(np.abs(logits - ref_logits)) / max(np.max(np.abs(ref_logits)), 1e-30))


def check(name, model_dir, dump_path, overrides):
    dump = load_file(dump_path)
    tokens = dump["tokens"].astype(np.int64).tolist()
    queries = dump["query_positions"].astype(np.int64)
    layers = sum(1 for k in dump if k.endswith(".attn"))
    reference = hf_forward(model_dir, tokens, torch.float64, overrides)
    att32, val32, log32 = hf_forward(model_dir, tokens, torch.float32, overrides)
    if len(reference[0]) != layers:
        raise ValueError(f"transformers runs {len(reference[0])} layers, the dump has {layers}")
    mine = ([dump[f"layers.{i}.attn"].astype(np.float64) for i in range(layers)],
            [dump[f"layers.{i}.values"].astype(np.float64) for i in range(layers)], dump["logits"].astype(np.float64))
    # The third opinion: both forwards against make test's numpy float64 reference.
    numpy64 = reference_forward.forward(Model(model_dir), tokens)
    numpy64 = (numpy64["attn"], numpy64["values"], numpy64["logits"])
    ours, ours_logits = errors(*mine, reference, queries)
    hf32, hf32_logits = errors([a[:, queries, :] for a in att32], val32, log32, reference, queries)
    hf_np, hf_np_logits = errors([a[:, queries, :] for a in reference[0]], reference[1], reference[2], numpy64, queries)
    ours_np, ours_np_logits = errors(*mine, numpy64, queries)
    checks = []  # (what, kind, attngeom vs fp64, fp32 vs fp64, transformers vs numpy, attngeom vs numpy)
    for layer in range(layers):
        for k, kind in enumerate(("attention", "values")):
            checks.append((f"layer {layer} {kind}", kind, ours[layer][k], hf32[layer][k], hf_np[layer][k],
                           ours_np[layer][k]))
    checks.append(("logits", "logits", ours_logits, hf32_logits, hf_np_logits, ours_np_logits))
    failed = [c for c in checks if c[2] > PARITY_FACTOR * c[3] + PARITY_FLOOR and c[2] > FIXED_TOLERANCE[c[1]]]
    return {"fixture": name, "tokens": len(tokens), "queries": int(len(queries)),
            "checks": [{"what": c[0], "attngeom_error": c[2], "transformers_fp32_error": c[3],
                        "transformers_vs_numpy64": c[4], "attngeom_vs_numpy64": c[5]} for c in checks],
            "failed": [c[0] for c in failed]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixtures", required=True, help="folder of fixture checkpoints (tools/make_fixtures.py)")
    ap.add_argument("--dumps", required=True, help="folder of NAME.safetensors capture dumps")
    ap.add_argument("--names", default=None, help="comma-separated fixtures (default: every dump in --dumps)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME:KEY=JSON",
                    help="set config field KEY of fixture NAME to a JSON value before transformers reads it")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args()
    overrides = {}
    for item in args.set:
        name, _, assignment = item.partition(":")
        key, _, value = assignment.partition("=")
        if not (name and key and value):
            ap.error(f"--set {item!r}: expected NAME:KEY=JSON")
        overrides.setdefault(name, {})[key] = json.loads(value)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    names = args.names.split(",") if args.names else sorted(
        f[:-len(".safetensors")] for f in os.listdir(args.dumps) if f.endswith(".safetensors"))
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    results, bad = [], 0
    for name in names:
        try:
            r = check(name, os.path.join(args.fixtures, name), os.path.join(args.dumps, name + ".safetensors"),
                      overrides.get(name, {}))
            r["set"] = overrides.get(name, {})
        except Exception as e:  # noqa: BLE001 -- one fixture's failure is reported, the others still run
            r = {"fixture": name, "error": f"{type(e).__name__}: {e}"}
        results.append(r)
        if "error" in r:
            bad += 1
            print(f"FAIL {name}: {r['error']}")
            continue
        bad += bool(r["failed"])
        worst = max(r["checks"], key=lambda c: c["attngeom_error"] / (c["transformers_fp32_error"] + PARITY_FLOOR))
        shown = name + "".join(f" ({k} = {json.dumps(v)})" for k, v in r["set"].items())
        print(f"{'FAIL' if r['failed'] else 'ok  '} {shown}: T = {r['tokens']}, {len(r['checks'])} checks; tightest "
              f"{worst['what']}: attngeom {worst['attngeom_error']:.2e}, transformers fp32 "
              f"{worst['transformers_fp32_error']:.2e}" + (f"; failed: {', '.join(r['failed'])}" if r["failed"] else ""))
        attention = [c for c in r["checks"] if c["what"].endswith("attention")]
        print(f"     attention against numpy float64: transformers "
              f"{max(c['transformers_vs_numpy64'] for c in attention):.2e}, attngeom "
              f"{max(c['attngeom_vs_numpy64'] for c in attention):.2e}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "results": results}, f,
                      indent=1)
    print(f"{len(names) - bad} of {len(names)} fixtures agree with transformers")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
