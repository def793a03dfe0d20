#!/usr/bin/env python3
"""attngeom against a PyTorch eager reference on random-weight checkpoints of real shapes.

  bench/run_bench.py --bin build/src/attngeom --work /big/disk/dir [--presets llama2-7b,...]
                     [--lengths 512,1024,2048] [--precisions bf16,fp32] [--layers N] [--torch [--torch-dtype bf16|fp32] [--torch-malloc glibc|jemalloc]]
                     [--baseline-bin OTHER/attngeom] [--out bench/results.csv]

Presets include LLaMA-3-8B (llama3 RoPE, GQA 8, 128,256-token vocabulary) and Qwen2.5-7B
(q/k/v biases, GQA 7) shapes. For each preset it generates (never downloads) a bf16 checkpoint with
tools/make_random_checkpoint.py, runs `attngeom bench` (forward only, forward + capture,
full analyze) per length and precision in a fresh process, and, with --torch, the eager
reference (bench/torch_eager.py, output_attentions semantics) in bf16 (or --torch-dtype
fp32, the peer of `--precision auto` where it picks fp32); then it deletes the
checkpoint unless --keep. Results go to a CSV; the speed-up column is measured in the same
run: torch eager seconds / attngeom forward + capture seconds at the same length. The eager
run's linear-layer seconds are reported too: in bf16 both sides multiply through the same
oneDNN bf16 matmul (in fp32, eager goes through the system BLAS), and in either dtype the
speed-up cannot pass eager seconds / attngeom linear seconds (the speedup_ceiling column,
from the same capture stage). --baseline-bin times a second attngeom build (say, the commit
before a change) right after each run of --bin, same checkpoint and flags: the baseline_seconds
and vs_baseline (ours / baseline) columns of each stage.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
FULL_VOCAB_PRESETS = ("llama3-8b", "qwen2.5-7b")
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def run_json(cmd, timeout, env=None):
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.CalledProcessError as e:
        return {"error": (e.stderr or "").strip().splitlines()[-1:] or [f"exit {e.returncode}"]}
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True, help="where checkpoints are generated (needs ~15 GB per 7B preset)")
    ap.add_argument("--presets", default="llama2-7b,mistral-7b,gemma-7b,llama-1b",
                    help="make_random_checkpoint.py presets, e.g. also llama3-8b, qwen2.5-7b")
    ap.add_argument("--lengths", default="512,1024,2048")
    ap.add_argument("--layers", type=int, default=None,
                    help="every preset with this many decoder layers, its layer shapes kept (mixtral-8x7b's 93 GB "
                         "do not fit in memory; 4 layers are 12 GB); named PRESET-lN under --work and in the CSV")
    ap.add_argument("--precisions", default="bf16,fp32")
    ap.add_argument("--fp32-matmul", default="sgemm", choices=["sgemm", "bf16x3"],
                    help="kernel of the fp32 runs (attngeom --fp32-matmul)")
    ap.add_argument("--stages", default="forward,capture,analyze")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--tokenizer", default=None, help="tokenizer.model to copy (default: a fixture's)")
    ap.add_argument("--torch", action="store_true", help="also time the PyTorch eager reference")
    ap.add_argument("--torch-dtype", default="bf16", choices=["bf16", "fp32"], help="the eager reference's dtype")
    ap.add_argument("--torch-malloc", default="glibc", choices=["glibc", "jemalloc"],
                    help="the eager reference's allocator: glibc (as torch runs by default) or Debian's jemalloc "
                         "(libjemalloc2) preloaded, freed pages kept for reuse; on virtual machines where first "
                         "touches of fresh pages are slow it is the faster peer")
    ap.add_argument("--baseline-bin", default=None, help="a second attngeom build to time beside --bin")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--out", default=os.path.join(HERE, "results.csv"))
    args = ap.parse_args()
    tokenizer = args.tokenizer or os.path.join(ROOT, "build", "tests", "python", "fixtures", "llama", "tokenizer.model")
    fields = ["preset", "seq_len", "precision", "matmul", "stage", "seconds", "linear_seconds", "attention_seconds",
              "other_seconds", "linear_tflops", "peak_rss_gb", "weights_gb", "torch_eager_dtype", "torch_eager_malloc",
              "torch_eager_seconds",
              "torch_eager_linear_seconds", "speedup", "speedup_ceiling", "baseline_seconds", "vs_baseline"]
    eager_env = None
    if args.torch_malloc == "jemalloc":
        if not os.path.exists(JEMALLOC):
            sys.exit(f"--torch-malloc jemalloc: {JEMALLOC} not found (apt-get install libjemalloc2)")
        eager_env = dict(os.environ, LD_PRELOAD=JEMALLOC, MALLOC_CONF="dirty_decay_ms:-1,muzzy_decay_ms:-1")
    rows = []
    for base in args.presets.split(","):
        preset = f"{base}-l{args.layers}" if args.layers else base
        model = os.path.join(args.work, preset)
        if not os.path.exists(os.path.join(model, "config.json")):
            # The older presets ran with a 32,000-token vocabulary; the newer ones keep theirs
            # (LLaMA-3's 128,256 and Qwen2.5's 152,064 are part of their cost).
            vocab = [] if base in FULL_VOCAB_PRESETS else ["--vocab", "32000"]
            layers = ["--layers", str(args.layers)] if args.layers else []
            subprocess.run([PY, "-B", os.path.join(ROOT, "tools", "make_random_checkpoint.py"), "--preset", base,
                            "--dtype", "bf16", "--tokenizer", tokenizer, "--out", model] + vocab + layers, check=True)
        for seq_len in [int(x) for x in args.lengths.split(",")]:
            eager = None
            if args.torch:
                eager = run_json([PY, "-B", os.path.join(HERE, "torch_eager.py"), "--model", model, "--seq-len",
                                  str(seq_len), "--threads", str(args.threads), "--dtype", args.torch_dtype],
                                 args.timeout, eager_env)
                print(f"{preset} T={seq_len} torch eager: {eager}", flush=True)
            for precision in args.precisions.split(","):
                bench = ["bench", "--model", model, "--seq-len", str(seq_len), "--precision", precision,
                         "--fp32-matmul", args.fp32_matmul, "--threads", str(args.threads), "--stages", args.stages]
                result = run_json([args.bin] + bench, args.timeout)
                print(f"{preset} T={seq_len} {precision}: {result}", flush=True)
                baseline = run_json([args.baseline_bin] + bench, args.timeout) if args.baseline_bin else None
                if baseline:
                    print(f"{preset} T={seq_len} {precision} baseline: {baseline}", flush=True)
                for stage in args.stages.split(","):
                    if "error" in result:
                        rows.append({"preset": preset, "seq_len": seq_len, "precision": precision, "stage": stage,
                                     "seconds": "error: " + str(result["error"])})
                        continue
                    s = result[stage]
                    eager_s = eager.get("seconds") if eager and "error" not in eager else None
                    rows.append({
                        "preset": preset, "seq_len": seq_len, "precision": precision, "matmul": result["matmul"],
                        "stage": stage, "seconds": f"{s['seconds']:.3f}", "linear_seconds": f"{s['linear_seconds']:.3f}",
                        "attention_seconds": f"{s['attention_seconds']:.3f}", "other_seconds": f"{s['other_seconds']:.3f}",
                        "linear_tflops": f"{s['linear_tflops']:.3f}",
                        "peak_rss_gb": f"{result['peak_rss_bytes'] / 2**30:.2f}",
                        "weights_gb": f"{result['weight_bytes'] / 2**30:.2f}",
                        "torch_eager_dtype": args.torch_dtype if eager else "",
                        "torch_eager_malloc": args.torch_malloc if eager else "",
                        "torch_eager_seconds": f"{eager_s:.3f}" if eager_s else (str(eager.get('error')) if eager else ""),
                        "torch_eager_linear_seconds": f"{eager['linear_seconds']:.3f}" if eager_s else "",
                        "speedup": f"{eager_s / s['seconds']:.2f}" if eager_s and stage == "capture" else "",
                        "speedup_ceiling":
                            f"{eager_s / s['linear_seconds']:.2f}" if eager_s and stage == "capture" else ""})
                    if baseline and "error" not in baseline:
                        base_s = baseline[stage]["seconds"]
                        rows[-1].update({"baseline_seconds": f"{base_s:.3f}", "vs_baseline": f"{s['seconds'] / base_s:.3f}"})
        if not args.keep:
            shutil.rmtree(model)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    sys.exit(main())
