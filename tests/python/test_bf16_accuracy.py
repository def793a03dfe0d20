#!/usr/bin/env python3
"""The bf16 fast path against the fp32 reference path, on every fixture.

  test_bf16_accuracy.py --bin PATH/attngeom --fixtures DIR

Tolerances come from bf16's unit roundoff u = 2^-8 (8 significant bits, round to nearest
even) and the reduction sizes, not from constants:
- layer 0 values, elementwise and rigorous: a K-term product whose inputs are rounded to
  bf16 (activations always; weights too unless stored as bf16) is off by at most
  (r_x + r_w + r_x r_w) * sum_k |h_k| |W_jk|, with r = u for a rounded operand and 0 for an
  exact one, plus the fp32 path's own error (K * 2^-24 relative to the same sum);
- deeper tensors, normwise: rounding errors of independent terms add like a random walk,
  so (Higham & Mary's probabilistic bound) an element is off by at most
  lambda (r_x + r_w) sqrt(sum_k (h_k W_jk)^2) with probability 1 - O(exp(-lambda^2 / 2));
  lambda = 6. Its norm over layer 0's values relative to ||v|| is eps_0, the error one
  layer's inputs carry; each later layer adds at most that much again through its six
  rounded products between captures (q/k/v, q k^T, p v, o, gate/up, down), so layer l (and
  the logits, after L layers) must stay within (l + 1) * 6 * eps_0;
Attention probabilities are printed, not asserted: a derived bound needs the score
scale |q||k|/sqrt(d), which the dump does not carry, and the score range read back from
the probabilities makes the bound exceed 1 (vacuous) on these fixtures.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import reference_forward as ref  # noqa: E402
from reference_model import Model  # noqa: E402
import st_reader  # noqa: E402

U = 2.0 ** -8
U32 = 2.0 ** -24
LAMBDA = 6.0
PRODUCTS_PER_LAYER = 6


def dump(binary, model_dir, out, precision):
    harness.capture(binary, model_dir, out, "--queries", "all", "--logits", "--max-tokens", "200",
                    "--precision", precision)
    return st_reader.read(out)[0]


def check_fixture(binary, model_dir, tmp, failures):
    name = os.path.basename(model_dir)
    fp32 = dump(binary, model_dir, os.path.join(tmp, name + ".fp32.safetensors"), "fp32")
    bf16 = dump(binary, model_dir, os.path.join(tmp, name + ".bf16.safetensors"), "bf16")
    model = Model(model_dir)
    stored_bf16 = model.top_cfg.get("torch_dtype") == "bfloat16"
    r_w = 0.0 if stored_bf16 else U

    # Layer 0 values: the rigorous elementwise bound. h: the attention's input (normed, or
    # the embeddings themselves where the family has no input norm); the bias, when there is
    # one, is added in fp32 after the product (one more fp32 rounding).
    tokens = fp32["tokens"].astype(np.int64)
    h, w_v, b_v = ref.layer0_value_input(model, tokens)
    b_v = 0.0 if b_v is None else np.abs(b_v)
    magnitude = np.abs(h) @ np.abs(w_v).T  # [T, kv_heads*D]
    T, kv, D = fp32["layers.0.values"].shape[1], model.kv_heads, model.head_dim
    bound = ((U + r_w + U * r_w) + h.shape[1] * 2 * U32) * magnitude + 2 * U32 * (magnitude + b_v)
    bound = bound.reshape(T, kv, D).transpose(1, 0, 2)
    diff0 = np.abs(bf16["layers.0.values"].astype(np.float64) - fp32["layers.0.values"])
    ratio0 = float((diff0 / np.maximum(bound, 1e-30)).max())
    if ratio0 > 1.0:
        failures.append(f"{name}: layer 0 values exceed the elementwise bound (max ratio {ratio0:.3f})")
    random_walk = LAMBDA * (U + r_w) * np.sqrt((h ** 2) @ (w_v ** 2).T)
    eps0 = float(np.linalg.norm(random_walk) / np.linalg.norm(fp32["layers.0.values"]))

    rows = []
    for layer in range(model.layers):
        v32 = fp32[f"layers.{layer}.values"].astype(np.float64)
        dv = np.linalg.norm(bf16[f"layers.{layer}.values"] - v32) / np.linalg.norm(v32)
        tol_v = (layer + 1) * PRODUCTS_PER_LAYER * eps0
        p32 = fp32[f"layers.{layer}.attn"].astype(np.float64)
        dp = float(np.abs(bf16[f"layers.{layer}.attn"] - p32).max())
        rows.append((layer, dv, tol_v, dp))
        if dv > tol_v:
            failures.append(f"{name}: layer {layer} values rel error {dv:.3e} > {tol_v:.3e}")
    l32 = fp32["logits"].astype(np.float64)
    dl = np.linalg.norm(bf16["logits"] - l32) / np.linalg.norm(l32)
    tol_l = (model.layers + 1) * PRODUCTS_PER_LAYER * eps0
    if dl > tol_l:
        failures.append(f"{name}: logits rel error {dl:.3e} > {tol_l:.3e}")
    routing = check_routing(name, model_dir, fp32, bf16, failures)
    print(f"{name}: weights {'bf16' if stored_bf16 else 'rounded to bf16'}; layer-0 values within "
          f"{ratio0:.2f} of the elementwise bound; eps_0 = {eps0:.2e}; logits rel {dl:.2e} (tol {tol_l:.2e})")
    for layer, dv, tol_v, dp in rows:
        print(f"  layer {layer}: values rel {dv:.2e} (tol {tol_v:.2e})   attention max abs {dp:.2e} (reported)"
              + routing.get(layer, ""))


def check_routing(name, model_dir, fp32, bf16, failures):
    """A mixture of experts in bf16 routes by its own logits and marks the tokens the fp32
    product of the same input would route elsewhere (routing_flipped); reported per layer
    beside the tokens whose experts differ from the fp32 run's, which also carry the error
    of every earlier layer. Each expert's load must be the count of its choices."""
    layers, experts, _ = harness.moe_layers(harness.load_config(model_dir))
    notes = {}
    for layer in layers:
        chosen = bf16[f"layers.{layer}.experts"]
        flipped = bf16[f"layers.{layer}.routing_flipped"]
        if not np.isin(flipped, (0, 1)).all():
            failures.append(f"{name}: layer {layer} routing_flipped holds values other than 0 and 1")
        if not np.array_equal(bf16[f"layers.{layer}.expert_load"], np.bincount(chosen.ravel(), minlength=experts)):
            failures.append(f"{name}: layer {layer} expert_load is not the count of the experts chosen")
        differ = int((np.sort(chosen, axis=1) != np.sort(fp32[f"layers.{layer}.experts"], axis=1)).any(axis=1).sum())
        notes[layer] = (f"   routing: {int(flipped.sum())} of {len(flipped)} tokens flip against fp32 logits, "
                        f"{differ} differ from the fp32 run")
    return notes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fixtures", required=True)
    args = ap.parse_args()
    harness.require_device(args.bin)
    failures = []
    with tempfile.TemporaryDirectory(prefix="attngeom-bf16-") as tmp:
        for name in harness.FAMILY_FIXTURES:
            check_fixture(args.bin, os.path.join(args.fixtures, name), tmp, failures)
    for f in failures:
        print("FAIL", f)
    print(f"bf16 vs fp32: {'FAILED' if failures else 'passed'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
