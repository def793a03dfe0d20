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
import test_cluster_mpi  # noqa: E402  (compare_runs: two run directories byte for byte)

FIXTURES = ("mistral", "mixtral")  # GQA with a sliding window; a mixture of experts


def both_deliveries(out, command):
    """Runs command(path) with whole layers, then with blocks; returns the two paths."""
    paths = []
    for tag, env in (("whole", None), ("blocks", dict(os.environ, ATTNGEOM_TEST_CAPTURE_BLOCKS="1"))):
        path = f"{out}-{tag}"
        step = subprocess.run(command(path) + harness.device_flags(), capture_output=True, text=True, env=env,
                              timeout=600)
        if step.returncode != 0:
            raise RuntimeError(f"exit {step.returncode}: {' '.join(step.args)}\n{step.stderr.strip()[-1500:]}")
        paths.append(path)
    return paths


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
            dumps = both_deliveries(os.path.join(tmp, f"{name}-dump"), lambda out: [
                args.bin, "capture", "--model", model, "--text", harness.PROMPT, "--out", out, "--queries", "all",
                "--logits"])
            same = filecmp.cmp(*dumps, shallow=False)
            print(f"{name}: capture --queries all --logits, whole layers and blocks: {'equal' if same else 'DIFFER'}")
            if not same:
                failures.append(f"{name}: the capture dumps differ")
            runs = both_deliveries(os.path.join(tmp, f"{name}-run"), lambda out: [
                args.bin, "analyze", "--model", model, "--data", harness.PROMPT, "--seq-len", "64", "--num-seqs", "3",
                "--queries", "stride:8", "--out", out])
            files = test_cluster_mpi.compare_runs(*runs, f"{name}: analyze in blocks", failures)
            print(f"{name}: analyze, whole layers and blocks: {files} files compared")
    for f in failures:
        print("FAIL", f)
    print(f"capture delivery: {'FAILED' if failures else 'passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
