#!/usr/bin/python3
"""Peak RSS of `attngeom capture --queries last` against T, next to the weight size.

  measure_capture_rss.py --bin build/src/attngeom --tokenizer T.model [--work DIR]
                         [--lengths 1024,2048,4096] [--dtype bf16] [--keep]

Generates the issue's random checkpoint (hidden 1024, 8 layers, preset h1024-l8,
vocab = the tokenizer's), writes seeded random token ids (--tokens FILE), runs the
capture under /usr/bin/time -v at each length and prints a table. With --queries
last, attention memory must grow linearly in T: a [heads, T, T] f32 matrix at
T = 4096 alone would be 1 GiB for 16 heads, so quadratic growth is easy to see.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TOOLS)
from checkpoint_files import spm_vocab_size  # noqa: E402
from make_random_checkpoint import PRESETS  # noqa: E402

PRESET = "h1024-l8"


def time_v(cmd):
    """Runs cmd under /usr/bin/time -v; returns (peak RSS bytes, wall seconds, proc)."""
    proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", proc.stderr)
    secs = 0.0
    if wall:
        for part in wall.group(1).split(":"):
            secs = secs * 60 + float(part)
    return (int(rss.group(1)) * 1024 if rss else None), secs, proc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tokenizer", required=True, help="e.g. FIXTURES/llama/tokenizer.model")
    ap.add_argument("--work", help="scratch dir (default: a temp dir, removed unless --keep)")
    ap.add_argument("--lengths", default="1024,2048,4096")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16", "f32"])
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="attngeom-rss-")
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, PRESET)
    try:
        if not os.path.exists(os.path.join(model, "config.json")):
            subprocess.run([sys.executable, "-B", os.path.join(TOOLS, "make_random_checkpoint.py"),
                            "--preset", PRESET, "--dtype", args.dtype, "--tokenizer", args.tokenizer,
                            "--out", model], check=True)
        weights = sum(os.path.getsize(os.path.join(model, f)) for f in os.listdir(model)
                      if f.endswith(".safetensors"))
        vocab = spm_vocab_size(args.tokenizer)
        heads = PRESETS[PRESET]["heads"]
        rows = []
        for T in [int(t) for t in args.lengths.split(",")]:
            ids = os.path.join(work, f"tokens_{T}.txt")
            rng = np.random.default_rng(T)
            with open(ids, "w") as f:  # BOS (1) then random ordinary pieces
                f.write(" ".join(map(str, [1] + list(rng.integers(3, vocab, T - 1)))) + "\n")
            out = os.path.join(work, f"capture_{T}.safetensors")
            rss, secs, proc = time_v([args.bin, "capture", "--model", model, "--tokens", ids,
                                      "--out", out, "--queries", "last"])
            if proc.returncode != 0:
                print(f"T={T}: capture failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
                return 1
            rows.append((T, rss, secs, os.path.getsize(out)))
            os.remove(out)
        mib = lambda b: f"{b / 2**20:9.1f}"
        print(f"\nmodel {PRESET}: hidden 1024, 8 layers, {heads} heads, vocab {vocab}, {args.dtype}; "
              f"weights {weights / 2**20:.1f} MiB")
        print(f"{'T':>6} {'peak RSS MiB':>13} {'RSS-weights':>12} {'dump MiB':>9} {'wall s':>7} "
              f"{'[H,T,T] f32 MiB':>16}")
        for T, rss, secs, dump in rows:
            print(f"{T:6d} {mib(rss):>13} {mib(rss - weights):>12} {mib(dump)} {secs:7.1f} "
                  f"{mib(heads * T * T * 4):>16}")
        if len(rows) >= 2:
            (t0, r0, _, _), (t1, r1, _, _) = rows[0], rows[-1]
            print(f"RSS growth {t0} -> {t1}: {(r1 - r0) / 2**20:.1f} MiB "
                  f"({(r1 - r0) / (t1 - t0) / 1024:.1f} KiB per token); "
                  f"one all-heads T x T f32 matrix would add {heads * (t1 * t1 - t0 * t0) * 4 / 2**20:.0f} MiB")
        return 0
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
