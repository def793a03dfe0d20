#!/usr/bin/env python3
"""The shipped model organism (models/organism) under the engine.

  test_organism.py --bin PATH/attngeom

- logits: the engine's logits on the golden held-out passage equal the training
  framework's (PyTorch, fp32 weights) within 1e-4 relative (max abs error / max |logit|),
  and so do the per-token NLLs;
- perplexity: the engine's held-out perplexity under the model card's protocol (context
  512, non-overlapping windows, BOS per window) equals the training script's within 0.5%;
- unseen text: the engine's bits per byte on the GPL-3 text (rebuilt here by the training
  data's own prep.unseen_text, from /usr/share/common-licenses) equals the training script's
  within 0.5%, and is at most 2.0.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_reader  # noqa: E402
from perplexity_reference import log_softmax  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ORGANISM = os.path.join(ROOT, "models", "organism")
sys.path.insert(0, os.path.join(ROOT, "tools", "organism"))
import prep  # noqa: E402


def write_ids(path, ids):
    with open(path, "w") as f:
        f.write(" ".join(str(int(i)) for i in ids) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    failures = []
    golden = st_reader.read(os.path.join(ORGANISM, "golden.safetensors"))[0]
    with tempfile.TemporaryDirectory(prefix="attngeom-organism-") as tmp:
        ids = os.path.join(tmp, "golden.txt")
        write_ids(ids, golden["tokens"])
        dump = os.path.join(tmp, "golden.safetensors")
        subprocess.run([args.bin, "capture", "--model", ORGANISM, "--tokens", ids, "--logits", "--out", dump,
                        "--precision", "fp32"], check=True, capture_output=True)
        ours = st_reader.read(dump)[0]
        logit_rel = float(np.abs(ours["logits"] - golden["logits"]).max() / np.abs(golden["logits"]).max())
        tokens = golden["tokens"].astype(np.int64)
        nll = -log_softmax(ours["logits"])[np.arange(len(tokens) - 1), tokens[1:]]
        nll_err = float(np.abs(nll - golden["nll"]).max())
        print(f"golden logits: max abs error / max |logit| = {logit_rel:.2e} (tolerance 1e-4); "
              f"per-token NLL max abs error {nll_err:.2e} nats")
        if logit_rel > 1e-4:
            failures.append(f"logits relative error {logit_rel:.2e} > 1e-4")
        if nll_err > 1e-4 * max(1.0, float(np.abs(golden['nll']).max())):
            failures.append(f"per-token NLL error {nll_err:.2e}")

        stream = st_reader.read(os.path.join(ORGANISM, "heldout_tokens.safetensors"))[0]["tokens"]
        stream_ids = os.path.join(tmp, "heldout.txt")
        write_ids(stream_ids, stream)
        out = os.path.join(tmp, "ppl.json")
        subprocess.run([args.bin, "perplexity", "--model", ORGANISM, "--tokens", stream_ids, "--context", "512",
                        "--precision", "fp32", "--out", out], check=True, capture_output=True)
        ours_ppl = json.load(open(out))
        card = json.load(open(os.path.join(ORGANISM, "eval.json")))
        rel = abs(ours_ppl["perplexity"] - card["heldout_ppl"]) / card["heldout_ppl"]
        print(f"held-out perplexity: engine {ours_ppl['perplexity']:.4f} over {ours_ppl['tokens']} tokens; "
              f"training script {card['heldout_ppl']:.4f} over {card['heldout_predicted_tokens']} tokens; "
              f"relative difference {rel:.2e} (tolerance 5e-3); unigram baseline {card['unigram_ppl']:.1f}")
        if rel > 5e-3 or ours_ppl["tokens"] != card["heldout_predicted_tokens"]:
            failures.append(f"perplexity differs by {rel:.2e} or token counts differ")

        unseen = os.path.join(tmp, "unseen.txt")
        with open(unseen, "w", encoding="utf-8") as f:
            f.write(prep.unseen_text())
        subprocess.run([args.bin, "perplexity", "--model", ORGANISM, "--text", unseen, "--context", "512",
                        "--precision", "fp32", "--out", out], check=True, capture_output=True)
        ours_bpb = json.load(open(out))
        bpb_rel = abs(ours_bpb["bits_per_byte"] - card["unseen_bits_per_byte"]) / card["unseen_bits_per_byte"]
        print(f"unseen text: engine {ours_bpb['bits_per_byte']:.4f} bits per byte over {ours_bpb['text_bytes']} bytes "
              f"and {ours_bpb['tokens']} tokens; training script {card['unseen_bits_per_byte']:.4f} over "
              f"{card['unseen_bytes']} bytes and {card['unseen_tokens']} tokens (tolerance 5e-3 relative; bound 2.0)")
        if bpb_rel > 5e-3 or ours_bpb["tokens"] != card["unseen_tokens"] or ours_bpb["text_bytes"] != card["unseen_bytes"]:
            failures.append(f"unseen bits per byte differ by {bpb_rel:.2e}, or token or byte counts differ")
        if ours_bpb["bits_per_byte"] > 2.0:
            failures.append(f"unseen bits per byte {ours_bpb['bits_per_byte']:.4f} > 2.0")
    for f in failures:
        print("FAIL", f)
    print(f"organism: {'FAILED' if failures else 'passed'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
