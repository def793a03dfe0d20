#!/usr/bin/python3
"""`attngeom bench` on a fixture: the JSON it prints is complete and self-consistent.

  test_bench_cli.py --bin PATH/attngeom --fixtures DIR

For each precision and fp32 kernel: every stage reports seconds >= linear + attention
seconds (other_seconds >= 0), linear FLOPs equal to the model's linear layers' count (capture
and analyze without the last layer's output projection and MLP), linear TFLOP/s equal to
those FLOPs over linear_seconds, the kernel named as requested, a peak RSS at least the
weights' size, and analyze's parts within its time, none handed to a GPU. `--precision auto` picks what /proc/cpuinfo says it should: bf16
with AMX, or with AVX512-BF16 on AMD, fp32 otherwise. `--queries stride:K` captures and
analyses the rows analyze would take (the last and every K-th before it). A bad --stages
value fails before the model is loaded; a --queries position outside the sequence fails
naming the flag.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SEQ = 48
CASES = [("bf16", "sgemm", "onednn-bf16"), ("fp32", "sgemm", "onednn-sgemm"), ("fp32", "bf16x3", "onednn-bf16x3")]


def linear_flops(cfg, seq, stage):
    """2 * rows * in * out over every projection of every layer (no lm_head: bench asks for no
    logits). The forward stage runs whole; capture and analyze skip the last layer's output
    projection and MLP, whose result only the logits would read."""
    hidden, inter = cfg["hidden_size"], cfg["intermediate_size"]
    head_dim = cfg.get("head_dim", hidden // cfg["num_attention_heads"])
    q = cfg["num_attention_heads"] * head_dim
    kv = cfg.get("num_key_value_heads", cfg["num_attention_heads"]) * head_dim
    attention_in = hidden * (q + 2 * kv)
    residual_update = q * hidden + 3 * hidden * inter
    layers = cfg["num_hidden_layers"]
    total = layers * (attention_in + residual_update) - (0 if stage == "forward" else residual_update)
    return 2.0 * seq * total


def cpuinfo():
    """(vendor_id, set of flags) of the first processor in /proc/cpuinfo."""
    vendor, flags = "", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "vendor_id" and not vendor:
                vendor = value.strip()
            if key.strip() == "flags" and not flags:
                flags = set(value.split())
    return vendor, flags


def expected_auto_precision(vendor, flags):
    """auto's documented rule, read off the CPU rather than off oneDNN."""
    if "amx_bf16" in flags and "amx_tile" in flags:
        return "bf16"
    return "bf16" if vendor == "AuthenticAMD" and "avx512_bf16" in flags else "fp32"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fixtures", required=True)
    args = ap.parse_args()
    model = os.path.join(args.fixtures, "gemma")
    cfg = harness.load_config(model)
    failures = []
    for precision, kernel, name in CASES:
        proc = subprocess.run([args.bin, "bench", "--model", model, "--seq-len", str(SEQ), "--precision", precision,
                               "--fp32-matmul", kernel, "--threads", "1", "--repeats", "2"],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            failures.append(f"{precision}/{kernel}: {harness.describe(proc)}")
            continue
        out = json.loads(proc.stdout)
        tag = f"{precision}/{kernel}"
        if (out["precision"], out["matmul"], out["seq_len"]) != (precision, name, SEQ):
            failures.append(f"{tag}: reports {out['precision']}/{out['matmul']}/{out['seq_len']}")
        if out["peak_rss_bytes"] < out["weight_bytes"]:
            failures.append(f"{tag}: peak RSS {out['peak_rss_bytes']} below the weights' {out['weight_bytes']}")
        for stage in ("forward", "capture", "analyze"):
            s = out[stage]
            if min(s["seconds"], s["linear_seconds"], s["attention_seconds"], s["other_seconds"]) < 0:
                failures.append(f"{tag} {stage}: negative time in {s}")
            flops = linear_flops(cfg, SEQ, stage)
            if s["linear_flops"] != flops:
                failures.append(f"{tag} {stage}: linear_flops {s['linear_flops']} != {flops}")
            expected = flops / s["linear_seconds"] * 1e-12
            if abs(s["linear_tflops"] - expected) > 1e-6 * expected:
                failures.append(f"{tag} {stage}: linear_tflops {s['linear_tflops']} != FLOPs / linear_seconds "
                                f"= {expected}")
        # On the CPU the layers are analysed one after another inside the forward pass, nothing
        # elsewhere: the parts are within the stage's time, and none is handed to a GPU.
        parts = out["analyze"]["parts"]
        if parts["deviations_seconds"] != 0 or parts["row_parts_seconds"] != 0 or min(parts.values()) < 0:
            failures.append(f"{tag}: analyze parts {parts} on the CPU")
        if parts["value_geometry_seconds"] + parts["heads_seconds"] > out["analyze"]["seconds"]:
            failures.append(f"{tag}: analyze parts {parts} exceed the stage's {out['analyze']['seconds']} s")
        print(f"{tag}: " + ", ".join(f"{st} {out[st]['seconds']:.3f} s" for st in ("forward", "capture", "analyze")))
    proc = subprocess.run([args.bin, "bench", "--model", model, "--seq-len", str(SEQ), "--stages", "forward",
                           "--threads", "1"], capture_output=True, text=True, timeout=300)
    vendor, flags = cpuinfo()
    expected = expected_auto_precision(vendor, flags)
    if proc.returncode != 0:
        failures.append(f"auto: {harness.describe(proc)}")
    elif json.loads(proc.stdout)["precision"] != expected:
        failures.append(f"auto chose {json.loads(proc.stdout)['precision']}, the CPU ({vendor}) calls for {expected}")
    else:
        print(f"auto: {expected} on {vendor}")
    proc = subprocess.run([args.bin, "bench", "--model", model, "--seq-len", str(SEQ), "--queries", "stride:10",
                           "--stages", "capture,analyze", "--threads", "1"], capture_output=True, text=True, timeout=300)
    rows = len(range(SEQ - 1, 0, -10))  # 47, 37, 27, 17, 7
    if proc.returncode != 0:
        failures.append(f"--queries stride:10: {harness.describe(proc)}")
    elif (json.loads(proc.stdout)["queries"], json.loads(proc.stdout)["query_rows"]) != ("stride:10", rows):
        failures.append(f"--queries stride:10: reports {json.loads(proc.stdout)['query_rows']} rows, not {rows}")
    proc = subprocess.run([args.bin, "bench", "--model", model, "--seq-len", str(SEQ), "--queries", str(SEQ)],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode == 0 or "--queries" not in proc.stderr or "outside" not in proc.stderr:
        failures.append(f"--queries outside the sequence: {harness.describe(proc)}")
    proc = subprocess.run([args.bin, "bench", "--model", "/nonexistent", "--stages", "forward,nope"],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode == 0 or "--stages" not in proc.stderr or "nope" not in proc.stderr:
        failures.append(f"bad --stages: {harness.describe(proc)}")
    for f in failures:
        print("FAIL " + f)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
