#!/usr/bin/env python3
"""Seconds per sequence: attngeom.hf on a transformers model (GPU or CPU) beside the native engine.

  PYTHONPATH=build/python python3 bench/hf_vs_native.py --bin build/src/attngeom \\
      --tokenizer build/tests/python/fixtures/llama/tokenizer.model [--preset llama-1b] \\
      [--seq-len 512] [--num-seqs 8] [--device cuda] [--dtype bfloat16] [--batch-size 4] [--work DIR]

A random LLaMA-3-shaped checkpoint (tools/make_random_checkpoint.py --preset, bf16) is analysed
by `attngeom analyze` (the native engine on the CPU, --precision auto) over a packed random-word
corpus; the same checkpoint, loaded by transformers (eager attention, --dtype, on --device), is
analysed by attngeom.hf over the native run's own sequences. Then a GPT-2-shaped random model
(GPT2Config's defaults: 12 layers, 12 heads, hidden 768), which the native engine does not
read, through attngeom.hf alone. Both use the same query rows (--queries, default last) and
write full run directories (tables and report included). Wall-clock seconds: the native figure
includes its start-up (memory-mapped weights); attngeom.hf's excludes loading the model, and
follows one untimed warm-up sequence. Prints a table and one JSON line.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def corpus(path, words):
    """A text of `words` random lowercase words (seed 0): enough tokens for any packing."""
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    with open(path, "w") as f:
        for _ in range(words // 12):
            f.write(" ".join("".join(rng.choice(letters, rng.integers(2, 9))) for _ in range(12)) + ".\n")


def timed(call):
    import torch
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    result = call()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start, result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the attngeom CLI")
    ap.add_argument("--tokenizer", required=True, help="a tokenizer.model for the random checkpoint")
    ap.add_argument("--preset", default="llama-1b", help="make_random_checkpoint.py's preset (default llama-1b)")
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--num-seqs", type=int, default=8)
    ap.add_argument("--queries", default="last")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--device", default=os.environ.get("ATTNGEOM_HF_DEVICE"), help="default: cuda if present, else cpu")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--threads", type=int, default=0, help="the native engine's threads (0: all cores)")
    ap.add_argument("--work", default="hf-bench-work")
    args = ap.parse_args()
    if os.path.exists("/tmp/attngeom-quiet"):
        sys.exit("hf_vs_native: /tmp/attngeom-quiet exists: this machine is reserved for quiet measurements")

    import torch
    import transformers
    import attngeom
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = getattr(torch, args.dtype)
    os.makedirs(args.work, exist_ok=True)
    ckpt = os.path.join(args.work, f"{args.preset}-bf16")
    if not os.path.isdir(ckpt):
        subprocess.run([sys.executable, os.path.join(REPO, "tools", "make_random_checkpoint.py"), "--preset", args.preset,
                        "--dtype", "bf16", "--tokenizer", args.tokenizer, "--out", ckpt], check=True)
    text = os.path.join(args.work, "corpus.txt")
    if not os.path.isfile(text):
        corpus(text, 400_000)
    rows = []

    native_out = os.path.join(args.work, "native")
    shutil.rmtree(native_out, ignore_errors=True)
    cmd = [args.bin, "analyze", "--model", ckpt, "--data", text, "--seq-len", str(args.seq_len), "--num-seqs",
           str(args.num_seqs), "--pack", "--format", "lines", "--queries", args.queries, "--out", native_out]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    native_s = time.perf_counter() - start
    with open(os.path.join(native_out, "run.json")) as f:
        native = json.load(f)
    rows.append({"model": args.preset, "engine": "native analyze", "device": native.get("device", "cpu"),
                 "dtype": native["precision"], "seconds_per_sequence": native_s / args.num_seqs})
    tokens = [r["tokens"] for r in attngeom_records(native_out)]

    loader = {"dtype": dtype} if int(transformers.__version__.split(".")[0]) >= 5 else {"torch_dtype": dtype}
    llama = transformers.AutoModelForCausalLM.from_pretrained(ckpt, attn_implementation="eager", **loader).to(device)
    rows.append(hf_row(attngeom, llama, args, tokens, device, args.preset))
    del llama
    torch.manual_seed(0)
    gpt2_config = transformers.GPT2Config()
    gpt2 = transformers.GPT2LMHeadModel(gpt2_config).to(device=device, dtype=dtype)
    rng = np.random.default_rng(1)
    gpt2_tokens = [rng.integers(0, gpt2_config.vocab_size, min(args.seq_len, gpt2_config.n_positions))
                   for _ in range(args.num_seqs)]
    rows.append(hf_row(attngeom, gpt2, args, gpt2_tokens, device, "gpt2-124m-shape"))

    print(f"seq_len {args.seq_len}, {args.num_seqs} sequences, queries {args.queries}, transformers "
          f"{transformers.__version__}, torch {torch.__version__}")
    print(f"{'model':<18} {'engine':<16} {'device':<10} {'dtype':<10} s/sequence")
    for r in rows:
        print(f"{r['model']:<18} {r['engine']:<16} {r['device']:<10} {r['dtype']:<10} {r['seconds_per_sequence']:.3f}")
    print(json.dumps({"seq_len": args.seq_len, "num_seqs": args.num_seqs, "queries": args.queries,
                      "transformers": transformers.__version__, "torch": torch.__version__, "rows": rows}))


def attngeom_records(run):
    sys.path.insert(0, os.path.join(REPO, "tests", "python"))
    import st_reader
    names = sorted(os.listdir(os.path.join(run, "records")))
    return [st_reader.read(os.path.join(run, "records", n))[0] for n in names if n.endswith(".safetensors")]


def hf_row(attngeom, model, args, tokens, device, name):
    out = os.path.join(args.work, f"hf-{name}")
    for d in (out, out + "-warmup"):
        shutil.rmtree(d, ignore_errors=True)
    common = dict(queries=args.queries, quiet=True)
    attngeom.hf(model, out + "-warmup", tokens=tokens[:1], **common)
    seconds, _ = timed(lambda: attngeom.hf(model, out, tokens=tokens, batch_size=args.batch_size, **common))
    return {"model": name, "engine": "attngeom.hf", "device": str(device), "dtype": args.dtype,
            "seconds_per_sequence": seconds / len(tokens)}


if __name__ == "__main__":
    main()
