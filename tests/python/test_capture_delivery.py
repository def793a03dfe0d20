#!/usr/bin/python3
"""The forward pass hands a captured layer to its observer whole, after launching the layer's
MLP, when its rows are small, else block by block as attention produces them
(src/model/forward.cc). Both deliveries must give the same files: `capture` dumps (every query
row, the logits) and `analyze` run directories (records, tables, the routing of a mixture of
experts) byte for byte, with the test hook ATTNGEOM_TEST_CAPTURE_BLOCKS=1 forcing blocks.

  test_capture_delivery.py --bin PATH/attngeom --fixtures DIR
"""
import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

FIXTURES = ("mistral", "mixtral")  # GQA with a sliding window; a mixture of experts
NOT_COMPARED = {"run.json", "report.html"}  # times and hosts


def blocks_env():
    return dict(os.environ, ATTNGEOM_TEST_CAPTURE_BLOCKS="1")


def run(cmd, env=None):
    step = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if step.returncode != 0:
        raise RuntimeError(f"exit {step.returncode}: {' '.join(cmd)}\n{step.stderr.strip()[-1500:]}")


def differing(a, b):
    """Files under a and b (run directories) that differ or exist on one side only."""
    out = []
    for root, _, files in os.walk(a):
        rel = os.path.relpath(root, a)
        theirs = set(os.listdir(os.path.join(b, rel))) if os.path.isdir(os.path.join(b, rel)) else set()
        for name in sorted(set(files) | {n for n in theirs if os.path.isfile(os.path.join(b, rel, n))}):
            if name in NOT_COMPARED:
                continue
            x, y = os.path.join(a, rel, name), os.path.join(b, rel, name)
            if not (os.path.isfile(x) and os.path.isfile(y) and filecmp.cmp(x, y, shallow=False)):
                out.append(os.path.join(rel, name))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fixtures", required=True)
    args = ap.parse_args()
    harness.require_device(args.bin)
    with open(os.path.join(args.fixtures, "fixtures.json")) as f:
        fixtures = json.load(f)["fixtures"]
    failures = []
    with tempfile.TemporaryDirectory(prefix="attngeom-delivery-") as tmp:
        for name in FIXTURES:
            model = fixtures[name]["dir"]
            dumps = []
            for env, tag in ((None, "whole"), (blocks_env(), "blocks")):
                out = os.path.join(tmp, f"{name}-{tag}.safetensors")
                cmd = [args.bin, "capture", "--model", model, "--text", harness.PROMPT, "--out", out,
                       "--queries", "all", "--logits"] + harness.device_flags()
                run(cmd, env)
                dumps.append(out)
            same = filecmp.cmp(*dumps, shallow=False)
            print(f"{name}: capture --queries all --logits, whole layers and blocks: {'equal' if same else 'DIFFER'}")
            if not same:
                failures.append(f"{name}: the capture dumps differ")
            runs = []
            for env, tag in ((None, "whole"), (blocks_env(), "blocks")):
                out = os.path.join(tmp, f"{name}-{tag}")
                cmd = [args.bin, "analyze", "--model", model, "--data", harness.PROMPT, "--seq-len", "64",
                       "--num-seqs", "3", "--queries", "stride:8", "--out", out] + harness.device_flags()
                run(cmd, env)
                runs.append(out)
            diff = differing(*runs)
            print(f"{name}: analyze, whole layers and blocks: {len(diff)} files differ {diff[:5]}")
            if diff:
                failures.append(f"{name}: analyze files differ: {diff[:5]}")
    for f in failures:
        print("FAIL", f)
    print(f"capture delivery: {'FAILED' if failures else 'passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
