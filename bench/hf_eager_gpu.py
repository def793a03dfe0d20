#!/usr/bin/env python3
"""The peer on a GPU: Hugging Face transformers' own model, eager attention with
output_attentions=True (every layer's [heads, T, T] probabilities handed over), and sdpa
without attentions, on the same checkpoint `attngeom bench --device cuda` reads.

  hf_eager_gpu.py --model DIR --seq-len 1024 [--seq-len 4096 ...] [--dtype bf16|fp32]

One random sequence per length; one warm-up forward, then the best of --repeats timed
forwards (each ends with torch.cuda.synchronize()). Prints one JSON line with the GPU's bf16
matrix peak (an 8192-cube product), then one per length: seconds with attentions (eager),
without (sdpa), the peak GPU memory of the eager forward, or the error that stopped it (out of
memory). Needs torch with CUDA and transformers.
"""
import argparse
import json
import time

import torch
import transformers


def load(model_dir, dtype, attention):
    kwargs = dict(attn_implementation=attention)
    try:  # transformers 5 names the dtype `dtype`, 4.x `torch_dtype`
        model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, **kwargs)
    except TypeError:
        model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=dtype, **kwargs)
    return model.to("cuda").eval()


def best_time(model, ids, repeats, **kwargs):
    with torch.inference_mode():
        model(ids, **kwargs)  # warm-up
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            out = model(ids, **kwargs)
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - start)
            del out
    return best


def matmul_peak(size=8192, repeats=10):
    """The GPU's bf16 matrix peak as PyTorch reaches it: an n x n x n product of random bf16
    matrices, the mean of `repeats` timed products after three warm-ups, in TFLOP/s."""
    gen = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16, generator=gen)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16, generator=gen)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    torch.cuda.synchronize()
    return 2.0 * size ** 3 * repeats / (time.perf_counter() - start) * 1e-12


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--seq-len", type=int, action="append", required=True)
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    print(json.dumps({"peer": "torch bf16 matmul", "gpu": torch.cuda.get_device_name(),
                      "matmul_peak_tflops": matmul_peak()}), flush=True)
    model = load(args.model, dtype, "eager")
    vocab = model.config.vocab_size
    gen = torch.Generator().manual_seed(7)
    for seq in args.seq_len:
        ids = torch.randint(0, vocab, (1, seq), generator=gen).to("cuda")
        row = {"peer": f"transformers {transformers.__version__} eager", "seq_len": seq, "dtype": args.dtype,
               "gpu": torch.cuda.get_device_name()}
        try:
            torch.cuda.reset_peak_memory_stats()
            row["eager_attentions_seconds"] = best_time(model, ids, args.repeats, output_attentions=True)
            row["eager_peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
        except torch.OutOfMemoryError as e:
            row["eager_attentions_error"] = str(e).splitlines()[0]
        torch.cuda.empty_cache()
        try:
            model.set_attn_implementation("sdpa")
            row["sdpa_seconds"] = best_time(model, ids, args.repeats)
            model.set_attn_implementation("eager")
        except (AttributeError, ValueError, torch.OutOfMemoryError) as e:
            row["sdpa_error"] = str(e).splitlines()[0]
        torch.cuda.empty_cache()
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
