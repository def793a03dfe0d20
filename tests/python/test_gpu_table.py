#!/usr/bin/python3
"""bench/gpu_table.py on made-up benchmark lines whose figures are easy to check by hand:
each stage's seconds, where the analysis ran (and which attention kernels), analyze (alone and back to back) over eager and
over sdpa, the products' and the whole forward's TFLOP/s as a share of the matrix peak, fp32
runs left out, a run's query rows beside its length, and "-" for a figure a peer lacks (no
length, or eager out of memory).

  test_gpu_table.py
"""
import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def stage(seconds, flops=2.0e12, tflops=400.0):
    return {"seconds": seconds, "linear_flops": flops, "linear_tflops": tflops}


def main():
    spec = importlib.util.spec_from_file_location("gpu_table", os.path.join(REPO, "bench", "gpu_table.py"))
    gpu_table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_table)
    analyzed = dict(stage(0.05), overlapped_seconds=0.03, parts={"value_geometry_seconds": 0.02, "deviations_seconds": 0.01,
                                        "row_parts_seconds": 0.03, "heads_seconds": 0.04})
    bench = [{"seq_len": 1024, "precision": "bf16", "forward": stage(0.01), "capture": stage(0.02),
              "analyze": analyzed, "layer_workers": 4, "deviations": "gpu", "selection": "gpu", "attention": "fused"},
             {"seq_len": 1024, "precision": "bf16", "analyze": stage(0.1), "layer_workers": 1, "deviations": "gpu",
              "selection": "cpu", "attention": "blocks"},
             {"seq_len": 1024, "precision": "fp32", "forward": stage(0.3)},
             {"seq_len": 4096, "precision": "bf16", "forward": stage(0.04, flops=8.0e12, tflops=600.0),
              "analyze": stage(0.2)},
             {"seq_len": 32768, "queries": "stride:256", "precision": "bf16", "forward": stage(1.0, flops=4.0e14),
              "analyze": stage(3.0)}]
    peers = [{"peer": "torch bf16 matmul", "matmul_peak_tflops": 800.0},
             {"seq_len": 1024, "eager_attentions_seconds": 0.025, "sdpa_seconds": 0.02},
             {"seq_len": 32768, "eager_attentions_error": "CUDA out of memory.", "sdpa_seconds": 1.5}]
    got = gpu_table.table(bench, peers)
    want = ["| 1024 | layers at once: 4, deviations: gpu, selection: gpu, attention: fused | 0.0100 | 0.0200 | 0.0500 | 0.0300 | 0.0250 | "
            "0.0200 | 2.00 (1.20) | 2.50 (1.50) | 400 (50%) | 200 (25%) |",
            "| 1024 | layers at once: 1, deviations: gpu, selection: cpu, attention: blocks | - | - | 0.1000 | - | 0.0250 | 0.0200 | "
            "4.00 (-) | 5.00 (-) | - (-) | - (-) |",
            "| 4096 | - | 0.0400 | - | 0.2000 | - | - | - | - (-) | - (-) | 600 (75%) | 200 (25%) |",
            "| 32768 (stride:256) | - | 1.0000 | - | 3.0000 | - | - | 1.5000 | - (-) | 2.00 (-) | 400 (50%) | 400 (50%) |",
            "bf16 matrix peak of this GPU: 800 TFLOP/s",
            "",
            "| T | analysis placement | value geometry s | deviations s | selection, envelopes and mass s | per head s |",
            "|---|---|---|---|---|---|",
            "| 1024 | layers at once: 4, deviations: gpu, selection: gpu, attention: fused | 0.0200 | 0.0100 | 0.0300 | 0.0400 |"]
    if got[2:] != want:
        print("FAIL: table\n  " + "\n  ".join(got) + "\nwanted\n  " + "\n  ".join(want))
        return 1
    print("\n".join(got))
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
