#!/usr/bin/env python3
"""The GPU benchmark's table (bench/gpu_bench.sh): per sequence length, attngeom's seconds by
stage (`attngeom bench --device cuda` JSON lines, each with where its analysis ran: how many
layers at once, the cosine deviations and the selection metrics on the GPU or the CPU, and the
attention kernels, fused or by query blocks; full
analyze of one sequence alone, and per sequence with the sequences back to back, each forward
pass beside the analysis of the one before, as analyze runs a corpus),
transformers' eager forward with every attention row and its sdpa forward (bench/hf_eager_gpu.py
JSON lines, the first of which holds the GPU's bf16 matrix peak), how many times eager's time
each stage takes, full analyze over the sdpa forward, and the share of the matrix peak that
the forward's products and the whole forward reach. A run of other query rows than the last
(`bench --queries`) names them beside its length.

  gpu_table.py BENCH_JSONL HF_EAGER_JSONL

Only bf16 runs of attngeom are compared; a figure that is missing prints as "-".
"""
import json
import sys


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def placement(run):
    """Where a run's analysis ran, as bench reports it on a GPU."""
    if "layer_workers" not in run:
        return "-"
    return (f"layers at once: {run['layer_workers']}, deviations: {run['deviations']}, selection: {run['selection']}"
            f", attention: {run.get('attention', 'blocks')}")


def length(run):
    """The run's sequence length, with its query rows where they are not the last."""
    queries = run.get("queries", "last")
    return str(run["seq_len"]) + ("" if queries == "last" else f" ({queries})")


def table(bench, peers):
    """Markdown lines of the table, one row per bf16 length; bench and peers as read_lines returns them."""
    peak = next((p["matmul_peak_tflops"] for p in peers if "matmul_peak_tflops" in p), None)
    eager = {p["seq_len"]: p for p in peers if "seq_len" in p}
    lines = ["| T | analysis placement | forward s | forward + capture s | full analyze s | full analyze, back to back s | "
             "eager with attentions s | sdpa s | analyze / eager (back to back) | analyze / sdpa (back to back) | "
             "forward's products TFLOP/s (of peak) | whole forward TFLOP/s (of peak) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def of_peak(x):
        return f"{fmt(x, '.0f')} ({fmt(None if x is None or not peak else x / peak, '.0%')})"

    for run in bench:
        if run.get("precision") != "bf16":
            continue
        peer = eager.get(run["seq_len"], {})
        e = peer.get("eager_attentions_seconds")
        seconds = {stage: run[stage]["seconds"] if stage in run else None for stage in ("forward", "capture", "analyze")}
        forward = run.get("forward")
        whole = forward["linear_flops"] / forward["seconds"] * 1e-12 if forward else None
        back_to_back = run.get("analyze", {}).get("overlapped_seconds")

        sdpa = peer.get("sdpa_seconds")

        def over(x, y):
            return fmt(None if x is None or y is None else x / y, ".2f")

        lines.append(f"| {length(run)} | {placement(run)} | {fmt(seconds['forward'], '.4f')} | "
                     f"{fmt(seconds['capture'], '.4f')} | {fmt(seconds['analyze'], '.4f')} | "
                     f"{fmt(back_to_back, '.4f')} | {fmt(e, '.4f')} | {fmt(sdpa, '.4f')} | "
                     f"{over(seconds['analyze'], e)} ({over(back_to_back, e)}) | "
                     f"{over(seconds['analyze'], sdpa)} ({over(back_to_back, sdpa)}) | "
                     f"{of_peak(forward and forward['linear_tflops'])} | {of_peak(whole)} |")
    lines.append(f"bf16 matrix peak of this GPU: {fmt(peak, '.0f')} TFLOP/s")
    return lines + parts_table(bench)


PARTS = ("value_geometry", "deviations", "row_parts", "heads")


def parts_table(bench):
    """Where the analysis spent its time, per bf16 run that analysed: each part's busy seconds
    summed over the layers (layers run at once, so the parts may add up to more than the wall time)."""
    runs = [run for run in bench if run.get("precision") == "bf16" and "parts" in run.get("analyze", {})]
    if not runs:
        return []
    lines = ["", "| T | analysis placement | value geometry s | deviations s | selection, envelopes and mass s | per head s |",
             "|---|---|---|---|---|---|"]
    for run in runs:
        parts = run["analyze"]["parts"]
        cells = " | ".join(fmt(parts.get(f"{part}_seconds"), ".4f") for part in PARTS)
        lines.append(f"| {length(run)} | {placement(run)} | {cells} |")
    return lines


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print("\n".join(table(read_lines(sys.argv[1]), read_lines(sys.argv[2]))))


if __name__ == "__main__":
    main()
