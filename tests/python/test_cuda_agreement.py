#!/usr/bin/env python3
"""The GPU engine against the CPU's on the shipped models (docs/gpu.md).

  ATTNGEOM_TEST_DEVICE=cuda test_cuda_agreement.py --bin PATH/attngeom

Skipped (exit 77) where the build has no CUDA or no GPU is visible.
- organism, fp32: `analyze` on the same held-out sequences on the CPU and on the GPU writes
  the same records and heads, run.json names the device and kernel, every head gets the same
  label, and each head's mean P, R and F over the sequences differ by at most one key's
  flip in one sequence (1 / num_seqs): the rows' probabilities agree to fp32 rounding, so
  only a key sitting on a selection boundary can change side;
- organism, bf16 on the GPU against fp32 on the CPU: labels agree on at least 98% of heads
  (the criterion of test_precision_agreement.py for the CPU's bf16 path);
- planted, fp32 on the GPU: every head gets its planted type (test_planted.py's check);
- perplexity of the organism's held-out text, fp32: equal to 1e-5 relative;
- a GPU that is not there is refused with one line naming --device.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_planted  # noqa: E402

ORGANISM = os.path.join(harness.REPO, "models", "organism")
HELDOUT = os.path.join(ORGANISM, "heldout.txt")
SEQ_LEN, NUM_SEQS = 256, 16
MIN_BF16_AGREEMENT = 0.98
PERPLEXITY_RTOL = 1e-5


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def analyze(binary, out, *flags):
    subprocess.run([binary, "analyze", "--model", ORGANISM, "--data", HELDOUT, "--seq-len", str(SEQ_LEN),
                    "--num-seqs", str(NUM_SEQS), "--out", out] + list(flags), check=True, capture_output=True,
                   timeout=600)
    with open(os.path.join(out, "run.json")) as f:
        run = json.load(f)
    heads = {(r["layer"], r["head"]): r for r in read_csv(os.path.join(out, "heads.csv"))}
    selection = {(r["layer"], r["head"], r["n"]): r for r in read_csv(os.path.join(out, "selection.csv"))}
    return run, heads, selection


def compare_runs(name, cpu, gpu, failures, exact_labels):
    (run_c, heads_c, sel_c), (run_g, heads_g, sel_g) = cpu, gpu
    if run_g.get("device") != "cuda":
        failures.append(f"{name}: run.json device {run_g.get('device')!r}, expected 'cuda'")
    if heads_c.keys() != heads_g.keys() or sel_c.keys() != sel_g.keys() or not heads_c:
        failures.append(f"{name}: the runs list different heads or (head, N) rows")
    keys = sorted(heads_c.keys() & heads_g.keys(), key=lambda k: (int(k[0]), int(k[1])))
    same = sum(heads_c[k]["label"] == heads_g[k]["label"] for k in keys)
    agreement = same / max(1, len(keys))
    print(f"{name}: labels agree on {same}/{len(keys)} heads; run.json matmul {run_g.get('matmul')}")
    for k in keys:
        if heads_c[k]["label"] != heads_g[k]["label"]:
            print(f"  layer {k[0]} head {k[1]}: cpu {heads_c[k]['label']}, gpu {heads_g[k]['label']}")
    if exact_labels and same != len(keys):
        failures.append(f"{name}: {len(keys) - same} head label(s) differ")
    if not exact_labels and agreement < MIN_BF16_AGREEMENT:
        failures.append(f"{name}: label agreement {agreement:.3f} < {MIN_BF16_AGREEMENT}")
    worst = 0.0
    for key in sel_c.keys() & sel_g.keys():
        for column in ("precision_mean", "recall_mean", "f_mean"):
            worst = max(worst, abs(float(sel_c[key][column]) - float(sel_g[key][column])))
    print(f"{name}: largest |cpu - gpu| of a head's mean P, R or F: {worst:.2e}")
    if exact_labels and worst > 1.0 / NUM_SEQS:
        failures.append(f"{name}: a mean P, R or F differs by {worst:.3g} > 1/num_seqs")


def perplexity(binary, tmp, *flags):
    out = os.path.join(tmp, "ppl-" + "-".join(f.replace(":", "") for f in flags if not f.startswith("-")) + ".json")
    subprocess.run([binary, "perplexity", "--model", ORGANISM, "--text", HELDOUT, "--max-tokens", "4000",
                    "--precision", "fp32", "--out", out] + list(flags), check=True, capture_output=True, timeout=600)
    with open(out) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    if harness.DEVICE == "cpu":
        sys.exit("set ATTNGEOM_TEST_DEVICE to the GPU to compare (cuda or cuda:N)")
    harness.require_device(args.bin)
    gpu = harness.device_flags()
    failures = []
    with tempfile.TemporaryDirectory(prefix="attngeom-cuda-") as tmp:
        cpu32 = analyze(args.bin, os.path.join(tmp, "cpu32"), "--precision", "fp32")
        compare_runs("organism fp32", cpu32, analyze(args.bin, os.path.join(tmp, "gpu32"), "--precision", "fp32", *gpu),
                     failures, True)
        compare_runs("organism bf16 (gpu) vs fp32 (cpu)", cpu32,
                     analyze(args.bin, os.path.join(tmp, "gpu16"), "--precision", "bf16", *gpu), failures, False)

        expected = test_planted.read_csv(os.path.join(test_planted.PLANTED, "planted_types.csv"))
        os.makedirs(os.path.join(tmp, "planted"))
        test_planted.check_taxonomy(args.bin, os.path.join(tmp, "planted"), expected, failures,
                                    ["--precision", "fp32"] + gpu)

        p_cpu, p_gpu = perplexity(args.bin, tmp), perplexity(args.bin, tmp, *gpu)
        for key in ("perplexity", "bits_per_byte"):
            if key in p_cpu:
                a, b = p_cpu[key], p_gpu[key]
                print(f"perplexity {key}: cpu {a:.8g}, gpu {b:.8g}")
                if abs(a - b) > PERPLEXITY_RTOL * abs(a):
                    failures.append(f"perplexity {key}: cpu {a}, gpu {b}")

        missing = subprocess.run([args.bin, "perplexity", "--model", ORGANISM, "--text", HELDOUT, "--device", "cuda:99"],
                                 capture_output=True, text=True)
        lines = missing.stderr.strip().splitlines()
        print(f"--device cuda:99: exit {missing.returncode}: {missing.stderr.strip()}")
        if missing.returncode != 2 or len(lines) != 1 or "--device" not in lines[0]:
            failures.append("--device cuda:99 is not refused with one line naming --device")
    for f in failures:
        print("FAIL", f)
    print(f"gpu vs cpu: {'FAILED' if failures else 'passed'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
